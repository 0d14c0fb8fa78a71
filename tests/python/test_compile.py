"""torch.compile(backend="tpu"): compiled forward and training steps of the MLP, CNN and GPT match
eager CPU; graph breaks, fullgraph, new shapes, dynamic=True, modes, RNG, views and aliasing."""

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from models import CNN, GPT, MLP

import torch_pjrt
import torch_pjrt.compile as tpc
from torch_pjrt.compile import runner

STEPS = 20


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    tpc.reset_counters()
    runner._warned.clear()  # one-time warnings: once per test
    yield
    torch._dynamo.reset()


def _data(kind):
    g = torch.Generator().manual_seed(1)
    if kind == "mlp":
        return torch.randn(32, 16, generator=g), torch.randint(0, 4, (32,), generator=g)
    if kind == "cnn":
        return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
    tokens = torch.randint(0, 64, (4, 17), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def _model(kind):
    torch.manual_seed(0)
    return {"mlp": MLP, "cnn": CNN, "gpt": GPT}[kind]()


def _step_fn(model, opt):
    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return step


def _train(model, x, y, device, compiled):
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    step = _step_fn(model, opt)
    if compiled:
        step = torch.compile(step, backend="tpu")
    return [step(x, y).item() for _ in range(STEPS)]


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_compiled_forward_matches_cpu(kind):
    model = _model(kind).eval()
    x, _ = _data(kind)
    expected = model(x)
    tpu_model = copy.deepcopy(model).to("tpu")
    compiled = torch.compile(tpu_model, backend="tpu")
    with torch.no_grad():
        for _ in range(2):
            out = compiled(x.to("tpu"))
    torch.testing.assert_close(out.cpu(), expected.detach(), rtol=1e-4, atol=1e-5)
    c = tpc.counters()
    assert c["graphs_compiled"] >= 1 and c["replays"] >= 1 and c["eager_graphs"] == 0


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_compiled_training_step_with_optimizer_matches_cpu(kind):
    model = _model(kind)
    x, y = _data(kind)
    cpu_losses = _train(copy.deepcopy(model), x, y, "cpu", compiled=False)
    torch_pjrt.metrics.reset()
    tpu_losses = _train(model, x, y, "tpu", compiled=True)
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=0)
    assert cpu_losses[-1] < cpu_losses[0]
    c = torch_pjrt.metrics.counters()
    assert c["cpu_fallbacks"] == {}
    assert c["compile"]["graphs_compiled"] >= 2  # forward and backward at least
    assert c["compile"]["replays"] >= STEPS
    assert c["compile"]["eager_graphs"] == 0  # the optimizer step too (CPU step counts)


def test_training_step_with_traced_backward_is_two_programs_and_matches_cpu():
    """With Dynamo tracing backward() (torch._dynamo.config.trace_autograd_ops), the forward and
    backward are one program and the optimizer's step (which breaks the graph on purpose) a second:
    no autograd engine between them, the gradients written by the first program."""
    model = _model("gpt")
    x, y = _data("gpt")

    def run(model, device, compiled):
        model = model.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
        xd, yd = x.to(device), y.to(device)

        def step():
            opt.zero_grad(set_to_none=True)
            logits = model(xd)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yd.reshape(-1))
            loss.backward()
            value = loss.detach()  # the backward consumed loss's graph: not live past it
            del loss, logits
            opt.step()
            return value

        if compiled:
            step = torch.compile(step, backend="tpu")
        losses, grads = [], None
        with torch._dynamo.config.patch(trace_autograd_ops=True):
            for i in range(STEPS):
                if i == STEPS - 1:
                    before = torch_pjrt.metrics.counters()["executions"]
                losses.append(step().item())
                if i == 0:  # written by the first program, read by the optimizer's
                    grads = [p.grad.cpu() for p in model.parameters()]
        programs = torch_pjrt.metrics.counters()["executions"] - before
        return losses, grads, programs

    cpu_losses, cpu_grads, _ = run(copy.deepcopy(model), "cpu", False)
    tpu_losses, tpu_grads, programs = run(model, "tpu", True)
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=0)
    torch.testing.assert_close(tpu_grads, cpu_grads, rtol=1e-4, atol=1e-6)
    assert programs == 2  # forward + backward, then the optimizer
    c = tpc.counters()
    assert c["graphs_compiled"] == 2 and c["eager_graphs"] == 0


