"""torch.compile with no backend: graphs on "tpu" compile with backend "tpu" (a function's per
graph; a module's, or its method's, at compile time with dynamic=False), CPU graphs with Inductor;
backend="inductor" on "tpu" raises naming backend "tpu"; Dynamo's and Inductor's view of device
"tpu"; Transformers' compiled generation (CompileConfig, a compiled forward) token for token
against eager CPU. Tiny models with seeded weights; nothing is downloaded."""

import copy
import inspect

import pytest
import torch

import torch_pjrt.compile as tpc
from torch_pjrt import _default_backend


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    tpc.reset_counters()
    yield
    torch._dynamo.reset()


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def test_torch_compile_keeps_its_signature_and_docstring():
    original = torch.compile.__wrapped__
    assert inspect.signature(torch.compile) == inspect.signature(original)
    assert torch.compile.__doc__ == original.__doc__ and torch.compile.__name__ == "compile"
    with pytest.raises(RuntimeError, match="Model can't be None"):
        torch.compile()(None)


def test_function_graphs_on_tpu_compile_with_backend_tpu():
    def fn(x, w):
        return torch.nn.functional.gelu(x @ w).sum(0) + 1

    x, w = _x(8, 16), _x(16, 4)
    compiled = torch.compile(fn)
    for _ in range(2):
        out = compiled(x.to("tpu"), w.to("tpu"))
    torch.testing.assert_close(out.cpu(), fn(x, w))
    c = tpc.counters()
    assert c["graphs_compiled"] == 1 and c["replays"] == 1 and c["eager_graphs"] == 0
    # A graph with no tensor input that makes its tensors on "tpu" is a "tpu" graph too.
    made = torch.compile(lambda n: torch.arange(n, device="tpu") * 2)(5)
    assert made.device.type == "tpu" and made.cpu().tolist() == [0, 2, 4, 6, 8]
    assert tpc.counters()["graphs_compiled"] == 2


def test_decorators_with_and_without_arguments():
    @torch.compile
    def triple(x):
        return x * 3

    @torch.compile(fullgraph=True)
    def quadruple(x):
        return x * 4

    x = _x(4)
    torch.testing.assert_close(triple(x.to("tpu")).cpu(), x * 3)
    torch.testing.assert_close(quadruple(x.to("tpu")).cpu(), x * 4)
    assert tpc.counters()["graphs_compiled"] == 2


def test_function_keeps_torch_default_dynamic():
    compiled = torch.compile(lambda x: torch.nn.functional.gelu(x).sum(0) * 2)
    for batch in (4, 8, 12):
        compiled(_x(batch, 16).to("tpu"))
    # Dynamo recompiled the second shape with a dynamic size; the third reuses that graph.
    c = tpc.counters()
    assert c["graphs_compiled"] == 3 and c["shape_recompiles"] == 1


class _MLP(torch.nn.Module):  # Dynamo skips nn.Sequential's own frames under Module.compile()
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def test_module_on_tpu_compiles_with_backend_tpu_and_static_shapes():
    torch.manual_seed(0)
    cpu = _MLP()
    model = copy.deepcopy(cpu).to("tpu")
    compiled = torch.compile(model)
    x = _x(12, 16)
    with torch.no_grad():
        for batch in (4, 8, 12):
            torch.testing.assert_close(compiled(x[:batch].to("tpu")).cpu(), cpu(x[:batch]))
    # dynamic=False: each shape is a graph of its own, none is recompiled for a new shape.
    c = tpc.counters()
    assert c["graphs_compiled"] == 3 and c["shape_recompiles"] == 0
    # A bound method and nn.Module.compile() compile the same way.
    forward = torch.compile(model.forward)
    model.compile()
    for call in (forward, model):
        torch._dynamo.reset()
        tpc.reset_counters()
        with torch.no_grad():
            torch.testing.assert_close(call(x.to("tpu")).cpu(), cpu(x))
        assert tpc.counters()["graphs_compiled"] == 1


