"""More elementwise ops against CPU PyTorch: division modes, remainder, pow, clamp, lerp, addc*,
logical ops, rounding, inverse and hyperbolic math, erf/erfinv, fmax/fmin, and dtype casts."""

import math

import pytest
import torch
from conftest import assert_same

import torch_pjrt

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
NAN, INF = float("nan"), float("inf")


def sample(shape, dtype, seed=0, low=-9, high=10):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3).to(dtype)
    if dtype == torch.uint8:
        low = 0
    return torch.randint(low, high, shape, generator=g).to(dtype)


def nonzero(t):
    return torch.where(t == 0, torch.ones_like(t), t)


pytestmark = pytest.mark.usefixtures("no_fallback")


def check(fn, *args, **kw):
    tol = kw.pop("tol", {})
    expected = fn(*args, **kw)
    got = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], **kw)
    assert got.dtype == expected.dtype
    assert_same(got, expected, equal_nan=True, **tol)


DIVISION_OPS = [
    torch.remainder,
    torch.fmod,
    torch.floor_divide,
    lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    lambda a, b: torch.div(a, b, rounding_mode="floor"),
]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.int64, torch.uint8]
)
@pytest.mark.parametrize("op", DIVISION_OPS)
def test_division_family_signs(op, dtype):
    a, b = sample((4, 6), dtype), nonzero(sample((6,), dtype, seed=1, low=-4, high=5))
    check(op, a, b)
    check(op, a, 3)
    if dtype != torch.uint8:
        check(op, a, -3)


@pytest.mark.parametrize("op", DIVISION_OPS)
def test_division_family_special_values(op):
    a = torch.tensor([-7.0, 7.0, -0.0, 5.5, INF, -INF, NAN, 1.0, -1.0])
    b = torch.tensor([2.0, -2.0, 2.0, 0.0, 3.0, 2.0, 1.0, INF, INF])
    check(op, a, b)
    check(op, a.double(), b.double())


def test_division_in_place_out_and_scalar_forms():
    a, b = sample((3, 4), torch.int64), nonzero(sample((3, 4), torch.int64, 1))
    ta, tb = a.to("tpu"), b.to("tpu")
    assert_same(torch.remainder(5, tb), torch.remainder(5, b))
    assert_same(ta % -4, a % -4)
    out = torch.empty(0, dtype=torch.int64, device="tpu")
    torch.div(ta, tb, rounding_mode="floor", out=out)
    assert_same(out, torch.div(a, b, rounding_mode="floor"))
    for name in ("remainder_", "fmod_", "floor_divide_"):
        x = ta.clone()
        getattr(x, name)(tb)
        assert_same(x, getattr(a.clone(), name)(b))
    x = ta.clone().float()
    x.div_(tb, rounding_mode="trunc")
    assert_same(x, a.float().div_(b, rounding_mode="trunc"))
    with pytest.raises(RuntimeError, match="div expected rounding_mode"):
        torch.div(ta, tb, rounding_mode="round")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_pow(dtype):
    a = sample((3, 5), dtype, low=-4, high=5)
    e = sample((3, 5), dtype, seed=1, low=0, high=6).abs() if not dtype.is_floating_point else None
    if dtype.is_floating_point:
        check(torch.pow, a.abs(), sample((3, 5), dtype, 1))
        check(torch.pow, a, 2.0)
        check(torch.pow, a, 3)
        check(torch.pow, a.abs(), 0.5)
        check(torch.pow, 2.0, a)
    else:
        check(torch.pow, a, e)
        check(torch.pow, a, 3)
        check(torch.pow, a, 2.5)
        check(torch.pow, 3, e)
    exact = torch.tensor([3, -3, 7, 2], dtype=torch.int64)
    check(torch.pow, exact, torch.tensor([20, 21, 22, 62]))
    check(torch.pow, torch.tensor([1, -1, 2, 0]), torch.tensor([-3, -3, -1, 0]))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.pow(exact.to("tpu"), -1)
    t = a.to("tpu").clone().double()
    t.pow_(2)
    assert_same(t, a.double() ** 2)


