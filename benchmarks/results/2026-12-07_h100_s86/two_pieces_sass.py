"""The SASS for sm_90 of Triton's held realigned kernels with a row's body as one piece of twice a power of
two (as shipped) and as two pieces (REALIGNED_TWO_PIECES_MAX_TAIL at 1/2), compiled without a GPU, on rows
one vector and a quarter past a power of two, on the tier the backend takes there: per thread,
instructions, global loads, exponentials, registers, block barriers, shared stores, local accesses.

    PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/2026-12-07_h100_s86/two_pieces_sass.py \\
        > benchmarks/results/2026-12-07_h100_s86/two_pieces_sass.txt
"""

import triton
from triton_sass import sass_counts  # benchmarks/, on the path as below

from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton import kernels
from fastsoftmax.backends.triton.compile_check import compile_kernel


def main() -> None:
    print(f"Triton {triton.__version__}, sm_90, the held plans of 2^26 elements; per thread")
    shipped = tb.REALIGNED_TWO_PIECES_MAX_TAIL
    try:
        for n in (73, 137, 300, 521, 600, 1033, 1300, 4105, 5000):
            for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
                for backward in (False, True):
                    fn = kernels.softmax_bwd_realigned if backward else kernels.softmax_fwd_realigned
                    tier = tb._choose_tier((1 << 26) // n, n, 1, itemsize, backward, 132)
                    for share in (0.0, 0.5):
                        tb.REALIGNED_TWO_PIECES_MAX_TAIL = dict.fromkeys(shipped, share)
                        p = tb.realigned_plan(tier, (1 << 26) // n, n, itemsize, backward, 132, False)
                        config = dict(p["configs"][0])
                        if share and not config["BLOCK_N2"]:
                            continue
                        options = {"num_warps": config.pop("num_warps")}
                        kernel = compile_kernel(fn, dtype, {**config, "WIDE": False}, options, 90, aligned=True)
                        direction = "backward" if backward else "forward"
                        pieces = f"BLOCK_N {config['BLOCK_N']} + {config['BLOCK_N2']}"
                        blocks = f"BLOCK_O {config['BLOCK_O']} {pieces} warps {options['num_warps']}"
                        counts = " ".join(f"{k} {v}" for k, v in sass_counts(kernel).items())
                        print(f"rows of {n} {dtype} {direction} ({tier}), {blocks}: {counts}")
    finally:
        tb.REALIGNED_TWO_PIECES_MAX_TAIL = shipped


if __name__ == "__main__":
    main()
