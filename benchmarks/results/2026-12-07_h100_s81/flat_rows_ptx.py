"""Compile Triton's flat_rows kernels for sm_90 without a GPU and count their PTX's global loads and stores
(flat_rows_ptx.txt). Run from the repository root: python3 benchmarks/results/2026-12-07_h100_s81/flat_rows_ptx.py"""

import collections
import os
import re

os.environ["TRITON_INTERPRET"] = "0"

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from fastsoftmax.backends.triton import flat_rows_plan, kernels  # noqa: E402

for fn, pointers in ((kernels.softmax_fwd_flat_rows, 2), (kernels.softmax_bwd_flat_rows, 3)):
    for n, dtype in ((100, "bf16"), (65, "fp32"), (60, "bf16")):
        config = dict(flat_rows_plan(1, n, 1, False)["configs"][0])
        warps = config.pop("num_warps")
        signature = {
            name: "constexpr" if name in config else (f"*{dtype}" if name.endswith("_ptr") else "i32")
            for name in fn.arg_names
        }
        constexprs = {(fn.arg_names.index(name),): value for name, value in config.items()}
        aligned = {(i,): [["tt.divisibility", 16]] for i in range(pointers)}  # as a launch specialises them
        source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=aligned)
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
        ptx = compiled.asm["ptx"]
        accesses = collections.Counter(re.findall(r"(ld\.global[.\w]*|st\.global[.\w]*)", ptx))
        print(fn.__name__, n, dtype, dict(accesses), "smem", compiled.metadata.shared)
        print("   local memory in PTX:", ".local" in ptx, "| bar.sync:", ptx.count("bar.sync"))
