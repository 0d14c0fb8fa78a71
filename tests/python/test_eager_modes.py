"""The three eager modes: the mode API and environment switches, equal training losses in Strict,
Fused and Debug (also when switching mid-run), Fused's sync points, program cache and loop
recognition, where each mode reports errors, and the Debug-mode check against the CPU."""

import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from models import GPT

import torch_pjrt


@pytest.fixture(autouse=True)
def strict_afterwards():
    yield
    torch_pjrt.set_eager_mode("strict")


def _executions():
    return torch_pjrt.metrics.counters()["executions"]


def _compiles():
    return torch_pjrt.metrics.counters()["compiles"]


# --- the mode API --------------------------------------------------------------------------------


def test_default_is_strict_and_set_get_round_trip():
    assert torch_pjrt.get_eager_mode() == "strict"
    for mode in ("fused", "debug", "strict"):
        torch_pjrt.set_eager_mode(mode)
        assert torch_pjrt.get_eager_mode() == mode


def test_bad_modes_raise():
    with pytest.raises(ValueError, match="strict.*fused.*debug"):
        torch_pjrt.set_eager_mode("lazy")
    with pytest.raises(TypeError):
        torch_pjrt.set_eager_mode(1)
    with pytest.raises(ValueError), torch_pjrt.eager_mode("Fused"):
        pass
    assert torch_pjrt.get_eager_mode() == "strict"


def test_context_manager_nests_and_restores_even_on_error():
    torch_pjrt.set_eager_mode("fused")
    with torch_pjrt.eager_mode("debug"):
        assert torch_pjrt.get_eager_mode() == "debug"
        with torch_pjrt.eager_mode("strict"):
            assert torch_pjrt.get_eager_mode() == "strict"
        assert torch_pjrt.get_eager_mode() == "debug"
    assert torch_pjrt.get_eager_mode() == "fused"
    with pytest.raises(KeyError), torch_pjrt.eager_mode("debug"):
        raise KeyError("inside")
    assert torch_pjrt.get_eager_mode() == "fused"


def test_context_manager_is_thread_local():
    import threading

    seen = []
    with torch_pjrt.eager_mode("debug"):
        t = threading.Thread(target=lambda: seen.append(torch_pjrt.get_eager_mode()))
        t.start()
        t.join()
    assert seen == ["strict"]


@pytest.mark.parametrize(
    "env, mode",
    [
        ({}, "strict"),
        ({"TORCH_TPU_DEFER_AND_FUSE": "1"}, "fused"),
        ({"TORCH_TPU_LAUNCH_BLOCKING": "1"}, "debug"),
        ({"TORCH_TPU_DEFER_AND_FUSE": "0"}, "strict"),
    ],
)
def test_environment_selects_the_start_up_mode(env, mode):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_TPU_")}
    out = subprocess.run(
        [sys.executable, "-c", "import torch, torch_pjrt; print(torch_pjrt.get_eager_mode())"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == mode


# --- same results in every mode ------------------------------------------------------------------


def _gpt_run(modes, seed=0):
    """Losses of a GPT trained with AdamW, one step per entry of `modes` (the mode of that step)."""
    torch.manual_seed(seed)
    model = GPT().to("tpu")
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, 64, (4, 17), generator=g)
    x, y = tokens[:, :-1].to("tpu"), tokens[:, 1:].to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    losses = []
    for mode in modes:
        with torch_pjrt.eager_mode(mode):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, 64), y.reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def strict_losses():
    return _gpt_run(["strict"] * 12)


@pytest.mark.parametrize("mode", ["fused", "debug"])
def test_gpt_training_losses_equal_strict(mode, strict_losses):
    losses = _gpt_run([mode] * 12)
    torch.testing.assert_close(losses, strict_losses, rtol=1e-5, atol=0)
    assert losses[-1] < losses[0]


def test_switching_modes_mid_run(strict_losses):
    modes = ["strict", "fused", "fused", "debug", "strict", "fused"] * 2
    torch.testing.assert_close(_gpt_run(modes), strict_losses, rtol=1e-5, atol=0)


