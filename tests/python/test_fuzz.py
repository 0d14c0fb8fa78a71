"""Differential fuzzing against CPU PyTorch (issue 24), bounded for CI: for each op family of
fuzz_ops.py and each eager mode, a derandomized hypothesis run (the same cases on every run; longer
runs with random seeds: scripts/fuzz.sh); then the fuzzer's findings, fixed in the C++ core, as
regression tests."""

import re
import warnings

import fuzz_ops
import pytest
import torch
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.internal.conjecture import providers

import torch_pjrt

EXAMPLES = 50  # per family and mode


@pytest.fixture(autouse=True)
def _no_local_constants(monkeypatch):
    """Hypothesis mixes into its draws literals read from the project's non-test modules loaded so
    far, so the cases would depend on which tests ran before (a full CI run drew cases that
    `pytest test_fuzz.py` never did). Without that pool, a seed draws the same cases anywhere."""
    monkeypatch.setattr(providers, "_get_local_constants", providers.Constants)


@pytest.mark.parametrize("family", fuzz_ops.FAMILIES)
@pytest.mark.parametrize("mode", torch_pjrt.eager.MODES)
def test_fuzz(mode, family):
    ops = [op for op in fuzz_ops.OPS if op.family == family]

    # A fixed seed per mode: each mode gets cases of its own, the same on every run.
    @seed(torch_pjrt.eager.MODES.index(mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(fuzz_ops.cases(ops))
    def run(case):
        fuzz_ops.check(case, mode)

    run()


# --- the harness itself --------------------------------------------------------------------------


def _case(expr, sample, **kw):
    """The first case hypothesis draws for an op `expr` with sampler `sample`."""
    op = fuzz_ops.Op("probe", "probe", expr, sample, [torch.float32], **kw)
    found = []

    @settings(max_examples=1, derandomize=True, database=None, phases=["generate"])
    @given(fuzz_ops.cases([op]))
    def draw(case):
        found.append(case)

    draw()
    return found[0]


def _transposed(b):
    b.inputs["a"] = fuzz_ops.Input(torch.arange(6.0).reshape(3, 2), "t.t()")


@pytest.mark.parametrize(
    "expr, problem",
    [
        ("a + (a.device.type == 'tpu')", "values differ"),
        ("a.to(torch.float64 if a.device.type == 'tpu' else torch.float32)", "dtype"),
        ("a.contiguous() if a.device.type == 'tpu' else a", "is None != CPU a"),
        ("a.contiguous() if a.device.type == 'tpu' else a.clone()", r"strides \(3, 1\)"),
        ("[a.add_(1)][:0] if a.device.type == 'tpu' else []", "input a afterwards"),
        ("a[5] if a.device.type == 'tpu' else a[0]", "device raised IndexError.*CPU returned"),
    ],
)
def test_check_reports_each_kind_of_difference(expr, problem):
    case = _case(expr, _transposed, layout=True)
    with pytest.raises(fuzz_ops.Mismatch, match=problem) as info:
        fuzz_ops.check(case, "strict")
    if "raised" not in problem:
        # The reproducer in the message runs as it is.
        code = str(info.value).split("\nReproducer:\n", 1)[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, "<reproducer>", "exec"), {})  # noqa: S102


def test_check_reports_a_cpu_fallback():
    case = _case("torch.linalg.eigvals(a[:, :2])", _transposed)
    with pytest.raises(fuzz_ops.Mismatch, match="aten::_linalg_eigvals"):
        fuzz_ops.check(case, "strict")


def test_racy_writes_compare_metadata_only():
    # a.add_(a.t()) reads elements the CPU's loop has already written.
    def sample(b):
        b.inputs["a"] = fuzz_ops.Input(torch.arange(4.0).reshape(2, 2))
        b.inputs["b"] = fuzz_ops.Input(None, "a.t()")

    case = _case("a.add_(b)", sample)
    assert fuzz_ops.racy(case)
    fuzz_ops.check(case, "strict")
    assert not fuzz_ops.racy(_case("a.add_(a)", lambda b: b.tensor("a", (4,), torch.float32)))


def test_cases_cover_views_forms_and_empty_shapes():
    seen = set()

    @settings(max_examples=300, derandomize=True, database=None, phases=["generate"])
    @given(fuzz_ops.cases())
    def draw(case):
        seen.add("out" if "out=out" in case.expr else "inplace" if fuzz_ops.written(case) else "")
        for name, inp in case.inputs.items():
            if inp.base is not None:
                seen.add(re.match(r"t(\.\w+|\[)?", inp.view).group(0))
                shape = fuzz_ops._cpu_args(case)[name].shape
                seen.update({"empty"} if 0 in shape else {"0-dim"} if not shape else ())

    draw()
    assert {"t", "t.permute", "t[", "t.expand", "t.as_strided"} <= seen
    assert {"out", "inplace", "empty", "0-dim"} <= seen


# --- findings: each a bug of the C++ core found by fuzzing, fixed; their regression tests ---------


def _both(fn):
    """fn("cpu") and fn("tpu"): each the result moved to the CPU, or the exception raised."""
    outcomes = []
    for device in ("cpu", "tpu"):
        try:
            outcomes.append(fn(device).cpu())
        except Exception as e:  # noqa: BLE001 (the exception is the outcome compared)
            outcomes.append(e)
    return outcomes


def _same_exception(fn):
    cpu, tpu = _both(fn)
    assert isinstance(cpu, Exception)
    assert type(tpu) is type(cpu), f"device: {tpu!r}, CPU: {cpu!r}"


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.expand(2, 3).add_(1),
        lambda t: t.expand(2, 3).copy_(torch.ones(2, 3, device=t.device)),
        lambda t: torch.neg(torch.ones(2, 3, device=t.device), out=t.expand(2, 3)),
        lambda t: t.as_strided((2, 2), (0, 1)).exp_(),
        # Partial overlap of an input and the written tensor (at::assert_no_partial_overlap).
        lambda t: t[1:].add_(t[:2]),
    ],
)
def test_overlapping_write(write):
    _same_exception(lambda d: write(torch.zeros(3, device=d)))


