"""The global loads and stores in the PTX (sm_90, Triton's compiler, no GPU) of the realigned row kernels
against the tile and online kernels on rows of 65 and 50257, each pointer hinted 16-byte aligned as a
launch specialises it: python3 realigned_ptx.py (TRITON_INTERPRET unset)."""

import re
from collections import Counter

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from fastsoftmax.backends.triton import kernels, plan

KERNELS = {
    "tile": "softmax_{}_tile",
    "online": "softmax_{}_online",
    "realigned_held": "softmax_{}_realigned_held",
    "realigned_walked": "softmax_{}_realigned_walked",
}
CASES = [  # label, tier, n, realign, backward
    ("held fwd", "tile", 65, True, False),
    ("tile fwd", "tile", 65, False, False),
    ("held bwd", "tile", 65, True, True),
    ("walked fwd", "online", 50257, True, False),
    ("walked bwd", "online", 50257, True, True),
    ("online fwd", "online", 50257, False, False),
]


def ptx(fn, dtype: str, constexprs: dict, options: dict) -> str:
    signature = {}
    for name in fn.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        else:
            signature[name] = f"*{dtype}" if name.endswith("_ptr") else "i32"
    keyed = {(fn.arg_names.index(name),): value for name, value in constexprs.items()}
    aligned = {(fn.arg_names.index(name),): [["tt.divisibility", 16]] for name in fn.arg_names if name.endswith("_ptr")}
    source = ASTSource(fn=fn, signature=signature, constexprs=keyed, attrs=aligned)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options).asm["ptx"]


for label, tier, n, realign, backward in CASES:
    for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
        p = plan(tier, 1 << 20, n, 1, itemsize, backward, 132, False, False, False, realign)
        named = dict(p["configs"][0])
        options = {key: named.pop(key) for key in ("num_warps", "num_stages", "maxnreg") if key in named}
        if p["kind"] != "online":
            named["WIDE"] = False
        fn = getattr(kernels, KERNELS[p["kind"]].format("bwd" if backward else "fwd"))
        text = ptx(fn, dtype, named, options)
        loads, stores = Counter(re.findall(r"ld\.global[.\w]*", text)), Counter(re.findall(r"st\.global[.\w]*", text))
        print(label, dtype, named, dict(loads), dict(stores))