def test_atan2_fmax_fmin():
    a = torch.tensor([1.0, -1.0, 0.0, -0.0, NAN, 2.0, INF, -INF])
    b = torch.tensor([0.0, 0.0, -1.0, -1.0, 1.0, NAN, INF, 2.0])
    for op in (torch.fmax, torch.fmin):  # exact operations: the CPU is a fixed reference here
        check(op, a, b)
    # atan2 is an approximation whose CPU kernels differ between machines on infinities: C99's
    # values (Python's math.atan2) instead.
    expected = torch.tensor([math.atan2(y, x) for y, x in zip(a.tolist(), b.tolist())])
    torch.testing.assert_close(
        torch.atan2(a.to("tpu"), b.to("tpu")).cpu(), expected, equal_nan=True
    )
    check(torch.atan2, torch.tensor([1, -2, 3]), torch.tensor([2, 2, -1]))
    check(torch.fmax, torch.tensor([1, -2, 3]), torch.tensor([2, 2, -1]))
    check(torch.fmin, a.half(), b.half())


def test_clamp_family():
    x = torch.tensor([1.0, NAN, -2.0, 5.0, INF, -INF])
    check(torch.clamp, x, -1.5, 2.0)
    check(torch.clamp, x, 3.0, 1.0)
    check(torch.clamp, x, min=0.5)
    check(torch.clamp, x, max=0.5)
    check(torch.clamp, x, min=NAN)
    lo, hi = torch.tensor([NAN, 0, 0, 0, 0, 0]), torch.tensor([3.0, 3, NAN, 3, 3, 3])
    check(torch.clamp, x, lo, hi)
    check(torch.clamp, x, None, hi)
    check(torch.clamp_min, x, lo)
    check(torch.clamp_max, x, 1.0)
    i = torch.arange(-5, 5)
    check(torch.clamp, i, -2, 3)
    check(torch.clamp, i, 0.5)  # promotes to float
    check(torch.clamp, i.to(torch.uint8), 2, 4)
    t = x.to("tpu")
    t.clamp_(min=-1.0, max=1.0)
    assert_same(t, x.clone().clamp_(min=-1.0, max=1.0), equal_nan=True)
    out = torch.empty(0, device="tpu")
    torch.clamp(x.to("tpu"), lo.to("tpu"), out=out)
    assert_same(out, torch.clamp(x, lo), equal_nan=True)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        torch.clamp(x.to("tpu"))


def test_lerp_addcmul_addcdiv():
    a, b, w = sample((3, 4), torch.float32), sample((3, 4), torch.float32, 1), torch.rand(3, 4)
    check(torch.lerp, a, b, 0.3)
    check(torch.lerp, a, b, 0.8)
    check(torch.lerp, a, b, w)
    check(torch.lerp, a.double(), b.double(), 1.0)
    check(torch.addcmul, a, b, w, value=0.5)
    check(torch.addcdiv, a, b, w + 0.5, value=-2)
    ia, ib = sample((4,), torch.int64), sample((4,), torch.int64, 1)
    check(torch.addcmul, ia, ib, ib, value=3)
    check(torch.addcdiv, a[0], ia, w[0] + 0.5)
    t = a.to("tpu")
    t.lerp_(b.to("tpu"), 0.25)
    assert_same(t, a.clone().lerp_(b, 0.25))
    t.addcmul_(b.to("tpu"), w.to("tpu"), value=2)
    assert_same(t, a.clone().lerp_(b, 0.25).addcmul_(b, w, value=2))
    with pytest.raises(RuntimeError, match="expected dtype float for `end`"):
        torch.lerp(a.to("tpu"), b.double().to("tpu"), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(ia.to("tpu"), ia.to("tpu"), ib.to("tpu"))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float32, torch.uint8])
