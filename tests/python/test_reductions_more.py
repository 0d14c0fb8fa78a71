"""prod, max/min with indices, argmax/argmin, var/std, vector norms, logsumexp, cumsum/cumprod and
all/any against CPU PyTorch: forward, gradients, NaN, out= and PyTorch's errors."""

import math

import pytest
import torch
from conftest import assert_same

import torch_pjrt

FLOATS = [torch.float32, torch.float64]
NAN = float("nan")


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-4, 5, shape, generator=g).to(dtype)


pytestmark = pytest.mark.usefixtures("no_fallback")


# Backward formulas reach ops of other families that are not lowered yet (CPU fallbacks there).
OTHER_FAMILIES = {
    "aten::scatter.src_out",
    "aten::masked_fill_.Scalar",
    "aten::pow.Tensor_Scalar_out",
    "aten::flip",
}


def check_grad(fn, x, *, seed=1):
    """Gradient of sum(fn(x) * w) on the device equals the CPU one; the forward never falls back."""
    cx = x.clone().requires_grad_()
    tx = x.to("tpu").requires_grad_()
    out = fn(cx)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    (out * w).sum().backward()
    torch_pjrt.metrics.reset()
    tout = fn(tx)
    assert torch_pjrt.metrics.counters()["cpu_fallbacks"] == {}
    (tout * w.to("tpu")).sum().backward()
    assert set(torch_pjrt.metrics.counters()["cpu_fallbacks"]) <= OTHER_FAMILIES
    torch_pjrt.metrics.reset()
    assert_same(tx.grad, cx.grad)


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int64, torch.bool])
def test_prod(dtype):
    a = sample((3, 4), dtype)
    ta = a.to("tpu")
    assert_same(ta.prod(), a.prod())
    assert_same(ta.prod(1), a.prod(1))
    assert_same(ta.prod(0, keepdim=True), a.prod(0, keepdim=True))
    assert_same(ta.prod(-1, dtype=torch.float64), a.prod(-1, dtype=torch.float64))
    out = torch.empty(0, dtype=a.prod().dtype, device="tpu")
    torch.prod(ta, 1, out=out)
    assert_same(out, a.prod(1))


def test_prod_grad():
    check_grad(lambda x: x.prod(1), torch.randn(3, 4, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int64, torch.bool])
def test_max_min_dim(dtype):
    a = sample((4, 5), dtype)
    ta = a.to("tpu")
    for op in (torch.max, torch.min):
        for dim, keepdim in ((0, False), (-1, True)):
            v, i = op(ta, dim, keepdim)
            cv, ci = op(a, dim, keepdim)
            assert_same(v, cv)
            assert_same(i, ci)
    if dtype != torch.bool:
        for op in (torch.argmax, torch.argmin):
            assert_same(op(ta), op(a))
            assert_same(op(ta, 0, keepdim=True), op(a, 0, keepdim=True))


def test_max_dim_ties_nan_scalar_and_out():
    a = torch.tensor([[1.0, 3.0, 3.0, 0.0], [NAN, 2.0, NAN, 5.0], [-1.0, -1.0, -2.0, -2.0]])
    ta = a.to("tpu")
    for op in (torch.max, torch.min):
        v, i = op(ta, 1)
        cv, ci = op(a, 1)
        assert_same(v, cv, equal_nan=True)
        assert_same(i, ci)
    assert_same(ta.argmax(1), a.argmax(1))
    assert_same(ta.argmin(), a.argmin())
    assert_same(ta.argmax(keepdim=True), a.argmax(keepdim=True))
    s = torch.tensor(2.5)
    assert_same(s.to("tpu").max(0)[1], s.max(0)[1])
    assert_same(s.to("tpu").argmax(), s.argmax())
    values = torch.empty(0, device="tpu")
    indices = torch.empty(0, dtype=torch.long, device="tpu")
    torch.max(ta, 0, out=(values, indices))
    assert_same(values, a.max(0).values, equal_nan=True)
    assert_same(indices, a.max(0).indices)
    out = torch.empty(0, dtype=torch.long, device="tpu")
    torch.argmin(ta, 1, out=out)
    assert_same(out, a.argmin(1))


def test_max_dim_grad():
    check_grad(lambda x: x.max(1).values, torch.randn(3, 5, dtype=torch.float64))


