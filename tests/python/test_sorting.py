"""sort, argsort and topk against CPU PyTorch: values, int64 indices, NaN, stability, errors."""

import math

import pytest
import torch
from conftest import assert_same

import torch_pjrt

NAN = float("nan")


pytestmark = pytest.mark.usefixtures("no_fallback")


def distinct(shape, dtype, seed=0):
    n = math.prod(shape)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)) - n // 2
    return perm.reshape(shape).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_sort(dtype):
    a = distinct((4, 6), dtype)
    ta = a.to("tpu")
    for dim in (0, -1):
        for descending in (False, True):
            v, i = torch.sort(ta, dim, descending)
            cv, ci = torch.sort(a, dim, descending)
            assert_same(v, cv)
            assert_same(i, ci)
            assert_same(torch.argsort(ta, dim, descending), torch.argsort(a, dim, descending))


def test_sort_stable_ties_bool_nan():
    a = torch.tensor([[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0]])
    for descending in (False, True):
        v, i = torch.sort(a.to("tpu"), stable=True, descending=descending)
        cv, ci = torch.sort(a, stable=True, descending=descending)
        assert_same(v, cv)
        assert_same(i, ci)
        assert_same(
            torch.argsort(a.to("tpu"), stable=True, descending=descending),
            torch.argsort(a, stable=True, descending=descending),
        )
    b = torch.tensor([True, False, True, False])
    v, i = torch.sort(b.to("tpu"), stable=True)
    assert_same(v, torch.sort(b, stable=True).values)
    assert_same(i, torch.sort(b, stable=True).indices)
    n = torch.tensor([2.0, NAN, -math.inf, 1.0, math.inf, -1.0])
    for descending in (False, True):
        v, i = torch.sort(n.to("tpu"), descending=descending)
        cv, ci = torch.sort(n, descending=descending)
        assert_same(v, cv, equal_nan=True)
        assert_same(i, ci)


def test_sort_scalar_empty_out_and_grad():
    s = torch.tensor(5.0)
    assert_same(torch.sort(s.to("tpu")).values, torch.sort(s).values)
    assert_same(torch.sort(s.to("tpu")).indices, torch.sort(s).indices)
    e = torch.empty(0, 3)
    assert_same(torch.sort(e.to("tpu"), 0).values, torch.sort(e, 0).values)
    a = distinct((3, 5), torch.float32)
    values = torch.empty(0, device="tpu")
    indices = torch.empty(0, dtype=torch.long, device="tpu")
    torch.sort(a.to("tpu"), 1, out=(values, indices))
    assert_same(values, a.sort(1).values)
    assert_same(indices, a.sort(1).indices)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.sort(a.to("tpu"), 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_topk(dtype):
    a = distinct((4, 7), dtype)
    ta = a.to("tpu")
    for k, dim, largest in ((3, 1, True), (2, 0, False), (7, -1, False), (0, 1, True)):
        v, i = torch.topk(ta, k, dim, largest)
        cv, ci = torch.topk(a, k, dim, largest)
        assert_same(v, cv)
        assert_same(i, ci)
    values = torch.empty(0, dtype=dtype, device="tpu")
    indices = torch.empty(0, dtype=torch.long, device="tpu")
    torch.topk(ta, 2, out=(values, indices))
    assert_same(values, a.topk(2).values)
    assert_same(indices, a.topk(2).indices)


def test_topk_nan_and_errors():
    n = torch.tensor([2.0, NAN, -1.0, 5.0])
    for largest in (True, False):
        v, i = torch.topk(n.to("tpu"), 2, largest=largest)
        cv, ci = torch.topk(n, 2, largest=largest)
        assert_same(v, cv, equal_nan=True)
        assert_same(i, ci)
    t = torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        t.topk(4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        t.topk(-1)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes"):
        torch.ones(3, dtype=torch.bool, device="tpu").topk(1)


def test_grads():
    """The forward never falls back; the backward scatters (indexing family, not lowered yet)."""
    x = distinct((3, 5), torch.float64) / 3
    w = torch.randn(3, 2, dtype=torch.float64)
    for fn in (lambda t: t.topk(2, 1).values, lambda t: t.sort(1).values[:, :2]):
        cx = x.clone().requires_grad_()
        tx = x.to("tpu").requires_grad_()
        (fn(cx) * w).sum().backward()
        torch_pjrt.metrics.reset()
        out = fn(tx)
        assert torch_pjrt.metrics.counters()["cpu_fallbacks"] == {}
        (out * w.to("tpu")).sum().backward()
        assert set(torch_pjrt.metrics.counters()["cpu_fallbacks"]) <= {"aten::scatter.src_out"}
        torch_pjrt.metrics.reset()
        assert_same(tx.grad, cx.grad)
