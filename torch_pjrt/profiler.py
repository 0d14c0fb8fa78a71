"""`torch.tpu.profiler`: torch.profiler traces as XSpace `.xplane.pb` files, the format TensorBoard's
profile plugin and XProf open (TorchTPU writes its traces so).

With `ProfilerActivity.PrivateUse1`, torch.profiler records every program launched on "tpu" as a
device event (csrc/device/profiler.cpp). `xprof_trace_handler(dir)` is an `on_trace_ready` handler,
as `torch.profiler.tensorboard_trace_handler` is for Kineto's JSON: it writes the profile as
`<dir>/plugins/profile/<run>/<worker>.xplane.pb`, TensorBoard's layout (`tensorboard --logdir dir`
or `xprof dir`). `export_xplane(prof, path)` writes one file. The XSpace has a plane per device,
"/device:TPU:<index>", whose "XLA Modules" line holds the programs (named as in the Chrome trace),
and "/host:CPU" with one line per thread of CPU operators; a program's `correlation_id` stat names
the operator that launched it.

A plugin's own device trace comes through PJRT's profiler extension (PJRT_Profiler_Extension);
neither CPU plugin (xla-cpu-pjrt, lammps-jax-pjrt-cpu) has one, so `plugin_trace=True` raises
naming the plugin, and collecting it from plugins that do is not implemented.
"""

import enum
import os
import socket
import struct
import tempfile
import time
from types import SimpleNamespace

import torch
from torch.autograd import DeviceType

from . import _C

__all__ = [
    "ProfilerActivity",
    "TpuProfilerConfig",
    "export_xplane",
    "plugin_has_profiler_extension",
    "profile",
    "start_server",
    "stop_server",
    "write_xplane",
    "xprof_trace_handler",
]

_PROFILER_EXTENSION = 1  # PJRT_Extension_Type_Profiler


def plugin_has_profiler_extension():
    """Whether the loaded plugin exposes PJRT's profiler extension (its own device trace)."""
    return any(t == _PROFILER_EXTENSION for _, t, _ in _C._negotiation()["extensions"])


def _require_plugin_trace():
    path = _C._plugin_path()
    if not plugin_has_profiler_extension():
        raise RuntimeError(
            f"torch_pjrt.profiler: the PJRT plugin {path} has no profiler extension "
            "(PJRT_Profiler_Extension), so it gives no device trace of its own; leave "
            "plugin_trace off for the programs torch_pjrt times itself"
        )
    raise NotImplementedError(
        f"torch_pjrt.profiler: collecting the device trace of {path} through its profiler "
        "extension is not implemented; leave plugin_trace off"
    )


# ---- Protobuf wire format (xplane.proto's field numbers) --------------------------------------


def _varint(n):
    n &= (1 << 64) - 1  # negative int64 values are ten-byte varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field, n):
    return _varint(field << 3) + _varint(n)


def _bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _double(field, x):
    return _varint(field << 3 | 1) + struct.pack("<d", x)


class _Plane:
    """One XPlane: lines of events, with event and stat metadata interned by name."""

    def __init__(self, plane_id, name):
        self.id, self.name = plane_id, name
        self.lines = {}  # line id -> (name, [(metadata id, start ns, duration ns, stats)])
        self.event_names, self.stat_names = {}, {}

    def _intern(self, table, name):
        return table.setdefault(name, len(table) + 1)

    def add(self, line_id, line_name, name, start_ns, duration_ns, stats):
        events = self.lines.setdefault(line_id, (line_name, []))[1]
        ids = [(self._intern(self.stat_names, k), v) for k, v in stats.items()]
        events.append((self._intern(self.event_names, name), start_ns, duration_ns, ids))

    def encode(self, origin_ns):
        out = _int(1, self.id) + _bytes(2, self.name)
        for line_id, (line_name, events) in sorted(self.lines.items()):
            line = _int(1, line_id) + _int(10, line_id) + _bytes(2, line_name)
            line += _bytes(11, line_name) + _int(3, origin_ns)
            for meta, start, duration, stats in sorted(events, key=lambda e: e[1]):
                event = _int(1, meta) + _int(2, (start - origin_ns) * 1000)
                event += _int(3, duration * 1000)
                for stat_id, value in stats:
                    stat = _int(1, stat_id)
                    stat += (
                        _double(2, value)
                        if isinstance(value, float)
                        else (_int(4, value) if isinstance(value, int) else _bytes(5, str(value)))
                    )
                    event += _bytes(4, stat)
                line += _bytes(4, event)
            out += _bytes(3, line)
        for name, meta in self.event_names.items():
            entry = _int(1, meta) + _bytes(2, _int(1, meta) + _bytes(2, name) + _bytes(4, name))
            out += _bytes(4, entry)
        for name, meta in self.stat_names.items():
            out += _bytes(5, _int(1, meta) + _bytes(2, _int(1, meta) + _bytes(2, name)))
        return out