def test_training_step_with_graph_break_matches_cpu():
    model = _model("mlp")
    x, y = _data("mlp")

    def run(model, device, compiled):
        model = model.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
        xd, yd = x.to(device), y.to(device)

        def step():
            opt.zero_grad()
            h = model.net[:3](xd)
            torch._dynamo.graph_break()
            loss = F.cross_entropy(model.net[3:](h), yd)
            loss.backward()
            opt.step()
            return loss

        if compiled:
            step = torch.compile(step, backend="tpu")
        return [step().item() for _ in range(STEPS)]

    cpu_losses = run(copy.deepcopy(model), "cpu", False)
    tpu_losses = run(model, "tpu", True)
    torch.testing.assert_close(tpu_losses, cpu_losses, rtol=1e-4, atol=0)
    c = tpc.counters()
    assert c["graphs_compiled"] >= 5  # two forward pieces, their backwards, the optimizer
    assert c["eager_graphs"] == 0


def test_graph_break_and_fullgraph():
    def fn(x, w):
        y = torch.tanh(x @ w)
        torch._dynamo.graph_break()
        return (y * 2 + 1).sum(dim=0)

    x, w = torch.randn(8, 4), torch.randn(4, 4)
    expected = fn(x, w)
    broken = torch.compile(fn, backend="tpu")
    for _ in range(3):
        torch.testing.assert_close(broken(x.to("tpu"), w.to("tpu")).cpu(), expected)
    assert tpc.counters()["graphs_compiled"] == 2

    def whole(x, w):
        return (torch.tanh(x @ w) * 2 + 1).sum(dim=0)

    full = torch.compile(whole, backend="tpu", fullgraph=True)
    torch.testing.assert_close(full(x.to("tpu"), w.to("tpu")).cpu(), expected)


def test_new_shape_compiles_new_program_and_is_counted():
    f = torch.compile(lambda x: torch.relu(x) * 3 - x.mean(), backend="tpu", dynamic=False)
    for n in (4, 4, 6, 6, 4):
        x = torch.randn(n, 5)
        torch.testing.assert_close(f(x.to("tpu")).cpu(), torch.relu(x) * 3 - x.mean())
    c = tpc.counters()
    assert c["graphs_compiled"] == 2
    assert c["replays"] == 3


def test_dynamic_true_warns_and_compiles_per_shape(monkeypatch):
    # The note is once per process: an earlier test's dynamic recompile may have given it.
    monkeypatch.setattr(tpc, "_noted", set())

    def fn(x):
        return torch.sin(x).sum(dim=-1) + x.shape[0]

    f = torch.compile(fn, backend="tpu", dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 5, 7, 5):
            x = torch.randn(n, 4)
            torch.testing.assert_close(f(x.to("tpu")).cpu(), fn(x))
    assert any("dynamic=True" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    "kw", [{"mode": "reduce-overhead"}, {"mode": "max-autotune"}, {"options": {"foo": 1}}]
)
def test_modes_and_options_are_accepted(kw):
    f = torch.compile(lambda x: x * 2 + 1, backend="tpu", **kw)
    x = torch.randn(3)
    torch.testing.assert_close(f(x.to("tpu")).cpu(), x * 2 + 1)


def test_dropout_follows_manual_seed_and_differs_between_calls():
    f = torch.compile(lambda x: F.dropout(x, 0.5, training=True), backend="tpu")
    x = torch.ones(256, device="tpu")
    torch.manual_seed(7)
    a1, a2 = f(x).cpu(), f(x).cpu()
    torch.manual_seed(7)
    b1, b2 = f(x).cpu(), f(x).cpu()
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, a2)
    assert set(a1.unique().tolist()) <= {0.0, 2.0}
    # The compiled graph draws like eager dropout on "tpu" does.
    torch.manual_seed(7)
    eager = F.dropout(x, 0.5, training=True).cpu()
    assert torch.equal(eager, a1)
    assert tpc.counters()["replays"] >= 3


def test_views_aliases_and_non_contiguous_inputs():
    def fn(x, y):
        return x.t(), x[::2] + y, x, (x * y[0]).sum(), None

    f = torch.compile(fn, backend="tpu")
    for _ in range(3):
        base = torch.randn(6, 4)
        x = base.to("tpu").t()  # non-contiguous input
        y = torch.randn(6).to("tpu")
        out = f(x, y)
        exp = fn(base.t(), y.cpu())
        for o, e in zip(out[:4], exp[:4]):
            torch.testing.assert_close(o.cpu(), e)
        assert out[4] is None
        assert out[0].stride() == exp[0].stride()


def test_inputs_mutated_in_place():
    def fn(x, buf):
        buf.add_(x)
        x.mul_(2)
        return buf.sum()

    f = torch.compile(fn, backend="tpu")
    x, buf = torch.randn(5), torch.zeros(5)
    tx, tbuf = x.to("tpu"), buf.to("tpu")
    for _ in range(3):
        expected = fn(x, buf)
        got = f(tx, tbuf)
        torch.testing.assert_close(got.cpu(), expected)
        torch.testing.assert_close(tx.cpu(), x)
        torch.testing.assert_close(tbuf.cpu(), buf)