def test_logical_and_bitwise_not(dtype):
    a = sample((5, 3), dtype) if dtype != torch.bool else sample((5, 3), torch.int64) > 0
    b = sample((3,), dtype, 1) if dtype != torch.bool else sample((3,), torch.int64, 1) > 0
    for op in (torch.logical_and, torch.logical_or, torch.logical_xor):
        check(op, a, b)
    check(torch.logical_not, a)
    if not dtype.is_floating_point:
        check(torch.bitwise_not, a)
    t = a.to("tpu").clone()
    t.logical_or_(b.to("tpu"))
    assert_same(t, a.clone().logical_or_(b))
    check(torch.logical_and, torch.tensor([NAN, 0.0, 1.0]), torch.tensor([1, 1, 0]))


def test_predicates_and_nan_to_num():
    x = torch.tensor([NAN, INF, -INF, -0.0, 0.0, -2.5, 3.0])
    for dtype in FLOATS:
        check(torch.isnan, x.to(dtype))
        check(torch.isinf, x.to(dtype))
        check(torch.signbit, x.to(dtype))
        check(torch.nan_to_num, x.to(dtype))
        check(torch.nan_to_num, x.to(dtype), nan=1.0, posinf=2.0, neginf=-3.0)
    check(torch.isnan, torch.arange(3))
    check(torch.signbit, torch.arange(-2, 3))
    check(torch.signbit, torch.arange(3, dtype=torch.uint8))
    check(torch.nan_to_num, torch.arange(3))
    t = x.to("tpu")
    t.nan_to_num_(nan=7.0)
    assert_same(t, x.clone().nan_to_num_(nan=7.0))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8, torch.bool])
def test_sign_trunc_round(dtype):
    if dtype == torch.bool:
        x = torch.tensor([True, False])
    elif dtype.is_floating_point:
        x = torch.tensor([NAN, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7, INF, -INF]).to(dtype)
    else:
        x = sample((6,), dtype)
    for op in (torch.sign, torch.sgn):
        check(op, x)
    if dtype != torch.bool:
        check(torch.trunc, x)
        check(torch.round, x)
    if dtype.is_floating_point:
        check(torch.frac, x)
        check(torch.round, x * 13.37, decimals=1)
        check(torch.round, x * 133.7, decimals=-1)


def test_round_decimals_and_errors():
    x = torch.tensor([1.2345, -2.5551, 1234.5, 0.05])
    check(torch.round, x, decimals=2)
    check(torch.round, x.double(), decimals=3)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.frac(torch.arange(3).to("tpu"))
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        torch.bitwise_not(torch.ones(2, device="tpu"))


def _erfinv(y):
    """erfinv in double by Newton's method on math.erf; ValueError outside (-1, 1)."""
    if not abs(y) < 1:
        raise ValueError(y)
    x = 0.0
    for _ in range(60):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


# Reference values in double from Python's math (C99 Annex F special cases): PyTorch's CPU kernels
# differ between machines on special values (vectorized paths), so those inputs are checked
# against these fixed values instead. Poles give a signed inf, overflow inf, domain errors nan.
UNARY = {
    torch.reciprocal: lambda x: math.copysign(INF, x) if x == 0 else 1 / x,
    torch.expm1: lambda x: INF if x > 710 else math.expm1(x),
    torch.log1p: lambda x: -INF if x == -1 else math.log1p(x),
    torch.log2: lambda x: -INF if x == 0 else math.log2(x),
    torch.log10: lambda x: -INF if x == 0 else math.log10(x),
    torch.exp2: lambda x: INF if x > 1024 else 2.0**x,
    torch.tan: math.tan,
    torch.asin: math.asin,
    torch.acos: math.acos,
    torch.atan: math.atan,
    torch.sinh: lambda x: math.copysign(INF, x) if abs(x) > 711 else math.sinh(x),
    torch.cosh: lambda x: INF if abs(x) > 711 else math.cosh(x),
    torch.asinh: math.asinh,
    torch.acosh: math.acosh,
    torch.atanh: lambda x: math.copysign(INF, x) if abs(x) == 1 else math.atanh(x),
    torch.erf: math.erf,
    torch.erfinv: lambda x: math.copysign(INF, x) if abs(x) == 1 else _erfinv(x),
}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-6, 3e9, -3e9, 100.0, NAN, INF, -INF]


