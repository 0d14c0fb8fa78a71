"""Elementwise math beyond the basics against CPU PyTorch: copysign, hypot, logaddexp(2),
xlogy/xlog1py, heaviside, sinc, logit, erfc and the bit shifts; special values against fixed
expected values (CPU kernels differ between machines there)."""

import pytest
import torch
from conftest import assert_same


FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
NAN, INF = float("nan"), float("inf")


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3).to(dtype)
    low = 0 if dtype in (torch.uint8, torch.bool) else -9
    high = 2 if dtype == torch.bool else 10
    return torch.randint(low, high, shape, generator=g).to(dtype)


pytestmark = pytest.mark.usefixtures("no_fallback")


def check(fn, *args, **kw):
    expected = fn(*args, **kw)
    got = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], **kw)
    assert got.dtype == expected.dtype
    # float16/bfloat16: the device computes in float32 and rounds once; CPU kernels may round
    # intermediate results (logit's x / (1 - x)).
    half = got.dtype in (torch.float16, torch.bfloat16)
    assert_same(got, expected, equal_nan=True, **({"rtol": 3e-2, "atol": 1e-2} if half else {}))


def check_values(fn, args, expected, dtype=torch.float32):
    got = fn(*[torch.tensor(a, dtype=dtype, device="tpu") for a in args])
    torch.testing.assert_close(got.cpu(), torch.tensor(expected, dtype=got.dtype), equal_nan=True)


BINARY = [torch.copysign, torch.hypot, torch.logaddexp, torch.logaddexp2, torch.xlogy,
          torch.special.xlog1py]  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_float_ops(op, dtype):
    a, b = sample((5, 6), dtype), sample((6,), dtype, seed=1)
    if op is torch.special.xlog1py:
        b = b.abs() - 0.5
    check(op, a, b)
    check(op, a, b.abs() + 0.5)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.bool])
def test_integer_operands_promote_to_float(dtype):
    a, b = sample((4, 5), dtype), sample((4, 5), dtype, seed=1)
    for op in (torch.copysign, torch.xlogy, torch.special.xlog1py):
        check(op, a, b)
    for op in (torch.hypot, torch.logaddexp, torch.logaddexp2):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            op(a.to("tpu"), b.to("tpu"))


def test_binary_special_values():
    check_values(torch.copysign, ([1.0, 2.0, NAN, 3.0, -4.0], [-0.0, NAN, -1.0, INF, 0.0]),
                 [-1.0, 2.0, NAN, 3.0, 4.0])  # fmt: skip
    got = torch.copysign(torch.tensor([0.0], device="tpu"), torch.tensor([-1.0], device="tpu"))
    assert torch.signbit(got.cpu()).item()
    check_values(torch.hypot, ([INF, NAN, 3e30, 0.0, -3.0], [NAN, 1.0, 4e30, 0.0, 4.0]),
                 [INF, NAN, 5e30, 0.0, 5.0])  # fmt: skip
    check_values(torch.logaddexp, ([INF, -INF, -INF, 0.0, NAN], [INF, -INF, 1.0, 0.0, 1.0]),
                 [INF, -INF, 1.0, 0.6931471805599453, NAN])  # fmt: skip
    check_values(torch.logaddexp2, ([INF, -INF, 1.0], [INF, -INF, 1.0]), [INF, -INF, 2.0])
    check_values(torch.xlogy, ([0.0, 0.0, 0.0, 2.0, 1.0], [NAN, 0.0, -1.0, 0.0, INF]),
                 [NAN, 0.0, 0.0, -INF, INF])  # fmt: skip
    check_values(torch.special.xlog1py, ([0.0, 0.0, 3.0], [NAN, -1.0, -1.0]), [NAN, 0.0, -INF])


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.uint8, torch.bool])
def test_heaviside(dtype):
    a = sample((3, 7), dtype)
    a[0, :3] = 0
    values = sample((7,), dtype, seed=2)
    check(torch.heaviside, a, values)
    with pytest.raises(RuntimeError, match="different dtypes"):
        torch.heaviside(a.to("tpu"), values.to("tpu").to(torch.float64 if dtype != torch.float64 else torch.float32))  # fmt: skip


