"""Data-dependent errors checked on the device (out-of-range indices and nll_loss targets, integer
division by zero, probabilities outside [0, 1] in binary_cross_entropy and bernoulli), like CUDA's
device-side asserts: raised at the next synchronization in Strict and Fused mode (naming the op), at
the op in Debug mode, and by compiled graphs' calls; with the exception type and message the CPU
raises. Results computed from invalid data raise again when used. On the normal path
nothing is read back to the host: a Fused training step of the test GPT is one program with no host
round trip."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same
from models import GPT

import torch_pjrt


def _x(device):
    return torch.arange(20.0, device=device).reshape(4, 5)


def _i(values, device):
    return torch.tensor(values, device=device)


def _p(values, device):
    return torch.tensor(values, device=device)


def _logp(device):
    return torch.log_softmax(torch.linspace(-1, 1, 15, device=device).reshape(3, 5), 1)


# name -> op on tensors of a device, with invalid data.
CASES = {
    "gather": lambda d: torch.gather(_x(d), 0, _i([[5]], d)),
    "scatter": lambda d: _x(d).scatter(1, _i([[-1]], d), 1.0),
    "scatter_add": lambda d: _x(d).scatter_add(0, _i([[4]], d), torch.ones(1, 1, device=d)),
    "scatter_reduce": lambda d: _x(d).scatter_reduce(
        0, _i([[7]], d), torch.ones(1, 1, device=d), "amax"
    ),
    "index_select": lambda d: _x(d).index_select(0, _i([1, 4], d)),
    "embedding": lambda d: F.embedding(_i([[1, 9]], d), _x(d)),
    "index": lambda d: _x(d)[_i([0, 4], d)],
    "index_negative": lambda d: _x(d)[:, _i([-6], d)],
    "index_put_": lambda d: _x(d).index_put_((_i([4], d),), torch.tensor(1.0, device=d)),
    "index_add": lambda d: _x(d).index_add(0, _i([4], d), torch.ones(1, 5, device=d)),
    "index_copy": lambda d: _x(d).index_copy(0, _i([4], d), torch.ones(1, 5, device=d)),
    "index_fill_": lambda d: _x(d).index_fill_(1, _i([5], d), 1.0),
    "take": lambda d: _x(d).take(_i([3, 20], d)),
    "put_": lambda d: _x(d).put_(_i([-21], d), torch.ones(1, device=d)),
    "nll_loss": lambda d: F.nll_loss(_logp(d), _i([0, 5, 1], d)),
    "cross_entropy": lambda d: F.cross_entropy(_logp(d), _i([0, -1, 1], d)),
    "nll_loss2d": lambda d: F.nll_loss(
        _logp(d).t().reshape(1, 5, 3, 1), _i([[[0], [7], [-100]]], d)
    ),
    "floor_divide": lambda d: _i([7, 8], d) // _i([2, 0], d),
    "remainder": lambda d: torch.remainder(_i([7, 8], d), _i([0, 3], d)),
    "fmod": lambda d: torch.fmod(_i([7, 8], d), _i([0, 3], d)),
    "div_trunc": lambda d: torch.div(_i([7, 8], d), _i([0, 3], d), rounding_mode="trunc"),
    "bce_input": lambda d: F.binary_cross_entropy(_p([0.5, 1.5], d), _p([1.0, 0.0], d)),
    "bce_nan_input": lambda d: F.binary_cross_entropy(_p([float("nan")], d), _p([1.0], d)),
    "bce_target": lambda d: F.binary_cross_entropy(_p([0.5, 0.5], d), _p([1.0, -0.5], d)),
    "bernoulli": lambda d: torch.bernoulli(_p([0.5, 1.5], d)),
    "bernoulli_": lambda d: torch.zeros(2, 2, device=d).bernoulli_(_p([-0.5, 0.5], d)),
    "bernoulli_nan": lambda d: torch.zeros(2, device=d).bernoulli_(_p([0.5, float("nan")], d)),
    "div_floor_int32": lambda d: torch.div(
        _i([7], d).int(), _i([0], d).int(), rounding_mode="floor"
    ),
}


# The op each case's error names when raised after the op (the kernel that records the check).
OP = {
    "embedding": "index_select",
    "index_negative": "index",
    "cross_entropy": "nll_loss",
    "div_trunc": "div",
    "div_floor_int32": "div",
    "bce_input": "binary_cross_entropy",
    "bce_nan_input": "binary_cross_entropy",
    "bce_target": "binary_cross_entropy",
    "bernoulli_": "bernoulli",
    "bernoulli_nan": "bernoulli",
}


# Cases whose CPU error depends on special values (CPU kernels differ between machines there):
# the error PyTorch's kernel raises, written out.
FIXED = {
    "bce_nan_input": (RuntimeError, "all elements of input should be between 0 and 1"),
    "bernoulli_nan": (
        RuntimeError,
        "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
        "improved?  If so, please report an enhancement request to PyTorch.)",
    ),
}


def cpu_error(name):
    if name in FIXED:
        return FIXED[name]
    with pytest.raises(Exception) as info:
        CASES[name]("cpu")
    return info.type, str(info.value)


def test_cpu_raises_every_case():
    for name in CASES:
        kind, message = cpu_error(name)
        assert kind in (IndexError, RuntimeError), name


@pytest.mark.parametrize("mode", ["strict", "fused"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_raised_at_next_sync(name, mode, counters):
    kind, message = cpu_error(name)
    with torch_pjrt.eager_mode(mode):
        y = CASES[name]("tpu")  # no host read, no error yet
        assert counters()["host_round_trips"] == 0
        with pytest.raises(kind) as info:
            torch.tpu.synchronize()
        assert str(info.value).startswith(message), (str(info.value), message)
        assert f"(a device-side check in {OP.get(name, name)}: " in str(info.value)
        # The result was computed from invalid data: using or reading it raises again.
        with pytest.raises(kind, match="device-side check"):
            y.cpu()
        with pytest.raises(kind, match="device-side check"):
            y + 1
        # Everything else keeps working.
        assert torch.ones(3, device="tpu").sum().item() == 3.0
        torch.tpu.synchronize()


@pytest.mark.parametrize("name", sorted(CASES))
def test_raised_at_the_op_in_debug_mode(name):
    kind, message = cpu_error(name)
    with torch_pjrt.eager_mode("debug"), pytest.raises(kind) as info:
        CASES[name]("tpu")
    assert str(info.value) == message


def test_any_copy_to_the_host_is_a_sync_point():
    """As with CUDA's asserts, the next read raises, whatever it reads."""
    other = torch.ones(2, device="tpu")
    for mode in ("strict", "fused"):
        with torch_pjrt.eager_mode(mode):
            CASES["embedding"]("tpu")
            with pytest.raises(IndexError, match="index out of range in self"):
                other.cpu()
            assert other.sum().item() == 2.0  # raised once


