"""zeta, polygamma, the incomplete gamma functions, erfcx, log_ndtr, ndtri and frexp lowered
natively (csrc/lowering/gamma_functions.cpp, normal_functions.cpp, frexp.cpp): values against CPU
PyTorch on grids, fixed expectations at special values, dtypes, errors, in-place and out= forms."""

import math

import pytest
import torch
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("no_fallback")

S = torch.special
INF, NAN = math.inf, math.nan
F64 = {"rtol": 1e-9, "atol": 1e-12}
F32 = {"rtol": 1e-4, "atol": 1e-5}


def tpu(*ts):
    return [t.to("tpu") for t in ts]


def same_special(got, want):
    """Exact equality with NaN where `want` has NaN (fixed expectations at special values)."""
    got = got.cpu().tolist()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (math.isnan(g) and math.isnan(w)) or g == w, (got, want)


def test_zeta_grid():
    # Both sides of the directly summed terms (q + k < 10) and large exponents; integer x with
    # negative non-integer q sums signed terms.
    x = torch.tensor([1.001, 1.5, 2.0, 3.0, 4.5, 7.0, 12.0, 30.0, 80.0], dtype=torch.float64)
    q = torch.tensor([0.01, 0.3, 1.0, 2.5, 9.9, 10.0, 17.0, 150.0, 1e6], dtype=torch.float64)
    xg, qg = torch.meshgrid(x, q, indexing="ij")
    assert_same(S.zeta(*tpu(xg, qg)), S.zeta(xg, qg), **F64)
    assert_same(S.zeta(*tpu(xg.float(), qg.float())), S.zeta(xg.float(), qg.float()), **F32)
    xi = torch.tensor([2.0, 3.0, 4.0, 5.0, 6.0], dtype=torch.float64)
    qn = torch.tensor([-0.5, -1.5, -7.25, -30.7, -0.01], dtype=torch.float64)
    xg, qg = torch.meshgrid(xi, qn, indexing="ij")
    assert_same(S.zeta(*tpu(xg, qg)), S.zeta(xg, qg), **F64)


def test_zeta_special_values_and_forms():
    x = torch.tensor([2.0, 1.0, 0.5, 2.0, 2.0, 2.0, 2.5, 2.0, INF, INF, INF, NAN, 2.0, 2.0])
    q = torch.tensor([1.0, 3.0, 1.0, 0.0, -0.0, -1.0, -1.5, INF, 0.5, 1.0, 2.0, 1.0, NAN, -1.5])
    pi2 = math.pi**2
    want = [
        pi2 / 6,
        INF,
        NAN,
        INF,
        INF,
        INF,
        NAN,
        NAN,
        INF,
        1.0,
        NAN,
        NAN,
        NAN,
        pi2 / 2 + 4 + 4 / 9,
    ]
    r = S.zeta(*tpu(x.double(), q.double()))
    same_special(r[1:-1], want[1:-1])
    assert abs(r[0].item() - want[0]) < 1e-14
    assert abs(r[-1].item() - want[-1]) < 1e-13
    qs = torch.tensor([0.5, 2.0, 3.0])
    assert_same(S.zeta(2.0, qs.to("tpu")), S.zeta(2.0, qs), **F32)
    assert_same(S.zeta(qs.to("tpu") + 1, 2.0), S.zeta(qs + 1, 2.0), **F32)
    out = torch.empty(0, dtype=torch.float64).to("tpu")
    S.zeta(x.double().to("tpu"), 2.0, out=out)
    assert_same(out, S.zeta(x.double(), 2.0), equal_nan=True, **F64)
    i = torch.tensor([2, 3, 4])
    r = S.zeta(*tpu(i, torch.tensor([1, 2, 3], dtype=torch.uint8)))
    assert r.dtype == torch.float32
    assert_same(r, S.zeta(i, torch.tensor([1, 2, 3], dtype=torch.uint8)))
    for dtype in (torch.float16, torch.bfloat16, torch.complex64):
        with pytest.raises(NotImplementedError, match='"zeta_cpu" not implemented'):
            S.zeta(*tpu(torch.ones(2, dtype=dtype), torch.ones(2, dtype=dtype)))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 6])
