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

import os
import socket
import struct
import time

from torch.autograd import DeviceType

from . import _C

__all__ = ["export_xplane", "plugin_has_profiler_extension", "xprof_trace_handler"]

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