def test_in_place_op_in_debug_mode_leaves_self_unchanged():
    x = _x("tpu")
    with torch_pjrt.eager_mode("debug"), pytest.raises(IndexError):
        x.index_put_((_i([4], "tpu"),), torch.tensor(1.0, device="tpu"))
    assert_same(x, _x("cpu"))


def test_host_indices_and_scalars_raise_at_the_op():
    """CPU index tensors and Python scalars are checked on the host at once, as on the CPU."""
    x = _x("tpu")
    with pytest.raises(IndexError, match="^index 4 is out of bounds for dimension 0 with size 4$"):
        x[torch.tensor([4])]
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        _i([3], "tpu") // 0
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        torch.remainder(_i([3], "tpu"), 0)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_valid_data_needs_no_host_read(mode, counters):
    """In-range indices, allowed targets (ignore_index) and float or nonzero divisors: results
    equal the CPU's and nothing is read back to the host before the user's reads."""
    ops = [
        lambda d: torch.gather(_x(d), 1, _i([[4, 0], [1, 1], [2, 3], [0, 0]], d)),
        lambda d: _x(d).scatter_add(0, _i([[3, 0]], d), torch.ones(1, 2, device=d)),
        lambda d: F.embedding(_i([[1, 3], [0, 0]], d), _x(d)),
        lambda d: _x(d)[_i([0, -1], d), _i([4, -5], d)],
        lambda d: _x(d).index_put_((_i([3, -4], d),), torch.tensor(1.0, device=d), True),
        lambda d: _x(d).take(_i([19, -20], d)),
        lambda d: F.nll_loss(_logp(d), _i([0, -100, 4], d)),
        lambda d: F.cross_entropy(_logp(d), _i([4, 0, 2], d), ignore_index=4),
        lambda d: _i([7, -8, 9], d) // _i([2, 3, -4], d),
        lambda d: torch.remainder(_i([7, -8], d), _i([3, 5], d)),
    ]
    with torch_pjrt.eager_mode(mode):
        results = [op("tpu") for op in ops]
        assert counters()["host_round_trips"] == 0
        for op, r in zip(ops, results):
            assert_same(r, op("cpu"))
        # Float division by zero is no error: inf.
        inf = (_x("tpu") + 1) // torch.zeros(5, device="tpu")
        assert torch.equal(inf.cpu(), torch.full((4, 5), float("inf")))
    assert counters()["host_round_trips"] == 0


