"""A digest of the PTX for sm_90 of every one-piece configuration compile_check plans for Triton's realigned
kernels (debug sections, .loc and .file lines and comments left out), written as JSON to the file named, so
that two revisions' kernels can be compared without a GPU:

    script=$PWD/benchmarks/results/2026-12-07_h100_s86/realigned_ptx.py
    git worktree add /tmp/before ad272207
    (cd /tmp/before && PYTHONPATH=$PWD python3 $script /tmp/a.json)
    PYTHONPATH=$PWD python3 $script /tmp/b.json

This set's two pieces (BLOCK_N2 0) against ad272207: all 48 digests equal."""

import hashlib
import json
import sys

from fastsoftmax.backends.triton.compile_check import compile_kernel, configurations

digests = {}
for _, fn, dtype, constexprs, options, _ in configurations(["realigned_held", "realigned_walked"]):
    if constexprs.get("BLOCK_N2", 0):
        continue
    named = tuple(sorted((k, v) for k, v in constexprs.items() if k != "BLOCK_N2"))
    key = repr((fn.__name__, dtype, named, tuple(sorted(options.items()))))
    if key in digests:
        continue
    ptx = compile_kernel(fn, dtype, constexprs, options, 90).asm["ptx"]
    ptx = ptx.split(".section\t.debug")[0].split(".section .debug")[0]
    ptx = "\n".join(line for line in ptx.splitlines() if not line.strip().startswith((".loc", ".file", "//")))
    digests[key] = hashlib.sha256(ptx.encode()).hexdigest()
with open(sys.argv[1], "w") as handle:
    json.dump(digests, handle, indent=0)
print(len(digests), "configurations")
