"""torch.profiler on "tpu": with ProfilerActivity.PrivateUse1 every program launched on the device
is a kernel event with its device duration, one per op in Strict and Debug, one per fused program
in Fused, one per call of a torch.compile graph; the events reach export_chrome_trace and are
linked to the CPU operators that launched them."""

import itertools
import json
import time

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_pjrt

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


@pytest.fixture(autouse=True)
def strict_afterwards():
    yield
    torch_pjrt.set_eager_mode("strict")


def _executions():
    return torch_pjrt.metrics.counters()["executions"]


def _device_events(prof, tmp_path):
    """Kernel events of the exported chrome trace, after checking that the file is valid JSON."""
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]


def _profile(fn):
    """Profiles fn(x) after a first call that compiles its programs: completions of programs that
    run while others compile may be signalled late (see README)."""
    x = torch.randn(64, 64, device="tpu")
    fn(x)
    torch.tpu.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        before = _executions()
        fn(x)
        torch.tpu.synchronize()
        launched = _executions() - before
    return prof, launched


@pytest.mark.parametrize("mode", ["strict", "debug"])
def test_per_op_device_events(mode, tmp_path):
    torch_pjrt.set_eager_mode(mode)
    prof, launched = _profile(lambda x: torch.relu(x @ x + 1))
    kernels = _device_events(prof, tmp_path)
    assert [k["name"] for k in kernels] == ["matmul", "add", "relu"]  # one program per op
    assert launched == 3
    # A program may last 0 us when its completion is seen with the previous one's; the trace as a
    # whole has device time.
    for k in kernels:
        assert k["dur"] >= 0 and k["pid"] == 0 and k["args"]["device"] == "tpu:0"
    assert sum(k["dur"] for k in kernels) > 0
    # Each kernel is linked to the operator that launched it: device time per operator (relu's
    # may be 0 us, see above, so only the link is asserted for it).
    linked = {e.name: [k.name for k in e.kernels] for e in prof.events() if e.kernels}
    assert linked == {"aten::mm": ["matmul"], "aten::add": ["add"], "aten::relu": ["relu"]}
    assert {e.key: e for e in prof.key_averages()}["aten::mm"].device_time_total > 0


def test_fused_mode_has_one_event_per_program(tmp_path):
    torch_pjrt.set_eager_mode("fused")
    prof, launched = _profile(lambda x: torch.relu(x @ x + 1).sum().item())
    kernels = _device_events(prof, tmp_path)
    assert len(kernels) == launched == 1
    assert kernels[0]["name"] == "matmul, add, relu, sum"
    assert kernels[0]["dur"] > 0


def test_compiled_graph_calls_are_device_events(tmp_path):
    fn = torch.compile(lambda x: torch.tanh(x @ x) * 2, backend="tpu")
    x = torch.randn(32, 32, device="tpu")
    fn(x)  # compile outside the profile
    torch.tpu.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        for _ in range(3):
            fn(x)
        torch.tpu.synchronize()
    kernels = [k for k in _device_events(prof, tmp_path) if "compiled graph" in k["name"]]
    assert len(kernels) == 3
    assert all(k["dur"] > 0 for k in kernels)


def test_device_events_only_when_asked_for_and_devices_keep_their_rows(tmp_path):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(4, device="tpu").add_(1).cpu()
    assert _device_events(prof, tmp_path) == []
    if torch.tpu.device_count() > 1:
        prof, launched = _profile(lambda x: x.to("tpu:1").mul(2).cpu())
        kernels = _device_events(prof, tmp_path)
        assert len(kernels) == launched
        assert {k["pid"] for k in kernels} == {1}


def test_device_durations_fit_in_the_wall_time(tmp_path):
    x = torch.randn(256, 256, device="tpu")
    torch.tanh(x @ x)
    torch.tpu.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        t0 = time.perf_counter()
        for _ in range(5):
            x = torch.tanh(x @ x)
        torch.tpu.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
    kernels = _device_events(prof, tmp_path)
    busy = sum(k["dur"] for k in kernels)
    assert 0 < busy <= wall_us
    # In launch order on one queue: a program starts after the previous one ended.
    kernels.sort(key=lambda k: k["ts"])
    for a, b in itertools.pairwise(kernels):
        assert b["ts"] >= a["ts"] + a["dur"] - 1  # microsecond rounding


