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
    for k in kernels:
        assert k["dur"] > 0 and k["pid"] == 0 and k["args"]["device"] == "tpu:0"
    # Each kernel is linked to the operator that launched it: device time per operator.
    by_op = {e.key: e for e in prof.key_averages()}
    assert by_op["aten::mm"].device_time_total > 0
    assert by_op["aten::relu"].device_time_total > 0


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