def test_cpu_scalar_inputs_are_uploaded_per_call_and_cpu_outputs_stay_on_cpu():
    def fn(x, s):
        s.add_(1)
        return x * s, s * 2

    f = torch.compile(fn, backend="tpu")
    x = torch.randn(4)
    s_cpu, s_ref = torch.tensor(1.5), torch.tensor(1.5)
    for _ in range(4):
        out, twice = f(x.to("tpu"), s_cpu)
        exp, exp_twice = fn(x, s_ref)
        torch.testing.assert_close(out.cpu(), exp)
        assert twice.device.type == "cpu" and torch.equal(twice, exp_twice)
        assert torch.equal(s_cpu, s_ref)
    c = tpc.counters()
    assert c["eager_graphs"] == 0 and c["replays"] == 3
    # Reading the CPU outputs back is the graph's own host round trip (one transfer for both).
    torch_pjrt.metrics.reset()
    f(x.to("tpu"), s_cpu)
    assert torch_pjrt.metrics.counters()["host_round_trips"] == 1


def test_cpu_tensor_inputs_run_eagerly_with_a_warning():
    f = torch.compile(lambda x, w: x * w.to(x.device), backend="tpu")
    x, w = torch.randn(3), torch.randn(3)
    with pytest.warns(UserWarning, match="runs eagerly"):
        out = f(x.to("tpu"), w)
    torch.testing.assert_close(out.cpu(), x * w)
    torch.testing.assert_close(f(x.to("tpu"), w).cpu(), x * w)


def test_structurally_equal_graphs_hit_the_memory_cache():
    def fn(x):
        return torch.exp(x) / 3

    x = torch.randn(7).to("tpu")
    torch.compile(fn, backend="tpu")(x)
    torch._dynamo.reset()
    torch.compile(fn, backend="tpu")(x)
    c = tpc.counters()
    assert c["graphs_compiled"] == 2
    assert c["memory_hits"] >= 1


def test_data_dependent_graph_runs_eagerly_and_correctly():
    def fn(x):
        return x[x > 0].sum() + x.nonzero().shape[0]

    f = torch.compile(fn, backend="tpu")
    x = torch.randn(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            torch.testing.assert_close(f(x.to("tpu")).cpu(), fn(x))


def test_dump_dir_writes_fx_and_stablehlo(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_DUMP_DIR", str(tmp_path / "dump"))
    f = torch.compile(lambda x: torch.cos(x) + 1, backend="tpu")
    f(torch.randn(3).to("tpu"))
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert any(n.endswith(".fx.txt") for n in names)
    mlir = [p for p in (tmp_path / "dump").iterdir() if p.name.endswith(".stablehlo.mlir")]
    assert mlir and "stablehlo.cosine" in mlir[0].read_text()


def test_backend_is_declared_as_dynamo_entry_point():
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[2]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    eps = meta["project"]["entry-points"]["torch_dynamo_backends"]
    assert eps == {"tpu": "torch_pjrt.compile:backend"}
    assert "tpu" in torch._dynamo.list_backends()


def test_graph_signature_tells_apart_what_a_program_depends_on():
    """A replay's key (torch_pjrt._C._graph_signature): equal for inputs one program serves,
    different for any layout, dtype, device, shared storage or non-tensor value it was traced on."""
    sig = torch_pjrt._C._graph_signature
    a, b = torch.ones(3, 3, device="tpu"), torch.ones(3, 3, device="tpu")
    same = [torch.zeros(3, 3, device="tpu"), torch.zeros(3, 3, device="tpu"), 2, 0.5, "x", None]
    assert sig([a, b, 2, 0.5, "x", None]) == sig(same) == sig(tuple(same))
    base = torch.ones(8, device="tpu")
    differ = [
        [a.t()],  # strides
        [torch.ones(9, device="tpu").view(3, 3)[:, :2]],  # sizes
        [a.half()],  # dtype
        [a.to("tpu:1")],  # device
        [a.cpu()],  # not on the device
        [base[:4]],  # a storage of 8 elements, offset 0
        [base[4:]],  # offset 4
    ]
    keys = [sig([a])] + [sig(args) for args in differ] + [sig([torch.ones(4, device="tpu")])]
    assert len(set(keys)) == len(keys)
    assert sig([a, a]) != sig([a, b])  # one storage twice
    assert len({sig([a, v]) for v in (1, True, 1.0, "1", None)}) == 5  # values and their types
