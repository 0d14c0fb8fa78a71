"""Hermitian eigendecomposition and SVD by Jacobi rotations, and the composites built on them
(eigvalsh, svdvals, pinv, matrix_rank, nuclear and spectral norms, cond), compared with CPU
PyTorch through invariants (eigen/singular values, reconstructions, |vectors|), with no CPU
fallback."""

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def tol(dtype):
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def close(got, want, dtype):
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=tol(dtype), rtol=tol(dtype))


def unitary(q, dtype):
    eye = torch.eye(q.shape[-1], dtype=dtype).expand(q.shape[:-2] + (q.shape[-1],) * 2)
    torch.testing.assert_close((q.mH @ q).cpu(), eye, atol=tol(dtype), rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo):
    torch.manual_seed(0)
    a = torch.randn(3, 6, 6, dtype=dtype)
    w0, v0 = torch.linalg.eigh(a, UPLO=uplo)
    w, v = torch.linalg.eigh(a.to("tpu"), UPLO=uplo)
    close(w, w0, dtype)
    unitary(v, dtype)
    # Only the UPLO triangle is read: the matrix it describes is reconstructed.
    h = (a.tril(-1) if uplo == "L" else a.triu(1)).mH
    h = h + h.mH + torch.diag_embed(a.diagonal(0, -2, -1).real.to(dtype))
    close(v @ torch.diag_embed(w.to(dtype)) @ v.mH, h, dtype)
    close(v.abs(), v0.abs(), dtype)
    close(torch.linalg.eigvalsh(a.to("tpu"), UPLO=uplo), w0, dtype)


def test_eigh_repeated_and_diagonal():
    a = torch.diag(torch.tensor([3.0, -1.0, 3.0, 0.0], dtype=torch.float64))
    w, v = torch.linalg.eigh(a.to("tpu"))
    assert w.cpu().tolist() == [-1.0, 0.0, 3.0, 3.0]
    close(v @ torch.diag_embed(w) @ v.mH, a, torch.float64)
    one = torch.linalg.eigh(torch.tensor([[2.0]], device="tpu"))
    assert one[0].cpu().tolist() == [2.0] and one[1].cpu().tolist() == [[1.0]]
    empty = torch.linalg.eigh(torch.ones(0, 3, 3, device="tpu"))
    assert empty[0].shape == (0, 3) and empty[1].shape == (0, 3, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (1, 6, 2)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full):
    torch.manual_seed(1)
    a = torch.randn(shape, dtype=dtype)
    u0, s0, vh0 = torch.linalg.svd(a, full_matrices=full)
    u, s, vh = torch.linalg.svd(a.to("tpu"), full_matrices=full)
    assert u.shape == u0.shape and vh.shape == vh0.shape
    close(s, s0, dtype)
    unitary(u, dtype)
    unitary(vh.mH, dtype)
    k = s.shape[-1]
    close(u[..., :k] @ torch.diag_embed(s.to(dtype)) @ vh[..., :k, :], a, dtype)
    close(u[..., :k].abs(), u0[..., :k].abs(), dtype)
    close(vh[..., :k, :].abs(), vh0[..., :k, :].abs(), dtype)
    close(torch.linalg.svdvals(a.to("tpu")), s0, dtype)


