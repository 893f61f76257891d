"""collective="peer" on one GPU (a group of one rank): the kernel's own speed, the exchange with
itself only, against the local softmax and the all-gather path on the same shard. What a second
GPU adds (the interconnect's latency) is not in it: distributed_bench.py measures that.

    python3 benchmarks/peer_probe.py [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import torch
import torch.distributed as dist

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fastsoftmax  # noqa: E402
import fastsoftmax.distributed as fd  # noqa: E402

SHAPES = [(1, 64128), (8, 75968), (64, 64128), (1024, 64128), (8192, 64128), (8192, 131072), (1, 524288)]


def gpu_and_host_us(fn, calls: int = 50, spin: int = 2_000_000) -> tuple[float, float]:
    """(GPU us, host us) a call of ``fn``: the calls queued behind a spin of ``spin`` cycles, which
    keeps the GPU busy while the host queues them (GPU time, not host, while the spin lasts: about
    ``spin`` / 1.8e3 / ``calls`` us of host time a call), the host's time to issue them read on the way."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(spin)
    start.record()
    issued = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter() - issued
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / calls, issued * 1e6 / calls


def gpu_us(fn, calls: int = 50) -> float:
    return gpu_and_host_us(fn, calls)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--held-bytes", type=int, help="shared memory a buffer of a CTA holds (default: _peer's)")
    parser.add_argument("--depth", type=int, help="buffers a CTA has, rows read ahead + 1 (default: _peer's)")
    parser.add_argument("--load-batch", type=int, help="packs a thread loads before using any (default: _peer's)")
    args = parser.parse_args()
    from fastsoftmax.distributed import _peer

    _peer.HELD_BYTES = args.held_bytes or _peer.HELD_BYTES
    _peer.LOAD_BATCH = args.load_batch or _peer.LOAD_BATCH
    _peer.PIPELINE_DEPTH = args.depth or _peer.PIPELINE_DEPTH
    store = os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    lines = [
        f"{torch.cuda.get_device_name()}; bf16; GPU time per call (us) and fraction of copy bandwidth; "
        f"held {_peer.HELD_BYTES} bytes, load batch {_peer.LOAD_BATCH}, depth {_peer.PIPELINE_DEPTH}"
    ]
    copy = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    copy_us = gpu_us(lambda: copy.clone(), 20)
    bandwidth = 2 * copy.numel() / copy_us  # bytes per us
    lines.append(f"copy bandwidth {bandwidth / 1e3:.0f} GB/s")
    lines.append(f"{'shape':>16} {'local':>9} {'peer':>9} {'allgather':>9}   fractions of copy")
    for rows, n in SHAPES:
        x = torch.randn(rows, n, device="cuda").mul_(4).to(torch.bfloat16)
        expected = torch.softmax(x.float(), -1)
        got = fd.softmax(x, collective="peer", check=False).float()
        torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-3)
        local = gpu_us(lambda: fastsoftmax.softmax(x, -1))
        peer = gpu_us(lambda: fd.softmax(x, collective="peer", check=False))
        gathered = gpu_us(lambda: fd.softmax(x, collective="allgather", check=False))
        floor = 2 * x.numel() * 2 / bandwidth
        lines.append(
            f"{rows:>6} x {n:<7} {local:9.1f} {peer:9.1f} {gathered:9.1f}   "
            f"{floor / local:.2f} {floor / peer:.2f} {floor / gathered:.2f}"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
