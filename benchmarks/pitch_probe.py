"""Where rows of 50257 columns lose bandwidth in the cluster tier: the row length, the row pitch
(100514 bytes in 16-bit types: not a multiple of 16, so each row starts at another misalignment)
or the misalignment between input and output. One process, every variant alternated with the
others round by round, each result checked against float64.

    PYTHONPATH=$PWD python3 benchmarks/pitch_probe.py [--rows 2670] [--out FILE]

Variants, for n = 50257 (and 50256 as the aligned reference):
  * dense:         x and y contiguous (n x itemsize pitch: misaligned for odd n)
  * padded pitch:  x and y are the first n columns of rows padded to a multiple of 16 bytes
  * padded x only: x padded, y contiguous (x and y misaligned differently: the realign path)
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch

from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps, median_ms

ROUNDS = 5


def _padded(rows: int, n: int, dtype: torch.dtype) -> torch.Tensor:
    per_16_bytes = 128 // torch.finfo(dtype).bits
    pitch = -(-n // per_16_bytes) * per_16_bytes
    return torch.empty(rows, pitch, device="cuda", dtype=dtype)[:, :n]


def _variants(rows: int, n: int, dtype: torch.dtype) -> dict:
    source = (torch.randn(rows, n, device="cuda") * 3).to(dtype)
    dense_y = torch.empty_like(source)
    padded_x, padded_y = _padded(rows, n, dtype), _padded(rows, n, dtype)
    padded_x.copy_(source)
    return {
        "dense": (source, dense_y),
        "padded pitch": (padded_x, padded_y),
        "padded x only": (padded_x, torch.empty_like(source)),
    }


def _run(x: torch.Tensor, y: torch.Tensor) -> None:
    BACKEND.forward(x.unsqueeze(-1), y.unsqueeze(-1), False, "cluster")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2670)
    parser.add_argument("--out", help="a folder (pitch_probe.txt is written in it) or a file")
    args = parser.parse_args()
    lines = []

    def say(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    copy = copy_bandwidth_gbps()
    say(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s; {args.rows} rows, cluster tier, forward")
    cases = {}
    for dtype in (torch.bfloat16, torch.float32):
        for n in (50257, 50256):
            for name, (x, y) in _variants(args.rows, n, dtype).items():
                y.fill_(float("nan"))
                _run(x, y)
                reference = torch.softmax(x.double(), -1)
                error = float((y.double() - reference).abs().max())
                cases[(str(dtype)[6:], n, name)] = (x, y, error)
    times = {key: [] for key in cases}
    for _ in range(ROUNDS):
        for key, (x, y, _) in cases.items():
            times[key].append(median_ms(lambda x=x, y=y: _run(x, y)))
    for key, (x, _, error) in cases.items():
        ms = statistics.median(times[key])
        moved = 2 * x.numel() * x.element_size()
        bar = 1e-5 if x.dtype == torch.float32 else 1e-2  # softmax values are at most 1
        say(
            f"{key[0]:9s} n={key[1]:6d} {key[2]:14s} {ms * 1e3:8.1f} us  {moved / ms / 1e6 / copy:5.2f} of copy"
            f"  max error {error:.2e}{'' if error <= bar else '  WRONG'}"
        )
    if args.out:
        path = os.path.join(args.out, "pitch_probe.txt") if os.path.isdir(args.out) else args.out
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
