"""Device "tpu": plain tensors, the torch.tpu module, generators, autoload and plugin selection."""

import pytest
import torch
from conftest import run_python

import torch_pjrt


def test_tensor_is_plain_and_on_tpu0():
    x = torch.arange(12.0).reshape(3, 4).to("tpu")
    assert type(x) is torch.Tensor
    assert x.device == torch.device("tpu", 0)
    assert x.is_tpu
    assert x.shape == (3, 4) and x.dtype == torch.float32


def test_print_shows_values_and_device(counters):
    x = torch.arange(6.0).reshape(2, 3).to("tpu")
    text = repr(x)
    assert "device='tpu:0'" in text
    assert "[3., 4., 5.]" in text
    assert repr(torch.tensor([1.5, float("nan")]).to("tpu")) == repr(
        torch.tensor([1.5, float("nan")])
    ).replace(")", ", device='tpu:0')")
    assert counters()["cpu_fallbacks"] == {}  # formatting runs on the device


def test_device_module_basics():
    assert torch.tpu.is_available()
    n = torch.tpu.device_count()
    assert n >= 1
    assert torch.tpu.current_device() == 0
    name = torch.tpu.get_device_name()
    assert torch_pjrt._C._platform_name() in name and "PJRT" in name
    torch.tpu.synchronize()


def test_device_context_and_set_device():
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two devices")
    with torch.tpu.device(1):
        assert torch.tpu.current_device() == 1
        x = torch.ones(3, device="tpu")
        assert x.device == torch.device("tpu", 1)
        assert torch.equal((x + x).cpu(), torch.full((3,), 2.0))
    assert torch.tpu.current_device() == 0
    y = torch.arange(3.0).to("tpu:1").to("tpu:0")
    assert y.device.index == 0 and torch.equal(y.cpu(), torch.arange(3.0))


def test_invalid_device_index_raises():
    with pytest.raises(IndexError, match="invalid device index"):
        torch.tpu.set_device(99)
    with pytest.raises((RuntimeError, IndexError)):
        torch.ones(2, device="tpu:99")


def test_rng_state_round_trip_and_manual_seed():
    torch.manual_seed(1234)
    assert torch.tpu.initial_seed() == 1234
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    torch.tpu.manual_seed(7)
    assert torch.tpu.initial_seed() == 7
    torch.tpu.set_rng_state(state)
    assert torch.tpu.initial_seed() == 1234
    assert torch.equal(torch.tpu.get_rng_state(), state)
    with pytest.raises(RuntimeError, match="^RNG state is wrong size$"):
        torch.tpu.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_autoload_through_entry_point():
    r = run_python("import torch; x = torch.ones(2, device='tpu'); print((x + x).cpu().tolist())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 2.0]"


def test_unknown_plugin_is_a_clear_error():
    r = run_python(
        "import torch\n"
        "try:\n"
        "    torch.ones(1, device='tpu')\n"
        "except RuntimeError as e:\n"
        "    print('ERR', e)\n"
        "print('available', torch.tpu.is_available())\n",
        TORCH_PJRT_PLUGIN="nosuchplugin",
    )
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "nosuchplugin" in r.stdout
    assert "xla_cpu_pjrt.so" in r.stdout  # lists what was searched
    assert "available False" in r.stdout


def test_missing_plugin_path_is_a_clear_error():
    r = run_python(
        "import torch\n"
        "try:\n"
        "    torch.tpu.init()\n"
        "except RuntimeError as e:\n"
        "    print('ERR', e)\n",
        TORCH_PJRT_PLUGIN="/nonexistent/libfoo.so",
    )
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "/nonexistent/libfoo.so" in r.stdout
