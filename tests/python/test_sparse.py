"""Sparse COO tensors on "tpu" against the CPU: nn.Embedding(sparse=True) trained with SGD, and
sparse tensors built, moved, coalesced, added (sparse + sparse, dense + sparse) and densified;
their products (sparse @ dense, dense @ sparse, sparse * sparse, sparse @ sparse, with
gradients), index_select and softmax, in each eager mode."""

import pytest
import torch

import torch_pjrt


def _embedding_steps(device):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 3, sparse=True).to(device)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    grads = []
    for _ in range(2):
        opt.zero_grad()
        emb(torch.tensor([[1, 2, 1], [4, 5, 9]], device=device)).pow(2).sum().backward()
        g = emb.weight.grad
        grads.append((g.layout, g.is_coalesced(), g.coalesce().indices().cpu(), g.to_dense().cpu()))
        opt.step()
    return grads, emb.weight.detach().cpu()


def test_sparse_embedding_trains_as_on_the_cpu(counters):
    (cpu_grads, cpu_weight), (tpu_grads, tpu_weight) = (
        _embedding_steps("cpu"),
        _embedding_steps("tpu"),
    )
    for (layout, coalesced, indices, dense), c in zip(tpu_grads, cpu_grads):
        assert (layout, coalesced) == c[:2]
        assert torch.equal(indices, c[2])
        torch.testing.assert_close(dense, c[3])
    torch.testing.assert_close(tpu_weight, cpu_weight)
    assert counters()["cpu_fallbacks"] == {}


def _ops(device):
    i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    s = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4, 5, 6]), (2, 3)).to(device)
    c = s.coalesce()
    d = torch.ones(2, 3, device=device)
    hybrid = torch.sparse_coo_tensor(
        torch.tensor([[0, 2, 0]]), torch.arange(6.0).view(3, 2), (3, 2)
    )
    hybrid = hybrid.to(device)
    # No sparse dims: every value sits at the one coordinate; coalescing sums them, in their dtype.
    dense_only = torch.sparse_coo_tensor(
        torch.zeros(0, 3, dtype=torch.long), torch.arange(6, dtype=torch.int32).view(3, 2), (2,)
    ).to(device)
    out = [
        s.is_coalesced(), c.is_coalesced(), c.indices(), c.values(), s.to_dense(),
        (s + s).to_dense(), (c + c).is_coalesced(), (c + c).values(), (s + c * 1).to_dense(),
        torch.add(d, s, alpha=2), d.clone().add_(s), hybrid.coalesce().values(), hybrid.to_dense(),
        torch.add(torch.ones(2, 3, dtype=torch.float64, device=device), s),
        dense_only.coalesce().values(), dense_only.coalesce().indices(),
        d.sparse_mask(c), (s * 2).sparse_mask(c), (c * 2).to_dense(), (2 * c).to_dense(), (s / 4).to_dense(), s.clone().mul_(3).to_dense(),
        dense_only.to_dense(), torch.sparse.sum(s, 0), s.sum(dim=1), c.to(torch.complex64).mul(1j).conj().resolve_conj(),
    ]  # fmt: skip
    return [x.cpu() if isinstance(x, torch.Tensor) else x for x in out]


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_sparse_ops_match_the_cpu(counters):
    for t, c in zip(_ops("tpu"), _ops("cpu")):
        if isinstance(c, torch.Tensor):
            assert t.layout == c.layout and t.dtype == c.dtype
            assert torch.equal(
                t.to_dense() if t.is_sparse else t, c.to_dense() if c.is_sparse else c
            )
        else:
            assert t == c
    assert counters()["cpu_fallbacks"] == {}
    s = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1), (2,)).to("tpu")
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + torch.ones(2, device="tpu")
    with pytest.raises(RuntimeError, match="to have same size"):
        torch.ones(3, device="tpu") + s


MODES = ["strict", "fused", "debug"]


def _matrix(device, dtype=torch.float32, coalesced=False):
    # Uncoalesced: (1, 2) appears twice.
    i = torch.tensor([[0, 1, 1, 2, 1], [2, 0, 2, 1, 2]])
    s = torch.sparse_coo_tensor(i, torch.tensor([3.0, 4, 5, 6, -1], dtype=dtype), (3, 3))
    return (s.coalesce() if coalesced else s).to(device)


def _assert_matches(tpu, cpu):
    for t, c in zip(tpu, cpu):
        assert t.device.type == "tpu" and t.layout == c.layout and t.dtype == c.dtype
        if c.is_sparse:
            assert t.is_coalesced() == c.is_coalesced()
            t, c = t.to_dense(), c.to_dense()
        torch.testing.assert_close(t.cpu(), c, rtol=1e-6, atol=1e-6, equal_nan=True)


