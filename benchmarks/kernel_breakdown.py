"""Device probe: where a call's GPU time goes, kernel by kernel (torch.profiler), for layout cases
of fastsoftmax/benchmark/layouts.py (and benchmarks/step_inner_probe.py), fastsoftmax beside
torch.compile(torch.softmax).

    PYTHONPATH=$PWD python benchmarks/kernel_breakdown.py --cases "(65536,2048) d0" --directions backward

Each implementation is warmed up, then called ``--calls`` times over fresh input sets (past L2);
the table lists every kernel's mean time a call, its share, and the call's fraction of copy
bandwidth from the profiler's own sum (launch gaps are not counted there: compare with the
layouts regime's wall-clock figure).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import re
from collections import defaultdict

import torch

from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import tiers
from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.backends.triton import settings as triton_settings
from fastsoftmax.benchmark import layouts


def breakdown(fn, inputs, calls: int) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """Kernel name -> mean microseconds a call; and the last call's launches in order (name,
    microseconds), which tells apart the stages of one kernel function launched several times."""
    for args in inputs:
        fn(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(*inputs[i % len(inputs)])
        torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    for event in kernels:
        totals[event.name] += event.device_time / calls
    kernels.sort(key=lambda e: e.time_range.start)
    last = [(e.name, e.device_time) for e in kernels[len(kernels) - len(kernels) // calls :]]
    return dict(totals), last


def parse_tunings(spec: str | None) -> list[dict]:
    """'a=1,b=x;c=True' -> [{"a": 1, "b": "x"}, {"c": True}] (tiers.Tuning fields; a value that is
    not a Python literal, such as a tier's name, is taken as a string; 'd={2: 32, 4: 32}' a dict)."""
    out = []
    for part in filter(None, (spec or "").split(";")):
        fields = {}
        for item in re.split(r",(?![^{}()]*[})])", part):  # commas inside a literal's braces stay
            key, value = item.split("=")
            try:
                fields[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                fields[key.strip()] = value.strip()
        out.append(fields)
    return out


def tuned(fn, fields: dict):
    """``fn`` called under ``tiers.tuned(**fields)``, from no cached plans at its first call; fields
    ``backend`` and ``tier`` force that backend ("cuda" by default) and tier (``dispatch.forced``),
    fields ``triton.NAME`` set the Triton backend's module setting NAME (triton_settings)."""
    state = {"fresh": True}
    fields = dict(fields)
    tier = fields.pop("tier", None)
    backend = fields.pop("backend", "cuda" if tier else None)
    module = {key.removeprefix("triton."): fields.pop(key) for key in list(fields) if key.startswith("triton.")}

    def call(*args):
        if state["fresh"]:
            BACKEND.clear_plans()
            state["fresh"] = False
        forced = dispatch.forced(backend, tier) if backend else contextlib.nullcontext()
        with tiers.tuned(**fields), forced, triton_settings(module) if module else contextlib.nullcontext():
            return fn(*args)

    return call


def _contiguous_case(label: str) -> layouts.LayoutCase:
    """A contiguous case from a label such as '(64,4096,256) d1' (shapes beyond the layouts regime)."""
    shape, dim = label.rsplit(" d", 1)
    return layouts.LayoutCase("extra", label, tuple(ast.literal_eval(shape)), int(dim))


def cases_of(spec: str) -> list[layouts.LayoutCase]:
    """The cases of a ';'-separated list of labels: the layouts regime's, step_inner_probe's, or
    '(a,b,c) dK' (a contiguous tensor)."""
    from step_inner_probe import CASES as STEPPED_CASES

    known = {c.label: c for c in STEPPED_CASES + layouts.layout_cases()}  # one case a label
    labels = [label.strip() for label in spec.split(";")]
    return [known[label] if label in known else _contiguous_case(label) for label in labels]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--cases", required=True, help="';'-separated case labels (or '(a,b,c) dK': a contiguous tensor)"
    )
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument(
        "--tunings",
        help="';'-separated tiers.Tuning settings (or tier=NAME, backend=NAME, triton.SETTING=VALUE) to time "
        "fastsoftmax under too",
    )
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    parser.add_argument("--log", action="store_true", help="log-softmax (against torch.compile's) instead of softmax")
    args = parser.parse_args(argv)
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.cache_size_limit = 1 << 20
    cases = cases_of(args.cases)
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        copy = layouts.copy_gbps(dtype)
        itemsize = torch.empty((), dtype=dtype).element_size()
        for case, backward in ((c, d == "backward") for c in cases for d in args.directions.split(",")):
            inputs = layouts.input_sets(case, dtype, backward, log=args.log)
            floor = case.bytes_moved(itemsize, backward)
            impls = layouts.implementations(case, backward, peers=not args.no_compile, log=args.log)
            for fields in parse_tunings(args.tunings):
                label = ",".join(f"{k}={v}" for k, v in fields.items())
                impls[f"fastsoftmax[{label}]"] = tuned(impls["fastsoftmax"], fields)
            for name, fn in impls.items():
                if name == "torch":
                    continue
                try:
                    kernels, last = breakdown(fn, inputs, args.calls)
                except Exception as exc:  # noqa: BLE001 - a tuning the case cannot take: say so, go on
                    print(f"{case.label} {str(dtype)[6:]} {name}: {type(exc).__name__}: {exc}"[:300], flush=True)
                    continue
                total = sum(kernels.values())
                direction = ("log-softmax " if args.log else "") + ("backward" if backward else "forward")
                print(
                    f"{case.label} {str(dtype)[6:]} {direction} {name}: {total:.1f} us a call, "
                    f"{floor / total / 1e3 / copy:.3f} of copy",
                    flush=True,
                )
                for kernel, us in sorted(kernels.items(), key=lambda kv: -kv[1]):
                    print(f"    {us:9.1f} us {us / total:6.1%}  {kernel[:110]}")
                if len(last) > 1:
                    print("    the last call's launches: " + ", ".join(f"{us:.1f}" for _, us in last) + " us")
            del inputs
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
