"""Indexing ops against CPU PyTorch: gather/scatter, index_select/add/fill, advanced indexing,
index_put_, masked_fill, take, nonzero, embedding and one_hot; gradients and errors (out-of-range
indices here in Debug mode, where they raise at the op as on the CPU; Strict and Fused mode raise
them at the next synchronization: test_device_checks.py)."""

import itertools
import re
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same

import torch_pjrt


def sample(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


def grads(fn, *inputs):
    """Gradients of fn(*inputs).sum() weighted, on the CPU and on "tpu"."""
    cpu = [x.clone().requires_grad_() for x in inputs]
    tpu = [x.to("tpu").requires_grad_() for x in inputs]
    out = fn(*cpu)
    w = torch.randn(out.shape)
    (out * w).sum().backward()
    (fn(*tpu) * w.to("tpu")).sum().backward()
    for c, t in zip(cpu, tpu):
        assert_same(t.grad, c.grad)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_gather_scatter(dtype, counters):
    x = sample((3, 4), dtype)
    idx = torch.tensor([[0, 2], [1, 0], [2, 2]])
    src = sample((3, 4), dtype, seed=1)
    t, ti, ts = x.to("tpu"), idx.to("tpu"), src.to("tpu")
    assert_same(torch.gather(t, 1, ti), torch.gather(x, 1, idx))
    assert_same(torch.gather(t.t(), 0, ti.t()), torch.gather(x.t(), 0, idx.t()))
    uniq = torch.tensor([[0, 2], [1, 3], [2, 1]])
    assert_same(t.scatter(1, uniq.to("tpu"), ts), x.scatter(1, uniq, src))
    assert_same(t.scatter(1, uniq.to("tpu"), 5), x.scatter(1, uniq, 5))
    assert_same(t.scatter_add(1, ti, ts), x.scatter_add(1, idx, src))
    assert_same(t.scatter(1, ti, ts, reduce="add"), x.scatter(1, idx, src, reduce="add"))
    assert_same(t.scatter(1, ti, ts, reduce="multiply"), x.scatter(1, idx, src, reduce="multiply"))
    assert_same(t.scatter(1, ti, 2, reduce="multiply"), x.scatter(1, idx, 2, reduce="multiply"))
    y, ty = x.clone(), t.clone()
    y.scatter_add_(0, idx.t()[:, :3].contiguous() % 3, src)
    ty.scatter_add_(0, (idx.t()[:, :3].contiguous() % 3).to("tpu"), ts)
    assert_same(ty, y)
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.gather(t, 1, ti, out=out)
    assert_same(out, torch.gather(x, 1, idx))
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize(
    "reduce,dtype",
    [
        ("sum", torch.float32),
        ("prod", torch.float32),
        ("mean", torch.float32),
        ("mean", torch.int64),
        ("amax", torch.float32),
        ("amin", torch.int64),
    ],
)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self, dtype, counters):
    x = sample((3, 5), dtype)
    idx = torch.tensor([[0, 1, 1, 4], [2, 2, 2, 0], [3, 3, 0, 0]])
    src = sample((3, 4), dtype, seed=2)
    want = x.scatter_reduce(1, idx, src, reduce, include_self=include_self)
    got = x.to("tpu").scatter_reduce(
        1, idx.to("tpu"), src.to("tpu"), reduce, include_self=include_self
    )
    assert_same(got, want)
    assert counters()["cpu_fallbacks"] == {}