def _sparse_dense_products(device, dtype):
    s = _matrix(device, dtype)
    d = torch.arange(6.0).to(dtype).reshape(3, 2).to(device)
    ones = torch.ones(3, 2, dtype=dtype, device=device)
    nan = torch.full((3, 2), float("nan"), dtype=dtype, device=device)
    empty = torch.sparse_coo_tensor(
        torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=dtype), (3, 3)
    ).to(device)
    return [
        s @ d, torch.sparse.mm(s, d), torch.addmm(ones, s, d), torch.addmm(ones, s, d, beta=0.5, alpha=2),
        torch.addmm(nan, s, d, beta=0), torch.addmm(nan, empty, d, beta=0),
        torch.addmm(torch.ones(2, dtype=dtype, device=device), s, d), ones.clone().addmm_(s, d, alpha=-1),
        torch.addmm(ones, s, d, out=torch.empty(0, dtype=dtype, device=device)),
        torch.mm(s, d, out=torch.empty(0, dtype=dtype, device=device)),
        d.t() @ s, torch.mv(s, d[:, 0].contiguous()), s @ d[:, 1].contiguous(),
    ]  # fmt: skip


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("mode", MODES)
def test_sparse_dense_products_match_the_cpu(mode, counters):
    for dtype in (torch.float32, torch.float64, torch.complex64):
        with torch_pjrt.eager_mode(mode):
            tpu = _sparse_dense_products("tpu", dtype)
        _assert_matches(tpu, _sparse_dense_products("cpu", dtype))
    assert counters()["cpu_fallbacks"] == {}


def _sparse_mm_grads(device, dtype):
    out = []
    for product in (torch.sparse.mm, torch.mm, lambda s, d: (d.t() @ s).t()):
        s = _matrix(device, dtype).requires_grad_()
        d = torch.arange(6, dtype=dtype).reshape(3, 2).to(device).requires_grad_()
        weights = torch.tensor([[1.0, -2], [3, 0.5], [-1, 4]], dtype=dtype, device=device)
        (product(s, d) * weights).sum().backward()
        out += [s.grad, d.grad]
    return out


def _sparse_sparse_grads(device):
    weights = torch.tensor([[1.0, -2, 3], [0.5, 2, -1], [4, 1, 2]], device=device)
    out = []
    for op in (
        lambda s: torch.sparse.mm(s, s),
        lambda s: s * s,
        lambda s: torch.sparse.softmax(s, 0),
        lambda s: torch.sparse.log_softmax(s, 1),
        lambda s: torch.sparse.sum(s, 0),
    ):
        s = _matrix(device).requires_grad_()
        (op(s).to_dense() * weights).sum().backward()
        # Coalesced: whether AccumulateGrad keeps the flag depends on reference counts.
        out.append(s.grad.coalesce())
    # One sparse dim and one dense dim: softmax over the dense dim, log_softmax over the sparse one.
    for dim, op in ((1, torch.sparse.softmax), (0, torch.sparse.log_softmax)):
        h = torch.sparse_coo_tensor(
            torch.tensor([[0, 2, 0]]), torch.tensor([[1.0, -2], [3, 4], [0.5, 6]]), (3, 2)
        )
        h = h.to(device).requires_grad_()
        (op(h, dim).to_dense() * weights[:, :2]).sum().backward()
        out.append(h.grad.coalesce())
    # The projection autograd uses: self's nonzeros, times their matches in an uncoalesced mask.
    mask = torch.sparse_coo_tensor(torch.tensor([[1, 1, 0], [2, 2, 0]]), torch.ones(3), (3, 3))
    for accumulate in (True, False):
        out.append(
            torch.ops.aten._sparse_mask_projection(_matrix(device), mask.to(device), accumulate)
        )
    return out


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("mode", MODES)
def test_sparse_mm_gradients_match_the_cpu(mode, counters):
    for dtype in (torch.float32, torch.float64):
        with torch_pjrt.eager_mode(mode):
            tpu = _sparse_mm_grads("tpu", dtype)
        cpu = _sparse_mm_grads("cpu", dtype)
        _assert_matches(tpu, cpu)
        # torch.sparse.mm's sparse gradient keeps s's pattern.
        assert torch.equal(tpu[0].coalesce().indices().cpu(), cpu[0].coalesce().indices())
    assert counters()["cpu_fallbacks"] == {}


