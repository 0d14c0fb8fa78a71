"""TorchTPU 0.2.0's `torch.tpu` names: EagerMode, the eager_mode property, set_eager_mode as a call
and a context manager, default_generators, device_of, and the legacy device calls kept working."""

import pytest
import torch

import torch_pjrt

EagerMode = torch.tpu.EagerMode


@pytest.fixture(autouse=True)
def restore_mode():
    previous = torch_pjrt._C._get_default_eager_mode()
    yield
    torch_pjrt.set_eager_mode(previous)


def test_eager_mode_names_map_to_the_modes():
    assert [m.name for m in EagerMode] == [
        "DEFER_AND_FUSE",
        "DEFER_NEVER",
        "DEFER_NEVER_AND_LAUNCH_BLOCKING",
    ]
    for mode, name in [
        (EagerMode.DEFER_AND_FUSE, "fused"),
        (EagerMode.DEFER_NEVER, "strict"),
        (EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING, "debug"),
    ]:
        torch.tpu.eager_mode = mode
        assert torch.tpu.eager_mode is mode
        assert torch_pjrt.get_eager_mode() == name


def test_set_eager_mode_as_call_and_context_manager():
    torch.tpu.set_eager_mode(EagerMode.DEFER_NEVER)
    with torch.tpu.set_eager_mode(EagerMode.DEFER_AND_FUSE):
        assert torch.tpu.eager_mode is EagerMode.DEFER_AND_FUSE
        x = torch.ones(3).to("tpu") + 1
    assert torch.tpu.eager_mode is EagerMode.DEFER_NEVER
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ZeroDivisionError):
        with torch.tpu.set_eager_mode(EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING):
            1 / 0
    assert torch.tpu.eager_mode is EagerMode.DEFER_NEVER  # restored on the exception
    with pytest.raises(ValueError, match="eager mode must be"):
        torch.tpu.set_eager_mode("lazy")


def test_thread_scoped_block_shows_in_the_property():
    torch.tpu.set_eager_mode(EagerMode.DEFER_NEVER)
    with torch_pjrt.eager_mode("debug"):
        assert torch.tpu.eager_mode is EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING
    assert torch.tpu.eager_mode is EagerMode.DEFER_NEVER


def test_default_generators_are_stable_and_drive_random_ops():
    gens = torch.tpu.default_generators
    assert gens is torch.tpu.default_generators
    assert len(gens) == torch.tpu.device_count()
    gens[0].manual_seed(123)
    a = torch.rand(4, device="tpu")
    torch.tpu.manual_seed(123)
    b = torch.rand(4, device="tpu")
    assert a.cpu().tolist() == b.cpu().tolist()
    assert gens[0].initial_seed() == 123


def test_device_of():
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two devices")
    t = torch.ones(1, device="tpu:1")
    with torch.tpu.device_of(t):
        assert torch.tpu.current_device() == 1
    assert torch.tpu.current_device() == 0
    with torch.tpu.device_of(torch.ones(1)):  # a CPU tensor changes nothing
        assert torch.tpu.current_device() == 0


def test_legacy_device_calls_keep_working():
    assert torch.tpu.is_available() is True
    assert torch.tpu.device_count() >= 1
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    torch.tpu.synchronize()
    assert torch.tpu.is_initialized()
    assert torch.tpu.is_bf16_supported()


def test_get_device_properties():
    props = torch.tpu.get_device_properties()
    assert props.name == torch_pjrt._C._device_kind(0)
    assert props.total_memory == torch.tpu.mem_get_info()[1] > 0
    assert props.multi_processor_count >= 1
    assert props.platform == torch_pjrt._C._platform_name()
    assert torch.tpu.get_device_properties("tpu:1").index == 1
    with pytest.raises(IndexError, match="invalid device index 99"):
        torch.tpu.get_device_properties(99)