def test_polygamma_grid(n):
    x = torch.cat([torch.linspace(-4.9, 9.7, 41, dtype=torch.float64), torch.tensor([25.0, 300.0])])
    x = x[(x - x.round()).abs() > 1e-3]
    assert_same(torch.polygamma(n, x.to("tpu")), torch.polygamma(n, x), rtol=1e-9, atol=1e-9)
    xf = x.float()
    assert_same(torch.polygamma(n, xf.to("tpu")), torch.polygamma(n, xf), rtol=2e-4, atol=1e-4)
    assert_same(S.polygamma(n, xf.to("tpu")), S.polygamma(n, xf), rtol=2e-4, atol=1e-4)


def test_polygamma_special_values_and_forms():
    x = torch.tensor([0.0, -0.0, -1.0, 1.0, INF, -INF, NAN], dtype=torch.float64)
    t2 = torch.polygamma(2, x.to("tpu")).cpu()
    same_special(t2[[0, 1, 2, 4, 5, 6]], [-INF, -INF, -INF, NAN, -INF, NAN])
    assert abs(t2[3].item() + 2.4041138063191885) < 1e-14
    same_special(torch.polygamma(3, x.to("tpu"))[:3], [INF, INF, INF])
    t1 = torch.polygamma(1, x.to("tpu")).cpu()
    assert t1[0] == INF and t1[1] == INF and t1[4] == 0 and t1[5].isnan() and t1[6].isnan()
    assert abs(t1[3].item() - math.pi**2 / 6) < 1e-15
    # trigamma at the negative integers: large and finite, from sin(pi x) rounded in f32 or f64.
    neg = torch.tensor([-1.0, -2.0, -5.0])
    assert_same(torch.polygamma(1, neg.to("tpu")), torch.polygamma(1, neg), rtol=1e-3, atol=0)
    assert_same(
        torch.polygamma(1, neg.double().to("tpu")),
        torch.polygamma(1, neg.double()),
        rtol=1e-3,
        atol=0,
    )
    # Integer and bool inputs compute in the default float type; in place and out=.
    i = torch.tensor([[1, 2, 3], [4, 7, -3]])
    for n in (0, 1, 2):
        r = torch.polygamma(n, i.to("tpu"))
        assert r.dtype == torch.float32
        assert_same(r, torch.polygamma(n, i), equal_nan=True, **F32)
    assert_same(
        torch.polygamma(1, torch.tensor([True, False]).to("tpu")),
        torch.polygamma(1, torch.tensor([True, False])),
    )
    t = torch.tensor([0.5, 2.5, 7.0]).to("tpu")
    t.polygamma_(2)
    assert_same(t, torch.polygamma(2, torch.tensor([0.5, 2.5, 7.0])), **F32)
    out = torch.empty(0, dtype=torch.float64).to("tpu")
    torch.polygamma(3, torch.tensor([0.5, 2.5]).to("tpu"), out=out)
    assert_same(out, torch.polygamma(3, torch.tensor([0.5, 2.5])).double(), **F32)
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, torch.ones(2).to("tpu"))
    with pytest.raises(NotImplementedError, match='"trigamma" not implemented'):
        torch.polygamma(1, torch.ones(2, dtype=torch.complex64).to("tpu"))
    h = torch.tensor([0.25, 1.5, 6.0], dtype=torch.bfloat16)
    assert_same(torch.polygamma(2, h.to("tpu")), torch.polygamma(2, h), rtol=1.6e-2, atol=1e-3)


