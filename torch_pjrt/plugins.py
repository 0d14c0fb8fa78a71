"""Choosing and preparing the PJRT plugin before its client is created: the plugin file and its
kind (tpu, cuda, cpu), the create options each kind gets, the per-chip environment of one process
per TPU chip, and for the CUDA plugin the NVIDIA libraries it loads and the folder of ptxas and
libdevice it compiles with (XLA_FLAGS=--xla_gpu_cuda_data_dir, as JAX does).

Create options are (name, value, optional) triples. Optional ones are torch_pjrt's defaults: the
runtime drops them when a plugin rejects their name. The others come from the user's variables
and make client creation fail with the plugin's message when rejected.

Variables (read once, when torch_pjrt is imported):

| variable | plugin | create option / effect |
| --- | --- | --- |
| TORCH_PJRT_PLUGIN | any | tpu, cuda, cpu or a path; default: TPU, then CUDA, then CPU |
| TORCH_PJRT_CREATE_OPTIONS | any | JSON object of extra create options, e.g. '{"allocator": "bfc"}' |
| TORCH_PJRT_CPU_DEVICE_COUNT | cpu | cpu_device_count (default 4) |
| TORCH_PJRT_CUDA_PREALLOCATE | cuda | preallocate (default false: memory is taken as needed) |
| TORCH_PJRT_CUDA_MEMORY_FRACTION | cuda | memory_fraction: the share of GPU memory XLA may use |
| TORCH_PJRT_CUDA_ALLOCATOR | cuda | allocator: default, bfc, cuda_async, platform, ... |
| TORCH_PJRT_CUDA_VISIBLE_DEVICES | cuda | visible_devices, e.g. "0,1" |
| TORCH_PJRT_TPU_MAX_INFLIGHT | tpu | max_inflight_computations |

One process per device (torchrun: LOCAL_RANK and WORLD_SIZE set): the CPU plugin gets
cpu_device_count=1; the CUDA plugin visible_devices=[LOCAL_RANK] and, with more than one process,
num_nodes=WORLD_SIZE and node_id=RANK, plus the key-value callbacks on the job's TCPStore
(MASTER_ADDR:MASTER_PORT); libtpu its per-chip variables (tpu_process_environment). Each process
addresses its one device as "tpu:<LOCAL_RANK>", as CUDA code does (README, "Process model").
"""

import ctypes
import json
import os

from . import _C

KINDS = ("tpu", "cuda", "cpu")

# What configure() did, for torch_pjrt.info.
state = {"kind": "", "path": "", "preloaded": [], "environment": {}, "error": "", "launch": None}


def _flag(value):
    return value.strip().lower() in ("1", "true", "yes", "on")


def _int_list(value):
    return [int(v) for v in value.replace(" ", "").split(",") if v]


def user_options(env):
    """Required options from TORCH_PJRT_CREATE_OPTIONS (a JSON object of names to bool, int,
    float, str or lists of ints)."""
    text = env.get("TORCH_PJRT_CREATE_OPTIONS", "").strip()
    if not text:
        return []
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TORCH_PJRT_CREATE_OPTIONS is not valid JSON: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(
            "TORCH_PJRT_CREATE_OPTIONS must be a JSON object of option names to values"
        )
    out = []
    for name, value in values.items():
        ok = isinstance(value, (bool, int, float, str)) or (
            isinstance(value, list) and all(type(v) is int for v in value)
        )
        if not ok:
            raise ValueError(
                f"TORCH_PJRT_CREATE_OPTIONS: option {name!r} has a value of type "
                f"{type(value).__name__}; expected bool, int, float, str or a list of ints"
            )
        out.append((name, value, False))
    return out


def distributed_launch(env):
    """{"rank", "world_size", "local_rank"} when this process is one process of a job that
    drives one device each (torchrun sets LOCAL_RANK and WORLD_SIZE), else None."""
    if "LOCAL_RANK" not in env or "WORLD_SIZE" not in env:
        return None
    launch = {
        "rank": int(env.get("RANK", env["LOCAL_RANK"])),
        "world_size": int(env["WORLD_SIZE"]),
        "local_rank": int(env["LOCAL_RANK"]),
    }
    if not 0 <= launch["rank"] < launch["world_size"] or launch["local_rank"] < 0:
        raise ValueError(
            f"inconsistent launch variables: RANK={launch['rank']}, "
            f"WORLD_SIZE={launch['world_size']}, LOCAL_RANK={launch['local_rank']}"
        )
    return launch