def test_svd_rank_deficient_and_empty():
    a = torch.tensor([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    u, s, vh = torch.linalg.svd(a.to("tpu"))
    torch.testing.assert_close(s.cpu(), torch.tensor([5.0, 0.0], dtype=torch.float64))
    unitary(u, torch.float64)
    close(u[:, :2] @ torch.diag(s) @ vh, a, torch.float64)
    assert torch.linalg.matrix_rank(a.to("tpu")).item() == 1
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        z = torch.zeros(shape, device="tpu")
        u, s, vh = torch.linalg.svd(z)
        u0, s0, vh0 = torch.linalg.svd(z.cpu())
        assert (u.shape, s.shape, vh.shape) == (u0.shape, s0.shape, vh0.shape)


@pytest.mark.parametrize("dtype", DTYPES)
def test_composites(dtype):
    torch.manual_seed(2)
    a, sq = torch.randn(2, 5, 3, dtype=dtype), torch.randn(4, 4, dtype=dtype)
    ta, tsq = a.to("tpu"), sq.to("tpu")
    close(torch.linalg.pinv(ta), torch.linalg.pinv(a), dtype)
    close(torch.pinverse(ta), torch.pinverse(a), dtype)
    h = sq + sq.mH
    close(
        torch.linalg.pinv(h.to("tpu"), hermitian=True), torch.linalg.pinv(h, hermitian=True), dtype
    )
    for ord in ["nuc", 2, -2]:
        close(torch.linalg.matrix_norm(ta, ord=ord), torch.linalg.matrix_norm(a, ord=ord), dtype)
    close(torch.linalg.cond(tsq), torch.linalg.cond(sq), dtype)
    r = torch.linalg.matrix_rank(ta, atol=1.0, rtol=0.5)
    assert torch.equal(r.cpu(), torch.linalg.matrix_rank(a, atol=1.0, rtol=0.5))
    rh = torch.linalg.matrix_rank(h.to("tpu"), hermitian=True)
    assert torch.equal(rh.cpu(), torch.linalg.matrix_rank(h, hermitian=True))


def test_gradients():
    torch.manual_seed(3)
    a = torch.randn(4, 4, dtype=torch.float64)

    def eigh_loss(x):
        w, v = torch.linalg.eigh(x)
        return (w * torch.arange(4.0, dtype=x.dtype, device=x.device)).sum() + (v.abs() ** 3).sum()

    def svd_loss(x):
        u, s, vh = torch.linalg.svd(x[:, :3], full_matrices=False)
        return (
            s.sum()
            + (u @ vh)
            .pow(2)
            .mul(torch.arange(12.0, dtype=x.dtype, device=x.device).view(4, 3))
            .sum()
        )

    for loss in (eigh_loss, svd_loss):
        x0 = a.clone().requires_grad_()
        (g0,) = torch.autograd.grad(loss(x0), x0)
        x = a.to("tpu").requires_grad_()
        (g,) = torch.autograd.grad(loss(x), x)
        close(g, g0, torch.float64)


def test_out():
    a = torch.randn(3, 3, dtype=torch.float64)
    w, v = (
        torch.empty(0, device="tpu", dtype=torch.float64),
        torch.empty(0, device="tpu", dtype=torch.float64),
    )
    torch.linalg.eigh(a.to("tpu"), out=(w, v))
    close(w, torch.linalg.eigvalsh(a), torch.float64)
    s = torch.empty(0, device="tpu", dtype=torch.float64)
    torch.linalg.svdvals(a.to("tpu"), out=s)
    close(s, torch.linalg.svdvals(a), torch.float64)


def test_errors():
    cases = [
        (lambda d: torch.linalg.eigh(torch.ones(2, 3, device=d)), RuntimeError, "square matrices"),
        (lambda d: torch.linalg.eigh(torch.ones(2, device=d)), RuntimeError, "at least 2 dimensions"),
        (lambda d: torch.linalg.eigh(torch.ones(2, 2, device=d), UPLO="X"), RuntimeError, "UPLO"),
        (lambda d: torch.linalg.eigh(torch.ones(2, 2, dtype=torch.int, device=d)), NotImplementedError, "linalg_eigh_cpu"),
        (lambda d: torch.linalg.svd(torch.ones(2, 2, dtype=torch.int, device=d)), RuntimeError, "floating point or complex"),
        (lambda d: torch.linalg.svd(torch.ones(2, 2, device=d), driver="gesvd"), RuntimeError, "driver="),
    ]  # fmt: skip
    for fn, kind, message in cases:
        for device in ("cpu", "tpu"):
            with pytest.raises(kind, match=message):
                fn(device)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bfloat16, torch.float16])
def test_matrix_exp(dtype):
    torch.manual_seed(4)
    # Norms from below 1 (no squaring) to ~40 (several squarings, different per matrix); float16
    # overflows beyond ~3.
    scales = torch.tensor([0.1, 2.0, 3.0 if dtype == torch.float16 else 10.0])
    a = torch.randn(3, 4, 4, dtype=dtype) * scales.view(3, 1, 1).to(dtype)
    want = torch.linalg.matrix_exp(a.to(torch.complex128 if dtype.is_complex else torch.float64))
    got = torch.linalg.matrix_exp(a.to("tpu"))
    assert got.dtype == dtype
    low = dtype in (torch.bfloat16, torch.float16)
    rtol = 2e-2 if low else tol(dtype)
    torch.testing.assert_close(
        got.cpu().to(want.dtype), want, rtol=rtol, atol=rtol * want.abs().max()
    )
    eye = torch.linalg.matrix_exp(torch.zeros(2, 2, device="tpu"))
    assert eye.cpu().tolist() == [[1.0, 0.0], [0.0, 1.0]]
    nan = torch.linalg.matrix_exp(torch.full((2, 2), float("nan"), device="tpu"))
    assert nan.isnan().all().item()


