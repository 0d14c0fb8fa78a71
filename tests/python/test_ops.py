"""Lowered ops against CPU PyTorch: arithmetic, promotion, broadcasting, matmul, reductions, fill."""

import pytest
import torch
from conftest import assert_same

DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16, torch.float16]


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary_ops(op, dtype):
    a, b = sample((3, 4), dtype), sample((3, 4), dtype, seed=1)
    if op == "div" and not dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)
    fn = getattr(torch, op)
    assert_same(fn(a.to("tpu"), b.to("tpu")), fn(a, b))


def test_broadcasting_promotion_and_scalars():
    a = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    b = torch.tensor([0.5, 1.5, -2.0])
    ta, tb = a.to("tpu"), b.to("tpu")
    assert_same(ta + tb, a + b)
    assert_same(ta * 2.5, a * 2.5)
    assert_same(ta + 3, a + 3)
    assert (ta + 3).dtype == torch.int32
    assert_same(ta / 4, a / 4)
    assert_same(torch.add(ta, tb, alpha=2), torch.add(a, b, alpha=2))
    assert_same(torch.sub(tb, ta, alpha=3), torch.sub(b, a, alpha=3))
    big = torch.tensor([2**60], dtype=torch.int64)
    assert_same(big.to("tpu") + 1, big + 1)


def test_in_place_and_out_variants():
    a, b = torch.randn(4, 5), torch.randn(5)
    ta, tb = a.to("tpu"), b.to("tpu")
    ta.add_(tb, alpha=0.5)
    a.add_(b, alpha=0.5)
    assert_same(ta, a)
    out = torch.empty(0, device="tpu")
    torch.mul(ta, tb, out=out)
    assert_same(out, a * b)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.ones(3, dtype=torch.int64, device="tpu").add_(torch.ones(3, device="tpu"))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(3, device="tpu").add_(torch.ones(2, 3, device="tpu"))


def test_comparisons_where_neg_relu():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    ta, tb = a.to("tpu"), b.to("tpu")
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        assert_same(getattr(torch, op)(ta, tb), getattr(torch, op)(a, b))
        assert_same(getattr(torch, op)(ta, 0.25), getattr(torch, op)(a, 0.25))
    assert_same(torch.where(ta > tb, ta, tb), torch.where(a > b, a, b))
    assert_same(-ta, -a)
    assert_same(torch.relu(ta), torch.relu(a))
    nan = torch.tensor([float("nan"), -1.0, 2.0])
    assert_same(torch.relu(nan.to("tpu")), torch.relu(nan), equal_nan=True)