def test_gather_scatter_backward_and_errors(counters):
    x = torch.randn(3, 4)
    idx = torch.tensor([[0, 2], [1, 0], [2, 2]])
    grads(lambda a: torch.gather(a, 1, idx.to(a.device)), x)
    grads(lambda a, s: a.scatter_add(1, idx.to(a.device), s), x, torch.randn(3, 2))
    assert counters()["cpu_fallbacks"] == {}
    t = x.to("tpu")
    with torch_pjrt.eager_mode("debug"):  # at the op, as on the CPU
        with pytest.raises(
            RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"
        ):
            torch.gather(t, 0, torch.tensor([[5]], device="tpu"))
        with pytest.raises(
            RuntimeError, match="index -1 is out of bounds for dimension 1 with size 4"
        ):
            t.scatter_(1, torch.tensor([[-1]], device="tpu"), 1.0)
        with pytest.raises(
            RuntimeError, match="Index tensor must have the same number of dimensions"
        ):
            torch.gather(t, 0, torch.tensor([1], device="tpu"))
        with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
            t.scatter_(
                0,
                torch.tensor([[1]], device="tpu"),
                torch.ones(1, 1, dtype=torch.float64, device="tpu"),
            )
        assert_same(t, x)


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select_add_fill(index_dtype, counters):
    x = sample((4, 5))
    idx = torch.tensor([3, 0, 3], dtype=index_dtype)
    t, ti = x.to("tpu"), idx.to("tpu")
    assert_same(t.index_select(0, ti), x.index_select(0, idx))
    assert_same(t.t().index_select(0, ti), x.t().index_select(0, idx))
    assert_same(t.index_select(1, ti), x.index_select(1, idx))
    src = sample((4, 3), seed=1)
    assert_same(t.index_add(1, ti, src.to("tpu")), x.index_add(1, idx, src))
    assert_same(t.index_add(1, ti, src.to("tpu"), alpha=2.5), x.index_add(1, idx, src, alpha=2.5))
    i64 = torch.tensor([1, -1])
    copy_src = sample((2, 5), seed=3)
    copy_idx = torch.tensor([2, 0])
    assert_same(
        t.index_copy(0, copy_idx.to("tpu"), copy_src.to("tpu")), x.index_copy(0, copy_idx, copy_src)
    )
    assert_same(t.clone().index_fill_(1, i64.to("tpu"), -2.0), x.clone().index_fill_(1, i64, -2.0))
    assert_same(
        t.index_fill(0, i64.to("tpu"), torch.tensor(7.0)), x.index_fill(0, i64, torch.tensor(7.0))
    )
    assert counters()["cpu_fallbacks"] == {}


def test_index_ops_along_any_dim_are_exact(counters):
    # index_select and index_add/copy read and write whole rows along the other dims (a gather or
    # scatter of windows): any dim, negative dims, 0-dim, 1-dim and empty indices, any dtype.
    idx = {
        "1-d": torch.tensor([2, 0, 2, 1]),
        "0-dim": torch.tensor(1),
        "empty": torch.tensor([], dtype=torch.long),
    }
    for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.bool, torch.complex64):
        x = sample((3, 4, 5)).to(dtype)
        t = x.to("tpu")
        for dim, (name, i) in itertools.product((0, 1, 2, -1, -3), idx.items()):
            ti = i.to("tpu", torch.int32 if name == "empty" else i.dtype)
            assert_same(t.index_select(dim, ti), x.index_select(dim, i), rtol=0, atol=0)
    x = sample((3, 4, 5))
    i = torch.tensor([2, 0, 2, 2])  # repeated: the sums run in the CPU's order
    for dim in (0, 1, -1):
        shape = list(x.shape)
        shape[dim] = 4
        src = sample(shape, seed=2) * 1e3
        assert_same(
            x.to("tpu").index_add(dim, i.to("tpu"), src.to("tpu")),
            x.index_add(dim, i, src),
            rtol=0,
            atol=0,
        )
        j = torch.tensor([2, 0])
        shape[dim] = 2
        src = sample(shape, seed=3)
        assert_same(
            x.to("tpu").index_copy(dim, j.to("tpu"), src.to("tpu")),
            x.index_copy(dim, j, src),
            rtol=0,
            atol=0,
        )
    assert_same(
        sample(()).to("tpu").index_select(0, torch.tensor([0], device="tpu")),
        sample(()).index_select(0, torch.tensor([0])),
        rtol=0,
        atol=0,
    )
    assert counters()["cpu_fallbacks"] == {}


def test_embedding_forward_backward_with_padding_is_exact():
    weight = sample((10, 6))
    words = torch.tensor([[1, 2, 5, 5], [5, 0, 1, 9]])
    for kw in ({}, {"padding_idx": 5}, {"padding_idx": -1, "scale_grad_by_freq": True}):
        w = [weight.clone().requires_grad_(), weight.to("tpu").requires_grad_()]
        out = [F.embedding(words.to(v.device), v, **kw) for v in w]
        assert_same(out[1], out[0], rtol=0, atol=0)
        g = sample(out[0].shape, seed=1)
        for o, v in zip(out, w):
            o.backward(g.to(v.device))
        # scale_grad_by_freq: the CPU scales each row before adding it, we the sums (an ulp).
        exact = {} if kw.get("scale_grad_by_freq") else {"rtol": 0, "atol": 0}
        assert_same(w[1].grad, w[0].grad, **exact)


