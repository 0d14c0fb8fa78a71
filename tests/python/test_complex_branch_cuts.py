"""Complex elementwise functions on and near their branch cuts, signed zeros included, against the
CPU (C++'s std::complex functions): the sign of a zero part names the side of a cut, so
asinh(0 - 2i) = 1.317 - 1.571i and asinh(-0 - 2i) = -1.317 - 1.571i."""

import math

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")

PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-20, -1e-20, 3.0, -3.0]
POINTS = [complex(a, b) for a in PARTS for b in PARTS]
# The functions with branch cuts (and log1p's singularity at -1); besides, functions real on the
# real axis, where the sign of the result's zero imaginary part is compared too.
OPS = ["asinh", "acosh", "atanh", "asin", "acos", "atan", "sqrt", "log", "log2", "log10", "log1p"]
OPS += ["sinh", "cosh", "exp", "expm1", "tanh", "reciprocal", "rsqrt", "sigmoid"]


def _close(x, y, tol):
    """Equal within tol, NaN where NaN, and with the same signs (zeros' included)."""
    for a, b in ((x.real, y.real), (x.imag, y.imag)):
        if math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                return False
            continue
        if math.isinf(a) or math.isinf(b):
            if a != b:
                return False
            continue
        if abs(a - b) > tol * max(1.0, abs(a), abs(b)):
            return False
        if a == 0 and b == 0 and math.copysign(1, a) != math.copysign(1, b):
            return False  # the zeros' signs
        if min(abs(a), abs(b)) > tol and (a > 0) != (b > 0):
            return False
    return True


def test_asinh_issue_value():
    for dtype in (torch.complex64, torch.complex128):
        z = torch.tensor([complex(0.0, -2.0), complex(-0.0, -2.0)], dtype=dtype)
        got = torch.asinh(z.to("tpu")).cpu()
        assert got[0].real > 1.3 and got[1].real < -1.3
        torch.testing.assert_close(got, torch.asinh(z))


@pytest.mark.parametrize("dtype,tol", [(torch.complex64, 2e-5), (torch.complex128, 1e-12)])
@pytest.mark.parametrize("op", OPS)
def test_branch_cuts_match_cpu(op, dtype, tol):
    z = torch.tensor(POINTS, dtype=dtype)
    expected = getattr(torch, op)(z).tolist()
    got = getattr(torch, op)(z.to("tpu")).cpu().tolist()
    bad = [(p, e, g) for p, e, g in zip(POINTS, expected, got) if not _close(e, g, tol)]
    assert not bad, f"{len(bad)} points differ, e.g. (z, cpu, tpu) {bad[:4]}"
