"""The SASS for sm_90 of Triton's held realigned kernels with a row's body as one piece of twice a power of
two (as shipped) and as two pieces (REALIGNED_TWO_PIECES_MAX_TAIL at 1/2), compiled without a GPU, on rows
one vector and a quarter past a power of two, on the tier the backend takes there: per thread,
instructions, global loads, exponentials, registers, block barriers, shared stores, local accesses.

    PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/2026-12-07_h100_s86/two_pieces_sass.py \\
        > benchmarks/results/2026-12-07_h100_s86/two_pieces_sass.txt
"""

import triton
from triton_sass import held_realigned_counts  # benchmarks/, on the path as below

from fastsoftmax.backends import triton as tb


def main() -> None:
    print(f"Triton {triton.__version__}, sm_90, the held plans of 2^26 elements; per thread")
    shipped = tb.REALIGNED_TWO_PIECES_MAX_TAIL
    try:
        for n in (73, 137, 300, 521, 600, 1033, 1300, 4105, 5000):
            for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
                for backward in (False, True):
                    for share in (0.0, 0.5):
                        tb.REALIGNED_TWO_PIECES_MAX_TAIL = dict.fromkeys(shipped, share)
                        tier, config, warps, counts = held_realigned_counts(n, itemsize, backward)
                        if share and not config["BLOCK_N2"]:
                            continue
                        direction = "backward" if backward else "forward"
                        pieces = f"BLOCK_N {config['BLOCK_N']} + {config['BLOCK_N2']}"
                        counts = " ".join(f"{k} {v}" for k, v in counts.items())
                        print(f"rows of {n} {dtype} {direction} ({tier}), BLOCK_O {config['BLOCK_O']} {pieces} warps {warps}: {counts}")
    finally:
        tb.REALIGNED_TWO_PIECES_MAX_TAIL = shipped


if __name__ == "__main__":
    main()
