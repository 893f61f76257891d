"""GPU timing primitives shared by every benchmark: the copy-bandwidth ceiling and a median timer.

Every figure fastsoftmax reports is a fraction of the copy bandwidth measured in the same process,
so both numbers come from the same timer.
"""

from __future__ import annotations

import statistics
import time

import torch


def median_ms(fn, warmup_ms: float = 25.0, rep_ms: float = 100.0, flush_l2: bool = True) -> float:
    """Median GPU time of ``fn()`` in milliseconds, timed with CUDA events.

    Repeats until ``rep_ms`` of GPU time has been spent (at least 5 and at most 1000 runs). When
    ``flush_l2`` is set, a buffer twice the L2 size is zeroed between runs so that an input which
    fits in L2 is still read from device memory, as it would be in a real model.
    """
    try:
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    except ImportError:
        pass
    cache = torch.empty(l2_flush_bytes(), dtype=torch.int8, device="cuda") if flush_l2 else None
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    n_warmup = max(1, int(warmup_ms / estimate))
    n_repeat = min(1000, max(5, int(rep_ms / estimate)))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        if cache is not None:
            cache.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def single_call_ms(fn) -> float:
    """GPU time of one call of ``fn()`` in milliseconds: the probe that tells a call too slow for a
    full timing run."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end))


def l2_flush_bytes() -> int:
    """Bytes zeroed before a timed call so that it finds L2 cold: twice the current device's L2."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return 2 * int(getattr(props, "L2_cache_size", 64 << 20) or (64 << 20))


def copy_bandwidth_gbps(nbytes: int = 512 << 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def host_us_per_call(fn, calls: int = 2000) -> float:
    """Wall time per call of ``calls`` back-to-back calls with no synchronisation inside the loop:
    the Python and launch cost a caller pays, not the GPU time."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6
