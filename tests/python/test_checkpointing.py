"""Activation checkpointing under torch.compile(backend="tpu"): the backward program recomputes
the region behind a stablehlo.optimization_barrier, gradients equal the CPU's, and fewer
activations stay alive between the forward and backward programs. In Fused eager: each
recomputation starts a program of its own (eager_checkpointing.py), gradients equal the CPU's,
and fewer activations stay alive."""

import re

import pytest
import torch
from torch.utils.checkpoint import (
    CheckpointPolicy,
    checkpoint,
    create_selective_checkpoint_contexts,
)

import torch_pjrt

WIDTH, DEPTH, BATCH = 64, 6, 32


class MLP(torch.nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH))

    def block(self, layer, x):
        return torch.tanh(layer(torch.relu(x)) * 1.5)

    def forward(self, x):
        for layer in self.layers:
            if self.mode == "none":
                x = self.block(layer, x)
            elif self.mode == "selective":
                x = checkpoint(self.block, layer, x, use_reentrant=False, context_fn=_sac_context)
            else:
                x = checkpoint(self.block, layer, x, use_reentrant=self.mode == "reentrant")
        return x.square().mean()


def _save_matmuls(ctx, op, *args, **kwargs):
    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def _sac_context():
    return create_selective_checkpoint_contexts(_save_matmuls)


def _barrier_calls(text):
    """Calls of optimization barriers in a program's text: each kernel function is defined once
    per signature and called by name (or the barrier op written in place)."""
    names = re.findall(r"func\.func \w* ?@(\w+)\(([^{]*)\{[^}]*optimization_barrier", text)
    inline = text.count('"stablehlo.optimization_barrier"')
    return inline + sum(text.count(f"callee = @{name}}}") for name, _ in names)


def _grads(model, x):
    model.zero_grad()
    loss = model(x)
    loss.backward()
    return loss, [p.grad for p in model.parameters()]


def _cpu_reference(mode):
    torch.manual_seed(0)
    model = MLP(mode)
    # Reentrant checkpointing needs an input that requires grad (parameters do not count).
    x = torch.randn(BATCH, WIDTH).requires_grad_(mode == "reentrant")
    loss, grads = _grads(model, x)
    return model, x, loss, grads


@pytest.mark.parametrize("mode", ["non_reentrant", "reentrant", "selective"])
def test_checkpointed_backward_has_barrier_and_cpu_gradients(mode):
    model, x, loss, grads = _cpu_reference(mode)
    model_tpu = MLP(mode).to("tpu")
    model_tpu.load_state_dict(model.state_dict())
    compiled = torch.compile(model_tpu, backend="tpu")
    x_tpu = x.detach().to("tpu").requires_grad_(x.requires_grad)
    loss_tpu, grads_tpu = _grads(compiled, x_tpu)
    torch.testing.assert_close(loss_tpu.cpu(), loss, rtol=1e-5, atol=1e-6)
    for g_tpu, g in zip(grads_tpu, grads):
        torch.testing.assert_close(g_tpu.cpu(), g, rtol=1e-4, atol=1e-6)
    texts = torch.tpu.compiled_graph_stablehlo()
    backward = [t for name, t in texts.items() if name.endswith("_backward")][-1]
    forward = [t for name, t in texts.items() if name.endswith("_forward")][-1]
    assert _barrier_calls(backward) == DEPTH
    assert "stablehlo.optimization_barrier" not in forward
    # The recomputation is in the backward program: each layer's relu (a compare and a select)
    # is computed again there, beside relu's gradients (one compare each; the first layer's only
    # when the input requires grad).
    relu_grads = DEPTH if x.requires_grad else DEPTH - 1
    assert backward.count('"stablehlo.compare"') == DEPTH + relu_grads


