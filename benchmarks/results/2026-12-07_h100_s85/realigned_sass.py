"""The SASS for sm_90 of Triton's held realigned row kernels, compiled without a GPU, by elements a
thread (REALIGNED_HELD_ELEMS_PER_THREAD set to one value for every block): per thread, instructions,
global loads, exponentials, registers, block barriers, shared-memory stores and local-memory accesses,
for rows of the lengths g1_*/ timed, on the tier the backend takes there (tile up to rows of 1024, row
past them).

    PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/2026-12-07_h100_s85/realigned_sass.py \
        > benchmarks/results/2026-12-07_h100_s85/realigned_sass.txt
"""

import triton
from triton_sass import held_realigned_counts  # benchmarks/, on the path as below

from fastsoftmax.backends import triton as tb


def main() -> None:
    print(f"Triton {triton.__version__}, sm_90, the held plans of 2^26 elements; per thread")
    shipped = tb.REALIGNED_HELD_ELEMS_PER_THREAD
    try:
        for n in (150, 300, 600, 999, 1025, 1500, 5000, 12345):
            for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
                for backward in (False, True):
                    for elements in (16, 32, 64):
                        tb.REALIGNED_HELD_ELEMS_PER_THREAD = tb.held_everywhere(elements)
                        tier, config, warps, counts = held_realigned_counts(n, itemsize, backward)
                        direction = "backward" if backward else "forward"
                        blocks = f"BLOCK_O {config['BLOCK_O']} BLOCK_N {config['BLOCK_N']} warps {warps}"
                        counts = " ".join(f"{k} {v}" for k, v in counts.items())
                        print(f"rows of {n} {dtype} {direction} ({tier}), {elements} a thread, {blocks}: {counts}")
    finally:
        tb.REALIGNED_HELD_ELEMS_PER_THREAD = shipped


if __name__ == "__main__":
    main()