def test_index_select_add_backward_and_errors(counters):
    x = torch.randn(4, 5)
    idx = torch.tensor([3, 0, 3])
    grads(lambda a: a.index_select(1, idx.to(a.device)), x)
    grads(lambda a, s: a.index_add(0, idx.to(a.device), s), x, torch.randn(3, 5))
    emb = torch.nn.Embedding(6, 3, padding_idx=1)
    temb = torch.nn.Embedding(6, 3, padding_idx=1).to("tpu")
    temb.load_state_dict(emb.state_dict())
    words = torch.tensor([[1, 2, 5], [5, 0, 1]])
    emb(words).sum().backward()
    temb(words.to("tpu")).sum().backward()
    assert_same(temb.weight.grad, emb.weight.grad)
    assert counters()["cpu_fallbacks"] == {}
    t = x.to("tpu")
    with torch_pjrt.eager_mode("debug"):  # at the op, as on the CPU
        with pytest.raises(IndexError, match="index out of range in self"):
            t.index_select(0, torch.tensor([4], device="tpu"))
        with pytest.raises(IndexError, match="index out of range in self"):
            t.index_select(0, torch.tensor([-1], device="tpu"))
        with pytest.raises(
            RuntimeError, match="index 4 is out of bounds for dimension 0 with size 4"
        ):
            t.index_add_(0, torch.tensor([4], device="tpu"), torch.ones(1, 5, device="tpu"))
        with pytest.raises(
            IndexError, match="index_copy_\\(\\): index 4 is out of bounds for dimension 0"
        ):
            t.index_copy_(0, torch.tensor([4], device="tpu"), torch.ones(1, 5, device="tpu"))
        with pytest.raises(
            IndexError, match="index 4 is out of bounds for dimension 0 with size 4"
        ):
            t.index_fill_(0, torch.tensor([4], device="tpu"), 1.0)
        assert_same(t, x)


def test_advanced_indexing(counters):
    x = sample((4, 5, 6))
    t = x.to("tpu")
    i = torch.tensor([[0, 3], [-1, 2]])
    j = torch.tensor([1, -5])
    m = torch.tensor([True, False, True, True, False])
    cases = [
        lambda a, d: a[i.to(d)],
        lambda a, d: a[:, j.to(d)],
        lambda a, d: a[i.to(d), j.to(d)],
        lambda a, d: a[i.to(d), :, j.to(d)],
        lambda a, d: a[..., j.to(d)],
        lambda a, d: a[:, m.to(d)],
        lambda a, d: a[a > 0.5],
        lambda a, d: a[1:, None, j.to(d), ::2],
        lambda a, d: a.transpose(0, 2)[j.to(d).to(torch.int32)],
    ]
    for case in cases:
        assert_same(case(t, "tpu"), case(x, "cpu"))
    assert counters()["cpu_fallbacks"] == {}


def test_index_put(counters):
    x = sample((4, 5))
    t = x.to("tpu")
    i = torch.tensor([0, 2, 2])
    j = torch.tensor([1, 3, 3])
    y, ty = x.clone(), t.clone()
    y.index_put_((i, j), torch.tensor([1.0, 2.0, 3.0]), accumulate=True)
    ty.index_put_(
        (i.to("tpu"), j.to("tpu")), torch.tensor([1.0, 2.0, 3.0], device="tpu"), accumulate=True
    )
    assert_same(ty, y)
    y[x > 0] = 0.5
    ty[t > 0] = 0.5
    assert_same(ty, y)
    y[:, torch.tensor([-1, 0])] = torch.tensor([7.0, 8.0])
    ty[:, torch.tensor([-1, 0], device="tpu")] = torch.tensor([7.0, 8.0], device="tpu")
    assert_same(ty, y)
    y[1] = 3.0
    ty[1] = 3.0
    assert_same(ty, y)
    assert_same(
        t.index_put((i.to("tpu"),), torch.tensor(9.0, device="tpu")),
        x.index_put((i,), torch.tensor(9.0)),
    )
    assert counters()["cpu_fallbacks"] == {}


def _setitem_outcome(device, index, value):
    """What `a[index(a)] = value` does to an int64 `a` on `device`: its values, or the error."""
    a = torch.arange(12, device=device).reshape(3, 4)
    try:
        a[index(a)] = value
    except (RuntimeError, IndexError) as e:
        return type(e).__name__, str(e).split("\n")[0]
    return a.cpu().tolist()