def _xspace(prof, hostname):
    results = prof.profiler.kineto_results
    origin = results.trace_start_ns()
    host = _Plane(0, "/host:CPU")
    devices = {}
    for e in results.events():
        stats = {"correlation_id": e.correlation_id()}
        if e.device_type() == DeviceType.PrivateUse1:
            index = e.device_index()
            plane = devices.setdefault(index, _Plane(index + 1, f"/device:TPU:{index}"))
            if e.linked_correlation_id():
                stats["correlation_id"] = e.linked_correlation_id()
            plane.add(1, "XLA Modules", e.name(), e.start_ns(), e.duration_ns(), stats)
        elif e.device_type() == DeviceType.CPU:
            host.add(e.start_thread_id(), f"thread {e.start_thread_id()}", e.name(),
                     e.start_ns(), e.duration_ns(), stats)  # fmt: skip
    planes = [host] + [devices[i] for i in sorted(devices)]
    return b"".join(_bytes(1, p.encode(origin)) for p in planes) + _bytes(4, hostname)


def export_xplane(prof, path, plugin_trace=False):
    """Writes the finished torch.profiler profile `prof` to `path` as an XSpace (.xplane.pb)."""
    if plugin_trace:
        _require_plugin_trace()
    data = _xspace(prof, socket.gethostname())
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def xprof_trace_handler(dir_name, worker_name=None, plugin_trace=False):
    """An `on_trace_ready` handler for torch.profiler.profile: each trace becomes
    `<dir_name>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<worker_name>.xplane.pb` (worker_name: the
    host name, with "_<rank>" in a distributed job), which TensorBoard's profile plugin and XProf
    list as a run."""
    if plugin_trace:
        _require_plugin_trace()

    def handler(prof):
        name = worker_name
        if name is None:
            name = socket.gethostname()
            if "RANK" in os.environ:
                name += f"_{os.environ['RANK']}"
        run = time.strftime("%Y_%m_%d_%H_%M_%S")
        path = os.path.join(dir_name, "plugins", "profile", run, f"{name}.xplane.pb")
        export_xplane(prof, path)

    return handler


# ---- TorchTPU's profiler options, profile() and profiler server --------------------------------


class TpuProfilerConfig(torch.profiler._ExperimentalConfig):
    """TorchTPU's profiler options (its keyword arguments and defaults), an `experimental_config`
    for torch.profiler.profile, read by `write_xplane` (and `profile()`). What each does here:
    host_tracer_level 0 leaves the host's events out of the trace, 1 keeps only user annotations
    (`record_function`), 2 or more every CPU operator; device_tracer_level 0 leaves the device
    planes out; python_tracer_level 1 or more keeps Python function events (recorded with
    `with_stack=True`, which `profile()` turns on for it); run_dir and worker_rank say where the
    trace is written. `custom_profiler_config` is TorchTPU's "key:value,..." string of them, given
    to Kineto. `experimental_options` are more such keys; with check_experimental_options they may
    not name a stable option, without it they override it."""

    def __init__(
        self,
        *,
        host_tracer_level=2,
        device_tracer_level=1,
        python_tracer_level=0,
        run_dir=None,
        worker_rank=None,
        experimental_options=None,
        check_experimental_options=True,
    ):
        options = {
            "host_tracer_level": host_tracer_level,
            "device_tracer_level": device_tracer_level,
            "python_tracer_level": python_tracer_level,
            "run_dir": run_dir,
            "worker_rank": worker_rank,
        }
        experimental = dict(experimental_options or {})
        for key in experimental:
            if not isinstance(key, str) or not key or ":" in key or "," in key:
                raise ValueError(
                    "TpuProfilerConfig: experimental option names are non-empty strings without "
                    f"':' or ',', got {key!r}"
                )
            if check_experimental_options and key in options:
                raise ValueError(
                    f"TpuProfilerConfig: experimental option {key!r} is a stable option; pass "
                    f"{key}= instead"
                )
        options.update(experimental)
        levels = ("host_tracer_level", "device_tracer_level", "python_tracer_level")
        for name in (*levels, "worker_rank"):
            n = options[name]
            bad = isinstance(n, bool) or not isinstance(n, int) or n < 0
            if bad and (name != "worker_rank" or n is not None):
                raise ValueError(f"TpuProfilerConfig: {name} must be an int >= 0, got {n!r}")
        if options["run_dir"] is not None:
            if not isinstance(options["run_dir"], (str, os.PathLike)):
                raise TypeError(
                    f"TpuProfilerConfig: run_dir must be a path, got {options['run_dir']!r}"
                )
            options["run_dir"] = os.fspath(options["run_dir"])
        text = ",".join(f"{k}:{_config_value(v)}" for k, v in options.items() if v is not None)
        super().__init__(custom_profiler_config=text)  # first: the C++ object holds the attributes
        self.custom_profiler_config = text
        self.host_tracer_level = options["host_tracer_level"]
        self.device_tracer_level = options["device_tracer_level"]
        self.python_tracer_level = options["python_tracer_level"]
        self.run_dir = options["run_dir"]
        self.worker_rank = options["worker_rank"]
        self.experimental_options = experimental

    def __repr__(self):
        return f"TpuProfilerConfig({self.custom_profiler_config!r})"