def test_nan_and_inf_propagate():
    a = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    b = torch.tensor([1.0, float("inf"), 2.0, 0.0])
    assert_same(a.to("tpu") * b.to("tpu"), a * b, equal_nan=True)
    assert_same(a.to("tpu") / b.to("tpu"), a / b, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_matmul_family(dtype):
    a, b = sample((5, 3), dtype), sample((3, 4), dtype, 1)
    assert_same(a.to("tpu") @ b.to("tpu"), a @ b)
    bias = sample((4,), dtype, 2)
    assert_same(
        torch.addmm(bias.to("tpu"), a.to("tpu"), b.to("tpu"), beta=2, alpha=3),
        torch.addmm(bias, a, b, beta=2, alpha=3),
    )
    x, y = sample((2, 5, 3), dtype), sample((2, 3, 4), dtype, 1)
    assert_same(torch.bmm(x.to("tpu"), y.to("tpu")), torch.bmm(x, y))


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        torch.ones(2, 3, device="tpu") @ torch.ones(4, 5, device="tpu")
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(
            torch.ones(2, 2, device="tpu"), torch.ones(2, 2, device="tpu", dtype=torch.float64)
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_sum(dtype):
    a = sample((3, 4, 5), torch.int64).to(dtype) if dtype != torch.float32 else torch.randn(3, 4, 5)
    ta = a.to("tpu")
    assert_same(ta.sum(), a.sum())
    assert_same(ta.sum(1), a.sum(1))
    assert_same(ta.sum((0, 2), keepdim=True), a.sum((0, 2), keepdim=True))
    assert_same(ta.sum(-1, dtype=torch.float64), a.sum(-1, dtype=torch.float64))
    assert ta.sum().dtype == a.sum().dtype


def test_mean_and_errors():
    a = torch.randn(4, 6)
    assert_same(a.to("tpu").mean(), a.mean())
    assert_same(a.to("tpu").mean(0, keepdim=True), a.mean(0, keepdim=True))
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        torch.ones(3, dtype=torch.int64, device="tpu").mean()
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(3, device="tpu").sum(2)


def test_fill_zero_and_factories():
    t = torch.empty(3, 4, device="tpu")
    t.fill_(2.5)
    assert_same(t, torch.full((3, 4), 2.5))
    t.zero_()
    assert_same(t, torch.zeros(3, 4))
    assert_same(
        torch.ones(2, 3, device="tpu", dtype=torch.int64), torch.ones(2, 3, dtype=torch.int64)
    )
    assert_same(torch.full((2,), 7, device="tpu"), torch.full((2,), 7))
    t.fill_(torch.tensor(3.0, device="tpu"))
    assert_same(t, torch.full((3, 4), 3.0))


def test_zero_dim_and_empty_tensors():
    s = torch.tensor(3.5)
    assert_same(s.to("tpu") * 2, s * 2)
    assert (s.to("tpu") * 2).item() == 7.0
    e = torch.empty(0, 3)
    assert_same(e.to("tpu") + 1, e + 1)
    assert_same(e.to("tpu").sum(0), e.sum(0))
    assert torch.ones(2, 0, device="tpu").cpu().shape == (2, 0)


def test_dtype_round_trips():
    for dtype in DTYPES + [torch.bool, torch.uint8, torch.int8, torch.int16]:
        a = sample((7,), torch.int64).to(dtype)
        assert_same(a.to("tpu"), a)
        assert torch.equal(a.to("tpu").to(torch.float32).cpu(), a.to(torch.float32))


@pytest.mark.parametrize(
    "op", ["abs", "ceil", "floor", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos"]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_unary_math(op, dtype):
    a = sample((4, 5), dtype)
    if op in ("log", "sqrt", "rsqrt"):
        a = a.abs() + 1
    fn = getattr(torch, op)
    assert_same(fn(a.to("tpu")), fn(a))
    if dtype.is_floating_point:
        t = a.to("tpu")
        getattr(t, op + "_")()
        assert_same(t, fn(a))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.uint8])
def test_bitwise(dtype):
    a, b = sample((6,), torch.int64).to(dtype), sample((6,), torch.int64, 1).to(dtype)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        assert_same(getattr(torch, op)(a.to("tpu"), b.to("tpu")), getattr(torch, op)(a, b))
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.ones(2, device="tpu") & torch.ones(2, device="tpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int8, torch.bool])
def test_max_min_amax_amin(dtype):
    a = sample((3, 4), torch.int64).to(dtype) if dtype != torch.float32 else torch.randn(3, 4)
    ta = a.to("tpu")
    assert_same(ta.max(), a.max())
    assert_same(ta.min(), a.min())
    assert_same(ta.amax(1), a.amax(1))
    assert_same(ta.amin((0, 1), keepdim=True), a.amin((0, 1), keepdim=True))
    with pytest.raises(RuntimeError, match="Expected reduction dim"):
        torch.empty(0, device="tpu").max()


def test_extrema_propagate_nan():
    a = torch.tensor([[1.0, float("nan")], [2.0, -1.0]])
    assert_same(a.to("tpu").max(), a.max(), equal_nan=True)
    assert_same(a.to("tpu").amin(1), a.amin(1), equal_nan=True)


def test_masked_select():
    a = torch.randn(3, 4)
    mask = a > 0
    assert_same(torch.masked_select(a.to("tpu"), mask.to("tpu")), torch.masked_select(a, mask))
    row_mask = torch.tensor([True, False, True, False])
    assert_same(a.to("tpu").masked_select(row_mask.to("tpu")), a.masked_select(row_mask))
    none = torch.zeros(3, 4, dtype=torch.bool)
    assert torch.masked_select(a.to("tpu"), none.to("tpu")).shape == (0,)


def test_maximum_minimum_propagate_nan():
    a = torch.tensor([1.0, float("nan"), 3.0, float("nan")])
    b = torch.tensor([float("nan"), 2.0, 1.0, float("nan")])
    assert_same(torch.maximum(a.to("tpu"), b.to("tpu")), torch.maximum(a, b), equal_nan=True)
    assert_same(torch.minimum(a.to("tpu"), b.to("tpu")), torch.minimum(a, b), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_isposinf_isneginf(dtype):
    a = torch.tensor([1.0, float("inf"), -float("inf"), float("nan"), 0.0]).to(dtype)
    if not dtype.is_floating_point:
        a = torch.tensor([1, -5, 7], dtype=dtype)
    assert_same(torch.isposinf(a.to("tpu")), torch.isposinf(a))
    assert_same(torch.isneginf(a.to("tpu")), torch.isneginf(a))


def test_baddbmm():
    s, a, b = torch.randn(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    want = torch.baddbmm(s, a, b, beta=0.5, alpha=2)
    assert_same(torch.baddbmm(s.to("tpu"), a.to("tpu"), b.to("tpu"), beta=0.5, alpha=2), want)
    t = s.to("tpu")
    t.baddbmm_(a.to("tpu"), b.to("tpu"))
    assert_same(t, torch.baddbmm(s, a, b))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.baddbmm(s.to("tpu"), a[0].to("tpu"), b.to("tpu"))