@pytest.mark.parametrize(
    "index, value",
    [
        # A one-element CPU value under a mask is a masked_fill: any dtype, converted.
        (lambda a: a > 4, torch.tensor(1.5)),
        (lambda a: a > 4, torch.tensor([2.5])),
        (lambda a: a > 4, torch.tensor(7, dtype=torch.int32)),
        (lambda a: (Ellipsis, a[0] > 1), torch.tensor([9.5])),  # the mask after a None dim
        (lambda a: (a > 4, 0), torch.tensor(1.5)),  # a mask and an integer index: index_put_
        # The values' shape is checked before their dtype, as on the CPU.
        (lambda a: a > -1, torch.tensor([])),
        (lambda a: a > -1, torch.tensor([1.0, 2.0])),
        (lambda a: a > -1, torch.ones(12)),
    ],
)
def test_setitem_mask_and_check_order_match_the_cpu(index, value):
    assert _setitem_outcome("tpu", index, value) == _setitem_outcome("cpu", index, value)


def test_indexing_backward_and_errors(counters):
    x = torch.randn(4, 5)
    i = torch.tensor([0, 2, 2, -1])
    grads(lambda a: a[i.to(a.device)], x)
    grads(lambda a: a[:, torch.tensor([True, False, True, True, False], device=a.device)], x)
    assert counters()["cpu_fallbacks"] == {}
    t = x.to("tpu")
    with torch_pjrt.eager_mode("debug"):  # at the op, as on the CPU
        with pytest.raises(
            IndexError, match="index 4 is out of bounds for dimension 0 with size 4"
        ):
            t[torch.tensor([4], device="tpu")]
        with pytest.raises(
            IndexError, match="index -6 is out of bounds for dimension 0 with size 5"
        ):
            t[:, torch.tensor([-6], device="tpu")]
        with pytest.raises(
            IndexError, match="The shape of the mask \\[2\\] at index 0 does not match"
        ):
            t[torch.tensor([True, False], device="tpu")]
        with pytest.raises(
            IndexError, match="tensors used as indices must be long, int, byte or bool"
        ):
            t[torch.tensor([1.0], device="tpu")]
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
            t[
                torch.tensor([1], device="tpu"),
                torch.tensor([1], device="tpu"),
                torch.tensor([0], device="tpu"),
            ]
        with pytest.raises(
            IndexError, match="shape mismatch: indexing tensors could not be broadcast"
        ):
            t[torch.tensor([1, 2], device="tpu"), torch.tensor([1, 2, 3], device="tpu")]
        with pytest.raises(IndexError, match="index 4 is out of bounds"):
            t.index_put_(
                (torch.tensor([4], device="tpu"),), torch.tensor(1.0, device="tpu"), accumulate=True
            )
        with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[3\\]"):
            t.index_put_((torch.tensor([1], device="tpu"),), torch.ones(3, device="tpu"))
        with pytest.raises(
            RuntimeError, match="Index put requires the source and destination dtypes match"
        ):
            t.index_put_(
                (torch.tensor([1], device="tpu"),), torch.ones(5, dtype=torch.float64, device="tpu")
            )
        assert_same(t, x)