def test_heaviside_out_dtype_checked_first():
    # The CPU's meta function checks out='s dtype before casting: its message, not a cast error.
    a = torch.tensor([-1.5, 0.0, 2.0])
    for out_dtype in (torch.int64, torch.float64, torch.complex64):
        msg = "complex tensors" if out_dtype.is_complex else "different dtypes"
        for device in ("cpu", "tpu"):
            x = a.to(device)
            with pytest.raises(RuntimeError, match=msg):
                torch.heaviside(x, x, out=torch.empty(3, dtype=out_dtype, device=device))


def test_heaviside_nan_is_zero():
    check_values(
        torch.heaviside, ([NAN, 0.0, -2.0, 2.0], [5.0, 5.0, 5.0, 5.0]), [0.0, 5.0, 0.0, 1.0]
    )


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.bool])
def test_sinc_logit_erfc(dtype):
    a = sample((4, 6), dtype)
    check(torch.sinc, a)
    check(torch.special.erfc, a)
    if dtype.is_floating_point:
        p = torch.rand((4, 6), generator=torch.Generator().manual_seed(3)).to(dtype)
        check(torch.logit, p)
        check(torch.logit, a, 0.2)
    else:
        check(torch.logit, a)


def test_sinc_logit_erfc_special_values():
    check_values(torch.sinc, ([0.0, 1.0, 0.5, INF, NAN], ), [1.0, 0.0, 0.6366197723675814, NAN, NAN])  # fmt: skip
    got = torch.logit(torch.tensor([0.0, 1.0, 0.5, -1.0, 0.25], device="tpu"), eps=0.25)
    torch.testing.assert_close(got.cpu(), torch.tensor([-1.0986123, 1.0986123, 0.0, -1.0986123, -1.0986123]))  # fmt: skip
    check_values(torch.logit, ([0.0, 1.0, 2.0],), [-INF, INF, NAN])
    # erfc keeps full relative precision far into the tail, where 1 - erf(x) would round to 0.
    x = [-INF, -1.0, 0.0, 0.5, 3.0, 5.0, 9.0, INF]
    e = [2.0, 1.8427007929497148, 1.0, 0.4795001221869535, 2.209049699858544e-05,
         1.5374597944280349e-12, 4.1370317465138102e-37, 0.0]  # fmt: skip
    check_values(torch.special.erfc, (x,), e, dtype=torch.float64)
    check_values(torch.special.erfc, (x,), e, dtype=torch.float32)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_shifts(dtype):
    bits = torch.iinfo(dtype).bits
    a = sample((3, 8), dtype)
    low = 0 if dtype == torch.uint8 else -2
    shift = torch.arange(low, low + 8).to(dtype)
    shift[-1] = bits - 1
    check(torch.bitwise_left_shift, a, shift)
    check(torch.bitwise_right_shift, a, shift)
    check(lambda x, y: x << y, a, shift)
    check(lambda x, y: x >> y, a, shift)
    check(lambda x: x << 3, a)
    check(lambda x: x >> 2, a)
    # Shifts by the width or more: PyTorch gives 0 (left) or the sign fill (right).
    check(lambda x: x << bits, a)
    check(lambda x: x >> bits, a)
    t = a.to("tpu")
    t <<= 1
    assert_same(t, a << 1)
    t >>= shift.to("tpu")
    assert_same(t, (a << 1) >> shift)
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.bitwise_left_shift(a.to("tpu"), shift.to("tpu"), out=out)
    assert_same(out, torch.bitwise_left_shift(a, shift))
    with pytest.raises(NotImplementedError, match="lshift_cpu"):
        torch.ones(2, dtype=torch.bool, device="tpu") << torch.ones(2, dtype=torch.bool, device="tpu")  # fmt: skip


