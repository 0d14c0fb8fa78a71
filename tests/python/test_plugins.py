"""Plugin preparation (torch_pjrt.plugins): create options per plugin kind, the TPU per-chip
environment, NVIDIA library discovery, what the runtime negotiated with the running plugin, and a
plugin that is missing or of an API version torch_pjrt cannot use."""

import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import run_python

import torch_pjrt
from torch_pjrt import _C, plugins


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def names(options):
    return {name: (value, optional) for name, value, optional in options}


def test_cpu_gets_four_devices_unless_asked():
    assert names(plugins.create_options("cpu", {})) == {"cpu_device_count": (4, True)}
    env = {"TORCH_PJRT_CPU_DEVICE_COUNT": "2"}
    assert names(plugins.create_options("cpu", env)) == {"cpu_device_count": (2, False)}


def test_cuda_defaults_do_not_preallocate():
    assert names(plugins.create_options("cuda", {})) == {
        "platform_name": ("cuda", True),
        "preallocate": (False, True),
    }


def test_cuda_variables_become_required_options():
    env = {
        "TORCH_PJRT_CUDA_PREALLOCATE": "1",
        "TORCH_PJRT_CUDA_MEMORY_FRACTION": "0.5",
        "TORCH_PJRT_CUDA_ALLOCATOR": "platform",
        "TORCH_PJRT_CUDA_VISIBLE_DEVICES": "1, 3",
    }
    assert names(plugins.create_options("cuda", env)) == {
        "platform_name": ("cuda", True),
        "preallocate": (True, False),
        "memory_fraction": (0.5, False),
        "allocator": ("platform", False),
        "visible_devices": ([1, 3], False),
    }
    with pytest.raises(ValueError, match="MEMORY_FRACTION must be in"):
        plugins.create_options("cuda", {"TORCH_PJRT_CUDA_MEMORY_FRACTION": "1.5"})


def test_tpu_options():
    assert names(plugins.create_options("tpu", {"TORCH_PJRT_TPU_MAX_INFLIGHT": "8"}, "1.2")) == {
        "ml_framework_name": ("torch_pjrt", True),
        "ml_framework_version": ("1.2", True),
        "max_inflight_computations": (8, False),
    }


def test_user_options_json_overrides_defaults():
    env = {"TORCH_PJRT_CREATE_OPTIONS": '{"preallocate": true, "collective_memory_size": 64}'}
    assert names(plugins.create_options("cuda", env)) == {
        "platform_name": ("cuda", True),
        "preallocate": (True, False),
        "collective_memory_size": (64, False),
    }
    assert plugins.create_options("", {"TORCH_PJRT_CREATE_OPTIONS": '{"ids": [0, 2]}'}) == [
        ("ids", [0, 2], False)
    ]
    with pytest.raises(ValueError, match="not valid JSON"):
        plugins.user_options({"TORCH_PJRT_CREATE_OPTIONS": "{oops"})
    with pytest.raises(ValueError, match="JSON object"):
        plugins.user_options({"TORCH_PJRT_CREATE_OPTIONS": "[1]"})
    with pytest.raises(ValueError, match="'x' has a value of type dict"):
        plugins.user_options({"TORCH_PJRT_CREATE_OPTIONS": '{"x": {}}'})


def test_tpu_environment_one_host_four_chips():
    env = {"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4"}
    assert plugins.tpu_process_environment(env) == {
        "TPU_VISIBLE_CHIPS": "2",
        "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1",
        "TPU_PROCESS_BOUNDS": "2,2,1",
        "CLOUD_TPU_TASK_ID": "2",
        "TPU_PROCESS_PORT": "8478",
        "TPU_PROCESS_ADDRESSES": "localhost:8476,localhost:8477,localhost:8478,localhost:8479",
    }