def test_switching_with_pending_work_keeps_it():
    torch_pjrt.set_eager_mode("fused")
    x = torch.arange(6.0, device="tpu")
    y = x * 2 + 1
    torch_pjrt.set_eager_mode("strict")  # a sync point: y's pending program runs now
    assert y.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]


# --- Fused ---------------------------------------------------------------------------------------


def test_fused_defers_until_a_sync_point(counters):
    a = torch.randn(8, 8).to("tpu")
    counters()
    torch_pjrt.metrics.reset()
    with torch_pjrt.eager_mode("fused"):
        b = (a @ a).relu() + 1
        c = b.sum(dim=0) * 3
        assert _executions() == 0  # nothing ran yet
        host = c.cpu()
        assert _executions() == 1  # one program for every op
    expected = ((a.cpu() @ a.cpu()).relu() + 1).sum(dim=0) * 3
    torch.testing.assert_close(host, expected)


def test_launch_pending_cuts_the_fused_program(counters):
    a = torch.randn(8, 8).to("tpu")
    counters()
    torch_pjrt.metrics.reset()
    with torch_pjrt.eager_mode("fused"):
        b = (a @ a).relu()
        torch_pjrt.launch_pending()
        assert _executions() == 1  # launched without waiting for it
        c = (b + 1).sum(dim=0)
        host = c.cpu()
        assert _executions() == 2  # what followed the cut ran as a program of its own
    torch.testing.assert_close(host, ((a.cpu() @ a.cpu()).relu() + 1).sum(dim=0))


def test_fused_factories_and_resizes_do_not_cut_the_program(counters):
    """arange (empty, then resized) and a resize_ that keeps old values record into the pending
    program instead of running it: a static-cache decode step was cut into 8 programs by these."""
    a = torch.randn(6)
    ta = a.to("tpu")
    counters()
    torch_pjrt.metrics.reset()
    with torch_pjrt.eager_mode("fused"):
        b = ta * 2
        positions = torch.arange(3, device="tpu") + 1
        out = torch.empty(0, dtype=torch.long, device="tpu")
        torch.arange(4, out=out)
        grown = (b + 1).resize_(9)
        assert _executions() == 0
        result = (b[:3] * positions, out, grown[:6])
        host = [t.cpu() for t in result]
    assert _executions() == 1
    torch.testing.assert_close(host[0], a[:3] * 2 * torch.arange(1, 4))
    assert host[1].tolist() == [0, 1, 2, 3]
    torch.testing.assert_close(host[2], a * 2 + 1)


def test_strict_resize_runs_its_copy_as_an_op(counters):
    """Strict: a resize_ that copies old values into new storage runs as an op of its own."""
    t = torch.arange(4.0).to("tpu")
    counters()
    torch_pjrt.metrics.reset()
    t.resize_(6)
    assert _executions() == 1
    assert t[:4].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "sync",
    [
        lambda t: t.sum().item(),
        lambda t: t.tolist(),
        lambda t: str(t),
        lambda t: torch.tpu.synchronize(),
        lambda t: t.cpu(),
        lambda t: torch.nonzero(t > 0),  # data-dependent output size
    ],
    ids=["item", "tolist", "print", "synchronize", "cpu", "nonzero"],
)
def test_fused_sync_points_run_pending_work(sync):
    a = torch.randn(5, 3)
    ta = a.to("tpu")
    with torch_pjrt.eager_mode("fused"):
        b = ta.exp() - 1
        torch_pjrt.metrics.reset()
        sync(b)
        assert _executions() >= 1
    torch.testing.assert_close(b.cpu(), a.exp() - 1)


def test_fused_changing_scalars_reuse_one_program():
    p = torch.ones(16, device="tpu")
    with torch_pjrt.eager_mode("fused"):
        for lr in (0.1, 0.05, 0.025):  # a learning-rate schedule: new Python floats every step
            p.mul_(1 - lr).add_(p, alpha=-lr)
            p.sum().item()
        torch_pjrt.metrics.reset()
        for lr in (0.3, 0.2, 0.01):
            p.mul_(1 - lr).add_(p, alpha=-lr)
            p.sum().item()
        assert _compiles() == 0
    expected = torch.ones(16)
    for lr in (0.1, 0.05, 0.025, 0.3, 0.2, 0.01):
        expected.mul_(1 - lr).add_(expected, alpha=-lr)
    torch.testing.assert_close(p.cpu(), expected)


