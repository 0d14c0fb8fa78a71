"""Complex dtypes on "tpu" against CPU PyTorch: creation, copies, views (.real/.imag,
view_as_real/view_as_complex), the lazy conjugate bit, elementwise math, promotion, matmul,
reductions and autograd. No CPU fallback is allowed (TORCH_PJRT_FALLBACK=error)."""

import math
import warnings

import pytest
import torch
from conftest import assert_same

CDTYPES = [torch.complex64, torch.complex128]


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")


def csample(shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=g)


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_creation_and_copies(dtype):
    for fn in (torch.zeros, torch.ones):
        t = fn(2, 3, dtype=dtype, device="tpu")
        assert t.dtype == dtype
        assert_same(t, fn(2, 3, dtype=dtype))
    assert_same(
        torch.full((2, 2), 1 - 2j, dtype=dtype, device="tpu"),
        torch.full((2, 2), 1 - 2j, dtype=dtype),
    )
    assert torch.empty(3, dtype=dtype, device="tpu").dtype == dtype
    x = csample((4, 5), dtype)
    t = x.to("tpu")
    assert_same(t, x, rtol=0, atol=0)
    # Within the device, through strided and transposed views.
    assert_same(t[:, ::2].clone(), x[:, ::2], rtol=0, atol=0)
    assert_same(t.t().contiguous(), x.t().contiguous(), rtol=0, atol=0)
    dst, cdst = torch.zeros(5, 4, dtype=dtype, device="tpu"), torch.zeros(5, 4, dtype=dtype)
    dst[1:4, ::2].copy_(t[:3, 1:3])
    cdst[1:4, ::2].copy_(x[:3, 1:3])
    assert_same(dst, cdst, rtol=0, atol=0)
    # Real <-> complex conversions: the imaginary part is dropped, as on the CPU.
    r = torch.randn(3, 4)
    assert_same(r.to("tpu").to(dtype), r.to(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # "Casting complex values to real discards the imaginary part"
        assert_same(t.to(torch.float32), x.to(torch.float32))
    assert t[1, 2].item() == x[1, 2].item()


def test_complex_and_polar_factories():
    re, im = torch.randn(3, 4), torch.randn(3, 4)
    assert_same(torch.complex(re.to("tpu"), im.to("tpu")), torch.complex(re, im))
    r, th = torch.rand(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    assert_same(torch.polar(r.to("tpu"), th.to("tpu")), torch.polar(r, th))
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        torch.complex(re.to("tpu"), im.double().to("tpu"))


def test_complex_and_polar_out_dtype_checked():
    # An out= of any other type than the parts' complex type raises the CPU's error (it was cast).
    a = torch.ones(2, dtype=torch.float64)
    for fn in (torch.complex, torch.polar):
        for out_dtype in (torch.float64, torch.complex64):
            msgs = []
            for device in ("cpu", "tpu"):
                with pytest.raises(RuntimeError) as e:
                    fn(
                        a.to(device),
                        a.to(device),
                        out=torch.empty(2, dtype=out_dtype, device=device),
                    )
                msgs.append(str(e.value))
            assert msgs[1] == msgs[0] and "for argument 'out'" in msgs[0]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_randn_complex(dtype):
    torch.manual_seed(0)
    t = torch.randn(20000, dtype=dtype, device="tpu")
    assert t.dtype == dtype
    c = t.cpu()
    # Standard complex normal: each part has variance 1/2.
    assert abs(c.real.var().item() - 0.5) < 0.03 and abs(c.imag.var().item() - 0.5) < 0.03
    assert abs(c.mean().item()) < 0.03


@pytest.mark.parametrize("dtype", CDTYPES)
def test_real_imag_views_write_through(dtype):
    x = csample((3, 4), dtype)
    t = x.to("tpu")
    assert_same(t.real, x.real, rtol=0, atol=0)
    assert_same(t.imag, x.imag, rtol=0, atol=0)
    t.real.mul_(2)
    x.real.mul_(2)
    t.imag[1] = 7.0
    x.imag[1] = 7.0
    assert_same(t, x)
    v, cv = torch.view_as_real(t), torch.view_as_real(x)
    assert v.shape == cv.shape and v.stride() == cv.stride()
    assert_same(v, cv)
    v[..., 1].zero_()  # writes through to the complex tensor
    cv[..., 1].zero_()
    assert_same(t, x)
    f = torch.randn(2, 3, 2, dtype=x.real.dtype)
    tf = f.to("tpu")
    c = torch.view_as_complex(tf)
    assert_same(c, torch.view_as_complex(f), rtol=0, atol=0)
    c.mul_(1j)  # the float tensor sees it
    assert_same(tf, torch.view_as_real(torch.view_as_complex(f) * 1j))
    # A strided view of the complex storage.
    assert_same(t[:, 1::2].real, x[:, 1::2].real, rtol=0, atol=0)


def test_conj_bit_and_resolve():
    x = csample((3, 4))
    t = x.to("tpu")
    tc = t.conj()
    assert tc.is_conj()
    assert_same(tc.resolve_conj(), x.conj().resolve_conj())
    assert not tc.resolve_conj().is_conj()
    assert_same(torch.conj_physical(t), torch.conj_physical(x))
    assert_same(tc + t, x.conj() + x)
    assert_same(tc * 2, x.conj() * 2)
    torch.testing.assert_close(tc.cpu().resolve_conj(), x.conj().resolve_conj())
    assert tc[1, 2].item() == x.conj()[1, 2].item()
    # Writing into a conjugate view stores the conjugate.
    dst, cdst = (
        torch.zeros(3, 4, dtype=torch.complex64, device="tpu"),
        torch.zeros(3, 4, dtype=torch.complex64),
    )
    dst.conj().copy_(t)
    cdst.conj().copy_(x)
    assert_same(dst, cdst)
    n = t._neg_view()
    assert n.is_neg()
    assert_same(n.resolve_neg(), x._neg_view().resolve_neg())
    assert_same(tc.imag, x.conj().imag)
    u = t.clone()
    u.conj_physical_()
    assert_same(u, x.conj_physical())


UNARY = [
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "reciprocal",
    "neg",
    "sgn",
    "rsqrt",
    "tan",
    "expm1",
    "log1p",
    "sigmoid",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "sinh",
    "cosh",
    "log2",
    "log10",
    "exp2",
]


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_math(op, dtype):
    x = csample((4, 6), dtype) + (0.5 + 0.25j)
    fn = getattr(torch, op)
    assert_same(fn(x.to("tpu")), fn(x), **tol(dtype))


@pytest.mark.parametrize("op", ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh"])
def test_inverse_and_hyperbolic_functions_all_quadrants(op):
    """Every quadrant, tiny arguments (relative accuracy without cancellation) and gradients."""
    parts = torch.tensor([-2.5, -0.75, -1e-9, 1e-9, 0.75, 2.5], dtype=torch.float64)
    x = torch.complex(parts.repeat_interleave(6), parts.repeat(6))
    fn = getattr(torch, op)
    got = fn(x.to("tpu")).cpu()
    want = fn(x)
    assert ((got - want).abs() / want.abs()).max() < 1e-14
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    fn(xc).abs().sum().backward()
    fn(xt).abs().sum().backward()
    assert_same(xt.grad, xc.grad)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_real_valued_results(dtype):
    x = csample((4, 6), dtype)
    t = x.to("tpu")
    for fn in (torch.abs, torch.angle, torch.real, torch.imag):
        r, c = fn(t), fn(x)
        assert r.dtype == c.dtype
        assert_same(r, c, **tol(dtype))
    out = torch.empty(0, dtype=x.real.dtype, device="tpu")
    torch.abs(t, out=out)
    assert_same(out, x.abs(), **tol(dtype))


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "eq", "ne"])
def test_binary_math(op, dtype):
    a, b = csample((3, 4), dtype), csample((4,), dtype, seed=1)
    b[0] = a[0, 0]  # an equal element for eq/ne
    fn = getattr(torch, op)
    assert_same(fn(a.to("tpu"), b.to("tpu")), fn(a, b), **tol(dtype))
    assert_same(fn(a.to("tpu"), 2 - 1j), fn(a, 2 - 1j), **tol(dtype))


def test_type_promotion_real_complex():
    a, r, i = csample((3, 4)), torch.randn(3, 4, dtype=torch.float64), torch.arange(4)
    ta, tr, ti = a.to("tpu"), r.to("tpu"), i.to("tpu")
    for x, y, cx, cy in (
        (ta, tr, a, r),
        (ta, ti, a, i),
        (tr, ta, r, a),
        (ti, 1j, i, 1j),
        (tr, 2j, r, 2j),
    ):
        got, want = x * y, cx * cy
        assert got.dtype == want.dtype
        assert_same(got, want)
    u = ta.clone()
    u += tr.float()
    assert_same(u, a + r.float())
    with pytest.raises(RuntimeError, match="can't be cast"):
        tr.clone().add_(ta)


def test_special_values():
    t = torch.tensor(
        [complex(math.inf, 0), complex(0, math.nan), complex(1, 2), complex(0, -math.inf)],
        device="tpu",
    )
    assert torch.isfinite(t).cpu().tolist() == [False, False, True, False]
    assert torch.isnan(t).cpu().tolist() == [False, True, False, False]
    assert torch.isinf(t).cpu().tolist() == [True, False, False, True]
    z = torch.zeros(2, dtype=torch.complex64, device="tpu")
    assert torch.sgn(z).cpu().tolist() == [0j, 0j]
    assert torch.abs(torch.tensor([3 + 4j], device="tpu")).cpu().tolist() == [5.0]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_matmul(dtype):
    a, b = csample((3, 4), dtype), csample((4, 5), dtype, seed=1)
    assert_same(a.to("tpu") @ b.to("tpu"), a @ b, **tol(dtype))
    x, y = csample((2, 3, 4), dtype), csample((2, 4, 2), dtype, seed=2)
    assert_same(torch.bmm(x.to("tpu"), y.to("tpu")), torch.bmm(x, y), **tol(dtype))
    assert_same(
        torch.einsum("bij,bjk->bik", x.to("tpu"), y.to("tpu")),
        torch.einsum("bij,bjk->bik", x, y),
        **tol(dtype),
    )
    assert_same(a.to("tpu").conj() @ b.to("tpu"), a.conj() @ b, **tol(dtype))
    assert_same(a.to("tpu").mH @ a.to("tpu"), a.mH @ a, **tol(dtype))
    u, v = a[0], b[:, 1]
    assert_same(torch.vdot(u.to("tpu"), v.to("tpu")), torch.vdot(u, v), **tol(dtype))
    assert_same(torch.vdot(u.conj().to("tpu"), v.to("tpu")), torch.vdot(u.conj(), v), **tol(dtype))
    assert_same(torch.dot(u.to("tpu"), v.to("tpu")), torch.dot(u, v), **tol(dtype))
    c = csample((3, 5), dtype, seed=3)
    assert_same(
        torch.addmm(c.to("tpu"), a.to("tpu"), b.to("tpu"), beta=0.5, alpha=2 + 0j),
        torch.addmm(c, a, b, beta=0.5, alpha=2 + 0j),
        **tol(dtype),
    )
    for beta, alpha in ((1, 1 + 2j), (0.5j, 2), (0j, 1j)):
        assert_same(
            torch.addmm(c.to("tpu"), a.to("tpu"), b.to("tpu"), beta=beta, alpha=alpha),
            torch.addmm(c, a, b, beta=beta, alpha=alpha),
            **tol(dtype),
        )
    b1, b2 = csample((2, 3, 4), dtype, seed=4), csample((2, 4, 5), dtype, seed=5)
    assert_same(
        torch.baddbmm(c.to("tpu"), b1.to("tpu"), b2.to("tpu"), beta=1j, alpha=2 - 1j),
        torch.baddbmm(c, b1, b2, beta=1j, alpha=2 - 1j),
        **tol(dtype),
    )
    real = torch.ones(2, 2, device="tpu")
    with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
        torch.addmm(real, real, real, alpha=1j)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_reductions(dtype):
    x = csample((3, 5), dtype)
    t = x.to("tpu")
    assert_same(t.sum(), x.sum(), **tol(dtype))
    assert_same(t.sum(1), x.sum(1), **tol(dtype))
    assert_same(t.mean(0), x.mean(0), **tol(dtype))
    assert_same(t.prod(1), x.prod(1), **tol(dtype))
    for got, want in (
        (torch.linalg.vector_norm(t), torch.linalg.vector_norm(x)),
        (torch.linalg.vector_norm(t, 1, dim=1), torch.linalg.vector_norm(x, 1, dim=1)),
        (t.norm(), x.norm()),
        (t.var(), x.var()),
        (torch.logsumexp(t, 1), torch.logsumexp(x, 1)),
        (torch.logsumexp(t, (0, 1), keepdim=True), torch.logsumexp(x, (0, 1), keepdim=True)),
        (t.std(1, correction=0, keepdim=True), x.std(1, correction=0, keepdim=True)),
        *zip(torch.var_mean(t, 0), torch.var_mean(x, 0)),
        *zip(torch.std_mean(t, 1), torch.std_mean(x, 1)),
    ):
        assert got.dtype == want.dtype
        assert_same(got, want, **tol(dtype))


def test_autograd_elementwise():
    x = csample((3, 4), torch.complex128)
    w = csample((3, 4), torch.complex128, seed=1)
    grads = []
    for dev in ("cpu", "tpu"):
        xi = x.to(dev).detach().requires_grad_()
        loss = (torch.exp(xi) * w.to(dev) + xi.conj() * xi).abs().sum()
        loss.backward()
        grads.append(xi.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def test_unsupported_raise_clearly():
    t = csample((3,)).to("tpu")
    with pytest.raises(RuntimeError, match="torch.sgn"):
        torch.sign(t)
    for op in (torch.erf, torch.erfinv):
        with pytest.raises(NotImplementedError, match="complex inputs are not supported on tpu"):
            op(t)


def test_logaddexp():
    a = torch.tensor([1 + 2j, float("inf") + 1j, -float("inf") + 0j, 3 - 1j])
    b = torch.tensor([2 - 1j, 1 + 0j, -float("inf") + 0j, 0.5 + 4j])
    got = torch.logaddexp(a.to("tpu"), b.to("tpu"))
    assert torch.equal(got[1:3].cpu(), torch.tensor([float("inf") + 1j, -float("inf") + 0j]))
    assert_same(got[[0, 3]], torch.logaddexp(a[[0, 3]], b[[0, 3]]))
    x, y = csample((3, 4), torch.complex128), csample((4,), torch.complex128, seed=1)
    assert_same(torch.logaddexp(x.to("tpu"), y.to("tpu")), torch.logaddexp(x, y))


@pytest.mark.parametrize(
    "fn, message",
    [
        (torch.erfc, "\"erfc_vml_cpu\" not implemented for 'ComplexFloat'"),
        (torch.lgamma, "\"lgamma_vml_cpu\" not implemented for 'ComplexFloat'"),
        (torch.digamma, "\"digamma\" not implemented for 'ComplexFloat'"),
        (lambda t: torch.copysign(t, t), "\"copysign_cpu\" not implemented for 'ComplexFloat'"),
        (lambda t: torch.xlogy(t, t), "\"xlogy_cpu\" not implemented for 'ComplexFloat'"),
        (lambda t: torch.hypot(t, t), "\"hypot_cpu\" not implemented for 'ComplexFloat'"),
    ],
)
def test_ops_the_cpu_lacks_for_complex_raise_its_error(fn, message):
    t = csample((3,)).to("tpu")
    with pytest.raises(NotImplementedError, match=message):
        fn(t)
    with pytest.raises(NotImplementedError, match=message):
        fn(t.cpu())  # the same as CPU PyTorch
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for complex tensors"):
        torch.heaviside(t, t)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_with_gradients(mode):
    import torch.nn.functional as F

    x = csample((2, 3, 6))
    g = csample((2, 3, 9), seed=1)
    xc, xt = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    yc, yt = F.pad(xc, (2, 1), mode=mode), F.pad(xt, (2, 1), mode=mode)
    assert_same(yt, yc.detach())
    yc.backward(g)
    yt.backward(g.to("tpu"))
    assert_same(xt.grad, xc.grad)


def test_silu_and_norms():
    import torch.nn.functional as F

    a, b = csample((4, 5)), csample((4, 5), seed=1)
    assert_same(F.silu(a.to("tpu")), F.silu(a), **tol(torch.complex64))
    assert_same(F.pairwise_distance(a.to("tpu"), b.to("tpu")), F.pairwise_distance(a, b))
    assert_same(torch.norm(a.to("tpu"), dim=1), torch.norm(a, dim=1))


def test_complex_fill_values():
    x = csample((3, 4))
    index = torch.tensor([0, 2])
    want = x.index_fill(1, index, 2 - 1j)
    assert_same(x.to("tpu").index_fill(1, index.to("tpu"), 2 - 1j), want)
    mask = torch.tensor([True, False, True, False])
    assert_same(x.to("tpu").masked_fill(mask.to("tpu"), 1j), x.masked_fill(mask, 1j))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_lerp(dtype):
    a, b = csample((3, 4), dtype, 1), csample((3, 4), dtype, 2)
    w = csample((3, 4), dtype, 3)  # |w| on both sides of 0.5: both of lerp's formulas
    for weight in [w, 0.25, 0.75 + 0.5j]:
        wt = weight.to("tpu") if isinstance(weight, torch.Tensor) else weight
        torch.testing.assert_close(
            torch.lerp(a.to("tpu"), b.to("tpu"), wt).cpu(), torch.lerp(a, b, weight), **tol(dtype)
        )
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.lerp(a.to("tpu"), b.to("tpu"), w.to("tpu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.lerp(a, b, w), **tol(dtype))


def half_parts(t):
    """A complex32 tensor's (re, im) float16 parts, on the CPU: what comparisons look at (the CPU
    has no equal or isclose for complex32)."""
    return torch.view_as_real(t.cpu() if t.device.type == "tpu" else t)


def test_complex32_storage_copies_and_views():
    # complex32 is computed in complex64 and stored as float16 (re, im) pairs, bit for bit as the
    # CPU stores it.
    c = csample((4, 3)).to(torch.complex32)
    x = c.to("tpu")
    assert x.dtype == torch.complex32 and x.element_size() == 4
    assert torch.equal(half_parts(x), half_parts(c))
    assert torch.equal(half_parts(x.t()[1:]), half_parts(c.t()[1:]))
    assert torch.equal(half_parts(x[2:, 1]), half_parts(c[2:, 1]))
    y = torch.zeros(4, 3, dtype=torch.complex32, device="tpu")
    cy = torch.zeros(4, 3, dtype=torch.complex32)
    y[:, 1] = x[:, 2]
    cy[:, 1] = c[:, 2]
    y[0].fill_(complex(1.5, -2))
    cy[0].fill_(complex(1.5, -2))
    assert torch.equal(half_parts(y), half_parts(cy))
    assert torch.equal(torch.view_as_real(x).cpu(), torch.view_as_real(c))
    assert x[1, 1].item() == c[1, 1].item()
    # conversions: complex64 rounds each part to float16, as the CPU does
    wide = csample((5,), seed=1)
    assert torch.equal(
        half_parts(wide.to("tpu").to(torch.complex32)), half_parts(wide.to(torch.complex32))
    )
    assert torch.equal(x.to(torch.complex64).cpu(), c.to(torch.complex64))
    h = torch.randn(5, dtype=torch.float16)
    assert torch.equal(
        half_parts(torch.complex(h.to("tpu"), -h.to("tpu"))), half_parts(torch.complex(h, -h))
    )


def test_complex32_arithmetic_and_promotion():
    c = torch.tensor([5.5 + 1j, -0.25 + 3j, 1e-3 - 2j]).to(torch.complex32)
    x = c.to("tpu")
    # Python scalars are rounded to complex32 first, as on the CPU; 100000 overflows to inf.
    for s in (2.2, 5, 100000, complex(1, 1), complex(0, -3)):
        assert (x * s).dtype == torch.complex32
        assert torch.equal(half_parts(x * s), half_parts(c * s)), s
        assert torch.equal(half_parts(s * x), half_parts(x * s))
    assert torch.equal(half_parts(x + x), half_parts(c + c))
    for dtype in (
        torch.bool,
        torch.uint8,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex32,
        torch.complex64,
        torch.complex128,
    ):
        t = torch.tensor(1, dtype=dtype)
        expected = c * t
        got = x * t.to("tpu")
        assert got.dtype == expected.dtype, dtype
        if expected.dtype == torch.complex32:
            assert torch.equal(half_parts(got), half_parts(expected)), dtype
        else:
            assert_same(got, expected)
    assert torch.equal((x == x).cpu(), torch.ones(3, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexHalf'"):
        x < x


@pytest.mark.parametrize(
    "out_dtype", [torch.complex64, torch.float32, torch.float64, torch.complex128, torch.int64]
)
@pytest.mark.parametrize("fn", [torch.abs, torch.angle])
def test_abs_angle_of_complex_into_out(fn, out_dtype):
    """abs/angle of complex64 into out= of a complex or real dtype: the values or the error of the
    CPU (a complex out of the input's dtype gets |z| + 0i; a wider real out is cast to)."""
    z = torch.tensor([3 + 4j, -1 - 1j, 0j, complex(float("inf"), 1)], dtype=torch.complex64)
    results = []
    for device in ("cpu", "tpu"):
        out = torch.empty(0, dtype=out_dtype, device=device)
        try:
            results.append(fn(z.to(device), out=out))
        except RuntimeError as e:
            results.append(str(e))
    cpu, tpu = results
    if isinstance(cpu, str):
        assert tpu == cpu
    else:
        assert tpu.dtype == cpu.dtype
        torch.testing.assert_close(tpu.cpu(), cpu)
