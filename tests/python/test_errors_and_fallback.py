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


def eigvals(x):  # an op without a tpu lowering (aten::_linalg_eigvals)
    return torch.linalg.eigvals(x)


def test_fallback_counted_and_warned_once(counters):
    x = torch.tensor([[2.0, 1.0], [0.0, 3.0]]).to("tpu")
    with pytest.warns(UserWarning, match="aten::_linalg_eigvals.*no tpu lowering"):
        y = eigvals(x)
    torch.testing.assert_close(y.cpu(), eigvals(x.cpu()))
    assert y.device.type == "tpu"
    eigvals(x)
    assert counters()["cpu_fallbacks"]["aten::_linalg_eigvals"] == 2


def test_fallback_error_mode(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    x = torch.rand(3, 3).to("tpu")
    with pytest.raises(
        NotImplementedError, match="aten::_linalg_eigvals.*TORCH_PJRT_FALLBACK=error"
    ):
        eigvals(x)


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="dtype Bits16 is not supported"):
        torch.empty(2, dtype=torch.bits16, device="tpu")


def _same_error_or_value(fn):
    results = []
    for device in ("cpu", "tpu"):
        try:
            results.append(fn(device).cpu())
        except RuntimeError as e:
            results.append(str(e))
    cpu, tpu = results
    if isinstance(cpu, str):
        assert tpu == cpu
    else:
        assert isinstance(tpu, torch.Tensor), tpu
        assert torch.equal(tpu, cpu)


@pytest.mark.parametrize(
    "fn",
    [
        # addr's scalars against the result type (issue 37)
        lambda d: torch.addr(
            torch.ones(3, 3, dtype=torch.long, device=d),
            torch.tensor([1, 2, 3], device=d),
            torch.tensor([1, 0, 1], device=d),
            beta=True,
        ),
        lambda d: torch.addr(
            torch.ones(3, 3, device=d), torch.ones(3, device=d), torch.ones(3, device=d), alpha=True
        ),
        lambda d: torch.addr(
            torch.ones(2, 2, dtype=torch.bool, device=d),
            torch.ones(2, dtype=torch.bool, device=d),
            torch.ones(2, dtype=torch.bool, device=d),
            beta=1.5,
        ),
        lambda d: torch.addr(
            torch.ones(2, 2, dtype=torch.long, device=d),
            torch.ones(2, dtype=torch.long, device=d),
            torch.ones(2, dtype=torch.long, device=d),
            alpha=0.5,
        ),
        lambda d: torch.addr(
            torch.ones(2, 2, dtype=torch.bool, device=d),
            torch.ones(2, dtype=torch.bool, device=d),
            torch.ones(2, dtype=torch.bool, device=d),
            beta=False,
            alpha=True,
        ),
        lambda d: torch.addr(
            torch.ones(2, 3, device=d), torch.ones(2, device=d), torch.arange(3.0, device=d), beta=2
        ),
        # index_copy_ whose source overlaps the written tensor
        lambda d: (lambda t: t.index_copy_(0, torch.tensor([0, 1], device=d), t[1:3]))(
            torch.arange(10.0, device=d)
        ),
        # roll's CPU messages
        lambda d: torch.roll(torch.arange(6, device=d).view(2, 3), (1, 2), (0,)),
        lambda d: torch.roll(torch.arange(6, device=d).view(2, 3), ()),
    ],
)
def test_cpu_argument_checks(fn):
    _same_error_or_value(fn)
