"""DLRM (deep learning recommendation model) on "tpu", on synthetic click data: dense features
through a bottom MLP, multi-hot categorical features through `nn.EmbeddingBag` tables (sum of
each sample's rows; bags of 1..--hot indices padded to --hot with the padding row, so every batch
has the same shapes and XLA compiles one program for all), pairwise dot-product interaction of all
feature vectors, a top MLP and a click logit. Trains with binary cross-entropy and SGD, then reports
the accuracy on a held-out batch.

    python examples/dlrm.py
    python examples/dlrm.py --tables 8 --rows 100000 --compile
"""

import sys

import common
import torch
import torch.nn.functional as F
from torch import nn


def mlp(sizes, last_activation):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense, tables, rows, dim, bottom, top):
        super().__init__()
        self.bottom = mlp([dense, *bottom, dim], last_activation=True)
        self.embeddings = nn.ModuleList(
            nn.EmbeddingBag(rows + 1, dim, mode="sum", padding_idx=rows) for _ in range(tables)
        )
        features = tables + 1
        pairs = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("pairs", pairs[0] * features + pairs[1], persistent=False)
        self.top = mlp([dim + pairs.shape[1], *top, 1], last_activation=False)

    def forward(self, dense, indices):
        """dense [B, dense]; indices[t] [B, hot] the bags of table t (padded with its last row)."""
        x = self.bottom(dense)
        vectors = [x] + [emb(i) for emb, i in zip(self.embeddings, indices)]
        t = torch.stack(vectors, dim=1)  # [B, features, dim]
        dots = torch.bmm(t, t.transpose(1, 2)).flatten(1)[:, self.pairs]
        return self.top(torch.cat([x, dots], dim=1)).squeeze(1)


def synthetic_clicks(n, args, g, hidden):
    """Dense features, a multi-hot bag per table (1..hot indices, Zipf-like, padded to hot with
    the padding row `rows`), and a click label from a hidden linear rule of the dense features and
    the first index of each bag."""
    dense = torch.randn(n, args.dense, generator=g)
    indices, first = [], []
    for _ in range(args.tables):
        counts = torch.randint(1, args.hot + 1, (n, 1), generator=g)
        idx = (torch.rand(n, args.hot, generator=g) ** 3 * args.rows).long()
        idx = torch.where(torch.arange(args.hot) < counts, idx, args.rows)
        indices.append(idx)
        first.append(idx[:, 0] % 2)
    score = dense @ hidden + torch.stack(first, 1).float().sum(1) - args.tables / 2
    labels = (score > 0).float()
    return dense, indices, labels


def to(batch, device):
    dense, indices, labels = batch
    return dense.to(device), [i.to(device) for i in indices], labels.to(device)


def main(argv=None):
    p = common.parser(__doc__.splitlines()[0], steps=30, batch_size=256)
    p.add_argument("--dense", type=int, default=13)
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--hot", type=int, default=4, help="most indices per bag")
    p.add_argument("--bottom", type=int, nargs="+", default=[64])
    p.add_argument("--top", type=int, nargs="+", default=[64, 32])
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args(argv)
    device = common.setup(args)
    model = DLRM(args.dense, args.tables, args.rows, args.dim, args.bottom, args.top).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed)
    hidden = torch.randn(args.dense, generator=g)
    batches = [
        to(synthetic_clicks(args.batch_size, args, g, hidden), device) for _ in range(args.steps)
    ]

    def loss_fn(m, batch):
        dense, indices, labels = batch
        return F.binary_cross_entropy_with_logits(m(dense, indices), labels)

    step = common.optimizer_step(model, opt, loss_fn, args)
    result = common.train(step, batches, args, device, "samples")
    dense, indices, labels = to(synthetic_clicks(args.batch_size, args, g, hidden), device)
    with torch.no_grad():
        logits = model(dense, indices).float().cpu()
    result["logits"] = logits
    result["accuracy"] = ((logits > 0).float() == labels.cpu()).float().mean().item()
    if not args.quiet:
        print(f"held-out accuracy: {result['accuracy']:.3f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
