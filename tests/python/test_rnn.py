"""nn.LSTM, nn.GRU, nn.RNN and their cells on "tpu" against the CPU, forward and backward: PyTorch
calls the fused cells _thnn_fused_lstm_cell / _thnn_fused_gru_cell (and their backwards) for
PrivateUse1 inputs, which run natively (csrc/aten/rnn_cells.cpp). Multi-layer, bidirectional,
batch_first, projections, packed sequences, dropout in eval mode, and under torch.compile."""

import copy

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import torch_pjrt.eager

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(rtol=2e-4, atol=2e-5)


def _pair(module):
    torch.manual_seed(0)
    cpu = module()
    tpu = copy.deepcopy(cpu).to("tpu")
    return cpu, tpu


def _check_grads(cpu, tpu, tol=TOL):
    for (name, p), q in zip(cpu.named_parameters(), tpu.parameters()):
        assert q.grad is not None, name
        torch.testing.assert_close(q.grad.cpu(), p.grad, **tol, msg=name)


def _run(model, x, h, train=True):
    x = x.detach().requires_grad_(train)
    out, state = model(x, h)
    states = state if isinstance(state, tuple) else (state,)
    loss = out.pow(2).sum() + sum(s.sum() * (i + 1) for i, s in enumerate(states))
    if train:
        loss.backward()
    return out, states, x.grad


CONFIGS = {
    "1 layer": dict(num_layers=1),
    "2 layers bidirectional batch_first": dict(num_layers=2, bidirectional=True, batch_first=True),
    "no bias": dict(num_layers=2, bias=False),
    "dropout (eval)": dict(num_layers=3, dropout=0.5),
}


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_rnn_forward_backward(kind, config):
    kw = CONFIGS[config]
    cpu, tpu = _pair(lambda: getattr(nn, kind)(6, 5, **kw))
    if "dropout" in kw:
        cpu.eval(), tpu.eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 6, generator=g)
    dirs = 2 if kw.get("bidirectional") else 1
    h0 = torch.randn(kw["num_layers"] * dirs, 3 if not kw.get("batch_first") else 4, 5, generator=g)
    h = (h0, h0 * 0.5) if kind == "LSTM" else h0
    ht = tuple(t.to("tpu") for t in h) if kind == "LSTM" else h0.to("tpu")
    out_c, states_c, gx_c = _run(cpu, x, h)
    out_t, states_t, gx_t = _run(tpu, x.to("tpu"), ht)
    torch.testing.assert_close(out_t.cpu(), out_c, **TOL)
    for s_t, s_c in zip(states_t, states_c):
        torch.testing.assert_close(s_t.cpu(), s_c, **TOL)
    torch.testing.assert_close(gx_t.cpu(), gx_c, **TOL)
    _check_grads(cpu, tpu)


def test_lstm_projection_and_default_state():
    cpu, tpu = _pair(lambda: nn.LSTM(6, 8, num_layers=2, proj_size=3, bidirectional=True))
    x = torch.randn(5, 2, 6, generator=torch.Generator().manual_seed(2))
    out_c, states_c, gx_c = _run(cpu, x, None)
    out_t, states_t, gx_t = _run(tpu, x.to("tpu"), None)
    torch.testing.assert_close(out_t.cpu(), out_c, **TOL)
    torch.testing.assert_close(gx_t.cpu(), gx_c, **TOL)
    _check_grads(cpu, tpu)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences(kind, enforce_sorted):
    cpu, tpu = _pair(lambda: getattr(nn, kind)(4, 5, num_layers=2, bidirectional=True))
    lengths = torch.tensor([6, 4, 3, 1]) if enforce_sorted else torch.tensor([3, 6, 1, 4])
    x = torch.randn(6, 4, 4, generator=torch.Generator().manual_seed(3))
    results = []
    for model, device in ((cpu, "cpu"), (tpu, "tpu")):
        xi = x.to(device).detach().requires_grad_()
        packed = pack_padded_sequence(xi, lengths, enforce_sorted=enforce_sorted)
        out, state = model(packed)
        padded, out_lengths = pad_packed_sequence(out)
        states = state if isinstance(state, tuple) else (state,)
        (padded.pow(2).sum() + sum(s.sum() for s in states)).backward()
        results.append((padded, out_lengths, states, xi.grad))
    (pc, lc, sc, gc), (pt, lt, st, gt) = results
    torch.testing.assert_close(pt.cpu(), pc, **TOL)
    assert torch.equal(lt, lc)
    for a, b in zip(st, sc):
        torch.testing.assert_close(a.cpu(), b, **TOL)
    torch.testing.assert_close(gt.cpu(), gc, **TOL)
    _check_grads(cpu, tpu)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(kind, bias):
    cpu, tpu = _pair(lambda: getattr(nn, kind)(6, 5, bias=bias))
    g = torch.Generator().manual_seed(4)
    x, h = torch.randn(3, 6, generator=g), torch.randn(3, 5, generator=g)
    c = torch.randn(3, 5, generator=g)
    results = []
    for model, device in ((cpu, "cpu"), (tpu, "tpu")):
        xi = x.to(device).detach().requires_grad_()
        hi = h.to(device).detach().requires_grad_()
        ci = c.to(device).detach().requires_grad_()
        state = (hi, ci) if kind == "LSTMCell" else hi
        # two steps, so the second sees the first's state
        out = model(xi, state)
        out = model(xi * 0.5, out)
        outs = out if isinstance(out, tuple) else (out,)
        sum((o.pow(2) * (i + 1)).sum() for i, o in enumerate(outs)).backward()
        grads = (xi.grad, hi.grad) + ((ci.grad,) if kind == "LSTMCell" else ())
        results.append((outs, grads))
    (oc, gc), (ot, gt) = results
    for a, b in zip(ot + gt, oc + gc):
        torch.testing.assert_close(a.cpu(), b, **TOL)
    _check_grads(cpu, tpu)


