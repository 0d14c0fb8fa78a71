"""Vector and matrix products and short linear-algebra compositions against CPU PyTorch: dot,
vdot, mv, addmv, addbmm, integer scalars of addmm/baddbmm, trace, nansum, count_nonzero, equal,
linalg.cross, with PyTorch's errors."""

import pytest
import torch
from conftest import assert_same


DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32,
          torch.uint8]  # fmt: skip


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0 if dtype in (torch.uint8, torch.bool) else -4, 5, shape, generator=g).to(dtype)  # fmt: skip


pytestmark = pytest.mark.usefixtures("no_fallback")


def tol(dtype):
    return {"rtol": 2e-2, "atol": 2e-2} if dtype in (torch.bfloat16, torch.float16) else {}


def check(fn, *args, **kw):
    expected = fn(*args, **kw)
    got = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], **kw)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    dtype = next(a.dtype for a in args if isinstance(a, torch.Tensor))
    assert_same(got, expected, **tol(dtype))


def raises(fn, *args, exc=RuntimeError, match=None, **kw):
    """The device raises what the CPU raises, with the same message."""
    with pytest.raises(exc) as cpu:
        fn(*args, **kw)
    with pytest.raises(exc) as tpu:
        fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], **kw)
    assert str(tpu.value) == str(cpu.value)
    if match:
        assert match in str(cpu.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_products(dtype):
    v, w = sample((7,), dtype), sample((7,), dtype, seed=1)
    mat = sample((5, 7), dtype, seed=2)
    self = sample((5,), dtype, seed=3)
    check(torch.dot, v, w)
    check(torch.vdot, v, w)
    check(torch.mv, mat, v)
    check(torch.addmv, self, mat, v)
    check(torch.addmv, self[:1], mat, v, beta=2, alpha=3)
    check(lambda s, m, x: torch.addmv(s, m, x, beta=0), torch.full((5,), float("nan")).to(dtype) if dtype.is_floating_point else self, mat, v)  # fmt: skip
    check(torch.mv, mat.t().contiguous().t(), v)  # a transposed layout
    check(torch.mv, torch.zeros(3, 0, dtype=dtype), torch.zeros(0, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_addbmm(dtype):
    b1, b2 = sample((3, 4, 5), dtype), sample((3, 5, 2), dtype, seed=1)
    self = sample((4, 2), dtype, seed=2)
    check(torch.addbmm, self, b1, b2)
    check(torch.addbmm, self[:1], b1, b2, beta=2, alpha=3)
    if dtype.is_floating_point:
        check(torch.addbmm, self, b1, b2, beta=0.5, alpha=-1.5)


def test_complex_beta_alpha_of_addbmm_addmv():
    """Complex beta and alpha (with beta 0, which ignores self), as addmm and baddbmm take them;
    a real op raises the CPU's error for them."""
    g = torch.Generator().manual_seed(0)
    b1, b2, self, mat, v, sv = (
        torch.randn(shape, dtype=torch.complex64, generator=g)
        for shape in ((3, 4, 5), (3, 5, 2), (4, 2), (4, 5), (5,), (4,))
    )
    for beta, alpha in (((1 + 2j), (2 + 3j)), (0j, -1j)):
        check(torch.addbmm, self, b1, b2, beta=beta, alpha=alpha)
        check(torch.addmv, sv, mat, v, beta=beta, alpha=alpha)
        check(torch.addmv, sv[:1], mat, v, beta=beta, alpha=alpha)
    raises(torch.addbmm, self.real, b1.real, b2.real, alpha=1j, match="without overflow")
    raises(torch.addmv, sv.real, mat.real, v.real, beta=1j, match="without overflow")


def test_integer_scalars_take_integer_parts():
    # PyTorch's integer kernels cast float beta and alpha to the integer type.
    a = sample((2, 3), torch.int64)
    m1, m2 = sample((2, 4), torch.int64, 1), sample((4, 3), torch.int64, 2)
    expected = torch.ops.aten.addmm(a, m1, m2, beta=1.9, alpha=2.7)
    assert_same(torch.ops.aten.addmm(a.to("tpu"), m1.to("tpu"), m2.to("tpu"), beta=1.9, alpha=2.7), expected)  # fmt: skip
    b1, b2 = sample((2, 2, 4), torch.int64, 3), sample((2, 4, 3), torch.int64, 4)
    s = sample((2, 2, 3), torch.int64, 5)
    expected = torch.ops.aten.baddbmm(s, b1, b2, beta=1, alpha=0.6)
    assert_same(torch.ops.aten.baddbmm(s.to("tpu"), b1.to("tpu"), b2.to("tpu"), beta=1, alpha=0.6), expected)  # fmt: skip


def test_in_place_and_out_forms():
    mat, v, s = sample((4, 3), torch.float32), sample((3,), torch.float32, 1), sample((4,), torch.float32, 2)  # fmt: skip
    t = s.to("tpu")
    t.addmv_(mat.to("tpu"), v.to("tpu"), alpha=2)
    assert_same(t, torch.addmv(s, mat, v, alpha=2))
    out = torch.empty(0, device="tpu")
    torch.mv(mat.to("tpu"), v.to("tpu"), out=out)
    assert_same(out, torch.mv(mat, v))
    b1, b2, m = sample((2, 4, 3), torch.float32), sample((2, 3, 5), torch.float32, 1), sample((4, 5), torch.float32, 2)  # fmt: skip
    t = m.to("tpu")
    t.addbmm_(b1.to("tpu"), b2.to("tpu"))
    assert_same(t, torch.addbmm(m, b1, b2))
    out = torch.empty(0, device="tpu")
    torch.addbmm(m.to("tpu"), b1.to("tpu"), b2.to("tpu"), out=out)
    assert_same(out, torch.addbmm(m, b1, b2))


def test_product_errors():
    f = torch.ones
    raises(torch.dot, f(2, 2), f(2), match="1D tensors expected")
    raises(torch.dot, f(3), f(4), match="inconsistent tensor size")
    raises(torch.dot, f(3), f(3, dtype=torch.float64), match="same dtype")
    raises(torch.dot, f(2, dtype=torch.bool), f(2, dtype=torch.bool), exc=NotImplementedError)
    raises(torch.mv, f(3), f(3), match="vector + matrix @ vector expected")
    raises(torch.mv, f(3, 2), f(3), match="size mismatch")
    raises(torch.mv, f(3, 2), f(2, dtype=torch.float64), match="same dtype")
    raises(torch.addmv, f(4), f(3, 2), f(2), match="size mismatch")
    raises(torch.addbmm, f(2, 2), f(2, 2), f(2, 2, 2), match="batch1 must be a 3D tensor")
    raises(torch.addbmm, f(2, 2), f(2, 2, 3), f(2, 2, 2), match="Incompatible matrix sizes")
    raises(torch.addbmm, f(2, 2), f(3, 2, 2), f(2, 2, 2), match="same number of batches")
    raises(torch.addbmm, f(3, 2), f(2, 2, 2), f(2, 2, 2), match="expanded size")
    # Integer products take float scalars' integer parts (no error), as on the CPU.
    i = torch.ones(2, 2, dtype=torch.int64)
    check(lambda s, x, y: torch.addbmm(s, x, y, beta=1.5, alpha=2.5), i, i[None], i[None])
    check(lambda s, x, y: torch.addmv(s, x, y, alpha=1.5), i[0], i, i[0])


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
def test_trace_nansum_count_nonzero(dtype):
    a = sample((4, 6), dtype)
    if dtype.is_floating_point:
        a[1, 2] = float("nan")
    if dtype != torch.bool:
        check(torch.trace, a)
    check(torch.nansum, a)
    check(torch.nansum, a, 1)
    check(lambda x: torch.nansum(x, (0,), keepdim=True), a)
    check(torch.count_nonzero, a)
    check(torch.count_nonzero, a, 0)
    check(lambda x: torch.count_nonzero(x, (0, 1)), a)
    out = torch.empty(0, dtype=torch.nansum(a).dtype, device="tpu")
    torch.nansum(a.to("tpu"), 0, out=out)
    assert_same(out, torch.nansum(a, 0), **tol(dtype))
    if dtype == torch.bool:
        raises(torch.trace, a, exc=NotImplementedError)
    else:
        raises(torch.trace, a[0], match="expected a matrix")


def test_equal():
    a = torch.tensor([1.0, 2.0, 3.0])
    t = a.to("tpu")
    assert torch.equal(t, a.clone().to("tpu"))
    assert not torch.equal(t, torch.tensor([1.0, 2.0, 4.0], device="tpu"))
    assert not torch.equal(t, t[:2])
    assert torch.equal(t, a.double().to("tpu"))  # promoted, as on the CPU
    nan = torch.tensor([float("nan")], device="tpu")
    assert not torch.equal(nan, nan)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int8])
def test_linalg_cross(dtype):
    a, b = sample((4, 3), dtype), sample((4, 3), dtype, seed=1)
    check(torch.linalg.cross, a, b)
    check(torch.linalg.cross, a[:1], b)
    check(lambda x, y: torch.linalg.cross(x, y, dim=0), a.t().contiguous(), b.t().contiguous())
    check(lambda x, y: torch.cross(x, y, dim=1), a, b)
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.linalg.cross(a.to("tpu"), b.to("tpu"), out=out)
    assert_same(out, torch.linalg.cross(a, b))
    raises(torch.linalg.cross, torch.ones(2, 2), torch.ones(2, 2), match="must have length 3")
    raises(torch.linalg.cross, torch.ones(3, 3, dtype=torch.bool), torch.ones(3, 3, dtype=torch.bool), exc=NotImplementedError)  # fmt: skip


def test_autograd_through_vector_products():
    mat, v, s = sample((4, 3), torch.float32), sample((3,), torch.float32, 1), sample((4,), torch.float32, 2)  # fmt: skip
    grads = []
    for device in ("cpu", "tpu"):
        m, x, y = (t.to(device).detach().requires_grad_() for t in (mat, v, s))
        (torch.addmv(y, m, x, alpha=2).sum() + torch.dot(x, x) + torch.trace(m[:3])).backward()
        grads.append([g.grad.cpu() for g in (m, x, y)])
    torch.testing.assert_close(grads[1], grads[0])


def spd(n, batch=(), dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, n, n, generator=g, dtype=torch.float64)
    return (x @ x.mT + n * torch.eye(n, dtype=torch.float64)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cholesky(dtype):
    a = spd(4, dtype=dtype)
    check(torch.linalg.cholesky, a)
    check(lambda x: torch.linalg.cholesky(x, upper=True), spd(3, (2,), dtype))
    check(lambda x: torch.linalg.cholesky_ex(x).L, a)
    l, info = torch.linalg.cholesky_ex(a.to("tpu"))
    assert info.dtype == torch.int32 and info.item() == 0
    bad = torch.eye(4, dtype=dtype)
    bad[0, 1] = bad[1, 0] = 2.0
    # XLA's Cholesky gives NaN for the whole matrix when it fails, so info is 1 where LAPACK's
    # names the order of the failing minor (2 here): the error is raised, its order may differ.
    assert torch.linalg.cholesky_ex(bad.to("tpu")).info.item() > 0
    for batch in (bad, torch.stack([a, bad])):
        with pytest.raises(torch.linalg.LinAlgError, match="not positive-definite") as e:
            torch.linalg.cholesky(batch.to("tpu"))
        assert ("Batch element 1" in str(e.value)) == (batch.dim() == 3)
    raises(torch.linalg.cholesky, torch.ones(2, 3, dtype=dtype), match="square matrices")
    raises(torch.linalg.cholesky, torch.ones(3, dtype=dtype), match="at least 2 dimensions")
    raises(torch.linalg.cholesky, torch.eye(2, dtype=torch.int64), match="floating point")
    raises(torch.linalg.cholesky, torch.eye(2, dtype=torch.float16), exc=NotImplementedError)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solve_triangular(dtype):
    a = torch.linalg.cholesky(spd(4, (2,), dtype))
    b = sample((2, 4, 3), dtype, seed=1)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=False), a, b)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a.mT, b)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=False, left=False), a, b.mT)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=False, unitriangular=True), a, b)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=False), a[0], b)  # broadcast
    for transpose in (False, True):
        expected = torch.triangular_solve(b, a, upper=False, transpose=transpose)
        got = torch.triangular_solve(b.to("tpu"), a.to("tpu"), upper=False, transpose=transpose)
        assert_same(got.solution, expected.solution)
        assert_same(got.cloned_coefficient, expected.cloned_coefficient)
    raises(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), torch.eye(3, dtype=dtype), torch.ones(4, 2, dtype=dtype), match="Incompatible shapes")  # fmt: skip
    raises(torch.triangular_solve, torch.ones(4, 2, dtype=dtype), torch.eye(3, dtype=dtype), match="Incompatible matrix sizes")  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_norm_and_dist(dtype):
    a, b = sample((3, 4), dtype), sample((3, 4), dtype, seed=1)
    for p in (2, 1, 3.5, float("inf"), 0):
        check(lambda x: torch.norm(x, p), a)
        check(lambda x, y: torch.dist(x, y, p), a, b)
    check(lambda x: torch.norm(x, dim=1, keepdim=True), a)
    check(lambda x: torch.norm(x, 1, dim=0, dtype=torch.float64), a)
    # The aten overload torch.norm leaves to linalg.vector_norm (it recursed into itself).
    check(lambda x: torch.ops.aten.norm.ScalarOpt_dim_dtype(x, 2, [1], False, dtype=torch.float64), a)  # fmt: skip
    raises(torch.dist, torch.ones(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), match="floating point")  # fmt: skip


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize(
    "mode", ["use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"]
)
def test_cdist_and_gradients(p, mode):
    g = torch.Generator().manual_seed(7)
    a = torch.randn(2, 1, 4, 3, generator=g, dtype=torch.float64)
    b = torch.randn(3, 5, 3, generator=g, dtype=torch.float64)
    b[0, 0] = a[0, 0, 0]  # a zero distance: its gradient is zero
    a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
    a2, b2 = a.to("tpu").requires_grad_(), b.to("tpu").requires_grad_()
    want = torch.cdist(a1, b1, p=p, compute_mode=mode)
    got = torch.cdist(a2, b2, p=p, compute_mode=mode)
    torch.testing.assert_close(got.cpu(), want)
    w = torch.randn(want.shape, generator=g, dtype=torch.float64)
    (want * w).sum().backward()
    (got * w.to("tpu")).sum().backward()
    torch.testing.assert_close(a2.grad.cpu(), a1.grad)
    torch.testing.assert_close(b2.grad.cpu(), b1.grad)


def test_cdist_errors():
    x = torch.ones(3, 2, device="tpu")
    with pytest.raises(RuntimeError, match="same number of columns. X1: 2 X2: 3"):
        torch.cdist(x, torch.ones(3, 3, device="tpu"))
    with pytest.raises(RuntimeError, match="non-negative p values"):
        torch.cdist(x, x, p=-1)
    with pytest.raises(RuntimeError, match="floating-point dtypes, X1 got: Long"):
        torch.cdist(x.long(), x.long())
    with pytest.raises(NotImplementedError, match="\"cdist\" not implemented for 'Half'"):
        torch.cdist(x.half(), x.half())
