"""Matmul/convolution precision (torch.tpu.Precision, torch.tpu.precision and
torch.set_float32_matmul_precision) and XLA compile options (torch.tpu.compiler,
torch.tpu.allow_excess_precision), checked in the StableHLO the device compiles and in results."""

import threading

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same

import torch_pjrt
from torch_pjrt import _C

HIGHEST = "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]"
HIGH = "precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGH>]"


def _program(fn, *tensors):
    """The StableHLO of fn(*tensors) recorded in Fused mode (nothing runs)."""
    with torch_pjrt.eager_mode("fused"):
        out = fn(*[t.to("tpu") for t in tensors])
        return _C._stablehlo_of([out])


@pytest.fixture
def matmul_precision():
    previous = torch.get_float32_matmul_precision()
    yield torch.set_float32_matmul_precision
    torch.set_float32_matmul_precision(previous)


def test_default_is_highest_and_matches_cpu():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.tpu.precision  # the context manager exists
    assert HIGHEST in _program(torch.matmul, a, b)
    assert_same(a.to("tpu") @ b.to("tpu"), a @ b)


@pytest.mark.parametrize(
    "setting,expected", [("highest", HIGHEST), ("high", HIGH), ("medium", "precision_config")]
)
def test_float32_matmul_precision_maps_to_precision(setting, expected, matmul_precision):
    matmul_precision(setting)
    text = _program(torch.mm, torch.randn(4, 4), torch.randn(4, 4))
    if setting == "medium":  # DEFAULT: StableHLO's default, no attribute
        assert "dot_general" in text and expected not in text
    else:
        assert expected in text


def test_precision_context_overrides_and_restores(matmul_precision):
    matmul_precision("medium")
    x, w = torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3)
    with torch.tpu.precision(torch.tpu.Precision.HIGH):
        assert HIGH in _program(F.conv2d, x, w)
        with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
            assert HIGHEST in _program(F.conv2d, x, w)
        assert HIGH in _program(F.conv2d, x, w)
    assert "precision_config" not in _program(F.conv2d, x, w)
    with pytest.raises(ValueError, match="torch.tpu.Precision"):
        with torch.tpu.precision("high"):
            pass


def test_precision_follows_backward_into_autograd_threads(matmul_precision):
    matmul_precision("medium")
    w = torch.randn(4, 4).to("tpu").requires_grad_()
    x = torch.randn(3, 4).to("tpu")
    seen = []
    w.register_hook(lambda g: seen.append(_C._matmul_precision()))
    with torch.tpu.precision(torch.tpu.Precision.HIGH):
        (x @ w).sum().backward()
    assert seen == [int(torch.tpu.Precision.HIGH)]


def test_precision_is_per_thread():
    values = []
    with torch.tpu.precision(torch.tpu.Precision.DEFAULT):
        t = threading.Thread(target=lambda: values.append(_C._matmul_precision()))
        t.start()
        t.join()
    assert values == [int(torch.tpu.Precision.HIGHEST)]


def test_low_precision_products_keep_operands_and_accumulate_in_float32():
    a, b = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 4, dtype=torch.bfloat16)
    text = _program(torch.mm, a, b)
    line = next(l for l in text.splitlines() if "dot_general" in l)
    assert "(tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xf32>" in line
    assert "precision_config" not in line
    # Products of bfloat16 values are exact in float32, so this equals CPU's float32-accumulated
    # product rounded once.
    assert_same(a.to("tpu") @ b.to("tpu"), (a.float() @ b.float()).bfloat16())


def test_custom_compiler_options_compile_and_nest():
    a = torch.randn(6, 6)
    before = torch_pjrt.metrics.counters()["compiles"]
    with torch.tpu.compiler.custom_compiler_options({"xla_cpu_enable_fast_math": False}):
        with torch.tpu.compiler.custom_compiler_options({"xla_optimization_level": "O1"}):
            assert torch_pjrt.compiler.current_options() == {
                "xla_cpu_enable_fast_math": False,
                "xla_optimization_level": "O1",
                "xla_allow_excess_precision": False,
            }
            assert_same(a.to("tpu").sin() * 3, a.sin() * 3)
    # New options compiled a program of their own rather than reusing the default's.
    assert torch_pjrt.metrics.counters()["compiles"] > before
    assert torch_pjrt.compiler.current_options() == {"xla_allow_excess_precision": False}


def test_custom_compiler_options_bad_input():
    with pytest.raises(TypeError, match="expects a dict"):
        with torch.tpu.compiler.custom_compiler_options([("a", 1)]):
            pass
    with pytest.raises(ValueError, match="O0, O1, O2, O3"):
        with torch.tpu.compiler.custom_compiler_options({"xla_optimization_level": "fast"}):
            pass
    with pytest.raises(TypeError, match="must be a bool, int, float or str"):
        with torch.tpu.compiler.custom_compiler_options({"xla_foo": [1]}):
            pass
    # A name the plugin does not know fails at compile time, naming it; the process stays usable.
    with pytest.raises(RuntimeError, match="xla_no_such_option"):
        with torch.tpu.compiler.custom_compiler_options({"xla_no_such_option": True}):
            (torch.ones(3).to("tpu") * 7).cpu()
    assert (torch.ones(3).to("tpu") * 7).cpu().tolist() == [7.0, 7.0, 7.0]


def test_allow_excess_precision_property(monkeypatch):
    assert torch.tpu.allow_excess_precision is False
    x = torch.randn(64, dtype=torch.bfloat16)
    y = torch.randn(64, dtype=torch.bfloat16)

    def chain(a, b):
        return ((a * b) + a) * b

    # Off (default): a fused bfloat16 chain rounds after each op, exactly as eager CPU PyTorch.
    with torch_pjrt.eager_mode("fused"):
        fused = chain(x.to("tpu"), y.to("tpu")).cpu()
    torch.testing.assert_close(fused, chain(x, y), atol=0, rtol=0)
    try:
        torch.tpu.allow_excess_precision = True
        assert torch.tpu.allow_excess_precision is True
        with torch_pjrt.eager_mode("fused"):
            chain(x.to("tpu"), y.to("tpu")).cpu()  # compiles and runs with the flag on
    finally:
        torch.tpu.allow_excess_precision = False
    with pytest.raises(TypeError, match="must be a bool"):
        torch.tpu.allow_excess_precision = 1


@pytest.mark.skipif(
    _C._platform_name().lower() not in ("cuda", "gpu", "tpu"),
    reason="XLA:CPU computes float32 products exactly at every precision",
)
def test_default_precision_trades_accuracy_on_accelerators(matmul_precision):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g)
    exact = a.double() @ b.double()

    def error(setting):
        matmul_precision(setting)
        got = (a.to("tpu") @ b.to("tpu")).cpu().double()
        return ((got - exact).abs().max() / exact.abs().max()).item()

    highest, default = error("highest"), error("medium")
    assert highest < 1e-5  # float32 accumulation of float32 products
    assert default > 10 * highest  # TF32 (GPU) or one bfloat16 pass (TPU)
