"""Counters of the runtime: compiles, cache hits, executions, transfers and CPU fallbacks."""

from . import _C, _compile_stats, _kernel_ops

__all__ = ["counters", "report", "reset"]


def counters():
    """A dict: compiles, cache_hits, disk_hits (eager programs loaded from the disk cache,
    TORCH_PJRT_EAGER_DISK_CACHE=1), executions, output_buffers (buffers the executions produced),
    host_to_device_bytes, device_to_host_bytes, compile_seconds, host_round_trips (device-to-host
    reads made by ops, not the user's .cpu()/.item()), check_reads and check_read_bytes (reads of
    device-side checks' results, at sync points; the bytes are in device_to_host_bytes too),
    cpu_fallbacks (operator name -> count), "compile": the torch.compile backend's counters
    (graphs_compiled, memory_hits, disk_hits, compile_seconds, ...), and "custom_kernels": kernel
    ops' lowerings (one per op and input signature), calls and the kernels registered."""
    c = _C._counters()
    c["compile"] = _compile_stats.snapshot()
    c["custom_kernels"] = _kernel_ops.stats()
    return c


def reset():
    """Sets every counter back to zero."""
    _C._reset_counters()
    _compile_stats.reset()
    _kernel_ops.reset_stats()


def report():
    """The counters as readable text."""
    c = counters()
    lines = [
        f"compiles:             {c['compiles']} ({c['compile_seconds']:.3f} s)",
        f"cache hits:           {c['cache_hits']}",
        f"executions:           {c['executions']} ({c['output_buffers']} output buffers)",
        f"host to device bytes: {c['host_to_device_bytes']}",
        f"device to host bytes: {c['device_to_host_bytes']}",
        f"host round trips:     {c['host_round_trips']} (by ops; {c['check_reads']} check reads)",
    ]
    fallbacks = c["cpu_fallbacks"]
    if fallbacks:
        lines.append("cpu fallbacks:")
        width = max(len(name) for name in fallbacks)
        for name, count in sorted(fallbacks.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {name:<{width}}  {count}")
    else:
        lines.append("cpu fallbacks:        none")
    return "\n".join(lines)
