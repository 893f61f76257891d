"""Compile the Triton kernels for a GPU target without a GPU, in every configuration the backend plans.

Triton's interpreter (how the kernels run on a machine without a GPU) executes the Python of a kernel
and never sees what the compiler rejects (e.g. a kernel whose ``return`` statements under a constexpr
``if`` give different types): such a kernel passes every interpreted test and fails on its first GPU
launch. This module hands each kernel to Triton's compiler (``triton.compile`` on an ``ASTSource``, the
front end, the optimiser and ptxas; no driver) with the constexprs and compile options of ``plan``'s
configurations, for each dtype and direction.

    python -m fastsoftmax.backends.triton.compile_check [--arch 90] [--kinds tile,online,split,relay,...]

It must run in a process where the kernels are compiled, not interpreted (``TRITON_INTERPRET`` unset
or 0 before fastsoftmax is imported); it prints one line per configuration that fails and exits 1.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

#: problems whose plans reach every configuration kind: (tier, outer, n, inner, scalar[, realign])
PROBLEMS = {
    "tile": [
        ("tile", 4096, 64, 1, False),
        ("tile", 16, 21, 263169, True),
        ("tile", 8, 300, 3969, True),
        ("tile", 8, 1000, 961, True),
        ("tile", 32, 512, 256, False),
        ("tile", 128, 1024, 1024, False),
        ("tile", 16, 21, 262144, False),
        ("tile", 8, 150, 16129, True),
        ("tile", 2, 3, 65, False),
    ],
    "online": [("online", 300, 32769, 1, False), ("online", 64, 40000, 520, False)],
    "realigned_held": [("tile", 4096, 65, 1, False, True), ("row", 64, 3001, 1, False, True)],
    "realigned_walked": [("online", 300, 50257, 1, False, True)],
    # the held kernels' two pieces (REALIGNED_TWO_PIECES, compiled with pieces up to 1/2 on every key)
    "realigned_held_two_pieces": [("tile", 4096, 521, 1, False, True), ("row", 64, 4105, 1, False, True)],
    "split": [("split", 1, 128256, 1, False), ("split", 1, 1 << 20, 16, False)],
    "relay": [("relay", 16, 1 << 20, 1, False), ("relay", 64, 65536, 16, False), ("relay", 16, 1 << 20, 2, False)],
}
#: float16 takes the same code as bfloat16 but for its conversions
DTYPES = {"float32": "fp32", "bfloat16": "bf16"}
#: the widened forms (a 16-bit input with a float32 result, ``functional.widened_forward`` and
#: ``widened_backward``), by direction: the plans' dtype (the first tensor's, which picks the tiles)
#: and the pointers of another type: the forward writes float32 from bfloat16, the backward reads
#: float32 y and dy and writes the bfloat16 gradient
WIDENED = {False: ("bf16", {"y_ptr": "fp32"}), True: ("fp32", {"dx_ptr": "bf16"})}
#: pointer parameters that are float32 scratch whatever the tensors' dtype
SCRATCH_POINTERS = ("max_ptr", "sum_ptr")
#: pointer parameters that are int32 counters
COUNTER_POINTERS = ("flags_ptr",)


#: the kernels each configuration kind launches, in plan["configs"] order, by direction
KERNELS = {
    ("tile", False): ("softmax_fwd_tile",),
    ("tile", True): ("softmax_bwd_tile",),
    ("online", False): ("softmax_fwd_online",),
    ("online", True): ("softmax_bwd_online",),
    ("realigned_held", False): ("softmax_fwd_realigned",),
    ("realigned_held", True): ("softmax_bwd_realigned",),
    ("realigned_walked", False): ("softmax_fwd_realigned",),
    ("realigned_walked", True): ("softmax_bwd_realigned",),
    ("realigned_held_two_pieces", False): ("softmax_fwd_realigned",),
    ("realigned_held_two_pieces", True): ("softmax_bwd_realigned",),
    ("split", False): ("softmax_fwd_partials", "softmax_fwd_split"),
    ("split", True): ("softmax_bwd_partials", "softmax_bwd_split"),
    ("relay", False): ("softmax_fwd_relay",),
    ("relay", True): ("softmax_bwd_relay",),
}

#: the names in a plan's configs that are compile options, not constexpr parameters
COMPILE_OPTIONS = ("num_warps", "num_stages", "maxnreg")


def _kernels(kind: str, backward: bool):
    from . import kernels

    return tuple(getattr(kernels, name) for name in KERNELS[kind, backward])


def compile_kernel(
    fn, dtype: str, constexprs: dict, options: dict, arch: int, pointers: dict | None = None, aligned: bool = False
):
    """``fn`` compiled for sm_``arch`` (Triton's CompiledKernel, its ``asm`` holding the PTX and CUBIN):
    pointers of ``dtype`` but those in ``pointers``, the other parameters not in ``constexprs`` 32-bit
    integers; ``aligned``, every pointer hinted on a 16-byte boundary, as Triton specializes such launches."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {}
    for name in fn.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            if name in COUNTER_POINTERS:
                signature[name] = "*i32"
            elif pointers and name in pointers:
                signature[name] = f"*{pointers[name]}"
            else:
                signature[name] = "*fp32" if name in SCRATCH_POINTERS else f"*{dtype}"
        else:
            signature[name] = "i32"
    keyed = {(fn.arg_names.index(name),): value for name, value in constexprs.items()}
    hints = [["tt.divisibility", 16]]
    attrs = {(fn.arg_names.index(name),): hints for name in fn.arg_names if aligned and name.endswith("_ptr")}
    source = ASTSource(fn=fn, signature=signature, constexprs=keyed, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)


def configurations(kinds):
    """(label, kernel, dtype, constexprs, options, pointers) for every configuration of ``kinds`` the
    backend plans on PROBLEMS, each dtype, direction and log flag, on GPUs of either DRAM bandwidth an
    SM, and the widened forms (``pointers``: the pointers of another type than ``dtype``, see
    WIDENED; not the realigned kernels, which take tensors of one type); the tile and realigned kernels
    with 32- and 64-bit offsets."""
    from . import REALIGNED_KINDS, REALIGNED_TWO_PIECES, plan, settings

    # the held kernels' bodies as two pieces up to half the first, of any length, on every key
    pieces_at_half = {"REALIGNED_TWO_PIECES": dict.fromkeys(REALIGNED_TWO_PIECES, (0.5, None))}

    for kind in kinds:
        two_pieces = kind == "realigned_held_two_pieces"
        for tier, outer, n, inner, scalar, *realign in PROBLEMS[kind]:
            realign = bool(realign and realign[0])
            for torch_dtype, dtype in DTYPES.items():
                itemsize = 4 if dtype == "fp32" else 2
                for backward, log in itertools.product((False, True), (False, True)):
                    with settings(pieces_at_half if two_pieces else {}):
                        low, high = (
                            plan(tier, outer, n, inner, itemsize, backward, 132, log, scalar, high_bandwidth, realign)
                            for high_bandwidth in (False, True)
                        )
                    for p in (low,) if high == low else (low, high):
                        assert p["kind"] == ("realigned_held" if two_pieces else kind), (kind, tier, p["kind"])
                        assert not two_pieces or dict(p["configs"][0])["BLOCK_N2"], (kind, tier, n)
                        configs = p["configs"]
                        if "folded" in p:  # the relay plan of pseudo-columns, taken where strides allow
                            configs = configs + p["folded"][1]["configs"]
                            fns = _kernels(kind, backward) * 2
                        else:
                            fns = _kernels(kind, backward)
                        for fn, config in zip(fns, configs):
                            named = dict(config)
                            options = {key: named.pop(key) for key in COMPILE_OPTIONS if key in named}
                            for wide in (False, True) if kind in ("tile", *REALIGNED_KINDS) or two_pieces else (None,):
                                constexprs = dict(named) if wide is None else {**named, "WIDE": wide}
                                label = f"{fn.__name__} {torch_dtype} {(outer, n, inner)} {constexprs} {options}"
                                yield label, fn, dtype, constexprs, options, None
                                if WIDENED[backward][0] == dtype and kind not in REALIGNED_KINDS and not two_pieces:
                                    pointers = WIDENED[backward][1]
                                    yield f"{label} widened {pointers}", fn, dtype, constexprs, options, pointers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument(
        "--kinds", default="tile,online,realigned_held,realigned_walked,realigned_held_two_pieces,split,relay"
    )
    args = parser.parse_args(argv)
    kinds = args.kinds.split(",")
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        print("compile_check: TRITON_INTERPRET=1 makes the kernels interpreted; unset it", file=sys.stderr)
        return 2
    failures = count = 0
    seen = set()
    for label, fn, dtype, constexprs, options, pointers in configurations(kinds):
        key = (fn.__name__, dtype, tuple(sorted(constexprs.items())), tuple(sorted(options.items())))
        key += (tuple(sorted(pointers.items())) if pointers else (),)
        if key in seen:
            continue
        seen.add(key)
        count += 1
        try:
            compile_kernel(fn, dtype, constexprs, options, args.arch, pointers)
        except Exception as error:  # report every failing configuration, then fail
            failures += 1
            lines = [line for line in str(error).splitlines() if line.strip().strip("^")]  # not the caret line
            print(f"FAILED {label}: {type(error).__name__}: {lines[-1].strip() if lines else ''}", flush=True)
    print(f"compiled {count - failures} of {count} Triton kernel configurations for sm_{args.arch}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
