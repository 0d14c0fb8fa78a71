"""_foreach_* list ops: CPU results, one program per list op, and optimizer steps that match CPU."""

import copy

import torch

from conftest import assert_same


def _lists(seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    return [torch.randn(s, generator=g) for s in shapes]


def test_foreach_list_ops_match_cpu(counters):
    a, b = _lists(0), _lists(1)
    ta, tb = [x.to("tpu") for x in a], [x.to("tpu") for x in b]
    for got, want in zip(
        torch._foreach_add(ta, tb, alpha=0.5), torch._foreach_add(a, b, alpha=0.5)
    ):
        assert_same(got, want)
    for got, want in zip(torch._foreach_mul(ta, 3.0), torch._foreach_mul(a, 3.0)):
        assert_same(got, want)
    torch._foreach_sub_(ta, tb)
    torch._foreach_sub_(a, b)
    for got, want in zip(ta, a):
        assert_same(got, want)
    assert counters()["cpu_fallbacks"] == {}


def test_foreach_in_place_is_one_program(counters):
    ta, tb = [x.to("tpu") for x in _lists(0)], [x.to("tpu") for x in _lists(1)]
    torch._foreach_add_(ta, tb, alpha=-0.1)  # compile once
    before = counters()["executions"]
    torch._foreach_add_(ta, tb, alpha=-0.1)
    assert counters()["executions"] == before + 1


def test_sgd_with_momentum_matches_cpu(counters):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    tpu_model = copy.deepcopy(model).to("tpu")
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    results = []
    for m, dev in ((model, "cpu"), (tpu_model, "tpu")):
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            d = m(x.to(dev)) - y.to(dev)
            loss = (d * d).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append(losses)
    torch.testing.assert_close(results[1], results[0], rtol=1e-4, atol=0)
    assert counters()["cpu_fallbacks"] == {}