@pytest.mark.parametrize("other", [lambda d: torch.tensor([True, False], device=d), lambda d: True])
def test_sub_with_bool(other):
    _same_exception(lambda d: torch.tensor([3, 0], dtype=torch.uint8, device=d) - other(d))


@pytest.mark.parametrize("op", [torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor])
def test_bitwise_on_float(op):
    _same_exception(lambda d: op(torch.ones(2, device=d), torch.ones(2, device=d)))


@pytest.mark.parametrize("op", [torch.cat, torch.stack])
def test_cat_out_dtype(op):
    out = lambda d: torch.empty(0, dtype=torch.int64, device=d)
    _same_exception(lambda d: op([torch.ones(2, device=d)], out=out(d)))


@pytest.mark.parametrize(
    "op",
    [
        lambda a, i, out: torch.index_select(a, 0, i, out=out),
        lambda a, i, out: torch.take(a, i, out=out),
        lambda a, i, out: torch.argmin(a, out=out),
        lambda a, i, out: torch.signbit(a, out=out),
    ],
)
def test_out_dtype(op):
    _same_exception(
        lambda d: op(
            torch.arange(3, dtype=torch.int32, device=d),
            torch.tensor([0], device=d),
            torch.empty(1, device=d),
        )
    )


@pytest.mark.parametrize(
    "op",
    [
        lambda m, out: torch.mv(m(2, 3), m(3), out=out(2)),
        lambda m, out: torch.addmv(m(2), m(2, 3), m(3), out=out(2)),
        lambda m, out: torch.mm(m(2, 3), m(3, 2), out=out(2, 2)),
        lambda m, out: torch.bmm(m(1, 2, 3), m(1, 3, 2), out=out(1, 2, 2)),
        lambda m, out: torch.addmm(m(2, 2), m(2, 3), m(3, 2), out=out(2, 2)),
        lambda m, out: torch.baddbmm(m(1, 2, 2), m(1, 2, 3), m(1, 3, 2), out=out(1, 2, 2)),
        lambda m, out: torch.addbmm(m(2, 2), m(1, 2, 3), m(1, 3, 2), out=out(2, 2)),
        lambda m, out: torch.matmul(m(2, 2, 3), m(3, 2), out=out(2, 2, 2)),
    ],
)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.int64])
def test_matrix_product_out_dtype(op, out_dtype):
    # A product's out= takes no cast: the CPU raises, with the same message, where the device wrote.
    def run(d):
        m = lambda *s: torch.ones(*s, dtype=torch.float16, device=d)
        return op(m, lambda *s: torch.empty(*s, dtype=out_dtype, device=d))

    cpu, tpu = _both(run)
    assert type(cpu) is RuntimeError and type(tpu) is RuntimeError
    assert str(tpu) == str(cpu)


