"""TorchTPU's profiler surface: TpuProfilerConfig (its options string, its checks, the tracer
levels deciding what the written XSpace holds), profile() writing <run_dir>/<host>[_<rank>].xplane.pb,
and the profiler server, which is not available."""

import socket

import pytest
import torch
from test_profiler import _xspace_class
from torch.profiler import record_function

P = torch.tpu.profiler


def _planes(path):
    space = _xspace_class()()
    space.ParseFromString(path.read_bytes())
    return {
        p.name: [p.event_metadata[e.metadata_id].name for line in p.lines for e in line.events]
        for p in space.planes
    }


def test_config_string_and_checks():
    config = P.TpuProfilerConfig()
    assert isinstance(config, torch.profiler._ExperimentalConfig)
    assert config.custom_profiler_config == (
        "host_tracer_level:2,device_tracer_level:1,python_tracer_level:0"
    )
    config = P.TpuProfilerConfig(
        host_tracer_level=1,
        run_dir="a/b",
        worker_rank=3,
        experimental_options={"x": 'q"\\', "on": True},
    )
    assert config.custom_profiler_config == (
        'host_tracer_level:1,device_tracer_level:1,python_tracer_level:0,run_dir:"a/b",'
        'worker_rank:3,x:"q\\"\\\\",on:true'
    )
    for bad in ({"a:b": 1}, {"a,b": 1}, {"": 1}, {"run_dir": "c"}):
        with pytest.raises(ValueError, match="TpuProfilerConfig"):
            P.TpuProfilerConfig(run_dir="d", experimental_options=bad)
    unchecked = P.TpuProfilerConfig(
        experimental_options={"python_tracer_level": 1}, check_experimental_options=False
    )
    assert unchecked.custom_profiler_config.endswith("python_tracer_level:1")
    assert unchecked.python_tracer_level == 1
    for bad in ({"host_tracer_level": -1}, {"device_tracer_level": 1.0}, {"worker_rank": -2}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            P.TpuProfilerConfig(**bad)


def _traced(tmp_path, **levels):
    """profile() with a TpuProfilerConfig writing under tmp_path; with_stack on, so the Python
    tracer's events are recorded whatever the level keeps."""
    x = torch.ones(8, device="tpu")
    (x * 2).cpu()  # compiled before the profile
    config = P.TpuProfilerConfig(run_dir=tmp_path, worker_rank=1, **levels)
    with P.profile(config=config, with_stack=True), record_function("user_region"):
        (x * 2).cpu()
    (path,) = tmp_path.iterdir()
    assert path.name == f"{socket.gethostname()}_1.xplane.pb"
    return _planes(path)


def test_profile_writes_the_trace_where_the_config_says(tmp_path):
    planes = _traced(tmp_path / "default")
    assert set(planes) == {"/host:CPU", "/device:TPU:0"}
    assert planes["/device:TPU:0"] == ["mul"]
    host = planes["/host:CPU"]
    assert {"user_region", "aten::mul", "aten::_to_copy"} <= set(host)
    assert not [n for n in host if ".py(" in n]  # python_tracer_level 0: no Python functions


def test_tracer_levels_choose_the_events(tmp_path):
    planes = _traced(tmp_path / "user", host_tracer_level=1, device_tracer_level=0)
    assert planes == {"/host:CPU": ["user_region"]}
    planes = _traced(tmp_path / "none", host_tracer_level=0)
    assert planes == {"/host:CPU": [], "/device:TPU:0": ["mul"]}
    planes = _traced(tmp_path / "python", python_tracer_level=1)
    assert [n for n in planes["/host:CPU"] if "test_profiler_config.py(" in n]


def test_write_xplane_takes_the_config_of_torch_profiler(tmp_path):
    x = torch.ones(8, device="tpu")
    (x + 1).cpu()
    with torch.profiler.profile(
        activities=[
            torch.profiler.ProfilerActivity.CPU,
            torch.profiler.ProfilerActivity.PrivateUse1,
        ],
        experimental_config=P.TpuProfilerConfig(run_dir=tmp_path, host_tracer_level=0),
        on_trace_ready=P.write_xplane,
    ):
        (x + 1).cpu()
    (path,) = tmp_path.iterdir()
    assert _planes(path) == {"/host:CPU": [], "/device:TPU:0": ["add"]}


def test_unavailable_activity_and_server():
    with pytest.raises(ValueError, match="GPU"):
        P.profile(activities=[P.ProfilerActivity.GPU])
    with pytest.raises(TypeError, match="TpuProfilerConfig"):
        P.profile(config=torch.profiler._ExperimentalConfig())
    for call in (lambda: P.start_server(9012), P.stop_server):
        with pytest.raises(NotImplementedError, match="profiler service"):
            call()