def create_options(kind, env, version=""):
    """The create options for a plugin of `kind` under the variables `env`."""
    options = []
    launch = distributed_launch(env)
    if kind == "cpu":
        # 4 devices whichever CPU plugin runs (xla-cpu-pjrt's default, and what multi-device tests
        # and examples expect); one in each process of a distributed job.
        count = env.get("TORCH_PJRT_CPU_DEVICE_COUNT")
        default = 1 if launch else 4
        options.append(("cpu_device_count", int(count) if count else default, count is None))
    elif kind == "cuda":
        options.append(("platform_name", "cuda", True))
        preallocate = env.get("TORCH_PJRT_CUDA_PREALLOCATE")
        # XLA's default takes 75% of GPU memory up front, which starves the rest of a PyTorch
        # process (torch.cuda, other libraries): take memory as needed unless asked otherwise.
        options.append(
            ("preallocate", _flag(preallocate) if preallocate else False, preallocate is None)
        )
        if fraction := env.get("TORCH_PJRT_CUDA_MEMORY_FRACTION"):
            value = float(fraction)
            if not 0.0 < value <= 1.0:
                raise ValueError(
                    f"TORCH_PJRT_CUDA_MEMORY_FRACTION must be in (0, 1], got {fraction!r}"
                )
            options.append(("memory_fraction", value, False))
        if allocator := env.get("TORCH_PJRT_CUDA_ALLOCATOR"):
            options.append(("allocator", allocator, False))
        if visible := env.get("TORCH_PJRT_CUDA_VISIBLE_DEVICES"):
            options.append(("visible_devices", _int_list(visible), False))
        elif launch:
            options.append(("visible_devices", [launch["local_rank"]], False))
        if launch and launch["world_size"] > 1:
            # One node per process: the plugin exchanges its topology and NCCL ids through the
            # key-value callbacks (configure() gives it the job's store).
            options.append(("num_nodes", launch["world_size"], False))
            options.append(("node_id", launch["rank"], False))
    elif kind == "tpu":
        options.append(("ml_framework_name", "torch_pjrt", True))
        if version:
            options.append(("ml_framework_version", version, True))
        if inflight := env.get("TORCH_PJRT_TPU_MAX_INFLIGHT"):
            options.append(("max_inflight_computations", int(inflight), False))
    user = user_options(env)
    # A user's option replaces torch_pjrt's option of the same name.
    overridden = {name for name, _, _ in user}
    return [o for o in options if o[0] not in overridden] + user


# Chips per host by the number of processes on the host (one per chip): the host's chip grid.
_HOST_CHIP_BOUNDS = {1: "1,1,1", 2: "1,2,1", 4: "2,2,1", 8: "2,4,1"}
TPU_BASE_PORT = 8476


def tpu_process_environment(env):
    """The libtpu variables for one process per TPU chip (torchrun --nproc-per-node=<chips>),
    computed from LOCAL_RANK and LOCAL_WORLD_SIZE as PyTorch/XLA does. Returns {} when this is not
    such a process (no LOCAL_WORLD_SIZE above 1) or when TPU_VISIBLE_CHIPS is already set (the
    user or launcher chose); variables already in `env` are never replaced.

    Inputs: LOCAL_RANK, LOCAL_WORLD_SIZE; the host's index from TPU_WORKER_ID (TPU VMs) or
    GROUP_RANK (torchrun), default 0; host names from TPU_WORKER_HOSTNAMES (comma-separated),
    default localhost; the host's chip grid from TORCH_PJRT_TPU_HOST_CHIP_BOUNDS, default by chip
    count (4 -> 2,2,1; 8 -> 2,4,1); the grid of hosts from TORCH_PJRT_TPU_HOST_BOUNDS, required
    with more than one host."""
    local_world = int(env.get("LOCAL_WORLD_SIZE", "1") or 1)
    if local_world <= 1 or "TPU_VISIBLE_CHIPS" in env:
        return {}
    local_rank = int(env.get("LOCAL_RANK", "0"))
    if not 0 <= local_rank < local_world:
        raise ValueError(f"LOCAL_RANK {local_rank} is outside 0..{local_world - 1}")
    worker = int(env.get("TPU_WORKER_ID") or env.get("GROUP_RANK") or 0)
    hosts = [h for h in env.get("TPU_WORKER_HOSTNAMES", "localhost").split(",") if h]
    chip_bounds = env.get("TORCH_PJRT_TPU_HOST_CHIP_BOUNDS") or _HOST_CHIP_BOUNDS.get(local_world)
    if chip_bounds is None:
        raise ValueError(
            f"cannot infer the chip grid of a host with {local_world} chips; set "
            "TORCH_PJRT_TPU_HOST_CHIP_BOUNDS (e.g. 2,2,1)"
        )
    host_bounds = env.get("TORCH_PJRT_TPU_HOST_BOUNDS")
    if host_bounds is None:
        if len(hosts) > 1:
            raise ValueError(
                f"{len(hosts)} TPU hosts: set TORCH_PJRT_TPU_HOST_BOUNDS to their grid (e.g. 1,1,2)"
            )
        host_bounds = "1,1,1"
    chips, grid = _int_list(chip_bounds), _int_list(host_bounds)
    if len(chips) != 3 or len(grid) != 3:
        raise ValueError(f"TPU bounds must have 3 dimensions: {chip_bounds!r}, {host_bounds!r}")
    ports = range(TPU_BASE_PORT, TPU_BASE_PORT + local_world)
    computed = {
        "TPU_VISIBLE_CHIPS": str(local_rank),
        "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1",
        "TPU_PROCESS_BOUNDS": ",".join(str(c * g) for c, g in zip(chips, grid)),
        "CLOUD_TPU_TASK_ID": str(worker * local_world + local_rank),
        "TPU_PROCESS_PORT": str(TPU_BASE_PORT + local_rank),
        "TPU_PROCESS_ADDRESSES": ",".join(f"{h}:{p}" for h in hosts for p in ports),
    }
    return {k: v for k, v in computed.items() if k not in env}


