"""Faults in the middle of work (issue 24): Ctrl-C during a Fused training step, the plugin's
out-of-memory at execution (torch.OutOfMemoryError), a program the plugin rejects, and each site of
the runtime's test-only fault switch (compile, execute, transfers, allocation). Each raises a Python
exception naming what failed, the process keeps working, and tensors not involved keep their
values."""

import copy
import signal

import pytest
import torch
import torch.nn.functional as F
from models import MLP

import torch_pjrt


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _twins():
    """The same MLP with AdamW on the CPU and on "tpu"."""
    torch.manual_seed(0)
    cpu = MLP()
    model = copy.deepcopy(cpu).to("tpu")
    return (cpu, torch.optim.AdamW(cpu.parameters(), lr=1e-2), model,
            torch.optim.AdamW(model.parameters(), lr=1e-2))  # fmt: skip


def _batch():
    g = torch.Generator().manual_seed(3)
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


@pytest.mark.parametrize("mode", ["fused", "strict"])
def test_ctrl_c_mid_step_loses_nothing_but_the_step(mode):
    cpu, cpu_opt, model, opt = _twins()
    x, y = _batch()
    bystander = torch.arange(6.0, device="tpu") * 2  # pending in Fused mode when Ctrl-C comes

    def interrupt(module, args, output):
        signal.raise_signal(signal.SIGINT)  # a real SIGINT: Python raises KeyboardInterrupt

    # Python's own Ctrl-C handler, as in a user's terminal: a suite started in the background by
    # a non-interactive shell (`bash .ci/run &`) inherits SIGINT ignored (POSIX), and Python
    # then keeps it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    first_layer = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    handle = first_layer.register_forward_hook(interrupt)
    with torch_pjrt.eager_mode(mode):
        with pytest.raises(KeyboardInterrupt):
            _step(model, opt, x.to("tpu"), y.to("tpu"))
        handle.remove()
        # The interrupted step changed nothing: the same steps as on the CPU follow.
        for p, q in zip(model.parameters(), cpu.parameters()):
            torch.testing.assert_close(p.cpu(), q)
        for _ in range(3):
            got = _step(model, opt, x.to("tpu"), y.to("tpu")).item()
            want = _step(cpu, cpu_opt, x, y).item()
            assert got == pytest.approx(want, rel=1e-5)
    assert torch.equal(bystander.cpu(), torch.arange(6.0) * 2)
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
def test_out_of_memory_raises_and_the_process_keeps_working(mode):
    kept = torch.arange(4.0, device="tpu") + 1
    with torch_pjrt.eager_mode(mode):
        # torch.OutOfMemoryError (a RuntimeError), as CUDA raises.
        with pytest.raises(torch.OutOfMemoryError, match=r"program for \[fill.*Out of memory"):
            huge = torch.zeros(1 << 40, device="tpu")  # 4 TiB of float32
            (huge + 1).sum().item()
        if mode == "fused":  # the failed value raises the same error again when used
            with pytest.raises(torch.OutOfMemoryError, match="Out of memory"):
                huge + 1
        assert torch.equal(kept.cpu(), torch.arange(4.0) + 1)
        assert (kept * 2).sum().item() == 20.0


def test_program_the_plugin_rejects_raises_and_the_process_keeps_working():
    bad = """module {
  func.func public @main(%a: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %a, %a : tensor<3xi32>
    return %0 : tensor<3xf32>
  }
}"""
    t = torch.arange(3.0, device="tpu")
    with pytest.raises(RuntimeError):
        torch_pjrt.run_stablehlo(bad, t)
    assert torch.equal((t + 1).cpu(), torch.arange(3.0) + 1)