def test_max_dim_errors():
    e = torch.empty(0, 3, device="tpu")
    with pytest.raises(
        IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size"
    ):
        torch.max(e, 0)
    assert torch.max(e, 1).values.shape == (0,)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        torch.argmax(e)
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have non-zero"):
        torch.argmin(e, 0)
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        torch.ones(2, dtype=torch.bool, device="tpu").argmax()
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, device="tpu").max(1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_var_std(dtype):
    a = sample((4, 5, 3), dtype)
    ta = a.to("tpu")
    for op in (torch.var, torch.std):
        assert_same(op(ta), op(a))
        assert_same(op(ta, (0, 2), keepdim=True), op(a, (0, 2), keepdim=True))
        assert_same(op(ta, 1, correction=0), op(a, 1, correction=0))
        assert_same(op(ta, 1, correction=2.5), op(a, 1, correction=2.5))
    for op in (torch.var_mean, torch.std_mean):
        r, m = op(ta, 1, keepdim=True)
        cr, cm = op(a, 1, keepdim=True)
        assert_same(r, cr)
        assert_same(m, cm)
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.std(ta, 0, out=out)
    assert_same(out, a.std(0))
    # One element with correction 1 divides 0 by 0.
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        r = torch.ones(1, 3, device="tpu").var(0)
    assert_same(r, torch.full((3,), float("nan")), equal_nan=True)


def test_var_std_grad_and_errors():
    x = torch.randn(4, 5, dtype=torch.float64)
    check_grad(lambda t: t.var(1), x)
    check_grad(lambda t: t.std(0, correction=0), x)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        torch.arange(3).to("tpu").var()


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3.5, -1])
def test_vector_norm(ord):
    a = sample((3, 4), torch.float32)
    a[0, 1] = 0
    ta = a.to("tpu")
    norm = torch.linalg.vector_norm
    assert_same(norm(ta, ord), norm(a, ord))
    assert_same(norm(ta, ord, dim=1), norm(a, ord, dim=1))
    assert_same(norm(ta, ord, dim=(0,), keepdim=True), norm(a, ord, dim=(0,), keepdim=True))