# NVIDIA libraries the CUDA plugin opens, by wheel folder under site-packages/nvidia (CUDA 13
# wheels put the toolkit in nvidia/cu13, CUDA 12 ones use one folder per library). Loading them
# first from the installed wheels makes later lookups by name (the plugin's, NCCL's, cuDNN's)
# find these copies.
_NVIDIA_LIBRARIES = (
    ("cu13", ("libcudart.so.13", "libnvrtc.so.13", "libcublasLt.so.13", "libcublas.so.13")),
    ("cu13", ("libcupti.so.13", "libcusparse.so.12", "libcusolver.so.12", "libcufft.so.12")),
    ("cuda_runtime", ("libcudart.so.12",)),
    ("cuda_nvrtc", ("libnvrtc.so.12",)),
    ("cublas", ("libcublasLt.so.12", "libcublas.so.12")),
    ("cuda_cupti", ("libcupti.so.12",)),
    ("cusparse", ("libcusparse.so.12",)),
    ("cusolver", ("libcusolver.so.11",)),
    ("cufft", ("libcufft.so.11",)),
    ("nccl", ("libnccl.so.2",)),
    ("nvshmem", ("libnvshmem_host.so.3",)),
    ("cudnn", ("libcudnn.so.9",)),
)


def nvidia_library_paths(search_dirs):
    """The NVIDIA library files present in the wheels below `search_dirs`, one per library name,
    in load order."""
    found = {}
    for folder, names in _NVIDIA_LIBRARIES:
        for name in names:
            for d in search_dirs:
                path = os.path.join(d, "nvidia", folder, "lib", name)
                if name not in found and os.path.isfile(path):
                    found[name] = path
    return list(found.values())


def cuda_data_dir(search_dirs, env):
    """The folder holding bin/ptxas and nvvm/libdevice that XLA compiles GPU code with, as JAX
    finds it: CUDA_ROOT, else the CUDA 13 wheels' nvidia/cu13, else nvidia/cuda_nvcc (CUDA 12);
    None when there is none (XLA then looks in its own default places)."""
    if env.get("CUDA_ROOT"):
        return env["CUDA_ROOT"]
    for folder in ("cu13", "cuda_nvcc"):
        for d in search_dirs:
            root = os.path.join(d, "nvidia", folder)
            if os.path.isfile(os.path.join(root, "bin", "ptxas")) or os.path.isdir(
                os.path.join(root, "nvvm", "libdevice")
            ):
                return root
    return None


def cuda_environment(search_dirs, env):
    """XLA_FLAGS naming the CUDA data folder (JAX passes the same folder to every compile), unless
    XLA_FLAGS already names one; {} when there is nothing to add."""
    flags = env.get("XLA_FLAGS", "")
    root = cuda_data_dir(search_dirs, env)
    if root is None or "--xla_gpu_cuda_data_dir" in flags:
        return {}
    return {"XLA_FLAGS": f"{flags} --xla_gpu_cuda_data_dir={root}".strip()}


def preload_nvidia_libraries(search_dirs):
    """Loads the NVIDIA wheels' libraries (NCCL included) that are present; returns those loaded.
    A library that fails to load is left to the plugin, which reports what it misses."""
    loaded = []
    for path in nvidia_library_paths(search_dirs):
        try:
            ctypes.CDLL(path)
            loaded.append(path)
        except OSError:
            pass
    return loaded


def configure(search_dirs, version, env=None):
    """Resolves the plugin named by TORCH_PJRT_PLUGIN, prepares the process for it and hands the
    runtime its path and create options. Never raises for a missing or broken plugin: the runtime
    reports that on first use, so `import torch` keeps working."""
    env = os.environ if env is None else env
    request = env.get("TORCH_PJRT_PLUGIN", "")
    try:
        path = _C._find_plugin(request, search_dirs)
    except RuntimeError as e:
        state["error"] = str(e)
        _C._configure(request, search_dirs, [])
        return
    kind = _C._plugin_kind(path)
    launch = distributed_launch(env)
    state.update(kind=kind, path=path, launch=launch)
    options = create_options(kind, env, version)
    if kind == "cuda" and launch and launch["world_size"] > 1:
        _C._set_kv_store(
            env.get("MASTER_ADDR", "localhost"),
            int(env.get("MASTER_PORT", "29500")),
            "torch_pjrt/cuda/",
            int(float(env.get("TORCH_PJRT_KV_TIMEOUT_S", "600")) * 1000),
        )
    if kind == "tpu":
        computed = tpu_process_environment(env)
        env.update(computed)
        state["environment"] = computed
    elif kind == "cuda":
        computed = cuda_environment(search_dirs, env)
        env.update(computed)
        state["environment"] = computed
        state["preloaded"] = preload_nvidia_libraries(search_dirs)
    _C._configure(path, search_dirs, options)