def test_matrix_exp_gradient_and_errors():
    a = torch.randn(3, 3, dtype=torch.float64)
    x0, x = a.clone().requires_grad_(), a.to("tpu").requires_grad_()
    w = torch.arange(9.0, dtype=torch.float64).view(3, 3)
    (g0,) = torch.autograd.grad((torch.linalg.matrix_exp(x0) * w).sum(), x0)
    (g,) = torch.autograd.grad((torch.linalg.matrix_exp(x) * w.to("tpu")).sum(), x)
    close(g, g0, torch.float64)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="square matrices"):
            torch.linalg.matrix_exp(torch.ones(2, 3, device=device))
        with pytest.raises(RuntimeError, match="floating point or complex"):
            torch.linalg.matrix_exp(torch.ones(2, 2, dtype=torch.int, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5)])
def test_lstsq(dtype, driver, shape):
    torch.manual_seed(5)
    a = torch.randn(shape, dtype=dtype)
    b = torch.randn(shape[:-1] + (2,), dtype=dtype)
    want = torch.linalg.lstsq(a, b, driver=driver)
    got = torch.linalg.lstsq(a.to("tpu"), b.to("tpu"), driver=driver)
    for g, w in zip(got, want):
        assert g.device.type == "tpu"
        if w.dtype == torch.int64:
            assert torch.equal(g.cpu(), w)
        else:
            close(g, w, dtype)
    vector = torch.linalg.lstsq(a.to("tpu"), b[..., 0].to("tpu"), driver=driver)
    close(vector.solution, torch.linalg.lstsq(a, b[..., 0], driver=driver).solution, dtype)


def test_lstsq_errors():
    a = torch.randn(3, 2)
    cases = [
        (lambda d: torch.linalg.lstsq(torch.ones(2, device=d), torch.ones(2, device=d)), "at least 2"),
        (lambda d: torch.linalg.lstsq(a.to(d), torch.ones(2, 2, device=d)), "should match other.size\\(-2\\)"),
        (lambda d: torch.linalg.lstsq(a.to(d), a.double().to(d)), "same dtype"),
        (lambda d: torch.linalg.lstsq(a.to(d), a.to(d), driver="foo"), "should be one of"),
    ]  # fmt: skip
    for fn, message in cases:
        for device in ("cpu", "tpu"):
            with pytest.raises(RuntimeError, match=message):
                fn(device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_out_dtype_checks(dtype):
    """out= of another dtype raises the CPU's error rather than being written (issue 37)."""
    a = torch.randn(3, 3, dtype=dtype)
    a = a + a.mH
    real = torch.empty(0, dtype=dtype).real.dtype
    wrong = torch.int32
    cases = [
        lambda d: torch.linalg.eigvalsh(a.to(d), out=torch.empty(0, dtype=wrong, device=d)),
        lambda d: torch.linalg.eigh(
            a.to(d),
            out=(torch.empty(0, dtype=real, device=d), torch.empty(0, dtype=wrong, device=d)),
        ),
        lambda d: torch.linalg.eigh(
            a.to(d),
            out=(torch.empty(0, dtype=wrong, device=d), torch.empty(0, dtype=dtype, device=d)),
        ),
        lambda d: torch.linalg.svd(
            a.to(d),
            out=tuple(torch.empty(0, dtype=t, device=d) for t in (dtype, wrong, dtype)),
        ),
        lambda d: torch.linalg.svd(
            a.to(d),
            out=tuple(torch.empty(0, dtype=t, device=d) for t in (wrong, real, dtype)),
        ),
        lambda d: torch.linalg.svdvals(a.to(d), out=torch.empty(0, dtype=wrong, device=d)),
        lambda d: torch.linalg.eigvalsh(
            torch.ones(2, 3, device=d), out=torch.empty(0, dtype=wrong, device=d)
        ),
    ]
    for fn in cases:
        with pytest.raises(RuntimeError) as cpu_error:
            fn("cpu")
        with pytest.raises(RuntimeError) as tpu_error:
            fn("tpu")
        assert str(tpu_error.value) == str(cpu_error.value)
    # the right dtypes still work
    out = torch.empty(0, dtype=real, device="tpu")
    torch.linalg.eigvalsh(a.to("tpu"), out=out)
    torch.testing.assert_close(out.cpu(), torch.linalg.eigvalsh(a), rtol=1e-4, atol=1e-4)