def reference(op, values, dtype):
    def one(x):
        try:
            return UNARY[op](x)
        except ValueError:  # outside the domain, or nan
            return NAN

    # Each input as the dtype holds it, the result rounded once to the dtype.
    inputs = torch.tensor(values, dtype=torch.float64).to(dtype).double().tolist()
    return torch.tensor([one(x) for x in inputs], dtype=torch.float64).to(dtype)


def check_special(op, dtype, values=SPECIAL, **tol):
    x = torch.tensor(values, dtype=torch.float64).to(dtype)
    got = op(x.to("tpu")).cpu()
    torch.testing.assert_close(got, reference(op, values, dtype), equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", UNARY, ids=lambda f: f.__name__)
def test_unary_math(op, dtype):
    x = torch.cat([torch.linspace(-1.2, 1.2, 25), torch.linspace(-30, 30, 13)])
    check(op, x.to(dtype))
    check_special(op, dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_unary_math_half(dtype):
    x = torch.linspace(-0.99, 0.99, 25)
    tol = {"rtol": 1e-2, "atol": 1e-3}
    for op in (
        torch.erf,
        torch.erfinv,
        torch.sinh,
        torch.acos,
        torch.log2,
        torch.atanh,
        torch.exp2,
    ):
        check(op, x.to(dtype), tol=tol)
        check_special(op, dtype, [0.0, 1.0, -1.0, NAN, INF], **tol)


@pytest.mark.parametrize("op", [torch.erf, torch.sinh, torch.asin, torch.log2, torch.reciprocal])
def test_unary_math_ints_in_place_out_and_empty(op):
    check(op, torch.arange(-3, 4))
    check(op, torch.tensor(0.5))
    check(op, torch.empty(0, 3))
    x = torch.rand(4, 3) * 0.9
    out = torch.empty(0, device="tpu")
    op(x.to("tpu"), out=out)
    assert_same(out, op(x))
    t = x.to("tpu")
    getattr(t, op.__name__ + "_")()
    assert_same(t, getattr(x.clone(), op.__name__ + "_")())


def test_non_contiguous_and_broadcast_operands():
    a = sample((4, 6), torch.float32).t()
    b = sample((4,), torch.float32, 1)
    check(torch.remainder, a, b)
    check(torch.atan2, a, b)
    check(lambda x: torch.sinh(x[::2]), a)


def test_autograd_matches_cpu():
    torch.manual_seed(0)
    fns = [
        lambda x, y: torch.pow(x.abs() + 0.5, y),
        lambda x, y: torch.lerp(x, y, 0.3),
        lambda x, y: torch.addcdiv(x, y, y.abs() + 1),
        lambda x, y: torch.clamp(x, -0.5, 0.5) * y,
        lambda x, y: torch.fmod(x, y.abs() + 1) + torch.remainder(x, 1.5),
        lambda x, y: torch.sinh(x) + torch.cosh(y) + torch.asinh(x) + torch.atan(y),
        lambda x, y: (
            torch.erf(x) + torch.erfinv(torch.tanh(y)) + torch.expm1(x) + torch.log1p(y.abs())
        ),
        lambda x, y: torch.asin(torch.tanh(x)) + torch.acos(torch.tanh(y)) + torch.atanh(x * 0.3),
        lambda x, y: (
            torch.log2(x.abs() + 1) + torch.log10(y.abs() + 1) + torch.exp2(x) + torch.tan(y)
        ),
        lambda x, y: torch.acosh(x.abs() + 1.5) + torch.reciprocal(y.abs() + 1) + torch.frac(x),
    ]
    for fn in fns:
        x, y = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
        xc, yc = x.clone().requires_grad_(), y.clone().requires_grad_()
        xt, yt = x.to("tpu").requires_grad_(), y.to("tpu").requires_grad_()
        fn(xc, yc).sum().backward()
        fn(xt, yt).sum().backward()
        assert_same(xt.grad, xc.grad)
        assert_same(yt.grad, yc.grad)


def test_autograd_through_masked_fill():
    # atan2, fmax and fmin backward use masked_fill_, which another op family lowers.
    for fn in (torch.atan2, lambda x, y: torch.fmax(x, y) + torch.fmin(x, y)):
        x, y = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
        xc, yc = x.clone().requires_grad_(), y.clone().requires_grad_()
        xt, yt = x.to("tpu").requires_grad_(), y.to("tpu").requires_grad_()
        fn(xc, yc).sum().backward()
        fn(xt, yt).sum().backward()
        assert_same(xt.grad, xc.grad)
        assert_same(yt.grad, yc.grad)
    torch_pjrt.metrics.reset()


ALL_DTYPES = FLOATS + INTS + [torch.bool]


@pytest.mark.parametrize("src", ALL_DTYPES)
def test_dtype_casts(src):
    x = torch.tensor([0.0, 1.0, -1.0, 2.5, -2.5, 100.7, 127.0, 0.4])
    x = x.abs() if src == torch.uint8 else x
    x = x.to(src)
    t = x.to("tpu")
    for dst in ALL_DTYPES:
        if dst == torch.uint8 and src != torch.uint8 and src != torch.bool:
            y = x.abs()
            assert_same(y.to("tpu").to(dst), y.to(dst))
            continue
        assert_same(t.to(dst), x.to(dst))


def test_fmax_fmin_of_bool_are_or_and():
    x = torch.tensor([True, False, True, False])
    y = torch.tensor([False, False, True, True])
    for fn in (torch.fmax, torch.fmin):
        got = fn(x.to("tpu"), y.to("tpu"))
        assert got.dtype == torch.bool and torch.equal(got.cpu(), fn(x, y))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_atan_of_large_arrays(dtype):
    """XLA:CPU's atan2(x, 1) was wrong from about 100 elements on (0 for most of them): atan must
    match math.atan over a large array, huge arguments and signed zeros included."""
    values = torch.linspace(-10, 10, 2001, dtype=torch.float64).tolist() + [1e9, -1e30, 0.0, -0.0]
    x = torch.tensor(values, dtype=dtype)
    got = torch.atan(x.to("tpu")).cpu()
    expected = torch.tensor([math.atan(v) for v in x.tolist()], dtype=dtype)
    torch.testing.assert_close(got, expected)
    assert torch.equal(torch.signbit(got[-2:]), torch.tensor([False, True]))


@pytest.mark.parametrize("name", ["neg", "floor", "ceil", "trunc", "round", "abs", "sign", "sgn"])
def test_type_keeping_unary_ops_require_out_of_their_dtype(name):
    fn = getattr(torch, name)
    for device in ("cpu", "tpu"):  # the same error as CPU PyTorch
        t = torch.tensor([1.5], dtype=torch.float64, device=device)
        with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
            fn(t, out=torch.empty(0, device=device))
    out = torch.empty(0, dtype=torch.float64, device="tpu")
    fn(torch.tensor([-1.5], dtype=torch.float64, device="tpu"), out=out)
    assert torch.equal(out.cpu(), fn(torch.tensor([-1.5], dtype=torch.float64)))


def test_sgn_gradient_is_zero_on_the_device():
    # sgn's derivative is autograd's efficient zero tensor (_efficientzerotensor): made on "tpu".
    x = torch.randn(5, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.sgn(xt).sum().backward()
    assert xt.grad.device.type == "tpu"
    assert_same(xt.grad, torch.zeros(5))
