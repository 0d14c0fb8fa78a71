"""LU and QR decompositions and what builds on them (solve, inv, det, slogdet, Cholesky solves,
lu_unpack, householder_product, ormqr), compared with CPU PyTorch, with no CPU fallback."""

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def close(got, want, dtype):
    tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_family(dtype):
    torch.manual_seed(0)
    a, b = torch.randn(2, 4, 4, dtype=dtype), torch.randn(2, 4, 3, dtype=dtype)
    ta, tb = a.to("tpu"), b.to("tpu")
    lu, piv = torch.linalg.lu_factor(ta)
    lu0, piv0 = torch.linalg.lu_factor(a)
    close(lu, lu0, dtype)
    assert torch.equal(piv.cpu(), piv0)
    for x, y in zip(torch.linalg.lu(ta), torch.linalg.lu(a)):
        close(x, y, dtype)
    for adjoint in (False, True):
        close(
            torch.linalg.lu_solve(lu, piv, tb, adjoint=adjoint),
            torch.linalg.lu_solve(lu0, piv0, b, adjoint=adjoint),
            dtype,
        )
    close(torch.linalg.solve(ta, tb), torch.linalg.solve(a, b), dtype)
    close(torch.linalg.solve(ta, tb.mT, left=False), torch.linalg.solve(a, b.mT, left=False), dtype)
    close(torch.linalg.solve(ta, tb[..., 0]), torch.linalg.solve(a, b[..., 0]), dtype)
    close(torch.linalg.inv(ta), torch.linalg.inv(a), dtype)
    close(torch.linalg.det(ta), torch.linalg.det(a), dtype)
    for x, y in zip(torch.linalg.slogdet(ta), torch.linalg.slogdet(a)):
        close(x, y, dtype)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_rectangular_lu_and_qr(shape):
    torch.manual_seed(1)
    a = torch.randn(2, *shape, dtype=torch.float64)
    for x, y in zip(torch.linalg.lu(a.to("tpu")), torch.linalg.lu(a)):
        close(x, y, a.dtype)
    for mode in ("reduced", "complete", "r"):
        for x, y in zip(torch.linalg.qr(a.to("tpu"), mode=mode), torch.linalg.qr(a, mode=mode)):
            close(x, y, a.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
def test_householder(dtype):
    torch.manual_seed(2)
    a, c = torch.randn(5, 3, dtype=dtype), torch.randn(5, 2, dtype=dtype)
    g, tau = torch.geqrf(a.to("tpu"))
    g0, tau0 = torch.geqrf(a)
    close(g, g0, dtype)
    close(tau, tau0, dtype)
    assert g.stride() == g0.stride() == (1, 5)  # column-major, as LAPACK leaves them
    batched = torch.randn(2, 3, 4, dtype=dtype)
    assert torch.geqrf(batched.to("tpu"))[0].stride() == torch.geqrf(batched)[0].stride()
    close(
        torch.linalg.householder_product(g, tau), torch.linalg.householder_product(g0, tau0), dtype
    )
    for left in (True, False):
        for transpose in (False, True):
            other = c if left else c.mT
            close(
                torch.ormqr(g, tau, other.to("tpu"), left, transpose),
                torch.ormqr(g0, tau0, other, left, transpose),
                dtype,
            )


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_cholesky_solves(dtype):
    torch.manual_seed(3)
    a = torch.randn(3, 3, dtype=dtype)
    h = a @ a.mH + torch.eye(3, dtype=dtype)
    b = torch.randn(3, 2, dtype=dtype)
    for upper in (False, True):
        f = torch.linalg.cholesky(h, upper=upper)
        close(torch.linalg.cholesky(h.to("tpu"), upper=upper), f, dtype)
        close(
            torch.cholesky_solve(b.to("tpu"), f.to("tpu"), upper=upper),
            torch.cholesky_solve(b, f, upper=upper),
            dtype,
        )
        close(
            torch.cholesky_inverse(f.to("tpu"), upper=upper),
            torch.cholesky_inverse(f, upper=upper),
            dtype,
        )
    close(
        torch.linalg.solve_triangular(f.to("tpu"), b.mT.to("tpu").mT, upper=True),
        torch.linalg.solve_triangular(f, b, upper=True),
        dtype,
    )


def test_singular():
    a = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    _lu, _piv, info = torch.linalg.lu_factor_ex(a.to("tpu"))
    assert info.item() == 2
    assert torch.linalg.det(a.to("tpu")).item() == 0
    sign, logabsdet = torch.linalg.slogdet(a.to("tpu"))
    assert sign.item() == 0 and logabsdet.item() == float("-inf")
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.solve(a.to("tpu"), torch.ones(2, 1, dtype=torch.float64, device="tpu"))
    with pytest.raises(torch.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        torch.linalg.inv(a.to("tpu"))


def test_gradients():
    torch.manual_seed(4)
    a = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 2, dtype=torch.float64)
    grads = []
    for dev in ("cpu", "tpu"):
        x = a.detach().to(dev).requires_grad_()
        (torch.linalg.solve(x, b.to(dev)).sum() + torch.linalg.qr(x)[1].sum()).backward()
        grads.append(x.grad)
    close(grads[1], grads[0], torch.float64)


def test_errors():
    t = torch.ones(3, 3, device="tpu")
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Half'"):
        torch.linalg.lu_factor(t.half())
    with pytest.raises(RuntimeError, match="Expected tensor with 2 or more dimensions"):
        torch.linalg.lu_factor(torch.ones(3, device="tpu"))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        torch.linalg.det(torch.ones(3, 2, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        torch.linalg.solve(t, t.double())
    with pytest.raises(
        RuntimeError,
        match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x2\)",
    ):
        torch.linalg.solve(t, torch.ones(4, 2, device="tpu"))
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        torch.linalg.lu_solve(t, torch.ones(3, dtype=torch.int64, device="tpu"), t)
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        torch.linalg.inv(t.half())


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_det_and_slogdet_gradients(dtype):
    """CPU PyTorch factors A^T for a contiguous real A and its backward relies on that: factoring A
    itself gave transposed gradients."""
    torch.manual_seed(5)
    a = torch.randn(2, 3, 3, dtype=dtype)
    for fn in (torch.linalg.det, lambda x: torch.linalg.slogdet(x)[1]):
        grads = []
        for dev in ("cpu", "tpu"):
            x = a.detach().to(dev).requires_grad_()
            fn(x).abs().sum().backward()
            grads.append(x.grad)
        close(grads[1], grads[0], dtype)


def test_ormqr_checks_batch_dimensions():
    # Unequal batch dimensions reached the program and failed to compile (or broadcast silently);
    # the CPU checks them first, tau's then other's.
    a, c = torch.randn(2, 3, 3), torch.randn(2, 3, 3)
    for tau, other, what in (
        (torch.randn(1, 3), c, r"tau to be equal to input.shape\[:-2\], but got \[1\]"),
        (torch.randn(2, 3), c[:1], r"other to be equal to input.shape\[:-2\], but got \[1\]"),
    ):
        with pytest.raises(RuntimeError, match=what):
            torch.ormqr(a, tau, other)  # the CPU, so the test fails if its message changes
        with pytest.raises(RuntimeError, match=what):
            torch.ormqr(a.to("tpu"), tau.to("tpu"), other.to("tpu"))


@pytest.mark.parametrize("shape", [(3, 0), (2, 3, 0), (0, 3), (0, 0)])
def test_lu_of_empty_matrices(shape):
    # A matrix with no columns has no pivots: lu and lu_unpack failed to compile their permutation
    # (upstream test_linalg's test_linalg_lu_family).
    a = torch.randn(shape)
    for fn in (torch.linalg.lu, lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x))):
        for c, t in zip(fn(a), fn(a.to("tpu"))):
            assert t.shape == c.shape and torch.equal(t.cpu(), c)