def test_tpu_environment_second_of_two_hosts():
    env = {
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "8",
        "TPU_WORKER_ID": "1",
        "TPU_WORKER_HOSTNAMES": "10.0.0.2,10.0.0.3",
        "TORCH_PJRT_TPU_HOST_BOUNDS": "1,1,2",
        "TPU_PROCESS_PORT": "9000",  # set by the user: kept
    }
    out = plugins.tpu_process_environment(env)
    assert out["TPU_PROCESS_BOUNDS"] == "2,4,2"
    assert out["CLOUD_TPU_TASK_ID"] == "9"
    assert out["TPU_VISIBLE_CHIPS"] == "1"
    assert "TPU_PROCESS_PORT" not in out
    addresses = out["TPU_PROCESS_ADDRESSES"].split(",")
    assert len(addresses) == 16
    assert addresses[0] == "10.0.0.2:8476" and addresses[-1] == "10.0.0.3:8483"


def test_tpu_environment_contract_edges():
    assert plugins.tpu_process_environment({}) == {}  # one process for all chips
    assert plugins.tpu_process_environment({"LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0"}) == {}
    chosen = {"LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "0", "TPU_VISIBLE_CHIPS": "3"}
    assert plugins.tpu_process_environment(chosen) == {}
    torchrun_node = {"LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "3", "GROUP_RANK": "2"}
    assert plugins.tpu_process_environment(torchrun_node)["CLOUD_TPU_TASK_ID"] == "11"
    with pytest.raises(ValueError, match="TORCH_PJRT_TPU_HOST_CHIP_BOUNDS"):
        plugins.tpu_process_environment({"LOCAL_WORLD_SIZE": "3", "LOCAL_RANK": "0"})
    with pytest.raises(ValueError, match="TORCH_PJRT_TPU_HOST_BOUNDS"):
        plugins.tpu_process_environment(
            {"LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "0", "TPU_WORKER_HOSTNAMES": "a,b"}
        )
    with pytest.raises(ValueError, match="outside 0..3"):
        plugins.tpu_process_environment({"LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "4"})


def test_nvidia_libraries_found_in_wheel_folders(tmp_path):
    site_a, site_b = tmp_path / "a", tmp_path / "b"
    for site, folder, lib in [
        (site_a, "nccl", "libnccl.so.2"),
        (site_b, "cu13", "libcudart.so.13"),
        (site_b, "nccl", "libnccl.so.2"),  # shadowed by site_a's
        (site_b, "cudnn", "libcudnn.so.9"),
    ]:
        (site / "nvidia" / folder / "lib").mkdir(parents=True, exist_ok=True)
        (site / "nvidia" / folder / "lib" / lib).write_bytes(b"")
    paths = plugins.nvidia_library_paths([str(site_a), str(site_b)])
    assert paths == [
        str(site_b / "nvidia/cu13/lib/libcudart.so.13"),
        str(site_a / "nvidia/nccl/lib/libnccl.so.2"),
        str(site_b / "nvidia/cudnn/lib/libcudnn.so.9"),
    ]
    # Empty files are not libraries: loading fails quietly and leaves them to the plugin.
    assert plugins.preload_nvidia_libraries([str(site_a)]) == []


def test_cuda_data_dir_as_jax_finds_it(tmp_path):
    site = tmp_path / "site"
    (site / "nvidia/cuda_nvcc/bin").mkdir(parents=True)
    (site / "nvidia/cuda_nvcc/bin/ptxas").write_bytes(b"")
    assert plugins.cuda_data_dir([str(site)], {}) == str(site / "nvidia/cuda_nvcc")
    (site / "nvidia/cu13/nvvm/libdevice").mkdir(parents=True)
    assert plugins.cuda_data_dir([str(site)], {}) == str(site / "nvidia/cu13")
    assert plugins.cuda_data_dir([str(site)], {"CUDA_ROOT": "/opt/cuda"}) == "/opt/cuda"
    assert plugins.cuda_data_dir([str(tmp_path / "none")], {}) is None
    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    assert plugins.cuda_environment([str(site)], env) == {
        "XLA_FLAGS": f"--xla_dump_to=/tmp/x --xla_gpu_cuda_data_dir={site / 'nvidia/cu13'}"
    }
    chosen = {"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/mine"}
    assert plugins.cuda_environment([str(site)], chosen) == {}


def test_running_plugin_negotiation():
    torch.ones(1, device="tpu")
    negotiated = _C._negotiation()
    major, minor = _C._api_version()
    assert negotiated["header_api"][0] == major
    for name, (sent, header) in negotiated["struct_sizes"].items():
        assert sent >= header, name
        if minor <= negotiated["header_api"][1]:
            assert sent == header, name
    assert plugins.state["kind"] in plugins.KINDS
    expected = {"cpu": "cpu_device_count=", "cuda": "preallocate=", "tpu": "ml_framework_name="}
    assert any(o.startswith(expected[plugins.state["kind"]]) for o in negotiated["options_sent"])
    assert all(isinstance(name, str) for name, _, _ in negotiated["extensions"])


def test_info_reports_negotiation():
    r = subprocess.run(
        [sys.executable, "-m", "torch_pjrt.info"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(None, 1) for line in r.stdout.splitlines())
    assert lines["kind"] == plugins.state["kind"]
    assert lines["torch_pjrt"] == torch_pjrt.__version__
    assert "built with 0.81" in lines["pjrt_api"]
    assert lines["plugin"] == _C._plugin_path()
    assert lines["torch"] == torch.__version__
    for key in ("platform", "xla_version", "devices", "extensions", "dropped"):
        assert key in lines
    assert "ExecuteOptions" in lines["struct_sizes"]
    assert lines["stablehlo"][0].isdigit()


def test_missing_plugin_keeps_import_working():
    code = (
        "import torch, torch_pjrt\n"
        "print('available', torch.tpu.is_available())\n"
        "print('error', bool(torch_pjrt.plugins.state['error']))\n"
    )
    r = run_python(code, TORCH_PJRT_PLUGIN="/nonexistent/plugin.so")
    assert r.returncode == 0, r.stderr
    assert "available False" in r.stdout and "error True" in r.stdout


FAKE_PLUGIN = os.path.join(ROOT, "build", "libfake_pjrt_plugin.so")


@pytest.mark.parametrize(
    "version, message",
    [
        (
            (1, 0),
            "implements PJRT C API 1.0, torch_pjrt was built with 0.81: major versions differ",
        ),
        ((0, 30), "implements PJRT C API 0.30, .* older than 0.57 lay out their function table"),
    ],
)
def test_plugin_of_an_unsupported_api_version_raises_clearly(version, message):
    # The C++ suites' fake plugin (built with them), set to report `version` before torch_pjrt
    # loads it: the same library instance, since dlopen returns the loaded one.
    if not os.path.exists(FAKE_PLUGIN):
        pytest.skip("the C++ test build (build/libfake_pjrt_plugin.so) is not there")
    code = (
        "import ctypes\n"
        f"ctypes.CDLL({FAKE_PLUGIN!r}).FakePjrt_Configure({version[0]}, {version[1]}, b'',"
        " ctypes.c_size_t(0), ctypes.c_size_t(0))\n"
        "import torch, torch_pjrt\n"
        "print('available', torch.tpu.is_available())\n"
        "try:\n"
        "    torch.ones(1, device='tpu')\n"
        "except RuntimeError as e:\n"
        "    print('raised', e)\n"
        "print('cpu', torch.ones(2).sum().item())\n"
    )
    r = run_python(code, TORCH_PJRT_PLUGIN=FAKE_PLUGIN)
    assert r.returncode == 0, r.stderr
    assert "available False" in r.stdout and "cpu 2.0" in r.stdout
    assert re.search(f"raised torch_pjrt: cannot start the PJRT runtime: .*{message}", r.stdout)