def _xspace_class():
    """XSpace and its messages built from xplane.proto's schema (tsl/profiler/protobuf), parsed by
    the protobuf library: a file it parses with these field numbers and wire types is one
    TensorBoard's profile plugin and XProf read."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    i64, u64, dbl, s, b, msg = (F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_DOUBLE, F.TYPE_STRING,
                                F.TYPE_BYTES, F.TYPE_MESSAGE)  # fmt: skip
    rep = F.LABEL_REPEATED
    schema = {
        "XSpace": [("planes", 1, msg, "XPlane", rep), ("errors", 2, s, None, rep),
                   ("warnings", 3, s, None, rep),
                   ("hostnames", 4, s, None, rep)],
        "XPlane": [("id", 1, i64), ("name", 2, s), ("lines", 3, msg, "XLine", rep),
                   ("event_metadata", 4, msg, "XPlane.EventMetadataEntry", rep),
                   ("stat_metadata", 5, msg, "XPlane.StatMetadataEntry", rep),
                   ("stats", 6, msg, "XStat", rep)],
        "XLine": [("id", 1, i64), ("display_id", 10, i64), ("name", 2, s),
                  ("display_name", 11, s), ("timestamp_ns", 3, i64), ("duration_ps", 9, i64),
                  ("events", 4, msg, "XEvent", rep)],
        "XEvent": [("metadata_id", 1, i64), ("offset_ps", 2, i64), ("num_occurrences", 5, i64),
                   ("duration_ps", 3, i64), ("stats", 4, msg, "XStat", rep)],
        "XStat": [("metadata_id", 1, i64), ("double_value", 2, dbl), ("uint64_value", 3, u64),
                  ("int64_value", 4, i64), ("str_value", 5, s), ("bytes_value", 6, b),
                  ("ref_value", 7, u64)],
        "XEventMetadata": [("id", 1, i64), ("name", 2, s), ("metadata", 3, b),
                           ("display_name", 4, s), ("stats", 5, msg, "XStat", rep),
                           ("child_id", 6, i64, None, rep)],
        "XStatMetadata": [("id", 1, i64), ("name", 2, s), ("description", 3, s)],
    }  # fmt: skip
    f = descriptor_pb2.FileDescriptorProto(name="xplane_test.proto", package="xp", syntax="proto3")

    def add_fields(m, fields):
        for name, number, kind, *rest in fields:
            label = rest[1] if len(rest) > 1 else F.LABEL_OPTIONAL
            fd = m.field.add(name=name, number=number, type=kind, label=label)
            if rest and rest[0]:
                fd.type_name = ".xp." + rest[0]

    for name, fields in schema.items():
        m = f.message_type.add(name=name)
        add_fields(m, fields)
        if name == "XPlane":
            for entry, value in (("EventMetadataEntry", "XEventMetadata"),
                                 ("StatMetadataEntry", "XStatMetadata")):  # fmt: skip
                e = m.nested_type.add(name=entry)
                e.options.map_entry = True
                add_fields(e, [("key", 1, i64), ("value", 2, msg, value)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("xp.XSpace"))


def test_xplane_trace_for_tensorboard_and_xprof(tmp_path):
    """on_trace_ready=torch.tpu.profiler.xprof_trace_handler(dir) writes an XSpace under
    plugins/profile/<run>/: a device plane whose programs are the Chrome trace's kernel events,
    each linked to the CPU operator that launched it."""
    x = torch.randn(64, 64, device="tpu")
    torch.relu(x @ x + 1).cpu()  # compiled before the profile
    handler = torch.tpu.profiler.xprof_trace_handler(str(tmp_path), worker_name="worker0")
    with profile(activities=ACTIVITIES, on_trace_ready=handler) as prof:
        torch.relu(x @ x + 1).cpu()
    (path,) = (tmp_path / "plugins" / "profile").glob("*/worker0.xplane.pb")
    space = _xspace_class()()
    space.ParseFromString(path.read_bytes())
    planes = {p.name: p for p in space.planes}
    assert set(planes) == {"/host:CPU", "/device:TPU:0"}
    device = planes["/device:TPU:0"]
    (line,) = device.lines
    assert line.name == "XLA Modules"
    names = [device.event_metadata[e.metadata_id].name for e in line.events]
    kernels = _device_events(prof, tmp_path)
    assert names == [k["name"] for k in kernels] == ["matmul", "add", "relu"]
    stat_names = {k: v.name for k, v in device.stat_metadata.items()}
    host = planes["/host:CPU"]
    host_ops = {}
    for host_line in host.lines:
        for e in host_line.events:
            (stat,) = e.stats
            host_ops[stat.int64_value] = host.event_metadata[e.metadata_id].name
    # A program finishing when the one before it did (both completions seen at once) lasts 0.
    assert sum(e.duration_ps for e in line.events) > 0
    for e, k in zip(line.events, kernels):
        assert e.duration_ps >= 0 and e.offset_ps >= 0
        assert abs(e.duration_ps / 1e6 - k["dur"]) <= 1  # the Chrome trace's µs
        (stat,) = e.stats
        assert stat_names[stat.metadata_id] == "correlation_id"
        assert host_ops[stat.int64_value] == {"matmul": "aten::mm", "add": "aten::add",
                                              "relu": "aten::relu"}[k["name"]]  # fmt: skip
    assert list(space.hostnames)
    # The CPU plugins have no PJRT profiler extension: asking for the plugin's trace says so.
    assert not torch.tpu.profiler.plugin_has_profiler_extension()
    with pytest.raises(RuntimeError, match="has no profiler extension") as info:
        torch.tpu.profiler.xprof_trace_handler(str(tmp_path), plugin_trace=True)
    assert torch_pjrt._C._plugin_path() in str(info.value)