def test_compiled_graph_checks():
    """torch.compile(backend="tpu") graphs compute their checks too: raised at the next sync."""

    @torch.compile(backend="tpu")
    def f(w, i, t):
        return F.cross_entropy(F.embedding(i, w).reshape(-1, 5), t.reshape(-1))

    w = torch.randn(6, 5)
    good, target = torch.tensor([[1, 5], [0, 2]]), torch.tensor([[4, 0], [1, 1]])
    args = (w.to("tpu"), good.to("tpu"), target.to("tpu"))
    expected = F.cross_entropy(F.embedding(good, w).reshape(-1, 5), target.reshape(-1))
    assert_same(f(*args), expected)
    for bad in (torch.tensor([[1, 6], [0, 2]]), torch.tensor([[1, 1], [-1, 2]])):  # two replays
        y = f(w.to("tpu"), bad.to("tpu"), target.to("tpu"))
        with pytest.raises(IndexError, match="index out of range in self"):
            torch.tpu.synchronize()
        with pytest.raises(IndexError, match="index out of range in self"):
            y.item()
    # The graph holds cross_entropy decomposed (core ATen decompositions): its target is checked by
    # the gather the decomposition reads the log-probabilities with.
    bad_target = torch.tensor([[4, 5], [1, 1]])
    f(*args[:2], bad_target.to("tpu"))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 5"):
        torch.tpu.synchronize()
    assert_same(f(*args), expected)


def test_fused_gpt_step_is_one_program_without_host_round_trips(counters):
    """The test GPT's training step (token and position embeddings, cross entropy, AdamW): after
    warm-up, each Fused step is one program, and nothing is read back to the host but the loss
    the loop logs (and the checks' results, read with it)."""
    torch.manual_seed(0)
    model = GPT().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 64, (4, 16), device="tpu")
    y = torch.randint(0, 64, (4, 16), device="tpu")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).reshape(-1, 64), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    with torch_pjrt.eager_mode("fused"):
        step(), step()  # warm-up: AdamW creates its state on the first step
        for _ in range(2):
            before = counters()
            step()
            after = counters()
            assert after["executions"] - before["executions"] == 1
            assert after["host_round_trips"] == before["host_round_trips"]
            assert after["check_reads"] - before["check_reads"] == 1
    assert counters()["host_round_trips"] == 0


def test_failure_read_early_is_raised_at_the_next_sync(counters):
    """A loop that never synchronizes has its checks read once a few dozen are unread (so values
    carry few checks and no check buffers pile up); a failure read then still surfaces at the next
    sync point, not before."""
    with torch_pjrt.eager_mode("strict"):
        CASES["embedding"]("tpu")
        for _ in range(40):
            torch.gather(_x("tpu"), 0, _i([[1]], "tpu"))
        assert counters()["check_reads"] > 0  # read early, not raised yet
        with pytest.raises(IndexError, match="index out of range in self"):
            torch.tpu.synchronize()
    assert counters()["host_round_trips"] == 0