def test_masked_fill(counters):
    x = sample((3, 4))
    m = x > 0
    t, tm = x.to("tpu"), m.to("tpu")
    assert_same(t.masked_fill(tm, -1.5), x.masked_fill(m, -1.5))
    assert_same(t.masked_fill(tm[0], torch.tensor(2.0)), x.masked_fill(m[0], torch.tensor(2.0)))
    assert_same(
        t.masked_fill(tm, torch.tensor(3.0, device="tpu")), x.masked_fill(m, torch.tensor(3.0))
    )
    assert_same(t.t().masked_fill(tm.t(), 0), x.t().masked_fill(m.t(), 0))
    ti = t.to(torch.int64)
    assert_same(ti.masked_fill(tm, 7), x.to(torch.int64).masked_fill(m, 7))
    grads(lambda a: a.masked_fill(a.detach() > 0, 0.0), x)
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        t.masked_fill_(tm.to(torch.int64), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        t.masked_fill_(tm, torch.ones(2, device="tpu"))


def test_masked_scatter(counters):
    x = sample((3, 4))
    m = x > 0
    src = sample((4, 4), seed=5)
    t, tm, ts = x.to("tpu"), m.to("tpu"), src.to("tpu")
    assert_same(t.masked_scatter(tm, ts), x.masked_scatter(m, src))
    assert_same(t.t().masked_scatter(tm[:, 0], ts.t()), x.t().masked_scatter(m[:, 0], src.t()))
    grads(lambda a, s: a.masked_scatter(m.to(a.device), s), x, src)
    assert counters()["cpu_fallbacks"] == {}
    # Checked by the program (no host read of the mask): raised at the next synchronization.
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        t.clone().masked_scatter_(tm, torch.ones(1, device="tpu")).cpu()
    with pytest.raises(RuntimeError, match="masked_scatter_ only supports boolean masks"):
        t.masked_scatter_(tm.float(), ts)


def test_take_nonzero_one_hot(counters):
    x = sample((3, 4))
    t = x.to("tpu")
    idx = torch.tensor([[0, -1], [11, 5]])
    assert_same(t.take(idx.to("tpu")), x.take(idx))
    assert_same(t.t().take(idx.to("tpu")), x.t().take(idx))
    assert_same(torch.nonzero(t > 0), torch.nonzero(x > 0))
    assert_same(torch.nonzero(t.t() > 0), torch.nonzero(x.t() > 0))
    assert_same(torch.nonzero(torch.zeros(3, device="tpu")), torch.nonzero(torch.zeros(3)))
    labels = torch.tensor([0, 2, 1, 2])
    assert_same(
        torch.nn.functional.one_hot(labels.to("tpu"), 3), torch.nn.functional.one_hot(labels, 3)
    )
    grads(lambda a: a.take(idx.to(a.device)), x)
    y, ty = x.clone(), t.clone()
    y.put_(idx, torch.ones(2, 2), accumulate=True)
    ty.put_(idx.to("tpu"), torch.ones(2, 2, device="tpu"), accumulate=True)
    assert_same(ty, y)
    assert counters()["cpu_fallbacks"] == {}
    with torch_pjrt.eager_mode("debug"):  # at the op, as on the CPU
        with pytest.raises(
            IndexError, match="out of range: tried to access index 12 on a tensor of 12"
        ):
            t.take(torch.tensor([12], device="tpu"))
        with pytest.raises(IndexError, match="out of range: tried to access index -13"):
            t.take(torch.tensor([-13], device="tpu"))


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("op", ["index_copy", "index_add", "index_reduce"])
def test_index_ops_zero_dim(op, counters):
    # index_copy lets a 0-dim self take a one-element source and the reverse; where the CPU refuses
    # a combination (index_add, index_reduce), the device does too.
    for self_shape, index_shape, source_shape in itertools.product([(), (1,)], repeat=3):
        x, s = sample(self_shape), sample(source_shape, seed=1)
        i = torch.zeros(index_shape, dtype=torch.long)
        args = ("prod",) if op == "index_reduce" else ()
        try:
            expected = getattr(x, op)(0, i, s, *args)
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=re.escape(str(e).split(".")[0])):
                getattr(x.to("tpu"), op)(0, i.to("tpu"), s.to("tpu"), *args)
            continue
        actual = getattr(x.to("tpu"), op)(0, i.to("tpu"), s.to("tpu"), *args)
        assert_same(actual, expected)
    assert counters()["cpu_fallbacks"] == {}


def test_index_fill_complex_value_into_real():
    for value in (1 + 1j, torch.tensor(1 + 1j)):
        x = torch.zeros(2, 2)
        with pytest.raises(RuntimeError, match="Converting complex Scalar to non-complex"):
            x.index_fill_(1, torch.tensor([0]), value)
        t = x.to("tpu")
        with pytest.raises(RuntimeError, match="Converting complex Scalar to non-complex"):
            t.index_fill_(1, torch.tensor([0], device="tpu"), value)
        assert_same(t, x)
    c = torch.zeros(2, 2, dtype=torch.complex64)
    tc = c.to("tpu").index_fill_(1, torch.tensor([0], device="tpu"), 1 + 1j)
    assert_same(tc, c.index_fill_(1, torch.tensor([0]), 1 + 1j))


def test_uint8_mask_deprecation_warning():
    # One warning per uint8 index, as the CPU gives (PyTorch's own tests count them).
    x = torch.randn(5, 3)
    mask = torch.tensor([1, 0, 1, 1, 0], dtype=torch.uint8)
    for device in ("cpu", "tpu"):
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            x.to(device)[mask.to(device)]
    t, tm = x.to("tpu"), mask.to("tpu")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        t.index_put_((tm,), t[tm], accumulate=True)
    assert len([w for w in record if "torch.uint8" in str(w.message)]) == 2


