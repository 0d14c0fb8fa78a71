"""The Bessel family of torch.special lowered natively (csrc/lowering/bessel_functions.cpp): grids
against CPU PyTorch in float64 and float32, high-precision reference values, special values,
dtypes, out= and errors."""

import math

import pytest
import torch
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("no_fallback")

S = torch.special
INF, NAN = math.inf, math.nan

NAMES = [
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    "airy_ai",
]

# Absolute tolerances against CPU PyTorch in float64: its J and Y kernels are off by up to 9e-7
# on (5, 6.04) and its Ai by up to 3e-6 on (-2.6, -2.09), just past where they switch to
# asymptotic forms (the reference values below show the device's values are the accurate ones);
# elsewhere they agree to about 1e-13.
F64_ATOL = {"bessel_j0": 2e-6, "bessel_j1": 2e-6, "bessel_y0": 2e-6, "bessel_y1": 2e-6}
F64_ATOL["airy_ai"] = 5e-6


def grid():
    dense = torch.linspace(-50, 50, 20001, dtype=torch.float64)
    large = torch.tensor([1e2, 3.3e2, 1e3, 2.5e4, 1e5, 7.7e5, 1e6], dtype=torch.float64)
    return torch.cat([dense, large, -large])


@pytest.mark.parametrize("name", NAMES)
def test_grid_float64(name):
    fn = getattr(S, name)
    x = grid()
    assert_same(fn(x.to("tpu")), fn(x), rtol=1e-9, atol=F64_ATOL.get(name, 1e-12), equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
def test_grid_float32(name):
    fn = getattr(S, name)
    x = torch.linspace(-30, 30, 6001)
    assert_same(fn(x.to("tpu")), fn(x), rtol=1e-4, atol=1e-5, equal_nan=True)


# Values to 1e-16 relative (from 30-digit arithmetic) at x = 0.5, 1, 4.9, 5.3, 10, 37.5, 1000.
POINTS = [0.5, 1.0, 4.9, 5.3, 10.0, 37.5, 1000.0]
REFERENCE = {
    "bessel_j0": [0.9384698072408129, 0.7651976865579666, -0.2097383275853262,
                  -0.07580311158558423, -0.24593576445134835, 0.07172270511060223,
                  0.024786686152420176],
    "bessel_j1": [0.2422684576748739, 0.4400505857449335, -0.31469467101519066,
                  -0.3459608338011862, 0.04347274616886144, -0.10782334401927696,
                  0.004728311907089524],
    "bessel_y0": [-0.44451873350670656, 0.08825696421567696, -0.2920545942440142,
                  -0.33743730109368286, 0.055671167283599395, -0.10876981940906565,
                  0.0047159179776228135],
    "bessel_y1": [-1.471472392670243, -0.7812128213002887, 0.18124669204504856,
                  0.04454761908760843, 0.24901542420695388, -0.07317908043183007,
                  -0.024784331292351778],
    "modified_bessel_k0": [0.9244190712276659, 0.42102443824070834, 0.004118936235515887,
                           0.002659106803389558, 1.778006231616765e-05, 1.0557774260777552e-17,
                           0.0],
    "modified_bessel_k1": [1.656441120003301, 0.6019072301972346, 0.0045211691772998365,
                           0.0028998844916906896, 1.8648773453825585e-05, 1.0697630152680757e-17,
                           0.0],
    "scaled_modified_bessel_k0": [1.5241093857739094, 1.144463079806895, 0.5531310396037262,
                                  0.5327169743733295, 0.39163193443659866, 0.2039930838130817,
                                  0.03962832160075422],
    "scaled_modified_bessel_k1": [2.731009708211786, 1.6361534862632583, 0.6071468127379163,
                                  0.5809536083606829, 0.41076657059578875, 0.20669532331679533,
                                  0.03964813081296021],
    "modified_bessel_i0": [1.0634833707413236, 1.2660658777520084, 24.914779075837764,
                           35.6481051681131, 2815.7166284662544, 1263004835743368.2, INF],
    "modified_bessel_i1": [0.2578943053908963, 0.565159103992485, 22.199348620092497,
                           32.07989157829702, 2670.9883037012546, 1246049378201797.0, INF],
    "spherical_bessel_j0": [0.958851077208406, 0.8414709848078965, -0.20050053318863925,
                            -0.1570315928724342, -0.05440211108893698, -0.005274634656972327,
                            0.0008268795405320026],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_values(name):
    got = getattr(S, name)(torch.tensor(POINTS, dtype=torch.float64).to("tpu")).cpu()
    want = torch.tensor(REFERENCE[name], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-14, atol=1e-16)


def test_airy_reference_values():
    # -2.598 is where CPU PyTorch is off by 1e-7.
    x = torch.tensor([-100.0, -10.0, -3.0, -2.598, -1.0, 0.5, 2.0, 10.0], dtype=torch.float64)
    want = torch.tensor([0.1767533932395529, 0.04024123848644319, -0.37881429367765806,
                         -0.1772182272118462, 0.5355608832923521, 0.23169360648083348,
                         0.03492413042327438, 1.1047532552898686e-10],
                        dtype=torch.float64)  # fmt: skip
    torch.testing.assert_close(S.airy_ai(x.to("tpu")).cpu(), want, rtol=1e-13, atol=1e-16)


# At 0, -0, -1, +inf, -inf, NaN (PyTorch's CPU values).
SPECIAL = {
    "bessel_j0": [1.0, 1.0, 0.7651976865579666, NAN, NAN, NAN],
    "bessel_j1": [0.0, 0.0, -0.4400505857449335, NAN, NAN, NAN],
    "bessel_y0": [-INF, -INF, NAN, NAN, NAN, NAN],
    "bessel_y1": [-INF, -INF, NAN, NAN, NAN, NAN],
    "modified_bessel_i0": [1.0, 1.0, 1.2660658777520084, NAN, NAN, NAN],
    "modified_bessel_i1": [0.0, 0.0, -0.565159103992485, NAN, NAN, NAN],
    "modified_bessel_k0": [INF, INF, NAN, 0.0, NAN, NAN],
    "modified_bessel_k1": [INF, INF, NAN, 0.0, NAN, NAN],
    "scaled_modified_bessel_k0": [INF, INF, NAN, 0.0, NAN, NAN],
    "scaled_modified_bessel_k1": [INF, INF, NAN, 0.0, NAN, NAN],
    "spherical_bessel_j0": [1.0, 1.0, 0.8414709848078965, 0.0, 0.0, NAN],
    "airy_ai": [0.3550280538878172, 0.3550280538878172, 0.5355608832923521, NAN, NAN, NAN],
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_special_values(name, dtype):
    x = torch.tensor([0.0, -0.0, -1.0, INF, -INF, NAN], dtype=dtype)
    got = getattr(S, name)(x.to("tpu")).cpu()
    want = torch.tensor(SPECIAL[name], dtype=dtype)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=0, equal_nan=True)


def test_tiny_and_huge_arguments():
    x = torch.tensor([1e-300, 1e300], dtype=torch.float64).to("tpu")
    assert S.modified_bessel_k1(x).cpu()[0].item() == pytest.approx(1e300, rel=1e-14)
    assert S.modified_bessel_k0(x).cpu()[0].item() == pytest.approx(690.8914594138721, rel=1e-14)
    assert S.scaled_modified_bessel_k0(x).cpu()[1].item() == pytest.approx(
        math.sqrt(math.pi / 2e300), rel=1e-14
    )
    assert S.bessel_y1(x).cpu()[0].item() == pytest.approx(-2 / math.pi * 1e300, rel=1e-14)
    assert S.airy_ai(x).cpu()[1].item() == 0.0
    assert S.modified_bessel_i0(x).cpu()[1].item() == INF


@pytest.mark.parametrize(
    "dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
)
def test_integer_inputs_compute_in_default_float(dtype):
    x = torch.tensor([0, 1, 3, 7, 1, 0]).to(dtype)
    for name in NAMES:
        r = getattr(S, name)(x.to("tpu"))
        assert r.dtype == torch.float32
        assert_same(r, getattr(S, name)(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize("name", NAMES)
def test_unsupported_dtypes_raise(name, dtype):
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(NotImplementedError) as cpu:
        getattr(S, name)(x)
    with pytest.raises(NotImplementedError) as dev:
        getattr(S, name)(x.to("tpu"))
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("name", NAMES)
def test_out(name):
    fn = getattr(S, name)
    x = torch.linspace(0.25, 6, 12, dtype=torch.float64)
    out = torch.empty(12, dtype=torch.float64).to("tpu")
    assert fn(x.to("tpu"), out=out) is out
    assert_same(out, fn(x), rtol=1e-9, atol=1e-6)
    # A float32 result into a wider out, and into a narrower float out, as the CPU allows.
    xi = torch.arange(1, 5)
    out = torch.empty(4, dtype=torch.float64).to("tpu")
    fn(xi.to("tpu"), out=out)
    assert_same(out, fn(xi, out=torch.empty(4, dtype=torch.float64)), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        fn(x.to("tpu"), out=torch.empty(12, dtype=torch.int64).to("tpu"))
