"""Sparse COO tensors on "tpu" against the CPU: nn.Embedding(sparse=True) trained with SGD, and
sparse tensors built, moved, coalesced, added (sparse + sparse, dense + sparse) and densified."""

import pytest
import torch


def _embedding_steps(device):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 3, sparse=True).to(device)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    grads = []
    for _ in range(2):
        opt.zero_grad()
        emb(torch.tensor([[1, 2, 1], [4, 5, 9]], device=device)).pow(2).sum().backward()
        g = emb.weight.grad
        grads.append((g.layout, g.is_coalesced(), g.coalesce().indices().cpu(), g.to_dense().cpu()))
        opt.step()
    return grads, emb.weight.detach().cpu()


def test_sparse_embedding_trains_as_on_the_cpu(counters):
    (cpu_grads, cpu_weight), (tpu_grads, tpu_weight) = (
        _embedding_steps("cpu"),
        _embedding_steps("tpu"),
    )
    for (layout, coalesced, indices, dense), c in zip(tpu_grads, cpu_grads):
        assert (layout, coalesced) == c[:2]
        assert torch.equal(indices, c[2])
        torch.testing.assert_close(dense, c[3])
    torch.testing.assert_close(tpu_weight, cpu_weight)
    assert counters()["cpu_fallbacks"] == {}


def _ops(device):
    i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    s = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4, 5, 6]), (2, 3)).to(device)
    c = s.coalesce()
    d = torch.ones(2, 3, device=device)
    hybrid = torch.sparse_coo_tensor(
        torch.tensor([[0, 2, 0]]), torch.arange(6.0).view(3, 2), (3, 2)
    )
    hybrid = hybrid.to(device)
    # No sparse dims: every value sits at the one coordinate; coalescing sums them, in their dtype.
    dense_only = torch.sparse_coo_tensor(
        torch.zeros(0, 3, dtype=torch.long), torch.arange(6, dtype=torch.int32).view(3, 2), (2,)
    ).to(device)
    out = [
        s.is_coalesced(), c.is_coalesced(), c.indices(), c.values(), s.to_dense(),
        (s + s).to_dense(), (c + c).is_coalesced(), (c + c).values(), (s + c * 1).to_dense(),
        torch.add(d, s, alpha=2), d.clone().add_(s), hybrid.coalesce().values(), hybrid.to_dense(),
        torch.add(torch.ones(2, 3, dtype=torch.float64, device=device), s),
        dense_only.coalesce().values(), dense_only.coalesce().indices(),
        d.sparse_mask(c), (s * 2).sparse_mask(c), (c * 2).to_dense(), (2 * c).to_dense(), (s / 4).to_dense(), s.clone().mul_(3).to_dense(),
    ]  # fmt: skip
    return [x.cpu() if isinstance(x, torch.Tensor) else x for x in out]


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_sparse_ops_match_the_cpu(counters):
    for t, c in zip(_ops("tpu"), _ops("cpu")):
        if isinstance(c, torch.Tensor):
            assert t.layout == c.layout and t.dtype == c.dtype
            assert torch.equal(
                t.to_dense() if t.is_sparse else t, c.to_dense() if c.is_sparse else c
            )
        else:
            assert t == c
    assert counters()["cpu_fallbacks"] == {}
    s = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1), (2,)).to("tpu")
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + torch.ones(2, device="tpu")
    with pytest.raises(RuntimeError, match="to have same size"):
        torch.ones(3, device="tpu") + s
