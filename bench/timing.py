"""The benchmarks' timer: the median of repeated calls after a warm-up (bench_peers.py,
bench_nequip_peers.py)."""
import statistics
import time


def median_seconds(fn, min_seconds, max_repeats):
    fn()
    fn()  # compilation, autotuning, buffer allocation
    t0 = time.perf_counter()
    for _ in range(18):
        if time.perf_counter() - t0 > 1.0:
            break
        fn()
    times = []
    while len(times) < 3 or (sum(times) < min_seconds and len(times) < max_repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(times)