def test_lstm_cell_only_cell_state_used():
    """Backward with a gradient for the cell state alone (grad_hy undefined)."""
    cpu, tpu = _pair(lambda: nn.LSTMCell(4, 3))
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(5))
    for model, device in ((cpu, "cpu"), (tpu, "tpu")):
        _, c = model(x.to(device))
        (c * 2).sum().backward()
    _check_grads(cpu, tpu)


def test_cell_size_errors():
    cell = nn.LSTMCell(4, 3)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="inconsistent input_size: got 5 expected 4"):
            cell.to(device)(torch.randn(2, 5, device=device))
    # the fused cell's own check (CUDA's message; the CPU has no such kernel)
    with pytest.raises(RuntimeError, match="'prev_hidden' to have 6 elements"):
        torch.ops.aten._thnn_fused_lstm_cell(
            torch.randn(2, 12, device="tpu"), torch.randn(2, 12, device="tpu"),
            torch.randn(2, 4, device="tpu"),
        )  # fmt: skip


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_eager_modes(kind, mode):
    cpu, tpu = _pair(lambda: getattr(nn, kind)(6, 5, num_layers=2, bidirectional=True))
    x = torch.randn(4, 3, 6, generator=torch.Generator().manual_seed(8))
    out_c, _, gx_c = _run(cpu, x, None)
    with torch_pjrt.eager.eager_mode(mode):
        out_t, _, gx_t = _run(tpu, x.to("tpu"), None)
    torch.testing.assert_close(out_t.cpu(), out_c, **TOL)
    torch.testing.assert_close(gx_t.cpu(), gx_c, **TOL)
    _check_grads(cpu, tpu)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_compiled(kind):
    cpu, tpu = _pair(lambda: getattr(nn, kind)(6, 5, num_layers=2, batch_first=True))
    compiled = torch.compile(tpu, backend="tpu")
    x = torch.randn(3, 4, 6, generator=torch.Generator().manual_seed(6))
    out_c, states_c, gx_c = _run(cpu, x, None)
    out_t, states_t, gx_t = _run(compiled, x.to("tpu"), None)
    torch.testing.assert_close(out_t.cpu(), out_c, **TOL)
    torch.testing.assert_close(gx_t.cpu(), gx_c, **TOL)
    _check_grads(cpu, tpu)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_compiled_cells(kind):
    cpu, tpu = _pair(lambda: getattr(nn, kind)(6, 5))
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(7))
    compiled = torch.compile(tpu, backend="tpu")
    results = []
    for model, device in ((cpu, "cpu"), (compiled, "tpu")):
        out = model(x.to(device))
        outs = out if isinstance(out, tuple) else (out,)
        sum(o.pow(2).sum() for o in outs).backward()
        results.append(outs)
    for a, b in zip(results[1], results[0]):
        torch.testing.assert_close(a.cpu(), b, **TOL)
    _check_grads(cpu, tpu)
