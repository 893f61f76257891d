"""The Triton forward tile of an (outer, n, inner) problem compiled for sm_90 without a GPU, with the
specialisations a launch on contiguous tensors gets (16-byte pointers and strides divisible by 16,
the inner stride 1 as a constant), in three forms: bf16 -> bf16, bf16 -> float32 (the one pass),
float32 -> float32; prints each form's plan and its global loads and stores by PTX instruction.

    PYTHONPATH=$PWD python3 benchmarks/results/2026-12-05_cpu_s64/ptx_tile_vectors.py 16 21 262144
"""

import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from fastsoftmax.backends.triton import kernels, plan
from fastsoftmax.backends.triton.compile_check import COMPILE_OPTIONS


def compile_(fn, ptrs, constexprs, options, ints):
    signature, attrs = {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            signature[name] = "*" + ptrs.get(name, "fp32")
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "i32"
            v = ints.get(name)
            if v is not None and v % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    keyed = {(fn.arg_names.index(n),): v for n, v in constexprs.items()}
    k = triton.compile(
        ASTSource(fn=fn, signature=signature, constexprs=keyed, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options=options,
    )
    return k


outer, n, inner = [int(v) for v in sys.argv[1:4]]
fn = kernels.softmax_fwd_tile
for label, itemsize, ptrs in [
    ("bf16->bf16", 2, {"x_ptr": "bf16", "y_ptr": "bf16"}),
    ("bf16->fp32", 2, {"x_ptr": "bf16", "y_ptr": "fp32"}),
    ("fp32->fp32", 4, {"x_ptr": "fp32", "y_ptr": "fp32"}),
]:
    p = plan("tile", outer, n, inner, itemsize, False, 132, False, False)
    named = dict(p["configs"][0])
    options = {k: named.pop(k) for k in COMPILE_OPTIONS if k in named}
    named["WIDE"] = False
    ints = dict(OUTER=outer, N=n, INNER=inner, xs_o=n * inner, xs_n=inner, ys_o=n * inner, ys_n=inner)
    named["xs_i"] = 1
    k = compile_(fn, ptrs, named, options, ints)
    ptx = k.asm["ptx"]
    counts = {}
    for m in re.finditer(r"\b(ld|st)\.global(\.[a-z0-9.]+)", ptx):
        counts[m.group(0)] = counts.get(m.group(0), 0) + 1
    print(label, named, options, counts)
