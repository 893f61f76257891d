"""Device probe: the Triton kernels torch.compile(torch.softmax) generates for layout cases, with the
launch configuration its autotuning kept (block sizes, warps, registers), so that a tile of ours
can be set against the same shape.

    PYTHONPATH=$PWD python benchmarks/inductor_kernels.py --cases "(16,40,513,513) d1" \
        --dtypes bfloat16 --directions backward --source

Cases are labels as kernel_breakdown.py takes them (kernel_breakdown.cases_of).
"""

from __future__ import annotations

import argparse

import torch
from kernel_breakdown import cases_of

from fastsoftmax.benchmark import layouts


def _autotuners():
    """Every kernel object of the modules torch.compile has loaded so far."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    modules = PyCodeCache.modules
    seen = set()  # a module may be listed under more than one key
    for module in modules.values() if isinstance(modules, dict) else modules:
        for name, obj in vars(module).items():
            if isinstance(obj, CachingAutotuner) and id(obj) not in seen:
                seen.add(id(obj))
                yield name, obj


def kept_configs() -> list[str]:
    """'kernel name: configuration' for every kernel torch.compile has loaded so far."""
    return [f"{name}: {launcher.config}" for name, kernel in _autotuners() for launcher in kernel.launchers]


def describe(name: str, kernel, source: bool) -> str:
    lines = [f"  kernel {name}: size hints {getattr(kernel, 'size_hints', '?')}"]
    hint = (getattr(kernel, "inductor_meta", None) or {}).get("reduction_hint")
    if hint is not None:
        lines[-1] += f", reduction hint {hint}"
    configs = getattr(kernel, "configs", None) or []
    lines.append(f"    candidates ({len(configs)}): " + "; ".join(str(c) for c in configs))
    for launcher in getattr(kernel, "launchers", []):
        regs = getattr(launcher, "n_regs", "?")
        spills = getattr(launcher, "n_spills", "?")
        shared = getattr(launcher, "shared", "?")
        lines.append(f"    kept: {launcher.config} registers {regs} spills {spills} shared {shared}")
    if source:
        src = getattr(getattr(kernel, "fn", None), "src", None)
        lines.append(src if src else "    (no source)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True, help="';'-separated case labels")
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--source", action="store_true", help="print each kernel's Triton source too")
    parser.add_argument("--log", action="store_true", help="log-softmax instead of softmax")
    args = parser.parse_args(argv)
    cases = cases_of(args.cases)
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        for case, backward in ((c, d == "backward") for c in cases for d in args.directions.split(",")):
            seen = {id(kernel) for _, kernel in _autotuners()}
            inputs = layouts.input_sets(case, dtype, backward, log=args.log)
            compiled = layouts.implementations(case, backward, log=args.log)["compile"]
            compiled(*inputs[0])
            torch.cuda.synchronize()
            direction = ("log-softmax " if args.log else "") + ("backward" if backward else "forward")
            print(f"{case.label} {str(dtype)[6:]} {direction}:", flush=True)
            for name, kernel in _autotuners():
                if id(kernel) not in seen:
                    print(describe(name, kernel, args.source), flush=True)
            del inputs
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