def _config_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    text = os.fspath(v) if isinstance(v, os.PathLike) else str(v)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _kept(event, config):
    """Whether `config`'s tracer levels keep this event in the trace."""
    if event.device_type() == DeviceType.PrivateUse1:
        return config.device_tracer_level >= 1
    if event.is_python_function():
        return config.python_tracer_level >= 1
    if event.is_user_annotation():
        return config.host_tracer_level >= 1
    return config.host_tracer_level >= 2


def write_xplane(prof, config=None):
    """Writes the finished profile `prof` where TorchTPU writes its traces:
    `<run_dir>/<host>[_<rank>].xplane.pb` (run_dir: the config's, else TORCH_TPU_PROFILER_OUTPUT_DIR,
    else the temporary directory; rank: worker_rank, else RANK when set), with the events the
    config's tracer levels keep. `config` defaults to the profile's experimental_config when that
    is a TpuProfilerConfig, so `on_trace_ready=write_xplane` works. Returns the path."""
    if config is None:
        config = getattr(prof, "experimental_config", None)
        if not isinstance(config, TpuProfilerConfig):
            config = TpuProfilerConfig()
    directory = (
        config.run_dir or os.environ.get("TORCH_TPU_PROFILER_OUTPUT_DIR") or tempfile.gettempdir()
    )
    rank = config.worker_rank if config.worker_rank is not None else os.environ.get("RANK")
    host = socket.gethostname()
    path = os.path.join(directory, host + ("" if rank is None else f"_{rank}") + ".xplane.pb")
    results = prof.profiler.kineto_results
    events = [e for e in results.events() if _kept(e, config)]
    kept = SimpleNamespace(events=lambda: events, trace_start_ns=results.trace_start_ns)
    data = _xspace(SimpleNamespace(profiler=SimpleNamespace(kineto_results=kept)), host)
    os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


class ProfilerActivity(enum.Enum):
    """TorchTPU's activities for `profile()`: CPU, TPU (the device) and GPU (not available)."""

    CPU = "cpu"
    TPU = "tpu"
    GPU = "gpu"


def _torch_activity(activity):
    if activity in (ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CPU):
        return torch.profiler.ProfilerActivity.CPU
    if activity in (ProfilerActivity.TPU, torch.profiler.ProfilerActivity.PrivateUse1):
        return torch.profiler.ProfilerActivity.PrivateUse1
    raise ValueError(f"torch.tpu.profiler.profile: {activity} is not available on 'tpu'")


def profile(activities=None, on_trace_ready=None, config=None, **kwargs):
    """TorchTPU's profiling context: a torch.profiler.profile of `activities` (ProfilerActivity
    CPU and TPU, or torch.profiler's CPU and PrivateUse1; default both) with `config` (a
    TpuProfilerConfig, default one) as its experimental_config, whose trace `write_xplane` writes
    when it stops unless another `on_trace_ready` is given. Other keyword arguments go to
    torch.profiler.profile; `with_stack` defaults to python_tracer_level >= 1."""
    config = TpuProfilerConfig() if config is None else config
    if not isinstance(config, TpuProfilerConfig):
        raise TypeError(
            f"torch.tpu.profiler.profile: config must be a TpuProfilerConfig, got {config!r}"
        )
    chosen = [ProfilerActivity.CPU, ProfilerActivity.TPU] if activities is None else activities
    kwargs.setdefault("with_stack", config.python_tracer_level >= 1)
    return torch.profiler.profile(
        activities=[_torch_activity(a) for a in chosen],
        on_trace_ready=write_xplane if on_trace_ready is None else on_trace_ready,
        experimental_config=config,
        **kwargs,
    )


_NO_SERVER = (
    "torch.tpu.profiler.{}: TorchTPU's on-demand capture server is XProf's profiler service "
    "(gRPC), which traces through the runtime's own profiler; torch_pjrt's device trace comes from "
    "torch.profiler, so there is no such server: profile with torch.tpu.profiler.profile() or "
    "torch.profiler.profile(on_trace_ready=torch.tpu.profiler.xprof_trace_handler(dir))"
)


def start_server(port):
    """Not available (TorchTPU: an XProf profiler server on `port`); raises NotImplementedError
    saying how to profile instead."""
    raise NotImplementedError(_NO_SERVER.format("start_server"))


def stop_server():
    """Not available (see start_server); raises NotImplementedError."""
    raise NotImplementedError(_NO_SERVER.format("stop_server"))