def test_fused_training_steady_state_compiles_nothing():
    torch.manual_seed(0)
    model = GPT().to("tpu")
    tokens = torch.randint(0, 64, (4, 17))
    x, y = tokens[:, :-1].to("tpu"), tokens[:, 1:].to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    per_step = []
    with torch_pjrt.eager_mode("fused"):
        for _ in range(6):
            before = (_compiles(), _executions())
            opt.zero_grad()
            loss = F.cross_entropy(model(x).reshape(-1, 64), y.reshape(-1))
            loss.backward()
            opt.step()
            loss.item()
            per_step.append((_compiles() - before[0], _executions() - before[1]))
    assert [c for c, _ in per_step[3:]] == [0, 0, 0]
    # One program for the whole step, plus a small one computing the position indices that the
    # embedding validates on the host.
    assert all(e <= 2 for _, e in per_step[3:])


def test_fused_loop_without_sync_is_recognized_and_cached():
    """A loop body that never syncs: the size cap cuts first, then the policy learns the period and
    cuts every repetition at the same point, so programs come from the cache."""
    old = torch_pjrt._C._fusion_max_ops()
    torch_pjrt._C._set_fusion_max_ops(64)
    try:
        g = torch.Generator().manual_seed(0)
        w, x = torch.randn(8, 8, generator=g), torch.randn(4, 8, generator=g)
        tw, tx = w.to("tpu"), x.to("tpu")
        with torch_pjrt.eager_mode("fused"):
            compiles = []
            for _ in range(60):
                before = _compiles()
                h = torch.tanh(tx @ tw)  # 5 recorded ops per iteration
                tx = h * 0.5 + tx
                compiles.append(_compiles() - before)
            assert torch_pjrt._C._fusion_segment_ops() > 0
            assert sum(compiles[-30:]) == 0
            result = tx.cpu()
    finally:
        torch_pjrt._C._set_fusion_max_ops(old)
    for _ in range(60):
        x = torch.tanh(x @ w) * 0.5 + x
    # 60 chained matmuls: summation order differs between XLA's and the CPU's kernels.
    torch.testing.assert_close(result, x, rtol=1e-5, atol=1e-5)


def test_fused_dead_tensors_are_not_outputs():
    a = torch.randn(64, 64).to("tpu")
    with torch_pjrt.eager_mode("fused"):
        torch_pjrt.metrics.reset()
        b = a * 2
        c = b + 1
        e = c.exp()
        del b, e  # nobody holds b or e: b is computed inside the program, e not at all
        d = c.sum()
        d.item()
    counters = torch_pjrt.metrics.counters()
    assert (counters["executions"], counters["output_buffers"]) == (1, 2)  # c and d
    torch.testing.assert_close(c.cpu(), a.cpu() * 2 + 1)


def test_backward_follows_the_mode_of_the_calling_thread():
    """The autograd engine runs "tpu" backward ops on its own threads; a scoped mode goes along."""
    w = torch.randn(16, 16).to("tpu").requires_grad_()
    x = torch.randn(4, 16).to("tpu")
    torch_pjrt.set_eager_mode("fused")
    loss = (x @ w).tanh().sum()
    torch_pjrt.metrics.reset()
    loss.backward()
    assert _executions() == 0  # fused: backward only recorded
    w.grad.sum().item()
    w.grad = None
    loss = (x @ w).tanh().sum()
    torch_pjrt.metrics.reset()
    with torch_pjrt.eager_mode("strict"):
        loss.backward()
    assert _executions() >= 3  # strict: each backward op ran by itself


# --- errors --------------------------------------------------------------------------------------


