"""Batch, layer, group and RMS norm on "tpu" against CPU PyTorch: outputs, running statistics and
autograd gradients, with no CPU fallback."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same

DTYPES = [torch.float32, torch.float64]


def leaves(tensors, device, no_grad):
    """Copies of `tensors` on `device`; floating ones not listed in `no_grad` require grad."""
    out = []
    for i, t in enumerate(tensors):
        if t is None:
            out.append(None)
            continue
        c = t.to(device).detach()
        out.append(c.requires_grad_() if t.is_floating_point() and i not in no_grad else c)
    return out


def compare(fn, tensors, seed=0, no_grad=(), **tol):
    """fn(*tensors) on CPU and on "tpu": outputs and the gradients of the floating inputs (except
    the positions in `no_grad`)."""
    cpu, tpu = leaves(tensors, "cpu", no_grad), leaves(tensors, "tpu", no_grad)
    expected, actual = fn(*cpu), fn(*tpu)
    assert_same(actual, expected, **tol)
    g = torch.randn(expected.shape, generator=torch.Generator().manual_seed(seed)).to(
        expected.dtype
    )
    expected.backward(g)
    actual.backward(g.to("tpu"))
    for c, t in zip(cpu, tpu):
        if c is not None and c.requires_grad:
            assert_same(t.grad, c.grad, **tol)


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize(
    "shape, dtype",
    [((4, 3, 5, 6), torch.float32), ((8, 3), torch.float64), ((2, 3, 7), torch.float32)],
)
def test_batch_norm_training_updates_running_stats(shape, dtype, counters):
    x = randn(*shape, dtype=dtype) * 2 + 1
    w, b = randn(3, dtype=dtype, seed=1), randn(3, dtype=dtype, seed=2)
    rm_cpu, rv_cpu = randn(3, dtype=dtype, seed=3), randn(3, dtype=dtype, seed=4).abs()
    rm_tpu, rv_tpu = rm_cpu.to("tpu"), rv_cpu.to("tpu")

    def fn(x, w, b):
        rm, rv = (rm_cpu, rv_cpu) if x.device.type == "cpu" else (rm_tpu, rv_tpu)
        return F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=1e-4)

    compare(fn, [x, w, b])
    assert_same(rm_tpu, rm_cpu)
    assert_same(rv_tpu, rv_cpu)
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_eval_and_without_affine_or_stats(dtype, counters):
    x = randn(4, 3, 5, dtype=dtype)
    rm, rv = randn(3, dtype=dtype, seed=3), randn(3, dtype=dtype, seed=4).abs() + 0.5
    w, b = randn(3, dtype=dtype, seed=1), randn(3, dtype=dtype, seed=2)

    def eval_fn(x, w, b):
        return F.batch_norm(x, rm.to(x.device), rv.to(x.device), w, b, training=False)

    compare(eval_fn, [x, w, b])
    compare(lambda x: F.batch_norm(x, None, None, training=True), [x])
    compare(lambda x, w: F.batch_norm(x, None, None, w, None, training=True), [x, w])
    assert counters()["cpu_fallbacks"] == {}


def test_batch_norm_module_train_then_eval(counters):
    torch.manual_seed(0)
    cpu = torch.nn.BatchNorm2d(3)
    tpu = torch.nn.BatchNorm2d(3).to("tpu")
    x = randn(4, 3, 5, 5) * 3 + 2
    for _ in range(2):
        cpu(x)
        tpu(x.to("tpu"))
    assert_same(tpu.running_mean, cpu.running_mean)
    assert_same(tpu.running_var, cpu.running_var)
    assert int(tpu.num_batches_tracked.cpu()) == 2
    cpu.eval()
    tpu.eval()
    assert_same(tpu(x.to("tpu")), cpu(x))
    assert counters()["cpu_fallbacks"] == {}


def test_batch_norm_errors():
    x = torch.randn(4, 3, device="tpu")
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        torch.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        torch.native_batch_norm(x, torch.ones(4, device="tpu"), None, None, None, True, 0.1, 1e-5)


@pytest.mark.parametrize(
    "dtype, affine", [(torch.float32, True), (torch.float64, True), (torch.float32, False)]
)
def test_layer_norm(dtype, affine, counters):
    x = randn(2, 3, 4, 5, dtype=dtype) * 2 + 1
    w = randn(4, 5, dtype=dtype, seed=1) if affine else None
    b = randn(4, 5, dtype=dtype, seed=2) if affine else None
    compare(lambda x, w, b: F.layer_norm(x, (4, 5), w, b, eps=1e-3), [x, w, b])
    compare(lambda x, w: F.layer_norm(x, (5,), w), [x, randn(5, dtype=dtype) if affine else None])
    assert counters()["cpu_fallbacks"] == {}


def test_layer_norm_stats_and_errors():
    x = randn(3, 4)
    out, mean, rstd = torch.native_layer_norm(x.to("tpu"), [4], None, None, 1e-5)
    ref = torch.native_layer_norm(x, [4], None, None, 1e-5)
    for a, e in zip((out, mean, rstd), ref):
        assert_same(a, e)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input"):
        F.layer_norm(x.to("tpu"), (5,))


@pytest.mark.parametrize(
    "groups, dtype", [(1, torch.float64), (2, torch.float32), (4, torch.float32)]
)
def test_group_norm(dtype, groups, counters):
    x = randn(3, 4, 5, 2, dtype=dtype) * 2 + 1
    w, b = randn(4, dtype=dtype, seed=1), randn(4, dtype=dtype, seed=2)
    compare(lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-4), [x, w, b])
    compare(lambda x: F.group_norm(x, groups), [randn(2, 4, 3, dtype=dtype)])
    assert counters()["cpu_fallbacks"] == {}


def test_group_norm_error():
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(torch.randn(2, 4, 3, device="tpu"), 3)


@pytest.mark.parametrize(
    "dtype, weighted, eps",
    [(torch.float32, True, None), (torch.float64, True, 1e-2), (torch.float32, False, 1e-2)],
)
def test_rms_norm(dtype, weighted, eps, counters):
    x = randn(2, 3, 6, dtype=dtype)
    w = randn(3, 6, dtype=dtype, seed=1) if weighted else None
    compare(lambda x, w: F.rms_norm(x, (3, 6), w, eps), [x, w])
    compare(lambda x: F.rms_norm(x, (6,), None, eps), [x])
    assert counters()["cpu_fallbacks"] == {}


def test_norms_lower_precision(counters):
    x = randn(4, 3, 5, dtype=torch.bfloat16)
    tol = {"atol": 2e-2, "rtol": 2e-2}
    assert_same(F.layer_norm(x.to("tpu"), (5,)), F.layer_norm(x, (5,)), **tol)
    assert_same(F.group_norm(x.to("tpu"), 3), F.group_norm(x, 3), **tol)
    assert_same(F.rms_norm(x.to("tpu"), (5,)), F.rms_norm(x, (5,)), **tol)
    assert_same(
        F.batch_norm(x.to("tpu"), None, None, training=True),
        F.batch_norm(x, None, None, training=True),
        **tol,
    )
    assert counters()["cpu_fallbacks"] == {}


def test_batch_norm_aten_variants(counters):
    """The batch norm overloads other entry points (export, functionalization) reach."""
    aten = torch.ops.aten
    x, g = randn(4, 3, 5), randn(4, 3, 5, seed=1)
    w, b = randn(3, seed=2), randn(3, seed=3)
    stats = [randn(3, seed=4), randn(3, seed=5).abs() + 0.5]
    tpu_stats = [s.to("tpu") for s in stats]

    def same(actual, expected):
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype
            assert_same(a, e)

    def both(op, *args):
        dev = [a.to("tpu") if torch.is_tensor(a) else a for a in args]
        return op(*dev), op(*args)

    for op, extra in [
        (aten._native_batch_norm_legit, (True, 0.2, 1e-5)),
        (aten._batch_norm_with_update, (0.2, 1e-5)),
    ]:
        actual = op(x.to("tpu"), w.to("tpu"), b.to("tpu"), *tpu_stats, *extra)
        expected = op(x, w, b, *stats, *extra)
        same(actual, expected)
        same(tpu_stats, stats)
    same(*both(aten._native_batch_norm_legit.no_stats, x, w, b, True, 0.1, 1e-5))
    same(*both(aten._native_batch_norm_legit_no_training, x, w, b, *stats, 0.1, 1e-5))
    same(*both(aten._batch_norm_no_update, x, w, b, *stats, 0.1, 1e-5))
    _, mean, invstd = aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
    for train in (True, False):
        same(
            *both(
                aten.batch_norm_backward,
                g,
                x,
                w,
                *stats,
                mean,
                invstd,
                train,
                1e-5,
                [True, True, True],
                torch.empty(0, dtype=torch.uint8),
            )
        )
    assert counters()["cpu_fallbacks"] == {}


def test_batch_norm_mixed_precision(counters):
    """bfloat16 input with float32 parameters: float32 statistics, like the CPU kernel."""
    x = randn(4, 3, 5, dtype=torch.bfloat16)
    w, b, rm, rv = randn(3, seed=1), randn(3, seed=2), randn(3, seed=3), randn(3, seed=4).abs()
    trm, trv = rm.to("tpu"), rv.to("tpu")
    actual = torch.native_batch_norm(
        x.to("tpu"), w.to("tpu"), b.to("tpu"), trm, trv, True, 0.1, 1e-5
    )
    expected = torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype
        assert_same(a, e, atol=1e-2, rtol=1e-2)
    assert_same(trm, rm)
    assert_same(trv, rv)
    assert counters()["cpu_fallbacks"] == {}
