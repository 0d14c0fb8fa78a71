"""Float to integer casts of values outside the integer's range, NaN and infinities, as PyTorch's
CPU gives them on x86-64 (docs/numerics.md, "Float to integer casts"): fixed values (the x86-64
CPU's, also CUDA's for uint8), then the CPU of this machine on a wide sweep."""

import platform

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")

INT_TYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16]
FLOAT_TYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def test_issue_values():
    x = torch.tensor([-2.0, 3e38], device="tpu")
    assert x.to(torch.uint8).cpu().tolist() == [254, 0]
    y = torch.tensor([300.0, -129.0, float("nan"), float("inf"), 1e10, 2.0**32 + 5], device="tpu")
    assert y.to(torch.int8).cpu().tolist() == [44, 127, 0, 0, 0, 0]
    assert y.double().to(torch.uint8).cpu().tolist() == [44, 127, 0, 0, 0, 0]
    z = torch.tensor([2.0**32 + 5, -(2.0**31) - 1000], dtype=torch.float64, device="tpu")
    assert z.to(torch.uint8).cpu().tolist() == [5, 24]  # through int64
    assert z.to(torch.int8).cpu().tolist() == [0, 0]  # through int32
    assert y.to(torch.int32).cpu().tolist() == [300, -129] + [-(2**31)] * 4
    assert y.to(torch.int64).cpu().tolist() == [300, -129, -(2**63), -(2**63), 10**10, 2**32]


def _sweep():
    g = torch.Generator().manual_seed(0)
    mags = 10 ** (torch.rand(4000, generator=g, dtype=torch.float64) * 20)
    signs = torch.where(torch.rand(4000, generator=g) < 0.5, -1.0, 1.0).double()
    edges = [2.0**k + d for k in (7, 8, 15, 16, 31, 32, 63, 64) for d in (-1.5, -1, 0, 0.5, 1)]
    special = [float("nan"), float("inf"), -float("inf"), -0.7, 0.7, -0.0, 255.9, -1e-30]
    return torch.cat([mags * signs, torch.tensor(edges + [-e for e in edges] + special).double()])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 CPU rule")
@pytest.mark.parametrize("src", FLOAT_TYPES)
@pytest.mark.parametrize("dst", INT_TYPES)
def test_matches_this_cpu(src, dst):
    x = _sweep().to(src)
    expected = x.to(dst)
    got = x.to("tpu").to(dst).cpu()
    assert torch.equal(got, expected)
    # through copy_ into an existing integer tensor as well
    out = torch.empty(x.shape, dtype=dst, device="tpu")
    out.copy_(x.to("tpu"))
    assert torch.equal(out.cpu(), expected)


@pytest.mark.parametrize("src", [torch.complex64, torch.complex128])
def test_complex_to_int_takes_the_real_part(src):
    x = torch.complex(_sweep(), torch.ones(_sweep().shape, dtype=torch.float64)).to(src)
    for dst in (torch.uint8, torch.int32, torch.int64):
        assert torch.equal(x.to("tpu").to(dst).cpu(), x.to(dst))


def test_float8_to_int():
    x = torch.tensor([-2.0, 300.0, 448.0, -448.0, 0.5]).to(torch.float8_e4m3fn)
    for dst in (torch.uint8, torch.int8, torch.int64):
        assert torch.equal(x.to("tpu").to(dst).cpu(), x.to(dst))