def test_cpu_graphs_compile_with_inductor(monkeypatch):
    from torch._inductor import compile_fx as inductor

    seen = []
    compile_fx = inductor.compile_fx

    def spy(gm, example_inputs, *args, **kwargs):
        seen.append({t.device.type for t in example_inputs if isinstance(t, torch.Tensor)})
        return compile_fx(gm, example_inputs, *args, **kwargs)

    monkeypatch.setattr(inductor, "compile_fx", spy)
    x = _x(8)
    torch.testing.assert_close(torch.compile(lambda x: x.sin() + 1)(x), x.sin() + 1)
    assert seen and seen[0] == {"cpu"}
    assert tpc.counters()["graphs_compiled"] == 0


def test_default_choice_compares_like_inductor_but_never_equal_to_it():
    choice = _default_backend.DeviceChoice("default", None, None)
    assert choice == _default_backend.DeviceChoice("default", None, None)
    assert choice != _default_backend.DeviceChoice("default", None, True)
    inductor = torch._TorchCompileInductorWrapper("default", None, None)
    assert choice != inductor and inductor != choice
    assert isinstance(choice, torch._TorchCompileInductorWrapper)


def test_inductor_on_tpu_raises_naming_backend_tpu():
    x = _x(4, 4).to("tpu")
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as info:
        torch.compile(lambda x: x.sin() + 1, backend="inductor")(x)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert 'Inductor cannot compile for device "tpu"' in message
    assert 'backend="tpu"' in message and "torch_tpu" not in message
    # Inductor reached without torch.compile's wrapper stops at its code generators for "tpu".
    from torch._inductor.compile_fx import compile_fx

    with pytest.raises(RuntimeError, match='Inductor cannot compile for device "tpu"'):
        torch.compile(lambda x: x.cos() * 2, backend=compile_fx)(x)


@pytest.mark.skipif(torch.tpu.device_count() < 2, reason="needs two devices")
def test_dynamo_device_interface_is_torch_tpu():
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.runtime.hints import DeviceProperties

    interface = get_interface_for_device("tpu")
    assert interface.is_available() and interface.device_count() == torch.tpu.device_count()
    assert not interface.is_triton_capable()
    with interface.device(1):
        assert interface.current_device() == torch.tpu.current_device() == 1
    assert interface.exchange_device(1) == 0 and torch.tpu.current_device() == 1
    assert interface.exchange_device(0) == 1 and torch.tpu.current_device() == 0
    props = DeviceProperties.create(torch.device("tpu", 0))
    assert props.multi_processor_count == torch.tpu.get_device_properties(0).multi_processor_count
    assert interface.Worker.get_device_properties().name == torch.tpu.get_device_properties().name


PROMPTS = torch.tensor([[5, 9, 13, 2, 7, 30], [8, 8, 41, 3, 22, 17]])


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama with seeded weights (CPU) and its eager CPU greedy continuation."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    return model, _generate(model)


def _generate(model, **kwargs):
    out = model.generate(
        PROMPTS.to(model.device), max_new_tokens=5, do_sample=False, pad_token_id=1, **kwargs
    )
    return out[:, PROMPTS.shape[1] :].cpu().tolist()


def test_generate_with_compile_config_compiles_with_backend_tpu(llama, counters):
    from transformers import CompileConfig

    cpu, expected = llama
    assert CompileConfig().backend is None  # torch.compile's own default
    model = copy.deepcopy(cpu).to("tpu")
    config = CompileConfig()
    assert _generate(model, cache_implementation="static", compile_config=config) == expected
    assert hasattr(model, "_compiled_call")
    c = tpc.counters()
    assert c["graphs_compiled"] >= 1 and c["replays"] >= 1 and c["eager_graphs"] == 0
    assert counters()["cpu_fallbacks"] == {}


def test_generate_with_compiled_forward_fullgraph(llama, counters):
    cpu, expected = llama
    model = copy.deepcopy(cpu).to("tpu")
    model.forward = torch.compile(model.forward, fullgraph=True)
    kwargs = {"cache_implementation": "static", "disable_compile": True}
    assert _generate(model, **kwargs) == expected
    assert tpc.counters()["graphs_compiled"] == 2  # prefill and one decoding step
    with torch.compiler.set_stance("fail_on_recompile"):
        assert _generate(model, **kwargs) == expected
    assert counters()["cpu_fallbacks"] == {}