def test_mvlgamma():
    x = torch.tensor([2.5, 3.0, 7.25], dtype=torch.float64)
    for p in (1, 3, 5):
        assert_same(torch.mvlgamma(x.to("tpu"), p), torch.mvlgamma(x, p), **F64)
        assert_same(S.multigammaln(x.to("tpu"), p), S.multigammaln(x, p), **F64)
    out = torch.empty(0, dtype=torch.float64).to("tpu")
    torch.mvlgamma(x.to("tpu"), 3, out=out)
    assert_same(out, torch.mvlgamma(x, 3), **F64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.mvlgamma(x.to("tpu"), 2, out=torch.empty(3, dtype=torch.int64).to("tpu"))


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=lambda f: f.__name__)
def test_igamma_grid(fn):
    # Series (x < a + 1) and continued fraction regions, near the switch and far out in the tails.
    a = torch.tensor([1e-3, 0.1, 0.5, 1.0, 2.5, 7.0, 20.0, 55.0, 300.0], dtype=torch.float64)
    x = torch.tensor(
        [1e-4, 0.05, 0.7, 1.5, 3.4, 8.0, 21.0, 60.0, 250.0, 400.0], dtype=torch.float64
    )
    ag, xg = torch.meshgrid(a, x, indexing="ij")
    assert_same(fn(*tpu(ag, xg)), fn(ag, xg), rtol=1e-9, atol=1e-14)
    assert_same(fn(*tpu(ag.float(), xg.float())), fn(ag.float(), xg.float()), **F32)
    for dtype in (torch.float16, torch.bfloat16):
        a16, x16 = ag[:, :6].to(dtype), xg[:, :6].to(dtype)
        assert_same(fn(*tpu(a16, x16)), fn(a16, x16), rtol=1.6e-2, atol=1e-3)


def test_igamma_special_values_and_forms():
    a = torch.tensor([0.0, 0.0, 1.0, 1.0, -1.0, 1.0, INF, 1.0, INF, 2.0, 0.0, INF, NAN, 0.0])
    x = torch.tensor([0.0, 1.0, 0.0, -1.0, 1.0, INF, 1.0, NAN, INF, 0.0, INF, 0.0, 1.0, NAN])
    lower = [NAN, 1.0, 0.0, NAN, NAN, 1.0, 0.0, NAN, NAN, 0.0, 1.0, 0.0, NAN, NAN]
    upper = [NAN if math.isnan(v) else 1.0 - v for v in lower]
    for dtype in (torch.float32, torch.float64):
        same_special(torch.igamma(*tpu(a.to(dtype), x.to(dtype))), lower)
        same_special(torch.igammac(*tpu(a.to(dtype), x.to(dtype))), upper)
    assert (
        abs(
            torch.igamma(*tpu(torch.tensor([1.0]).double(), torch.tensor([2.0]).double())).item()
            - (1 - math.exp(-2))
        )
        < 1e-15
    )
    av, xv = torch.tensor([0.5, 3.0, 10.0]), torch.tensor([2.0, 1.0, 12.0])
    assert_same(S.gammainc(*tpu(av, xv)), S.gammainc(av, xv), **F32)
    assert_same(S.gammaincc(*tpu(av, xv)), S.gammaincc(av, xv), **F32)
    t = av.to("tpu")
    t.igammac_(xv.to("tpu"))
    assert_same(t, torch.igammac(av, xv), **F32)
    out = torch.empty(0, dtype=torch.float64).to("tpu")
    torch.igamma(*tpu(av, xv), out=out)
    assert_same(out, torch.igamma(av, xv).double(), **F32)
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        torch.igamma(*tpu(torch.tensor([1, 2]), torch.tensor([1, 2])))
    with pytest.raises(NotImplementedError, match="\"igammac_cpu\" not implemented for 'Bool'"):
        torch.igammac(*tpu(torch.tensor([True]), torch.tensor([True])))


def test_erfcx():
    x = torch.cat(
        [torch.linspace(-26, 40, 331, dtype=torch.float64), torch.tensor([1e3, 1e10, 1e300])]
    )
    assert_same(S.erfcx(x.to("tpu")), S.erfcx(x), rtol=1e-11, atol=0)
    xf = torch.linspace(-9, 40, 197)
    assert_same(S.erfcx(xf.to("tpu")), S.erfcx(xf), **F32)
    same_special(
        S.erfcx(torch.tensor([-27.0, -INF, INF, NAN, 0.0], dtype=torch.float64).to("tpu")),
        [INF, INF, 0.0, NAN, 1.0],
    )
    assert_same(S.erfcx(torch.tensor([-3, 0, 5]).to("tpu")), S.erfcx(torch.tensor([-3, 0, 5])))


