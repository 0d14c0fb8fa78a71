"""Streams and events on "tpu": torch.tpu.Stream/Event and the generic torch.Stream/torch.Event and
torch.accelerator stream functions, the stream context, events that complete when the work
launched before them finished, and elapsed_time measured from device completion times."""

import time

import pytest
import torch

import torch_pjrt


@pytest.fixture(autouse=True)
def strict_afterwards():
    yield
    torch_pjrt.set_eager_mode("strict")


def _work(n=6, size=384):
    """A chain of matmuls whose device time is well above a millisecond."""
    x = torch.randn(size, size, device="tpu") / size**0.5
    for _ in range(n):
        x = x @ x
    return x


def test_default_and_current_streams():
    s = torch.tpu.current_stream()
    assert isinstance(s, torch.tpu.Stream) and isinstance(s, torch.Stream)
    assert s == torch.tpu.default_stream() and s.stream_id == 0
    assert s.device == torch.device("tpu", 0)
    assert torch.accelerator.current_stream() == s


def test_new_streams_and_the_stream_context():
    s1, s2 = torch.tpu.Stream(), torch.tpu.Stream(priority=-1)
    assert s1 != s2 and s1.stream_id != 0
    with torch.tpu.stream(s1):
        assert torch.tpu.current_stream() == s1
        with torch.tpu.stream(s2):
            assert torch.tpu.current_stream() == s2
        assert torch.tpu.current_stream() == s1
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    with torch.tpu.stream(None):
        assert torch.tpu.current_stream().stream_id == 0
    torch.tpu.set_stream(s2)
    assert torch.tpu.current_stream() == s2
    torch.tpu.set_stream(torch.tpu.default_stream())
    # The generic classes work on "tpu" too.
    g = torch.Stream("tpu")
    assert g.device.type == "tpu" and g.stream_id not in (0, s1.stream_id, s2.stream_id)


def test_stream_on_another_device_switches_the_device_for_the_context():
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two devices")
    s = torch.tpu.Stream("tpu:1")
    with torch.tpu.stream(s):
        assert torch.tpu.current_device() == 1
        assert torch.tpu.current_stream() == s
    assert torch.tpu.current_device() == 0
    assert torch.tpu.current_stream(1).stream_id == 0


def test_work_on_several_streams_is_ordered_like_cuda():
    side = torch.tpu.Stream()
    x = torch.arange(6.0, device="tpu")
    side.wait_stream(torch.tpu.current_stream())
    with torch.tpu.stream(side):
        y = x * 2
        done = side.record_event()
    torch.tpu.current_stream().wait_event(done)
    z = y + 1
    torch.testing.assert_close(z.cpu(), torch.arange(6.0) * 2 + 1)
    assert side.query() and torch.tpu.current_stream().query()
    side.synchronize()


def test_event_completes_when_the_work_before_it_finished():
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    assert end.query()  # never recorded: nothing to wait for
    t0 = time.perf_counter()
    start.record()
    x = _work()
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert end.query() and start.query()
    ms = start.elapsed_time(end)
    # Device time of the matmuls: positive, and within the host's wall time around them.
    assert 0 < ms <= wall_ms
    # Between two events with no work in between on an idle device: far less.
    a, b = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    a.record()
    b.record()
    b.synchronize()
    assert 0 <= a.elapsed_time(b) < ms
    del x


def test_elapsed_time_needs_timing_events_that_were_recorded():
    # The checks and messages of torch.Event (c10::Event), for both event classes.
    for cls in (torch.tpu.Event, lambda **kw: torch.Event("tpu", **kw)):
        a, b = cls(), cls()
        a.record()
        b.record()
        b.synchronize()
        with pytest.raises(ValueError, match="enable_timing=True"):
            a.elapsed_time(b)
        c, d = cls(enable_timing=True), cls(enable_timing=True)
        c.record()
        with pytest.raises(ValueError, match="must be recorded"):
            c.elapsed_time(d)
    with pytest.raises(RuntimeError, match="torch.tpu.Event"):
        torch.tpu.Event(enable_timing=True).elapsed_time(torch.Event("tpu", enable_timing=True))
    with pytest.raises(NotImplementedError, match="interprocess"):
        torch.tpu.Event(interprocess=True)
    with pytest.raises(NotImplementedError, match="external"):
        torch.tpu.Event(external=True)


def test_event_record_launches_deferred_work_in_fused_mode():
    torch_pjrt.set_eager_mode("fused")
    x = torch.ones(4, device="tpu")
    before = torch_pjrt.metrics.counters()["executions"]
    y = x * 5 + 1
    assert torch_pjrt.metrics.counters()["executions"] == before
    e = torch.Event("tpu")
    e.record()
    assert torch_pjrt.metrics.counters()["executions"] == before + 1
    e.synchronize()
    e.wait()  # a wait on the current stream is already satisfied
    torch.testing.assert_close(y.cpu(), torch.full((4,), 6.0))


def test_stream_and_event_synchronize_and_accelerator_synchronize():
    x = _work(n=2)
    torch.tpu.current_stream().synchronize()
    torch.accelerator.synchronize()
    e = torch.tpu.current_stream().record_event()
    assert isinstance(e, torch.tpu.Event)
    e.synchronize()
    assert e.query()
    side = torch.tpu.Stream()
    f = torch.tpu.Event()
    assert side.record_event(f) is f
    f.record(side)
    f.wait(side)
    side.wait_event(f)
    del x


def test_record_stream_keeps_values_of_tensors_freed_while_another_stream_uses_them():
    """Tensor.record_stream (Diffusers' group offloading, Accelerate): accepted for "tpu" streams;
    a tensor freed after recording, while work on another stream reads it, leaves that work's
    result intact (device memory is held by the work that uses it)."""
    side = torch.tpu.Stream()
    results = []
    for i in range(3):
        with torch.tpu.stream(side):
            src = torch.full((256, 256), float(i + 1), device="tpu")
            out = src @ src
        src.record_stream(torch.tpu.current_stream())
        src.record_stream(side)
        del src  # freed while `out`'s work may still be pending
        results.append(out)
    torch.tpu.synchronize()
    for i, out in enumerate(results):
        assert torch.equal(out.cpu(), torch.full((256, 256), 256.0 * (i + 1) ** 2))
    with pytest.raises(RuntimeError, match="expected a stream of the tensor's device"):
        torch.ones(2, device="tpu").record_stream(torch.Stream(device="cpu"))
