"""fastsoftmax.distributed's collective="peer" kernels under compute-sanitizer: two ranks, two
processes on one GPU (the exchange memory of each mapped into the other through CUDA IPC), small
sizes, every result checked against the gathered reference.

    compute-sanitizer --tool memcheck --target-processes all python3 benchmarks/sanitize_peer.py

(``benchmarks/device_run.sh sanitize`` runs it under each tool when SANITIZE_TIERS names "peer".)
"""

from __future__ import annotations

import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(HERE), str(HERE / "tests"), str(HERE / "tests" / "distributed")]

import distributed_cases as cases  # noqa: E402
from distributed_harness import run_ranks  # noqa: E402


def body(rank, world, device, seed):
    # the sanitizer reaches a child through the injection library in its environment
    injected = os.environ.get("CUDA_INJECTION64_PATH", "") or os.environ.get("LD_PRELOAD", "")
    print(f"rank {rank}: sanitizer injected: {'sanitizer' in injected} ({injected or 'nothing'})", flush=True)
    cases.peer_exchange_small(rank, world, device, seed)


if __name__ == "__main__":
    seed = int.from_bytes(os.urandom(4), "little")
    run_ranks(2, body, seed, backend="gloo+cuda:0")
    print(f"peer exchange checked (seed {seed})")