def test_strict_and_debug_raise_at_the_failing_op():
    t = torch.ones(3, device="tpu")
    for mode in ("strict", "debug"):
        with torch_pjrt.eager_mode(mode):
            with pytest.raises(RuntimeError, match="test_failing_op"):
                torch_pjrt._C._test_failing_op(t)
            assert (t + 1).tolist() == [2.0, 2.0, 2.0]


def test_fused_error_surfaces_at_the_next_sync_point_and_process_stays_usable():
    t = torch.ones(3, device="tpu")
    with torch_pjrt.eager_mode("fused"):
        bad = torch_pjrt._C._test_failing_op(t * 2)  # recorded, not run: no error yet
        other = t + 5
        with pytest.raises(RuntimeError, match=r"test_failing_op.*this lowering always fails"):
            torch.tpu.synchronize()
        # The failed tensor keeps failing; everything else works.
        with pytest.raises(RuntimeError, match="test_failing_op"):
            bad.cpu()
        with pytest.raises(RuntimeError, match="test_failing_op"):
            bad + 1
        assert (t * 3).tolist() == [3.0, 3.0, 3.0]
    assert torch.isfinite(other.cpu()).all()


def test_debug_mode_error_traceback_points_at_the_caller():
    import traceback

    t = torch.ones(2, device="tpu")
    with torch_pjrt.eager_mode("debug"):
        try:
            torch_pjrt._C._test_failing_op(t)
        except RuntimeError as e:
            frames = traceback.extract_tb(e.__traceback__)
        else:
            pytest.fail("no error")
    assert frames[-1].name == "test_debug_mode_error_traceback_points_at_the_caller"


# --- Debug check against the CPU -----------------------------------------------------------------


@pytest.fixture
def skewed_op():
    """test_pjrt::skew: x + 1 on the CPU, x + 1.5 on "tpu" (a wrong kernel to be found)."""
    lib = torch.library.Library("test_pjrt", "FRAGMENT")
    lib.define("skew(Tensor x) -> Tensor")
    lib.impl("skew", lambda x: x + 1, "CPU")
    lib.impl("skew", lambda x: x + 1.5, "PrivateUse1")
    yield torch.ops.test_pjrt.skew
    lib._destroy()


def test_debug_check_names_the_first_differing_op(skewed_op):
    torch_pjrt.debug_checker.clear()
    x = torch.randn(4, 3).to("tpu")
    with torch_pjrt.debug_check(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = (x * 2).relu()
        z = skewed_op(y)
        (z @ z.T).sum()
    found = torch_pjrt.debug_checker.mismatches()
    assert [m.op for m in found] == ["test_pjrt.skew.default"]
    assert found[0].shape == (4, 3) and found[0].dtype == torch.float32
    assert found[0].max_abs_error == pytest.approx(0.5)
    assert len(caught) == 1 and "test_pjrt.skew.default differs from the CPU" in str(
        caught[0].message
    )


def test_debug_check_passes_a_training_step():
    torch_pjrt.debug_checker.clear()
    torch.manual_seed(0)
    model = GPT(layers=1).to("tpu")
    tokens = torch.randint(0, 64, (2, 17)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with torch_pjrt.debug_check():
        loss = F.cross_entropy(model(tokens[:, :-1]).reshape(-1, 64), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
    assert torch_pjrt.debug_checker.mismatches() == []


def test_debug_check_from_the_environment():
    code = (
        "import torch, torch_pjrt\n"
        "lib = torch.library.Library('t', 'FRAGMENT')\n"
        "lib.define('skew(Tensor x) -> Tensor')\n"
        "lib.impl('skew', lambda x: x + 1, 'CPU')\n"
        "lib.impl('skew', lambda x: x * 3, 'PrivateUse1')\n"
        "x = torch.ones(2, device='tpu')\n"
        "torch.ops.t.skew(x + 1)\n"
        "print([m.op for m in torch_pjrt.debug_checker.mismatches()])\n"
    )
    env = {**os.environ, "TORCH_TPU_LAUNCH_BLOCKING": "1", "TORCH_PJRT_DEBUG_CHECK": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['t.skew.default']"
    assert "t.skew.default differs from the CPU" in out.stderr