def test_vector_norm_dtype_nan_grad_and_errors():
    norm = torch.linalg.vector_norm
    a = torch.randn(3, 4)
    ta = a.to("tpu")
    assert_same(norm(ta, dtype=torch.float64), norm(a, dtype=torch.float64))
    out = torch.empty(0, device="tpu")
    norm(ta, 1, dim=0, out=out)
    assert_same(out, norm(a, 1, dim=0))
    n = torch.tensor([1.0, NAN, -2.0])
    for ord in (2, math.inf, -math.inf, 0):
        assert_same(norm(n.to("tpu"), ord), norm(n, ord), equal_nan=True)
    assert_same(ta.norm(), a.norm())
    x = torch.randn(3, 4, dtype=torch.float64)
    check_grad(lambda t: norm(t, dim=1), x)
    check_grad(lambda t: norm(t, 3, dim=0), x)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input"):
        norm(torch.arange(3).to("tpu"))
    with pytest.raises(RuntimeError, match="dtype should be floating point or complex"):
        norm(ta, dtype=torch.long)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        norm(torch.empty(0, 3, device="tpu"), math.inf)
    assert_same(norm(torch.empty(0, 3, device="tpu"), math.inf, dim=1), torch.empty(0))


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int64])
def test_logsumexp(dtype):
    a = sample((3, 4), dtype) * 30
    ta = a.to("tpu")
    assert_same(torch.logsumexp(ta, 1), torch.logsumexp(a, 1))
    assert_same(torch.logsumexp(ta, (0, 1), keepdim=True), torch.logsumexp(a, (0, 1), keepdim=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_logsumexp_rounds_each_step_like_the_cpu(dtype):
    # The CPU rounds exp's and the sum's results to the dtype (the sum accumulating in float32);
    # a float16 accumulation was 1-2 ulps off, and differed between an expanded input and its copy.
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        a = (torch.rand(2, 3, generator=g) * 4 - 1).to(dtype).unsqueeze(1).expand(-1, 5, -1)
        for dims in ((0, 1, 2), (1,), (0, 2)):
            expected = torch.logsumexp(a.contiguous(), dims)
            assert torch.equal(torch.logsumexp(a.to("tpu"), dims).cpu(), expected)
            assert torch.equal(torch.logsumexp(a.to("tpu").contiguous(), dims).cpu(), expected)


def test_logsumexp_infinities_grad_and_out():
    inf = math.inf
    a = torch.tensor([[-inf, -inf, -inf], [inf, 1.0, 2.0], [1000.0, 1000.0, -inf], [NAN, 0, 1]])
    # Fixed expectations (CPU kernels differ between machines on special values): all -inf gives
    # -inf, +inf gives inf, nan gives nan, large values do not overflow.
    rows = torch.tensor([-inf, inf, 1000 + math.log(2), NAN])
    columns = torch.tensor([NAN, 1000.0, 2 + math.log1p(math.exp(-1))])
    torch.testing.assert_close(torch.logsumexp(a.to("tpu"), 1).cpu(), rows, equal_nan=True)
    e = torch.empty(0, 3)
    assert_same(torch.logsumexp(e.to("tpu"), 0), torch.logsumexp(e, 0))
    out = torch.empty(0, device="tpu")
    torch.logsumexp(a.to("tpu"), 0, out=out)
    torch.testing.assert_close(out.cpu(), columns, equal_nan=True)
    check_grad(lambda t: torch.logsumexp(t, 1), torch.randn(3, 4, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [*FLOATS, torch.int64, torch.bool])
def test_cumsum_cumprod(dtype):
    a = sample((3, 5), dtype)
    ta = a.to("tpu")
    for op in (torch.cumsum, torch.cumprod):
        assert_same(op(ta, 1), op(a, 1))
        assert_same(op(ta, 0), op(a, 0))
        assert_same(op(ta, -1, dtype=torch.float64), op(a, -1, dtype=torch.float64))
    s = torch.tensor(3.0)
    assert_same(torch.cumsum(s.to("tpu"), 0), torch.cumsum(s, 0))
    e = torch.empty(0, 2)
    assert_same(torch.cumprod(e.to("tpu"), 0), torch.cumprod(e, 0))


def test_cumsum_in_place_out_nan_and_grad():
    a = torch.tensor([[1.0, NAN, 2.0], [0.5, 2.0, 4.0]])
    ta = a.to("tpu")
    ta.cumsum_(1)
    assert_same(ta, a.clone().cumsum_(1), equal_nan=True)
    out = torch.empty(0, device="tpu")
    torch.cumprod(a.to("tpu"), 0, out=out)
    assert_same(out, torch.cumprod(a, 0), equal_nan=True)
    check_grad(lambda t: t.cumsum(1), torch.randn(3, 4, dtype=torch.float64))
    long = torch.randn(2, 1000, dtype=torch.float64)
    assert_same(long.to("tpu").cumsum(1), long.cumsum(1))
    assert_same(
        torch.cumsum(torch.ones(1001, dtype=torch.int64).to("tpu"), 0), torch.arange(1, 1002)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.uint8])
def test_all_any(dtype):
    a = sample((3, 4), dtype) if dtype != torch.uint8 else torch.randint(0, 2, (3, 4)).byte()
    a[0] = 1
    ta = a.to("tpu")
    for op in (torch.all, torch.any):
        assert_same(op(ta), op(a))
        assert_same(op(ta, 1), op(a, 1))
        assert_same(op(ta, 0, keepdim=True), op(a, 0, keepdim=True))
        assert_same(op(ta, dim=(0, 1)), op(a, dim=(0, 1)))
        assert_same(op(ta, dim=()), op(a, dim=()))
        out = torch.empty(0, dtype=op(a).dtype, device="tpu")
        op(ta, 1, out=out)
        assert_same(out, op(a, 1))
    n = torch.tensor([NAN, 0.0])
    assert_same(n.to("tpu").all(), n.all())
    assert_same(torch.empty(0, device="tpu").all(), torch.empty(0).all())
    assert_same(torch.empty(0, device="tpu").any(), torch.empty(0).any())


def test_aminmax(counters):
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"keepdim": True}):
        got, expected = torch.aminmax(x.to("tpu"), **kwargs), torch.aminmax(x, **kwargs)
        assert_same(got.min, expected.min)
        assert_same(got.max, expected.max)
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="aminmax"):
        torch.aminmax(torch.empty(0, device="tpu"))


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8]
    + [torch.uint8, torch.bool],
)
def test_hash_tensor(dtype):
    x = sample((4, 5), dtype, seed=3)
    if dtype.is_floating_point:
        x[0, 0], x[1, 1] = -0.0, float("inf")
    for dims, keepdim in [((), False), ((1,), False), ((0,), True), ((0, 1), False)]:
        assert_same(
            torch.hash_tensor(x.to("tpu"), dims, keepdim=keepdim),
            torch.hash_tensor(x, dims, keepdim=keepdim),
        )
    out = torch.empty(0, dtype=torch.uint64, device="tpu")
    torch.hash_tensor(x.to("tpu"), 1, out=out)
    assert_same(out, torch.hash_tensor(x, 1))