# Strict mode only, to keep the file's time down (the forward ops run in every mode below).
@pytest.mark.filterwarnings("ignore:Sparse invariant checks", "ignore:Sparse CSR tensor support")
def test_sparse_sparse_gradients_match_the_cpu(counters):
    _assert_matches(_sparse_sparse_grads("tpu"), _sparse_sparse_grads("cpu"))
    assert counters()["cpu_fallbacks"] == {}


def _sparse_sparse_ops(device, dtype):
    s, c = _matrix(device, dtype), _matrix(device, dtype, coalesced=True)
    other = torch.sparse_coo_tensor(
        torch.tensor([[1, 2, 0], [2, 1, 1]]), torch.tensor([2.0, -3, 7], dtype=dtype), (3, 3)
    ).to(device)
    empty = torch.sparse_coo_tensor(
        torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=dtype), (3, 3)
    ).to(device)
    # One dense dim each, broadcast in the product.
    hybrid = torch.sparse_coo_tensor(
        torch.tensor([[0, 1, 1]]), torch.arange(6.0).view(3, 2), (3, 2)
    )
    hybrid_column = torch.sparse_coo_tensor(
        torch.tensor([[1, 2]]), torch.tensor([[2.0], [3]]), (3, 1)
    )
    hybrid, hybrid_column = hybrid.to(dtype).to(device), hybrid_column.to(dtype).to(device)
    return [
        s * other, c * other.coalesce(), torch.sparse.mm(s, other), s @ c,
        s.index_select(0, torch.tensor([0, 2, 2], device=device)),
        c.index_select(1, torch.tensor([-1, 0], device=device)),
        torch.sparse.softmax(s, 0), torch.sparse.log_softmax(c, 1),
        s * empty, torch.sparse.mm(empty, s), s.index_select(0, torch.tensor([0], device=device)),
        hybrid * hybrid_column, s - other, s.clone().mul_(other),
    ]  # fmt: skip


@pytest.mark.filterwarnings("ignore:Sparse invariant checks", "ignore:Sparse CSR tensor support")
@pytest.mark.parametrize("mode", ["strict", "fused"])  # Debug runs Strict's programs
def test_sparse_sparse_ops_match_the_cpu(mode, counters):
    # float64 in one mode: each mode compiles its own programs, which is most of the time.
    for dtype in (torch.float32, torch.float64) if mode == "strict" else (torch.float32,):
        with torch_pjrt.eager_mode(mode):
            tpu = _sparse_sparse_ops("tpu", dtype)
        _assert_matches(tpu, _sparse_sparse_ops("cpu", dtype))
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("device", ["cpu", "tpu"])
def test_sparse_product_errors_match_the_cpu(device):
    s = _matrix(device)
    wide = torch.sparse_coo_tensor(torch.tensor([[0], [3]]), torch.ones(1), (3, 4)).to(device)
    d = torch.ones(2, 2, device=device)
    cases = [
        (RuntimeError, r"addmm: Argument #3 \(dense\): Expected dim 0 size 3, got 2", lambda: s @ d),
        (RuntimeError, r"addmm: Argument #3 \(dense\): Expected dim 0 size 3, got 2", lambda: d @ s),
        (RuntimeError, "The expanded size of the tensor", lambda: torch.addmm(torch.ones(3, 3, device=device), s, torch.ones(3, 2, device=device))),
        (RuntimeError, "addmm_sparse_dense: expected either 'mat1' to have sparse layout", lambda: torch.addmm(torch.ones(3, 3, device=device), torch.ones(3, 3, device=device), s)),
        (RuntimeError, "addmm: matrices expected, got 3D tensor", lambda: torch.mm(s, torch.ones(3, 3, 3, device=device))),
        (RuntimeError, "expected scalar type Float but found Double", lambda: s @ torch.ones(3, 2, dtype=torch.float64, device=device)),
        (RuntimeError, r"mv: expected self.size\(-1\) == vec.size\(-1\)", lambda: torch.mv(s, torch.ones(2, device=device))),
        (RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x3\)", lambda: torch.sparse.mm(wide, s)),
        (RuntimeError, "mat1 dtype Float does not match mat2 dtype Double", lambda: torch.sparse.mm(s, s.double())),
        (RuntimeError, "expects sparse inputs with equal dimensionality", lambda: s * wide),
        (IndexError, "index contains 3 that is out of range for tensor of size", lambda: s.index_select(1, torch.tensor([0, 3], device=device))),
        (IndexError, "must be 1-D strided", lambda: s.index_select(0, torch.tensor([[0]], device=device))),
    ]  # fmt: skip
    for error, message, op in cases:
        with pytest.raises(error, match=message):
            op()
