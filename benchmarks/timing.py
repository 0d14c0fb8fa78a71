"""Timing helper shared by the benchmarks that time one callable alone."""

import statistics
import time


def median_ms(fn, rounds, warmup=1):
    """Median milliseconds of `fn().cpu()` over `rounds` calls, after `warmup` calls (compiles)."""
    for _ in range(warmup):
        fn().cpu()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn().cpu()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