def test_in_place_and_out_forms():
    a, b = sample((3, 4), torch.float32), sample((3, 4), torch.float32, seed=1)
    for name in ("copysign", "hypot", "xlogy", "heaviside"):
        t = a.to("tpu")
        getattr(t, name + "_")(b.to("tpu"))
        assert_same(t, getattr(torch, name)(a, b), equal_nan=True)
        out = torch.empty(0, device="tpu")
        getattr(torch, name)(a.to("tpu"), b.to("tpu"), out=out)
        assert_same(out, getattr(torch, name)(a, b), equal_nan=True)
    for name in ("sinc", "erfc", "logit"):
        t = a.sigmoid().to("tpu")
        getattr(t, name + "_")()
        assert_same(t, getattr(torch, name)(a.sigmoid()))


def test_autograd_matches_cpu():
    a, b = sample((3, 4), torch.float32), sample((3, 4), torch.float32, seed=1).abs() + 0.1
    for op in (torch.hypot, torch.logaddexp, torch.xlogy, torch.copysign):
        grads = []
        for device in ("cpu", "tpu"):
            x = a.to(device).detach().requires_grad_()
            y = b.to(device).detach().requires_grad_()
            op(x, y).sum().backward()
            grads.append((x.grad.cpu(), y.grad.cpu()))
        torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
def test_lgamma_digamma(dtype):
    a = sample((5, 8), dtype)
    if dtype.is_floating_point:
        a = torch.where(a == a.round(), a + 0.25, a)  # away from the poles
    check(torch.lgamma, a)
    check(torch.digamma, a)
    big = torch.tensor([30.5, 171.2, 1e4, 0.001], dtype=torch.float64)
    check(torch.lgamma, big)
    check(torch.digamma, big)


def test_lgamma_digamma_special_values():
    x = [0.0, -0.0, -3.0, 1.0, 2.0, INF, -INF, NAN, 0.5]
    check_values(torch.lgamma, (x,), [INF, INF, INF, 0.0, 0.0, INF, INF, NAN, 0.5723649429247001],
                 dtype=torch.float64)  # fmt: skip
    check_values(torch.digamma, (x,), [-INF, INF, NAN, -0.5772156649015329, 0.42278433509846713,
                                       INF, NAN, NAN, -1.9635100260214235], dtype=torch.float64)  # fmt: skip


def test_rsub_clamp_bool_and_unsigned_abs():
    a, b = sample((3, 4), torch.int64), sample((3, 4), torch.int64, seed=1)
    check(lambda x, y: torch.rsub(x, y, alpha=3), a, b)
    check(lambda x: torch.rsub(x, 2.5), a)
    flags, bound = sample((6,), torch.bool), sample((6,), torch.bool, seed=1)
    check(torch.clamp, flags, bound, None)
    check(lambda x, y: torch.clamp(x, max=y), flags, bound)
    with pytest.raises(NotImplementedError, match="clamp_min_scalar_cpu"):
        torch.clamp_min(flags.to("tpu"), False)
    check(torch.abs, sample((5,), torch.uint8))


@pytest.mark.parametrize("eps", [None, 0.2])
def test_logit_backward(eps):
    x = torch.tensor([0.1, 0.15, 0.5, 0.9, 0.3])
    grads = []
    for device in ("cpu", "tpu"):
        t = x.to(device).detach().requires_grad_()
        torch.logit(t, eps).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def test_inplace_shift_checks_overlap_before_dtype():
    # x[:-1] <<= x[1:] of floats: the CPU's TensorIterator refuses the overlap before the dtype.
    for device in ("cpu", "tpu"):
        x = torch.rand(3, device=device)
        with pytest.raises(RuntimeError, match="^unsupported operation"):
            x[:-1] <<= x[1:]
        with pytest.raises(RuntimeError, match="^unsupported operation"):
            x[:-1] >>= x[1:]
        y = torch.arange(4, device=device)
        with pytest.raises(RuntimeError, match="^unsupported operation"):
            y[:-1] <<= y[1:]
    a = torch.tensor([1, 2, 3])
    t = a.to("tpu")
    t <<= t  # the same tensor is fine
    a <<= a
    assert_same(t, a)