def test_index_into_empty_dimension():
    # A non-empty index into a size-0 dimension fails at once, with the CPU's message; an empty one
    # is fine.
    for device in ("cpu", "tpu"):
        x = torch.empty(10, 0, device=device)
        for index in ([0, 1], torch.tensor([0, 1], device=device)):
            with pytest.raises(
                IndexError, match="index is out of bounds for dimension with size 0"
            ):
                x[:, index]
            with pytest.raises(
                IndexError, match="index is out of bounds for dimension with size 0"
            ):
                x[:, index] = 1.0
        assert x[[1, 2]].shape == (2, 0)
        assert x[[], []].shape == (0,)
        assert x[:, torch.tensor([], dtype=torch.long, device=device)].shape == (10, 0)
    torch.tpu.synchronize()  # no device-side check was left to fail later


def test_index_without_indices():
    for device in ("cpu", "tpu"):
        with pytest.raises(IndexError, match="at least one index must be provided"):
            torch.ops.aten.index.Tensor(torch.tensor([1.0], device=device), [])


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_argument_checks_run_no_python():
    """gather, the scatter family, index_select and index_add/copy/reduce check their arguments in
    C++ (ATen's structured meta functions, or the CPU kernel's checks written out), not through the
    Python meta kernels torch registers for them (tens of microseconds a call). Their errors are
    the CPU's."""
    x = torch.zeros(4, 3, device="tpu")
    index = torch.tensor([[0, 1, 2]], device="tpu")
    rows = torch.tensor([2, 0], device="tpu")
    src = torch.ones(2, 3, device="tpu")
    calls = [
        lambda: x.gather(0, index),
        lambda: x.scatter(0, index, src),
        lambda: x.clone().scatter_(0, index, 2.0),
        lambda: x.clone().scatter_(0, index, src, reduce="add"),
        lambda: x.scatter_add(0, index, src),
        lambda: x.scatter_reduce(0, index, src, "amax"),
        lambda: x.index_select(0, rows),
        lambda: x.index_add(0, rows, src),
        lambda: x.clone().index_copy_(0, rows, src),
        lambda: x.index_reduce(0, rows, src, "prod"),
    ]
    entered = []
    python_kernels = ("_meta_registrations", "_decomp", "_refs", "_prims")

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and any(f"torch/{m}" in name for m in python_kernels):
            entered.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    for call in calls:
        call()  # warm: first calls may import
    sys.setprofile(profile)
    try:
        for call in calls:
            call()
    finally:
        sys.setprofile(None)
    assert entered == []

    for bad in (
        lambda d: torch.zeros(4, 3, device=d).gather(0, torch.tensor([[0.0]], device=d)),
        lambda d: torch.zeros(4, 3, device=d).index_copy_(
            0, torch.tensor([[0]], device=d), torch.ones(1, 3, device=d)
        ),
        lambda d: torch.zeros(4, 3, device=d).index_select(0, torch.tensor([[0]], device=d)),
        lambda d: torch.zeros(4, 3, device=d).index_add(
            0, torch.tensor([0], device=d), torch.ones(1, 3, dtype=torch.int64, device=d)
        ),
        lambda d: torch.zeros(4, 3, device=d).scatter_(
            1, torch.zeros(5, 1, dtype=torch.long, device=d), 1.0
        ),
    ):
        errors = []
        for d in ("cpu", "tpu"):
            with pytest.raises((RuntimeError, IndexError)) as e:
                bad(d)
            errors.append((type(e.value), str(e.value)))
        assert errors[0] == errors[1]


def test_put_alerts_under_deterministic_algorithms():
    # put_ without accumulate races on duplicate indices: refused under use_deterministic_algorithms,
    # as on the CPU; accumulate=True is deterministic and runs.
    def put(device, accumulate):
        index, source = torch.tensor([0, 0], device=device), torch.tensor([1.0, 2.0], device=device)
        return torch.zeros(3, device=device).put_(index, source, accumulate=accumulate)

    torch.use_deterministic_algorithms(True)
    try:
        for device in ("cpu", "tpu"):
            with pytest.raises(RuntimeError, match="^put_ does not have a deterministic"):
                put(device, False)
        assert_same(put("tpu", True), put("cpu", True))
    finally:
        torch.use_deterministic_algorithms(False)
