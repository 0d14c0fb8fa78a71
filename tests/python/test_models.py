"""An MLP, a CNN and a GPT train for 20 AdamW steps on "tpu" with no CPU fallback and the losses of
the same run on the CPU."""

import copy

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt
from models import CNN, GPT, MLP

STEPS = 20


def _data(kind):
    g = torch.Generator().manual_seed(1)
    if kind == "mlp":
        x = torch.randn(32, 16, generator=g)
        return x, torch.randint(0, 4, (32,), generator=g)
    if kind == "cnn":
        return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
    tokens = torch.randint(0, 64, (4, 17), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def _train(model, x, y, device):
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_training_matches_cpu_without_fallback(kind):
    torch.manual_seed(0)
    model = {"mlp": MLP, "cnn": CNN, "gpt": GPT}[kind]()
    x, y = _data(kind)
    tpu_model = copy.deepcopy(model)
    cpu_losses = _train(model, x, y, "cpu")
    torch_pjrt.metrics.reset()
    tpu_losses = _train(tpu_model, x, y, "tpu")
    assert torch_pjrt.metrics.counters()["cpu_fallbacks"] == {}
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=0)
    assert cpu_losses[-1] < cpu_losses[0]
