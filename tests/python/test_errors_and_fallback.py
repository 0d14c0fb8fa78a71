"""Bad input raises PyTorch-style exceptions; the CPU fallback is counted, warned and can be an error."""

import pytest
import torch

import torch_pjrt


def test_shape_mismatch_is_pytorchs_runtime_error():
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        torch.ones(3, device="tpu") + torch.ones(4, device="tpu")


def test_mixed_devices_are_rejected():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="tpu") + torch.ones(3)


def test_program_rejected_by_plugin_raises_with_its_message():
    with pytest.raises(RuntimeError, match="PJRT_Client_Compile.*error"):
        torch_pjrt.run_stablehlo("module { this is not stablehlo }")
    # The process stays usable.
    assert (torch.ones(2, device="tpu") * 3).sum().item() == 6.0


def test_run_stablehlo_custom_program():
    program = """
    module {
      func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
        %0 = stablehlo.multiply %a, %b : tensor<3xf32>
        %1 = stablehlo.add %0, %a : tensor<3xf32>
        return %1 : tensor<3xf32>
      }
    }"""
    a, b = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0, 6.0])
    (out,) = torch_pjrt.run_stablehlo(program, a.to("tpu"), b.to("tpu"))
    assert torch.equal(out.cpu(), a * b + a)
    with pytest.raises(RuntimeError, match="tpu tensor"):
        torch_pjrt.run_stablehlo(program, a, b)


def antialiased(x):  # an op without a tpu lowering (aten::_upsample_bilinear2d_aa)
    return torch.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)


def test_fallback_counted_and_warned_once(counters):
    x = torch.rand(1, 1, 4, 4).to("tpu")
    with pytest.warns(UserWarning, match="aten::_upsample_bilinear2d_aa.*no tpu lowering"):
        y = antialiased(x)
    torch.testing.assert_close(y.cpu(), antialiased(x.cpu()))
    assert y.device.type == "tpu"
    antialiased(x)
    assert counters()["cpu_fallbacks"]["aten::_upsample_bilinear2d_aa.out"] == 2


def test_fallback_error_mode(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    x = torch.rand(1, 1, 4, 4).to("tpu")
    with pytest.raises(
        NotImplementedError, match="aten::_upsample_bilinear2d_aa.*TORCH_PJRT_FALLBACK=error"
    ):
        antialiased(x)


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="dtype Float8_e8m0fnu is not supported"):
        torch.empty(2, dtype=torch.float8_e8m0fnu, device="tpu")