@pytest.mark.parametrize(
    ("site", "op", "expected", "message"),
    [
        # A program shape no other test uses: its first compile is the one that fails.
        ("compile", lambda t: torch.ones(7, 17, device="tpu").cos(), torch.ones(7, 17).cos(),
         "compiling the program"),
        ("execute", lambda t: t + 1, torch.arange(4.0) + 2, r"running the program for \[add\]"),
        ("to_host", lambda t: t + 2, torch.arange(4.0) + 3, "to_host"),
        ("from_host", lambda t: torch.ones(3).to("tpu"), torch.ones(3), "from_host"),
    ],
)  # fmt: skip
def test_injected_plugin_fault_raises_and_the_retry_works(site, op, expected, message):
    """The test-only switch fails the next plugin call at `site`: a RuntimeError naming it; the
    same call then works, and other tensors keep their values."""
    kept = torch.arange(4.0, device="tpu") + 1
    if site != "compile":
        op(kept).cpu()  # compiled now: the fault falls on the transfer or execution itself
    torch_pjrt._C._inject_fault(site, 1)
    with pytest.raises(RuntimeError, match=f"{message}.*injected fault"):
        op(kept).cpu()
    torch.testing.assert_close(op(kept).cpu(), expected)
    assert torch.equal(kept.cpu(), torch.arange(4.0) + 1)


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
@pytest.mark.parametrize(
    "op, message",
    [
        (lambda t: t * 3, r"running the program for \[mul\]"),
        (lambda t: torch.ones(3).to("tpu"), "copying to the device"),
    ],
)
def test_injected_allocation_failure_is_out_of_memory(mode, op, message):
    """The switch's "allocate" site fails the next device allocation (an execution's outputs or a
    transfer) as the plugin does when memory runs out: torch.OutOfMemoryError, then it works."""
    kept = torch.arange(4.0, device="tpu") + 1
    with torch_pjrt.eager_mode(mode):
        op(kept).cpu()  # compiled now: the fault falls on the allocation
        ooms = torch.tpu.memory_stats()["num_ooms"]
        torch_pjrt._C._inject_fault("allocate", 1)
        with pytest.raises(torch.OutOfMemoryError, match=f"{message}.*out of memory.*injected"):
            op(kept).cpu()
        assert torch.tpu.memory_stats()["num_ooms"] == ooms + 1  # as CUDA counts them
        assert op(kept).cpu().sum().item() == op(torch.arange(4.0) + 1).sum().item()
    assert torch.equal(kept.cpu(), torch.arange(4.0) + 1)


def test_injected_fault_sites_are_checked():
    with pytest.raises(ValueError, match="unknown site"):
        torch_pjrt._C._inject_fault("alloc", 1)
    with pytest.raises(ValueError, match="at least 1"):
        torch_pjrt._C._inject_fault("execute", 0)


def test_failed_fused_step_is_salvaged_whole():
    """A Fused step whose program fails (before the plugin ran it) raises at its sync point; what
    does not depend on the failure is salvaged, each value run alone, so the parameters are never
    half-updated: they equal the CPU's after all the steps."""
    cpu, cpu_opt, model, opt = _twins()
    x, y = _batch()
    with torch_pjrt.eager_mode("fused"):
        for _ in range(3):
            _step(model, opt, x.to("tpu"), y.to("tpu")).item()
            _step(cpu, cpu_opt, x, y)
        torch_pjrt._C._inject_fault("execute", 1)
        with pytest.raises(RuntimeError, match="injected fault"):
            _step(model, opt, x.to("tpu"), y.to("tpu")).item()
        _step(cpu, cpu_opt, x, y)
        for p, q in zip(model.parameters(), cpu.parameters()):
            torch.testing.assert_close(p.cpu(), q, rtol=1e-5, atol=1e-6)


def test_value_of_a_failed_fused_program_keeps_the_original_error():
    """w depends on a program that runs out of memory after the plugin consumed w's donated
    buffer: every read of w raises that out-of-memory error (not a confusing "buffer donated"
    one from the salvage), and other tensors keep working."""
    w = torch.ones(4, device="tpu")
    other = torch.full((3,), 5.0, device="tpu")
    with torch_pjrt.eager_mode("fused"):
        w.add_(1)
        huge = torch.zeros(1 << 40, device="tpu")
        w.add_(huge[:4])
        with pytest.raises(RuntimeError, match="Out of memory"):
            w.sum().item()  # huge is live, so the program must compute all of it
        del huge
        with pytest.raises(RuntimeError, match="Out of memory"):
            w.sum().item()
        assert torch.equal((other + 1).cpu(), torch.full((3,), 6.0))