def test_log_ndtr():
    x = torch.cat(
        [torch.linspace(-60, 12, 289, dtype=torch.float64), torch.tensor([-1e5, -1e10, -1e150])]
    )
    assert_same(S.log_ndtr(x.to("tpu")), S.log_ndtr(x), rtol=1e-11, atol=1e-300)
    xf = torch.linspace(-40, 10, 201)
    assert_same(S.log_ndtr(xf.to("tpu")), S.log_ndtr(xf), **F32)
    r = S.log_ndtr(torch.tensor([-1e200, -INF, INF, NAN, 0.0], dtype=torch.float64).to("tpu")).cpu()
    same_special(r, [-INF, -INF, 0.0, NAN, math.log(0.5)])
    assert math.copysign(1, r[2].item()) == -1.0  # -0 at +inf
    out = torch.empty(3, dtype=torch.float64).to("tpu")
    S.log_ndtr(torch.tensor([-2.0, 0.5, 3.0], dtype=torch.float64).to("tpu"), out=out)
    assert_same(out, S.log_ndtr(torch.tensor([-2.0, 0.5, 3.0], dtype=torch.float64)), **F64)


def test_ndtri():
    p = torch.cat(
        [
            torch.linspace(0.001, 0.999, 499, dtype=torch.float64),
            torch.tensor([1e-300, 1e-30, 1e-8, 1 - 1e-12]),
        ]
    )
    assert_same(S.ndtri(p.to("tpu")), S.ndtri(p), rtol=1e-10, atol=1e-12)
    pf = torch.linspace(1e-6, 1 - 1e-6, 301)
    assert_same(S.ndtri(pf.to("tpu")), S.ndtri(pf), **F32)
    same_special(
        S.ndtri(torch.tensor([0.0, 1.0, -0.1, 1.1, NAN, 0.5], dtype=torch.float64).to("tpu")),
        [-INF, INF, NAN, NAN, NAN, 0.0],
    )
    b = torch.tensor([False, True])
    assert_same(S.ndtri(b.to("tpu")), S.ndtri(b))


@pytest.mark.parametrize("fn", [S.erfcx, S.log_ndtr, S.ndtri], ids=lambda f: f.__name__)
def test_normal_functions_dtypes(fn):
    for dtype in (torch.float16, torch.bfloat16, torch.complex64):
        with pytest.raises(
            NotImplementedError, match=f'"{fn.__name__.split("_", 1)[1]}_cpu" not implemented'
        ):
            fn(torch.ones(2, dtype=dtype).to("tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_frexp(dtype):
    info = torch.finfo(dtype)
    x = torch.tensor(
        [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.3,
            1e3,
            info.max,
            -info.tiny,
            info.tiny / 4,
            info.smallest_normal * 0.5,
        ],
        dtype=dtype,
    )
    m, e = torch.frexp(x.to("tpu"))
    mc, ec = torch.frexp(x)
    assert m.dtype == dtype and e.dtype == torch.int32
    assert torch.equal(m.cpu(), mc) and torch.equal(e.cpu(), ec)
    assert torch.equal(m.cpu().signbit(), mc.signbit())
    m, e = torch.frexp(torch.tensor([INF, -INF, NAN], dtype=dtype).to("tpu"))
    assert m.cpu().tolist()[:2] == [INF, -INF] and m.cpu()[2].isnan()
    assert e.cpu().tolist() == [0, 0, 0]
    mo, eo = torch.empty(0, dtype=dtype).to("tpu"), torch.empty(0, dtype=torch.int32).to("tpu")
    torch.frexp(x.to("tpu"), out=(mo, eo))
    assert torch.equal(mo.cpu(), mc) and torch.equal(eo.cpu(), ec)


def test_frexp_errors():
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        torch.frexp(torch.ones(2, dtype=torch.int32).to("tpu"))
    x = torch.ones(3).to("tpu")
    e = torch.empty(3, dtype=torch.int32).to("tpu")
    with pytest.raises(RuntimeError, match="expects mantissa to have dtype float but got double"):
        torch.frexp(x, out=(torch.empty(3, dtype=torch.float64).to("tpu"), e))
    with pytest.raises(RuntimeError, match="expects exponent to have int dtype but got long int"):
        torch.frexp(x, out=(torch.empty(3).to("tpu"), torch.empty(3, dtype=torch.int64).to("tpu")))
