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


def _same_outcome(fn, values=True, **tolerances):
    """The device raises what the CPU raises (type and message) or returns what it returns (its
    values compared, within `tolerances` when given, unless `values` is false)."""
    cpu, tpu = _both(fn)
    if isinstance(cpu, Exception):
        assert type(tpu) is type(cpu), f"device: {tpu!r}, CPU: {cpu!r}"
        assert str(tpu).splitlines()[0] == str(cpu).splitlines()[0]
    else:
        assert isinstance(tpu, torch.Tensor), repr(tpu)
        if values:
            torch.testing.assert_close(tpu, cpu, equal_nan=True, **tolerances)


def _expanded(*shape, dtype=torch.float32):
    """A written tensor whose elements share one memory location."""
    return lambda d: torch.zeros(1, dtype=dtype, device=d).expand(*shape)


_E, _ONE, _I = _expanded, torch.ones, lambda d, n=1: torch.zeros(n, dtype=torch.int64, device=d)


@pytest.mark.parametrize(
    "write",
    [
        # Checked as passed, before any resize (TensorIterator ops, scatter, take, ...).
        lambda d: torch.tanh(_ONE(2, device=d), out=_E(3)(d)),
        lambda d: torch.fmin(_ONE(2, device=d), _ONE(2, device=d), out=_E(3)(d)),
        lambda d: torch.scatter(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_E(3)(d)),
        lambda d: _E(2)(d).scatter_(0, _I(d), 1.0),
        lambda d: _E(2)(d).scatter_add_(0, _I(d), _ONE(1, device=d)),
        lambda d: _E(2)(d).scatter_reduce_(0, _I(d), _ONE(1, device=d), "amax"),
        lambda d: torch.take(_ONE(2, device=d), _I(d, 2), out=_E(3)(d)),
        lambda d: torch.masked_select(_ONE(2, device=d), _ONE(2, device=d) > 0, out=_E(3)(d)),
        lambda d: _E(2)(d).put_(_I(d), _ONE(1, device=d)),
        lambda d: _E(2)(d).masked_scatter_(_ONE(2, device=d) > 0, _ONE(2, device=d)),
        lambda d: _E(2)(d).normal_(),
        lambda d: torch.arange(2, out=_E(2)(d)),
        lambda d: torch.linspace(0, 1, 2, out=_E(2)(d)),
        # Structured kernels check out= once resized: a resized one passes.
        lambda d: torch.mm(_ONE(2, 2, device=d), _ONE(2, 2, device=d), out=_E(2, 2)(d)),
        lambda d: torch.mm(_ONE(2, 2, device=d), _ONE(2, 2, device=d), out=_E(3)(d)),
        lambda d: _E(2, 2)(d).addmm_(_ONE(2, 2, device=d), _ONE(2, 2, device=d)),
        lambda d: torch.cumsum(_ONE(2, device=d), 0, out=_E(2)(d)),
        lambda d: torch.cumsum(_ONE(2, device=d), 0, out=_E(3)(d)),
        lambda d: _E(2)(d).cumprod_(0),
        lambda d: torch.gather(_ONE(2, device=d), 0, _I(d, 2), out=_E(2)(d)),
        lambda d: torch.cat([_ONE(2, device=d)], out=_E(2)(d)),
        lambda d: torch.stack([_ONE(2, device=d)], out=_E(1, 2)(d)),
        lambda d: _E(2)(d).index_add_(0, _I(d), _ONE(1, device=d)),
        lambda d: torch.index_copy(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_E(2)(d)),
        lambda d: torch.mean(_ONE(2, 2, device=d), 0, out=_E(2)(d)),
        lambda d: torch.logsumexp(_ONE(2, 2, device=d), 0, out=_E(2)(d)),
        lambda d: torch.max(_ONE(2, 2, device=d), 0, out=(_E(2)(d), _I(d, 2)))[0],
        lambda d: torch.linalg.vector_norm(_ONE(2, 1, device=d), 2, 1, out=_E(2)(d)),
        lambda d: torch.sort(
            _ONE(2, device=d), out=(_ONE(2, device=d), _E(2, dtype=torch.int64)(d))
        )[0],
        # Kernels that do not check: the write happens (its values are the CPU loops' race).
        lambda d: _E(2)(d).masked_fill_(_ONE(2, device=d) > 0, 3.0),
        lambda d: torch.sum(_ONE(2, 2, device=d), 0, out=_E(2)(d)),
        lambda d: torch.tril(_ONE(2, 2, device=d), out=_E(2, 2)(d)),
        lambda d: torch.mv(_ONE(2, 2, device=d), _ONE(2, device=d), out=_E(2)(d)),
        lambda d: torch.topk(_ONE(2, device=d), 1, out=(_E(1)(d), _I(d)))[0],
        lambda d: torch.mm(_ONE(2, 0, device=d), _ONE(0, 2, device=d), out=_E(2, 2)(d)),
    ],
)
def test_self_overlapping_write(write):
    """Whether a written tensor may overlap itself is each CPU kernel's own choice."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resized outs, masked_fill_ on an expanded tensor
        _same_outcome(write, values=False)


_H = lambda d, *s: torch.zeros(*s, dtype=torch.float16, device=d)


@pytest.mark.parametrize(
    "op",
    [
        # Structured kernels: out= of exactly the dtype they compute in (a dtype= given included).
        lambda d: torch.sum(_ONE(2, device=d), 0, dtype=torch.float32, out=_H(d)),
        lambda d: torch.mean(_ONE(2, device=d), 0, dtype=torch.float32, out=_H(d)),
        lambda d: torch.prod(_ONE(2, device=d), 0, dtype=torch.float32, out=_H(d)),
        lambda d: torch.cumsum(_ONE(2, device=d), 0, dtype=torch.float32, out=_H(d, 2)),
        lambda d: torch.tril(_ONE(2, 2, device=d), out=_H(d, 2, 2)),
        lambda d: torch.triu(_ONE(2, 2, device=d), out=_H(d, 2, 2)),
        lambda d: torch.gather(_ONE(2, device=d), 0, _I(d), out=_H(d, 1)),
        lambda d: torch.scatter(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_H(d, 2)),
        lambda d: torch.scatter_add(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_H(d, 2)),
        lambda d: torch.scatter_reduce(
            _ONE(2, device=d), 0, _I(d), _ONE(1, device=d), "sum", out=_H(d, 2)
        ),
        lambda d: torch.index_add(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_H(d, 2)),
        lambda d: torch.index_copy(_ONE(2, device=d), 0, _I(d), _ONE(1, device=d), out=_H(d, 2)),
        lambda d: torch._softmax(_ONE(2, device=d), 0, False, out=_H(d, 2)),
        lambda d: torch._log_softmax(_ONE(2, device=d), 0, False, out=_H(d, 2)),
        lambda d: torch.linalg.vector_norm(_ONE(2, device=d), out=_H(d)),
        # Others, each with its own message.
        lambda d: torch.where(_ONE(2, device=d) > 0, _ONE(2, device=d), 0.0, out=_H(d, 2)),
        lambda d: torch.masked_select(_ONE(2, device=d), _ONE(2, device=d) > 0, out=_H(d, 2)),
        lambda d: torch.clamp(_ONE(2, device=d), 0, 1, out=_H(d, 2)),
        lambda d: torch.clamp_min(_ONE(2, device=d), 0, out=_H(d, 2)),
        lambda d: torch._C._nn.hardtanh(_ONE(2, device=d), out=_H(d, 2)),
        lambda d: torch.logsumexp(_I(d, 2), 0, out=_I(d)[0]),
        lambda d: torch.nansum(_ONE(2, device=d), 0, dtype=torch.float64, out=_ONE((), device=d)),
        lambda d: torch.nansum(_ONE(2, device=d), 0, out=_I(d)[0]),
        lambda d: _ONE(2, device=d).cumsum_(0, dtype=torch.float64),
        lambda d: _ONE(2, device=d).cumprod_(0, dtype=torch.float64),
    ],
)
def test_out_and_in_place_dtype_checks(op):
    _same_outcome(op)


@pytest.mark.parametrize(
    "op",
    [
        # Without dtype=, a sum or prod into out= runs in out's dtype: the input is cast first.
        lambda d: torch.sum(torch.tensor([0.5, 0.5, 0.7], device=d), 0, out=_I(d)[0]),
        lambda d: torch.prod(torch.tensor([1.5, 1.5, 1.7], device=d), 0, out=_I(d)[0]),
        # logsumexp over no dims fails on the CPU unless it keeps them or the input is empty.
        lambda d: torch.logsumexp(_ONE(2, 3, device=d), ()),
        lambda d: torch.logsumexp(_ONE(2, 3, device=d), (), keepdim=True),
        lambda d: torch.logsumexp(_ONE(0, 3, device=d), ()),
        # An empty tensor rolled along one dim is copied before the dim is checked.
        lambda d: _ONE(0, device=d).roll(1, 1),
        # copy_'s source must broadcast to the destination's shape, even an empty one.
        lambda d: _ONE(0, device=d).copy_(_ONE(1, 0, device=d)),
        lambda d: _ONE(2, device=d).copy_(_ONE(1, 2, device=d)),
        # TensorIterator's checks come before bitwise ops' dtype error: shape, overlap, cast.
        lambda d: torch.bitwise_and(_ONE(0, device=d), _ONE(1, 3, device=d)),
        lambda d: _ONE((), device=d).bitwise_or_(_ONE(1, device=d)),
        lambda d: _E(2)(d).bitwise_xor_(_ONE(2, device=d)),
        lambda d: _E(2)(d).bitwise_not_(),
        lambda d: torch.bitwise_or(_ONE(2, device=d), _ONE(2, device=d), out=_I(d, 2)),
        lambda d: torch.hypot(_I(d, 2), _I(d, 3)),
        lambda d: _I(d)[0].hypot_(_I(d)),
        # softmax checks its dim before its dtype.
        lambda d: torch.softmax(torch.tensor(6, device=d), 1),
        # cumsum has no bool kernel: in place on a bool tensor it raises.
        lambda d: (_ONE(2, device=d) > 0).cumsum_(0),
        # masked_fill converts a Python value to self's type with an overflow check.
        lambda d: torch.tensor(4, dtype=torch.uint8, device=d).masked_fill(
            _ONE(1, device=d) > 2, -1
        ),
    ],
)
def test_reduction_shape_and_order_semantics(op):
    _same_outcome(op)


@pytest.mark.parametrize("op", [torch.fmod, torch.remainder, torch.atan2])
def test_operands_round_to_the_common_dtype(op):
    """A float32 0-dim operand of a bfloat16 op is a bfloat16 operand: 3.082 rounds to 3.078."""
    a = lambda d: torch.tensor([3.078125, -0.5859375], dtype=torch.bfloat16, device=d)
    cpu, tpu = _both(lambda d: op(a(d), torch.tensor(3.0819921493530273, device=d)))
    assert torch.equal(tpu, cpu), (tpu, cpu)


@pytest.mark.parametrize(
    "op",
    [
        torch.mul,
        torch.div,
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        lambda a, b: a.clone().mul_(b),
    ],
)
@pytest.mark.parametrize(
    "b", [lambda d: torch.tensor(3.0819921493530273, device=d), lambda d: 3.0819921493530273]
)
def test_one_element_multiplier_keeps_its_precision(op, b):
    """The CPU's mul and div kernels take a one-element second operand of a bfloat16 op as it is,
    in float32: 3.078 / 3.082 floors to 0, where the bfloat16-rounded divisor would give 1."""
    a = lambda d: torch.tensor([3.078125, -0.5859375, 7.0], dtype=torch.bfloat16, device=d)
    cpu, tpu = _both(lambda d: op(a(d), b(d)))
    assert torch.equal(tpu, cpu), (tpu, cpu)


@pytest.mark.parametrize("mode", torch_pjrt.eager.MODES)
@pytest.mark.parametrize("op", [torch.softmax, torch.log_softmax])
def test_reduced_precision_softmax_rounds_once(mode, op):
    """bfloat16 softmax computes in float32 and rounds once, as the CPU's kernel does: within one
    bfloat16 step of the CPU (it was 50% off on 0.005 when computed in bfloat16)."""
    x = torch.tensor([3.078125, -0.5859375, -4.34375, 1.140625, -2.171875, -2.796875, 0.80859375])
    x = x.bfloat16().reshape(7, 1)[[0, 4, 1, 5, 2, 6]].reshape(3, 2).t()
    with torch_pjrt.eager_mode(mode):
        tpu = op(x.to("tpu"), 0).cpu()
    torch.testing.assert_close(tpu, op(x, 0), rtol=8e-3, atol=0)


def test_resized_out_follows_a_strided_input():
    """A resized out= takes the dim order of a non-dense input too (TensorIterator's layout): the
    out's old storage then shows the same elements as on the CPU."""
    results = []
    for d in ("cpu", "tpu"):
        base = torch.tensor([3.0, -0.5, -4.0, 1.0, -2.0], device=d)
        out_base = torch.zeros(2, device=d)
        out = out_base[:]
        torch.ceil(base.as_strided([2, 2], [1, 3]), out=out)
        results.append((out.stride(), out_base.cpu(), out.cpu()))
    (cpu_stride, *cpu), (tpu_stride, *tpu) = results
    assert tpu_stride == cpu_stride == (1, 2)
    for t, c in zip(tpu, cpu):
        assert torch.equal(t, c)


@pytest.mark.parametrize("mode", torch_pjrt.eager.MODES)
@pytest.mark.parametrize(
    "op",
    [
        lambda d, i: torch.gather(_ONE(2, device=d), 0, i, out=_H(d, 1)),
        lambda d, i: torch.scatter_add(_ONE(2, device=d), 0, i, _ONE(1, device=d), out=_E(2)(d)),
        lambda d, i: torch.index_add(_ONE(2, device=d), 0, i, _ONE(1, device=d), out=_H(d, 2)),
        lambda d, i: torch.take(_ONE(2, device=d), i, out=_E(2)(d)),
        lambda d, i: _E(2)(d).index_copy_(0, i, _ONE(1, device=d)),
        lambda d, i: _ONE(2, device=d).index_put_((i,), _ONE(3, device=d)),
    ],
)
def test_out_error_before_a_bad_index(mode, op):
    """The CPU checks out= (or self) before it reads indices: its error comes first, in every mode,
    and the out-of-range index the op never used raises nowhere later."""
    with torch_pjrt.eager_mode(mode):
        _same_outcome(lambda d: op(d, torch.tensor([5], device=d)))
        assert torch.equal((torch.ones(2, device="tpu") + 1).cpu(), torch.full((2,), 2.0))
        torch.tpu.synchronize()


@pytest.mark.parametrize(
    "op",
    [
        # var, std and logsumexp into out= compute in out's dtype: 154099.6 is inf in float16.
        lambda d: torch.var(torch.tensor([154099.6, 1.0], device=d), 0, out=_H(d)),
        lambda d: torch.std(torch.tensor([154099.6, 1.0], device=d), 0, out=_H(d)),
        # all/any into a bool out= from a uint8 input.
        lambda d: torch.any(torch.tensor([0, 4], dtype=torch.uint8, device=d), 0, out=_I(d)[0] > 0),
        lambda d: torch.all(torch.tensor([0, 4], dtype=torch.uint8, device=d), 0, out=_I(d)[0] > 0),
    ],
)
def test_reduction_into_out_dtype(op):
    _same_outcome(op)


def test_logsumexp_into_a_wider_out():
    """bfloat16 logsumexp into a float32 out= keeps float32 precision (it was rounded to bfloat16:
    3.094 for 3.104); the CPU's own exp rounds to bfloat16, hence float32's tolerance twice."""
    x = lambda d: torch.tensor([3.078125, -0.5859375], dtype=torch.bfloat16, device=d)
    out = lambda d: torch.zeros((), device=d)
    _same_outcome(lambda d: torch.logsumexp(x(d), 0, out=out(d)), rtol=2e-4, atol=2e-5)


def test_addmm_self_must_expand():
    """addmm's self expands to the product's shape: a 3-D self raises, even for an empty product."""
    _same_exception(
        lambda d: torch.addmm(_ONE(1, 1, 1, device=d), _ONE(0, 0, device=d), _ONE(0, 0, device=d))
    )


def test_resized_out_follows_broadcast_inputs():
    """With broadcast inputs, a resized out= takes TensorIterator's dim order over all of them."""

    def run(d):
        a = torch.arange(16.0, device=d).reshape(2, 2, 4, 1)
        out = torch.zeros(2, dtype=torch.bool, device=d)
        torch.lt(a, a.transpose(0, -1), out=out)
        return out

    cpu, tpu = _both(run)
    assert tpu.stride() == cpu.stride() == (16, 4, 1, 8)
    assert torch.equal(tpu, cpu)


def test_result_layout_counts_converted_inputs_as_copies():
    """An input converted to the common dtype counts with its copy's layout: an expanded float16
    input's copy is contiguous, so logical_xor's result is too (it followed the permuted input)."""

    def run(d):
        a = torch.tensor([3.0, -0.5], dtype=torch.float16, device=d).expand(2, 2, 2)
        b = torch.arange(4.0, device=d).reshape(1, 2, 2).permute(0, 2, 1)
        return torch.logical_xor(a, b)

    cpu, tpu = _both(run)
    assert tpu.stride() == cpu.stride() == (4, 2, 1)
    assert torch.equal(tpu, cpu)


@pytest.mark.parametrize(
    ("dtype", "op"),
    [
        (torch.int64, lambda a, out: torch.erf(a, out=out)),
        (torch.float16, lambda a, out: torch.add(a, torch.ones(2, 2, device=a.device), out=out)),
    ],
    ids=["erf_int64", "add_float16"],
)
def test_result_layout_keeps_a_converted_strided_inputs_order(dtype, op):
    """A non-dense input converted to the common dtype keeps its dim order in its copy (dense, not
    contiguous): an input strided (1, 3) gives a resized float32 out= the strides (1, 2)."""

    def run(d):
        base = torch.tensor([6, -5, -9, -9, 2, -2], dtype=dtype, device=d)
        out = torch.empty(2, device=d)
        op(base.as_strided([2, 2], [1, 3], 1), out)
        return out

    cpu, tpu = _both(run)
    assert tpu.stride() == cpu.stride() == (1, 2)
    torch.testing.assert_close(tpu, cpu)


@pytest.mark.parametrize("op", [torch.sigmoid, torch.exp, torch.tanh])
def test_float16_unary_rounds_once(op):
    """float16 unary math computes in float32 and rounds once: sigmoid(-0.587) is 0.3574, which
    XLA's float16 logistic put one step lower."""
    x = torch.tensor([3.08203125, -0.5869140625, 1.5, -2.25], dtype=torch.float16)
    assert torch.equal(op(x.to("tpu")).cpu(), op(x.float()).half())