def test_copy_into_empty():
    _same_exception(lambda d: torch.ones(0, device=d).copy_(torch.ones(1, 3, device=d)))


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum])
def test_maximum_out_is_lowered(counters, op):
    a, b = torch.tensor([1.0, 5.0]), torch.tensor([3, 0], dtype=torch.int32)
    out = torch.empty(2, device="tpu")
    op(a.to("tpu"), b.to("tpu"), out=out)
    assert torch.equal(out.cpu(), op(a, b))
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize(
    "op",
    [
        lambda a, i: torch.index_select(a, 0, i),
        lambda a, i: torch.gather(a, 0, i),
    ],
)
def test_index_select_from_an_empty_dim(op):
    cpu, tpu = _both(lambda d: op(torch.ones(0, device=d), torch.tensor([0], device=d)))
    # The CPU's own error: the device's compile error is the bug, and its pending index check
    # must not surface at a later, unrelated sync.
    assert type(tpu) is type(cpu), f"device: {tpu!r}, CPU: {cpu!r}"
    assert torch.equal((torch.ones(2, device="tpu") + 1).cpu(), torch.full((2,), 2.0))


def test_full_like():
    cpu, tpu = _both(lambda d: torch.full_like(torch.tensor([6, -5], device=d), 0.5))
    assert isinstance(tpu, torch.Tensor), repr(tpu)
    assert torch.equal(tpu, cpu)


@pytest.mark.parametrize("shape", [(1,), (1, 1), (3, 5)])
@pytest.mark.parametrize("alpha", [1, 2])
def test_index_add(shape, alpha):
    """The CPU's error type for an out-of-range index depends on its kernel (rank and alpha)."""
    source = (1, *shape[1:])
    _same_exception(
        lambda d: torch.ones(shape, device=d).index_add(
            0, torch.tensor([shape[0]], device=d), torch.ones(source, device=d), alpha=alpha
        )
    )


@pytest.mark.parametrize("op", ["logical_and_", "logical_or_", "logical_xor_"])
def test_logical_in_place_broadcast(op):
    _same_exception(lambda d: getattr(torch.tensor(1.0, device=d), op)(torch.ones(1, device=d)))


@pytest.mark.parametrize(
    "out", [lambda d: torch.arange(6.0, device=d)[1:3], lambda d: torch.empty(0, device=d)]
)
def test_resized_out_follows_the_input_layout(out):
    """A resized out= takes a permuted input's layout, as on the CPU; a view's storage then holds the
    same values at the same places (the base shows them)."""
    results = []
    for d in ("cpu", "tpu"):
        o = out(d)
        a = torch.arange(12.0, device=d).reshape(2, 2, 3).permute(2, 0, 1)
        torch.sqrt(a, out=o)
        results.append((o.stride(), o.cpu(), o.untyped_storage().nbytes()))
        if o._base is not None:
            results[-1] += (o._base.cpu(),)
    cpu, tpu = results
    assert cpu[0] == tpu[0] and cpu[2] == tpu[2]
    for c, t in zip(cpu[1::2], tpu[1::2]):
        torch.testing.assert_close(t, c)
