"""torch.special functions lowered natively (csrc/lowering/special_functions.cpp): values against
CPU PyTorch, fixed expectations at special values, dtypes, errors, gradients."""

import math

import pytest
import torch
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("no_fallback")

S = torch.special
INF, NAN = math.inf, math.nan

POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_grid(name):
    fn = getattr(S, name)
    # x across |x| < 1, == 1 and > 1 (and the shifted kinds' 0 and 1); n across the recurrence,
    # the trigonometric forms (n > 8) and negative degrees, with tensor and scalar operands.
    x = torch.tensor([-2.0, -1.0, -0.7, 0.0, 0.3, 0.5, 1.0, 2.5], dtype=torch.float64)
    n = torch.tensor([-1.0, 0.0, 1.0, 2.7, 3.0, 7.0, 9.0, 12.0], dtype=torch.float64)
    xg, ng = torch.meshgrid(x, n, indexing="ij")
    assert_same(fn(xg.to("tpu"), ng.to("tpu")), fn(xg, ng), rtol=1e-7, atol=1e-7)
    assert_same(fn(xg.float().to("tpu"), 4), fn(xg.float(), 4), rtol=1e-4, atol=1e-5)
    assert_same(fn(0.25, n.to("tpu")), fn(0.25, n), rtol=1e-6, atol=1e-6)


def test_polynomial_special_values_and_dtypes():
    x = torch.tensor([1.0, -1.0, 2.0, INF], dtype=torch.float64).to("tpu")
    n = torch.tensor([5.0, 5.0, NAN, 1.0], dtype=torch.float64).to("tpu")
    assert S.chebyshev_polynomial_u(x, n).cpu().tolist() == [6.0, -6.0, 0.0, INF]
    assert S.chebyshev_polynomial_v(x, n).cpu().tolist() == [1.0, -11.0, 0.0, INF]
    assert S.legendre_polynomial_p(x, n).cpu().tolist() == [1.0, -1.0, 0.0, INF]
    # A degree beyond any present elsewhere: the loop bound comes from the data.
    xb, nb = torch.tensor([1.5, 0.5]), torch.tensor([40.0, 2])
    big = S.chebyshev_polynomial_t(xb.to("tpu"), nb.to("tpu"))
    assert_same(big, S.chebyshev_polynomial_t(xb, nb))
    # Integer and bool operands compute in the default float type.
    i = torch.tensor([[0, 1, 2], [3, -1, 2]])
    r = S.hermite_polynomial_h(i.to("tpu"), torch.tensor([3, 2, 1]).to("tpu"))
    assert r.dtype == torch.float32
    assert_same(r, S.hermite_polynomial_h(i, torch.tensor([3, 2, 1])))
    out = torch.empty(0, dtype=torch.float64).to("tpu")
    S.laguerre_polynomial_l(x.cpu().to("tpu"), 3, out=out)
    assert_same(out, S.laguerre_polynomial_l(x.cpu(), 3), equal_nan=True)
    for dtype in (torch.float16, torch.bfloat16):
        with pytest.raises(NotImplementedError, match="chebyshev_polynomial_t_cpu"):
            S.chebyshev_polynomial_t(torch.ones(2, dtype=dtype).to("tpu"), 2)


def test_entr():
    x = torch.tensor([-1.0, 0.0, NAN, INF, 0.5, 3.0])
    r = S.entr(x.to("tpu")).cpu()
    assert r[:4].tolist()[0] == -INF and r[1] == 0 and math.isnan(r[2]) and r[3] == -INF
    assert_same(S.entr(x.to("tpu")), S.entr(x), equal_nan=True)
    for dtype in (torch.float64, torch.bfloat16, torch.int64, torch.bool):
        t = torch.tensor([0, 1, 2, 3]).to(dtype)
        assert_same(S.entr(t.to("tpu")), S.entr(t))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
def test_gcd_lcm(dtype):
    a = torch.tensor([0, 4, 6, 12, 17, 100, 0], dtype=dtype)
    b = torch.tensor([0, 6, 4, 18, 5, 75, 9], dtype=dtype)
    if dtype != torch.uint8:
        a = a * torch.tensor([1, -1, 1, -1, 1, 1, -1], dtype=dtype)
    assert_same(torch.gcd(a.to("tpu"), b.to("tpu")), torch.gcd(a, b))
    assert_same(torch.lcm(a.to("tpu"), b.to("tpu")), torch.lcm(a, b))
    t = a.to("tpu")
    t.gcd_(b.to("tpu"))
    assert_same(t, torch.gcd(a, b))


def test_gcd_errors():
    with pytest.raises(NotImplementedError, match="\"gcd_cpu\" not implemented for 'Float'"):
        torch.gcd(torch.ones(2).to("tpu"), torch.ones(2).to("tpu"))
    with pytest.raises(NotImplementedError, match="\"lcm_cpu\" not implemented for 'Bool'"):
        torch.lcm(
            torch.ones(2, dtype=torch.bool).to("tpu"), torch.ones(2, dtype=torch.bool).to("tpu")
        )


BESSEL_I = [torch.i0, S.i0e, S.i1, S.i1e]


@pytest.mark.parametrize("fn", BESSEL_I, ids=lambda f: f.__name__)
def test_bessel_i(fn):
    # Both sides of the series/asymptotic switch at |x| = 30, and overflow of the unscaled forms.
    x = torch.tensor(
        [-35.0, -2.5, -0.0, 0.0, 0.75, 4.0, 29.9, 30.1, 100.0, 720.0, -720.0], dtype=torch.float64
    )
    assert_same(fn(x.to("tpu")), fn(x), rtol=1e-7, atol=1e-7)
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        t = torch.tensor([-3, 0, 1, 5]).to(dtype)
        assert_same(fn(t.to("tpu")), fn(t))
    special = fn(torch.tensor([NAN, INF, -INF]).to("tpu")).cpu()
    assert math.isnan(special[0])
    if fn in (S.i0e, S.i1e):
        assert special[1:].abs().tolist() == [0.0, 0.0]
    else:
        assert special[1:].isnan().all()
    xg = torch.tensor([0.5, -2.0, 7.0, 35.0], dtype=torch.float64, requires_grad=True)
    xt = xg.detach().to("tpu").requires_grad_()
    (g_cpu,) = torch.autograd.grad(fn(xg).sum(), xg)
    (g_tpu,) = torch.autograd.grad(fn(xt).sum(), xt)
    assert_same(g_tpu, g_cpu, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize(
    ("dtype", "bits"),
    [(torch.float64, torch.int64), (torch.float32, torch.int32), (torch.bfloat16, torch.int16)],
)
def test_nextafter(dtype, bits):
    a = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, 3.0, INF, 1e30, NAN], dtype=dtype)
    b = torch.tensor([-1.0, 1.0, 2.0, 0.0, 2.0, INF, 0.0, -5.0, 1.0], dtype=dtype)
    r = torch.nextafter(a.to("tpu"), b.to("tpu")).cpu()
    want = torch.nextafter(a, b)
    assert torch.equal(r[:-1].view(bits), want[:-1].view(bits))  # bit for bit, signs of 0 included
    assert math.isnan(r[-1])
    with pytest.raises(NotImplementedError, match="nextafter_cpu"):
        torch.nextafter(torch.ones(2, dtype=torch.int32).to("tpu"), torch.ones(2).to("tpu").int())