def test_hash_tensor_known_values_and_errors():
    # 1.5 and 2.0 as f64 bit patterns xor to 0x7FF8000000000000; -1 as int8 is all ones.
    x = torch.tensor([[1.5, 2.0]], device="tpu")
    assert torch.hash_tensor(x).cpu().item() == 0x7FF8000000000000
    assert (
        torch.hash_tensor(torch.tensor([-1], dtype=torch.int8, device="tpu")).cpu().item()
        == 2**64 - 1
    )
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        torch.hash_tensor(x, mode=1)
    with pytest.raises(IndexError, match="reduction dim 0 to have non-zero size"):
        torch.hash_tensor(torch.ones(0, 3, device="tpu"), 0)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.hash_tensor(torch.ones(0, device="tpu"))
    with pytest.raises(NotImplementedError, match="xor_sum_cpu"):
        torch.hash_tensor(torch.ones(2, dtype=torch.complex64, device="tpu"))
    with pytest.raises(RuntimeError, match="dtype uint64, but got Long"):
        torch.hash_tensor(x, 0, out=torch.empty(1, dtype=torch.int64, device="tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize(
    "p, dim, maxnorm", [(2, 0, 1.0), (1, 1, 2.5), (3.5, -1, 0.5), (2, 0, 100.0)]
)
def test_renorm(dtype, p, dim, maxnorm):
    x = torch.randn(4, 3, 5, generator=torch.Generator().manual_seed(5)).to(dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(
        torch.renorm(x.to("tpu"), p, dim, maxnorm).cpu(), torch.renorm(x, p, dim, maxnorm), **tol
    )
    y = x.to("tpu")
    y.renorm_(p, dim, maxnorm)
    torch.testing.assert_close(y.cpu(), torch.renorm(x, p, dim, maxnorm), **tol)


def test_renorm_grad_out_and_errors():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(6), requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.renorm(x, 2, 1, 0.8).pow(2).sum().backward()
    torch.renorm(xt, 2, 1, 0.8).pow(2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)
    out = torch.empty(0, device="tpu")
    torch.renorm(xt.detach(), 2, 0, 1.0, out=out)
    torch.testing.assert_close(out.cpu(), torch.renorm(x.detach(), 2, 0, 1.0))
    t = torch.ones(3, 2, device="tpu")
    with pytest.raises(RuntimeError, match="non-positive-norm not supported"):
        torch.renorm(t, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="expected maxnorm to be >= 0 but got -1"):
        torch.renorm(t, 2, 0, -1.0)
    with pytest.raises(RuntimeError, match="needs at least 2 dimensions, got 1 dimensions"):
        torch.renorm(torch.ones(3, device="tpu"), 2, 0, 1.0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.renorm(t, 2, 5, 1.0)
    with pytest.raises(
        RuntimeError, match="Expected out tensor to have dtype float, but got double"
    ):
        torch.renorm(t, 2, 0, 1.0, out=torch.empty(0, dtype=torch.float64, device="tpu"))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_and_gradient(reduce, initial):
    data = torch.tensor([[1.0, 0.0], [3.0, 0.0], [3.0, 2.0], [-1.0, 5.0], [0.5, 0.0], [4.0, 1.0]])
    data[1, 1] = 2.0  # ties in a segment's max, zeros in its product
    lengths = torch.tensor([2, 0, 3, 1])
    offsets = torch.tensor([0, 2, 2, 5, 6])
    w = torch.tensor([[1.0, -2.0], [0.5, 3.0], [-1.0, 2.0], [2.0, 1.0]])
    for kw in [
        {"lengths": lengths},
        {"offsets": offsets},
        {"lengths": torch.tensor([2, 0, 3]), "unsafe": True},
    ]:
        x = data.clone().requires_grad_()
        xt = data.to("tpu").requires_grad_()
        want = torch.segment_reduce(x, reduce, initial=initial, **kw)
        got = torch.segment_reduce(
            xt,
            reduce,
            initial=initial,
            **{k: v.to("tpu") if isinstance(v, torch.Tensor) else v for k, v in kw.items()},
        )
        assert_same(got, want.detach(), equal_nan=True)
        (want * w[: want.shape[0]]).sum().backward()
        (got * w[: want.shape[0]].to("tpu")).sum().backward()
        assert_same(xt.grad, x.grad, equal_nan=True)


def test_segment_reduce_errors():
    d = torch.randn(5, 3, device="tpu")
    with pytest.raises(RuntimeError, match="sum to data.size"):
        torch.segment_reduce(d, "sum", lengths=torch.tensor([2, 2], device="tpu"))
    with pytest.raises(RuntimeError, match="lengths contains negative value"):
        torch.segment_reduce(d, "sum", lengths=torch.tensor([6, -1], device="tpu"))
    with pytest.raises(
        RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"
    ):
        torch.segment_reduce(d, "foo", lengths=torch.tensor([5], device="tpu"))
    with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
        torch.segment_reduce(d, "sum")
    with pytest.raises(
        RuntimeError, match="Expected axis to be the last dimension of lengths but got 1"
    ):
        torch.segment_reduce(d, "sum", lengths=torch.tensor([3], device="tpu"), axis=1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.segment_reduce(d.long(), "sum", lengths=torch.tensor([5], device="tpu"))


def _error(fn, device):
    try:
        fn(device)
    except (RuntimeError, IndexError) as e:  # NotImplementedError included
        return type(e), str(e).splitlines()[0]
    return None


X55 = torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
ERROR_CASES = {
    "amax complex": lambda d: torch.amax(torch.ones(3, dtype=torch.complex64, device=d)),
    "min complex": lambda d: torch.min(torch.ones(3, dtype=torch.complex64, device=d)),
    "max.dim complex": lambda d: torch.max(torch.ones(3, dtype=torch.complex64, device=d), 0),
    "argmin complex": lambda d: torch.argmin(torch.ones(3, dtype=torch.complex64, device=d)),
    "aminmax complex": lambda d: torch.aminmax(torch.ones(3, dtype=torch.complex128, device=d)),
    "aminmax complex 0-dim": lambda d: torch.aminmax(
        torch.tensor(1.0, dtype=torch.complex64, device=d), dim=0
    ),
    "amax empty slice": lambda d: torch.amax(torch.empty(0, 3, device=d), dim=0),
    "amax empty slice, negative dim": lambda d: torch.amax(torch.empty(0, 3, device=d), dim=-2),
    "hash_tensor empty slice": lambda d: torch.hash_tensor(torch.empty(0, 3, device=d), dim=-2),
    "amin of nothing": lambda d: torch.amin(torch.empty(0, device=d)),
    "aminmax empty slice": lambda d: torch.aminmax(torch.empty(0, 3, device=d), dim=0),
    "all out int": lambda d: torch.all(X55.to(d), out=torch.empty((), dtype=torch.int32, device=d)),
    "any out float": lambda d: torch.any(X55.to(d), 0, out=torch.empty(5, device=d)),
    "max out values": lambda d: torch.max(X55.to(d), 0, out=(torch.empty(5, dtype=torch.int, device=d),
                                                                torch.empty(5, dtype=torch.long, device=d))),
    "min out indices": lambda d: torch.min(X55.to(d), 0, out=(torch.empty(5, device=d),
                                                                 torch.empty(5, dtype=torch.double, device=d))),
    "amax out": lambda d: torch.amax(X55.to(d), 0, out=torch.empty(5, dtype=torch.int, device=d)),
    "aminmax out": lambda d: torch.aminmax(X55.to(d), dim=0, out=(torch.empty(5, dtype=torch.int, device=d),
                                                                     torch.empty(5, device=d))),
    "mode out values": lambda d: torch.mode(torch.ones(10, dtype=torch.uint8, device=d), -1, True,
                                            out=(torch.ones(10, dtype=torch.int8, device=d),
                                                 torch.ones(10, dtype=torch.long, device=d))),
    "mode out indices": lambda d: torch.mode(torch.ones(10, device=d), -1, True,
                                             out=(torch.ones(10, device=d),
                                                  torch.ones(10, dtype=torch.float64, device=d))),
}  # fmt: skip


@pytest.mark.parametrize("case", ERROR_CASES)
def test_reduction_errors_are_the_cpus(case):
    # The exception type and message the CPU gives (upstream test_reductions checks several).
    expected = _error(ERROR_CASES[case], "cpu")
    assert expected is not None
    assert _error(ERROR_CASES[case], "tpu") == expected


def test_all_any_into_uint8_out():
    x = X55 > 0
    out = torch.empty(5, dtype=torch.uint8, device="tpu")
    torch.all(x.to("tpu"), 0, out=out)
    assert_same(out, torch.all(x, 0, out=torch.empty(5, dtype=torch.uint8)))