def test_without_checkpointing_there_is_no_barrier():
    model, x, _, grads = _cpu_reference("none")
    model_tpu = MLP("none").to("tpu")
    model_tpu.load_state_dict(model.state_dict())
    _, grads_tpu = _grads(torch.compile(model_tpu, backend="tpu"), x.to("tpu"))
    for g_tpu, g in zip(grads_tpu, grads):
        torch.testing.assert_close(g_tpu.cpu(), g, rtol=1e-4, atol=1e-6)
    backward = [t for n, t in torch.tpu.compiled_graph_stablehlo().items() if "_backward" in n]
    assert "stablehlo.optimization_barrier" not in backward[-1]
    # relu's gradients only (not the first layer's: the input does not require grad)
    assert backward[-1].count('"stablehlo.compare"') == DEPTH - 1


def _peak_between_programs(mode):
    """Peak bytes of live device buffers over a forward and backward: the saved activations are
    the forward program's outputs, alive until the backward program ran."""
    torch.manual_seed(0)
    model = MLP(mode).to("tpu")
    x = torch.randn(BATCH * 8, WIDTH).to("tpu")
    compiled = torch.compile(model, backend="tpu")
    _grads(compiled, x)  # compiles
    torch.tpu.synchronize()
    for p in model.parameters():
        p.grad = None
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    loss = compiled(x)
    torch.tpu.synchronize()
    held = torch.tpu.memory_allocated() - base  # saved for the backward
    loss.backward()
    torch.tpu.synchronize()
    return held, torch.tpu.max_memory_allocated() - base


def test_checkpointing_keeps_fewer_activations_alive():
    held_none, peak_none = _peak_between_programs("none")
    held_ckpt, peak_ckpt = _peak_between_programs("non_reentrant")
    activation = BATCH * 8 * WIDTH * 4
    # Without checkpointing every layer saves activations; with it, each layer saves its input.
    assert held_none >= 2 * DEPTH * activation
    assert held_ckpt <= (DEPTH + 1) * activation
    assert peak_ckpt < peak_none


def _fused_step(mode, read_loss):
    """A Fused eager forward and backward (reading the loss in between or not): the gradients,
    the bytes of live buffers after the forward and at the peak, and the programs run."""
    model, x, _, grads = _cpu_reference(mode)
    model_tpu = MLP(mode).to("tpu")
    model_tpu.load_state_dict(model.state_dict())
    x_tpu = x.detach().to("tpu").requires_grad_(x.requires_grad)
    with torch_pjrt.eager_mode("fused"):
        torch.tpu.synchronize()
        torch.tpu.reset_peak_memory_stats()
        base = torch.tpu.memory_allocated()
        before = torch_pjrt.metrics.counters()["executions"]
        loss = model_tpu(x_tpu)
        if read_loss:
            loss.item()
        held = torch.tpu.memory_allocated() - base
        loss.backward()
        torch.tpu.synchronize()
        programs = torch_pjrt.metrics.counters()["executions"] - before
    for p, g in zip(model_tpu.parameters(), grads):
        torch.testing.assert_close(p.grad.cpu(), g, rtol=1e-4, atol=1e-6)
    return held, torch.tpu.max_memory_allocated() - base, programs


def test_fused_eager_checkpointing_keeps_fewer_activations_alive():
    activation = BATCH * WIDTH * 4
    params = DEPTH * (WIDTH + 1) * WIDTH * 4
    # The loss read after the forward (a training loop logging it): the forward's program keeps
    # what autograd saved, every layer's activations without checkpointing, their inputs with it.
    held_none, peak_none, _ = _fused_step("none", read_loss=True)
    assert held_none >= 2 * DEPTH * activation
    held, peak, _ = _fused_step("reentrant", read_loss=True)
    assert held <= (DEPTH + 1) * activation
    assert peak_none - peak >= (DEPTH - 1) * activation
    # Nothing read: without the cut before each recomputation the step would be one program in
    # which XLA merges the recomputation with the forward; with it, the forward and each
    # region's backward are programs, and no activation outlives its region.
    for mode in ("non_reentrant", "selective"):
        held, peak, programs = _fused_step(mode, read_loss=False)
        assert programs == DEPTH + 1, mode
        saved = DEPTH if mode == "selective" else 0  # the matmuls the policy saves
        assert peak - params <= (DEPTH + 2 + saved) * activation, (mode, peak)
