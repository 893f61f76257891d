"""fastsoftmax.distributed's collective="peer" kernels under compute-sanitizer: two ranks, two
processes on one GPU (the exchange memory of each mapped into the other through CUDA IPC), small
sizes, every result checked against the gathered reference. Each rank is its own process started
under the sanitizer (a sanitizer run of a parent does not reach children spawned by Python).

    python3 benchmarks/sanitize_peer.py --sanitizer "compute-sanitizer --tool memcheck"

(``benchmarks/device_run.sh sanitize`` runs it under each tool when SANITIZE_TIERS names "peer".)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(HERE), str(HERE / "tests"), str(HERE / "tests" / "distributed")]

import distributed_cases as cases  # noqa: E402
from distributed_harness import _entry  # noqa: E402

WORLD = 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sanitizer", default="", help="command line each rank runs under")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        _entry(args.rank, WORLD, "gloo+cuda:0", args.store, cases.peer_exchange_small, (args.seed,))
        print(f"rank {args.rank}: peer exchange checked (seed {args.seed})", flush=True)
        return 0
    seed = int.from_bytes(os.urandom(4), "little")
    with tempfile.TemporaryDirectory() as directory:
        store = os.path.join(directory, "store")
        ranks = [
            subprocess.Popen(
                [*shlex.split(args.sanitizer), sys.executable, __file__, "--rank", str(rank), "--seed", str(seed)]
                + ["--store", store]
            )
            for rank in range(WORLD)
        ]
        codes = [rank.wait() for rank in ranks]
    print(f"exit codes of the ranks: {codes}")
    return max(codes, key=abs)


if __name__ == "__main__":
    sys.exit(main())
