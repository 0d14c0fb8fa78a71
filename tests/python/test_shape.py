"""Shape ops against CPU PyTorch: cat/stack/split, flip, roll, tril/triu, constant_pad_nd, unfold."""

import pytest
import torch
from conftest import assert_same

DTYPES = [torch.float32, torch.int64, torch.bool]


def sample(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_stack_split(dtype, counters):
    a, b = sample((2, 3), dtype), sample((4, 3), dtype, seed=1)
    ta, tb = a.to("tpu"), b.to("tpu")
    assert_same(torch.cat([ta, tb]), torch.cat([a, b]))
    assert_same(torch.cat([ta.t(), tb.t()], dim=-1), torch.cat([a.t(), b.t()], dim=-1))
    assert_same(torch.stack([ta, ta], dim=1), torch.stack([a, a], dim=1))
    for got, want in zip(torch.split(tb, [1, 3]), torch.split(b, [1, 3])):
        assert_same(got, want)
    for got, want in zip(tb.chunk(2, dim=0), b.chunk(2, dim=0)):
        assert_same(got, want)
    for got, want in zip(tb.unbind(1), b.unbind(1)):
        assert_same(got, want)
    assert counters()["cpu_fallbacks"] == {}


def test_cat_promotion_empty_and_out(counters):
    a = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    b = torch.randn(1, 3, dtype=torch.float64)
    e = torch.empty(0)
    got = torch.cat([a.to("tpu"), e.to("tpu"), b.to("tpu")])
    assert got.dtype == torch.float64
    assert_same(got, torch.cat([a, e, b]))
    assert_same(torch.cat([e.to("tpu"), e.to("tpu")]), torch.cat([e, e]))
    assert_same(
        torch.cat([a.to("tpu")[:, :0], a.to("tpu")[:, :0]], 1), torch.cat([a[:, :0]] * 2, 1)
    )
    out = torch.empty(0, dtype=torch.float64, device="tpu")
    torch.cat([a.to("tpu"), b.to("tpu")], out=out)
    assert_same(out, torch.cat([a, b]))
    assert counters()["cpu_fallbacks"] == {}


def test_cat_errors():
    x = torch.ones(3, 4, device="tpu")
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([x, torch.ones(3, 5, device="tpu")])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        torch.cat([torch.tensor(1.0, device="tpu")])
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.cat([x], 3)


def test_cat_stack_backward(counters):
    a, b = torch.randn(2, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True)
    ta = a.detach().to("tpu").requires_grad_()
    tb = b.detach().to("tpu").requires_grad_()
    w = torch.randn(2, 2, 3)
    (torch.stack([a, b]) * w).sum().backward()
    (torch.stack([ta, tb]) * w.to("tpu")).sum().backward()
    assert_same(ta.grad, a.grad)
    assert_same(tb.grad, b.grad)
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.bool])
def test_flip_roll(dtype, counters):
    x = sample((3, 4, 5), dtype)
    t = x.to("tpu")
    assert_same(t.flip(0, 2), x.flip(0, 2))
    assert_same(t.transpose(0, 2).flip(-1), x.transpose(0, 2).flip(-1))
    assert_same(t.roll(2, 1), x.roll(2, 1))
    assert_same(t.roll((-1, 7), (0, 2)), x.roll((-1, 7), (0, 2)))
    assert_same(t.roll(5), x.roll(5))
    assert_same(t.permute(2, 0, 1).roll(-3), x.permute(2, 0, 1).roll(-3))
    assert counters()["cpu_fallbacks"] == {}


def test_flip_roll_backward_and_errors(counters):
    x = torch.randn(3, 4, requires_grad=True)
    t = x.detach().to("tpu").requires_grad_()
    w = torch.randn(3, 4)
    (x.flip(1).roll(1, 0) * w).sum().backward()
    (t.flip(1).roll(1, 0) * w.to("tpu")).sum().backward()
    assert_same(t.grad, x.grad)
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        t.detach().flip(0, 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        t.detach().roll((1, 2), (0,))


@pytest.mark.parametrize("diagonal", [0, -2, 5])
def test_tril_triu(diagonal, counters):
    x = sample((2, 4, 5))
    t = x.to("tpu")
    assert_same(t.tril(diagonal), x.tril(diagonal))
    assert_same(t.triu(diagonal), x.triu(diagonal))
    assert_same(t.transpose(1, 2).triu(diagonal), x.transpose(1, 2).triu(diagonal))
    b = sample((4, 4), torch.bool).to("tpu")
    assert_same(b.tril(diagonal), b.cpu().tril(diagonal))
    y, ty = x.clone(), t.clone()
    y.tril_(diagonal)
    ty.tril_(diagonal)
    assert_same(ty, y)
    out = torch.empty(0, device="tpu")
    torch.triu(t, diagonal, out=out)
    assert_same(out, x.triu(diagonal))
    assert counters()["cpu_fallbacks"] == {}


def test_tril_backward_and_errors(counters):
    x = torch.randn(4, 4, requires_grad=True)
    t = x.detach().to("tpu").requires_grad_()
    w = torch.randn(4, 4)
    (x.tril(-1) * w).sum().backward()
    (t.tril(-1) * w.to("tpu")).sum().backward()
    assert_same(t.grad, x.grad)
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        torch.ones(3, device="tpu").tril()


@pytest.mark.parametrize("pad", [(1, 2), (0, 1, 2, 0), (-1, 2, 1, -1), (1, 1, 1, 1, 1, 1)])
def test_constant_pad_nd(pad, counters):
    x = sample((2, 3, 4), torch.int32 if len(pad) == 2 else torch.float32)
    t = x.to("tpu")
    assert_same(torch.constant_pad_nd(t, pad, 3), torch.constant_pad_nd(x, pad, 3))
    f = torch.nn.functional.pad
    assert_same(f(t.transpose(0, 2), pad), f(x.transpose(0, 2), pad))
    assert counters()["cpu_fallbacks"] == {}


def test_pad_backward_and_errors(counters):
    x = torch.randn(3, 4, requires_grad=True)
    t = x.detach().to("tpu").requires_grad_()
    w = torch.randn(5, 3)
    pad = (-1, 0, 1, 1)
    (torch.nn.functional.pad(x, pad, value=2.0) * w).sum().backward()
    (torch.nn.functional.pad(t, pad, value=2.0) * w.to("tpu")).sum().backward()
    assert_same(t.grad, x.grad)
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        torch.constant_pad_nd(t.detach(), (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal"):
        torch.constant_pad_nd(torch.ones(3, device="tpu"), (1, 1, 1, 1))


def test_repeat_unfold(counters):
    x = sample((2, 3))
    t = x.to("tpu")
    assert_same(t.repeat(2, 1, 3), x.repeat(2, 1, 3))
    assert_same(t.unfold(1, 2, 1), x.unfold(1, 2, 1))
    assert_same(torch.arange(10.0).to("tpu").unfold(0, 3, 2), torch.arange(10.0).unfold(0, 3, 2))
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("size,step", [(2, 1), (3, 2), (2, 3)])
def test_unfold_backward(size, step, counters):
    x = torch.randn(3, 7, requires_grad=True)
    t = x.detach().to("tpu").requires_grad_()
    w = torch.randn(x.unfold(1, size, step).shape)
    (x.unfold(1, size, step) * w).sum().backward()
    (t.unfold(1, size, step) * w.to("tpu")).sum().backward()
    assert_same(t.grad, x.grad)
    assert counters()["cpu_fallbacks"] == {}
