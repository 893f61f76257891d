"""The layouts regime: softmax over every kind of axis and memory layout, timed for fastsoftmax,
torch.softmax and torch.compile(torch.softmax) side by side, with every loss listed (``--log``:
log-softmax too, against torch.log_softmax and its compiled form).

A case is a tensor built by ``make`` (a view: transposed, stepped, expanded, channels-last...) and
a dim. Its floor is the bytes a kernel must move: the input's distinct elements read once and the
output written once (backward: y and dy read, dx written), whatever the view. Fractions are of
the copy bandwidth measured in the same process.

Run on a GPU: ``python -m fastsoftmax.benchmark.layouts [--quick] [--backward] [--log] [--json PATH]
[--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class LayoutCase:
    cls: str  # the class of layout (what the goals speak of)
    label: str
    shape: tuple[int, ...]  # the logical shape of the tensor softmaxed
    dim: int
    view: str = "contiguous"  # contiguous, transpose, channels_last, step, expand, offset, slice_inner
    goal: float = 0.80
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def make(self, dtype: torch.dtype, device) -> torch.Tensor:
        """A fresh random tensor of ``shape`` laid out as ``view`` says."""
        return self.laid_out(torch.randn(self.shape, dtype=dtype, device=device))

    def laid_out(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` (of the logical ``shape``) in this case's memory layout. An expanded case
        keeps the first slice of the outermost dim, broadcast (stride 0)."""
        shape, view = self.shape, self.view
        if view == "contiguous":
            return values.contiguous()
        if view == "expand":
            return values[:1].contiguous().expand(shape)
        if view == "channels_last":
            return values.contiguous(memory_format=torch.channels_last)
        kw = {"dtype": values.dtype, "device": values.device}
        if view == "transpose":  # the last two dims swapped in memory
            out = torch.empty(shape[:-2] + (shape[-1], shape[-2]), **kw).transpose(-1, -2)
        elif view == "step":  # every other element of the outermost dim
            out = torch.empty((2 * shape[0],) + shape[1:], **kw)[::2]
        elif view == "step_inner":  # every other element of the innermost dim
            out = torch.empty(shape[:-1] + (2 * shape[-1],), **kw)[..., ::2]
        elif view == "offset":  # one element into its storage: no 16-byte alignment
            out = torch.empty(1 + _numel(shape), **kw)[1:].view(shape)
        elif view == "slice_inner":  # x[..., 1:] of a tensor one element wider along inner
            out = torch.empty(shape[:-1] + (shape[-1] + 1,), **kw)[..., 1:]
        else:
            raise ValueError(f"unknown view {view!r}")
        return out.copy_(values)

    def bytes_moved(self, itemsize: int, backward: bool) -> int:
        return (3 if backward else 2) * _numel(self.shape) * itemsize


def _numel(shape) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def layout_cases(quick: bool = False) -> list[LayoutCase]:
    """The regime's cases: BENCHMARK.md's non-last dims (goal 0.90), small inner sizes over a long
    axis, channel softmax of vision heads in both memory formats, and non-dense views."""
    g90 = 0.90
    cases = [
        LayoutCase("non_last_dim", "(8192,16384) d0", (8192, 16384), 0, goal=g90),
        LayoutCase("non_last_dim", "(65536,2048) d0", (65536, 2048), 0, goal=g90),
        LayoutCase("non_last_dim", "(1048576,128) d0", (1048576, 128), 0, goal=g90),
        LayoutCase("non_last_dim", "(32,4096,1024) d1", (32, 4096, 1024), 1, goal=g90),
        LayoutCase("non_last_dim", "(128,1024,1024) d1", (128, 1024, 1024), 1, goal=g90),
        LayoutCase("non_last_dim", "(4096,64,512) d1", (4096, 64, 512), 1, goal=g90),
        LayoutCase("small_inner", "(1024,16384,4) d1", (1024, 16384, 4), 1),
        LayoutCase("small_inner", "(16,1048576,2) d1", (16, 1 << 20, 2), 1),
        LayoutCase("small_inner", "(128,65536,8) d1", (128, 65536, 8), 1),
        LayoutCase("small_inner", "(64,65536,16) d1", (64, 65536, 16), 1),
        LayoutCase("small_inner", "(4096,4096,3) d1", (4096, 4096, 3), 1),
        # routers choosing tokens per expert (softmax over tokens of (batch, tokens, experts))
        LayoutCase("small_inner", "(2048,4096,8) d1", (2048, 4096, 8), 1),
        LayoutCase("small_inner", "(512,8192,16) d1", (512, 8192, 16), 1),
        LayoutCase("small_inner", "(128,16384,32) d1", (128, 16384, 32), 1),
        LayoutCase("small_inner", "(4194304,4) d0", (1 << 22, 4), 0),
        LayoutCase("small_inner", "(16777216,8) d0", (1 << 24, 8), 0),
        LayoutCase("channel", "(16,21,512,512) d1", (16, 21, 512, 512), 1),
        LayoutCase("channel", "(8,150,128,128) d1", (8, 150, 128, 128), 1),
        LayoutCase("channel", "(16,21,513,513) d1", (16, 21, 513, 513), 1),  # odd H x W: rows at several phases
        LayoutCase("channel", "(8,150,127,127) d1", (8, 150, 127, 127), 1),  # and a longer axis of classes
        LayoutCase("channel", "(8,21,255,255) d1", (8, 21, 255, 255), 1),  # odd and smaller: a few-class head
        LayoutCase("channel", "(16,21,512,512) d1 cl", (16, 21, 512, 512), 1, "channels_last"),
        LayoutCase("channel", "(8,150,128,128) d1 cl", (8, 150, 128, 128), 1, "channels_last"),
        LayoutCase("view", "(8192,8192)[::2] d0", (4096, 8192), 0, "step"),
        LayoutCase("view", "(8192,8192)[:, ::2] d0", (8192, 4096), 0, "step_inner"),
        LayoutCase("view", "(32,4096,2048)[..., ::2] d1", (32, 4096, 1024), 1, "step_inner"),
        LayoutCase("view", "(2048,128,2048)[..., ::2] d1", (2048, 128, 1024), 1, "step_inner"),  # a short axis
        LayoutCase("view", "(8192,8192).t() d0", (8192, 8192), 0, "transpose"),
        LayoutCase("view", "(8192,8192).t() d1", (8192, 8192), 1, "transpose"),
        LayoutCase("view", "expand(1,4096,4096) d1", (16, 4096, 4096), 1, "expand"),
        LayoutCase("view", "expand(1,4096,4096) d2", (16, 4096, 4096), 2, "expand"),
        LayoutCase("view", "offset (32,4096,1024) d1", (32, 4096, 1024), 1, "offset"),
        LayoutCase("view", "(32,4096,1024)[..., 1:] d1", (32, 4096, 1023), 1, "slice_inner"),
    ]
    if quick:
        keep = {"(65536,2048) d0", "(32,4096,1024) d1", "(1024,16384,4) d1", "(16,21,512,512) d1"}
        cases = [c for c in cases if c.label in keep]
    return cases


# ---- timing -------------------------------------------------------------------------------------
def time_ms(fn, inputs, iters: int = 20, reps: int = 5) -> float:
    """Median over ``reps`` of the mean GPU time of ``fn`` over ``iters`` calls, cycling through
    ``inputs`` (several input sets, so that small cases are not served from L2)."""
    for args in inputs:
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(iters):
            fn(*inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    times.sort()
    return times[len(times) // 2]


def copy_gbps(dtype: torch.dtype, numel: int = 1 << 28) -> float:
    """Device-to-device copy bandwidth (bytes read plus written per second, in GB/s)."""
    src = torch.randn(numel // 2, device="cuda").to(dtype)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), [()], iters=20)
    return 2 * src.numel() * src.element_size() / ms / 1e6


def input_sets(case: LayoutCase, dtype: torch.dtype, backward: bool, budget: int = 1 << 28, log: bool = False) -> list:
    """As many fresh input sets as it takes to move past L2 (at most 4); ``log``: the backward's y
    is log-softmax's output."""
    per = case.bytes_moved(torch.empty((), dtype=dtype).element_size(), backward)
    count = max(1, min(4, -(-budget // per)))
    sets = []
    for _ in range(count):
        x = case.make(dtype, "cuda")
        if backward:
            # y and dy in the case's layout (torch.softmax returns a contiguous tensor)
            forward = torch.log_softmax if log else torch.softmax
            y = case.laid_out(forward(x.float(), case.dim).to(dtype))
            dy = case.make(dtype, "cuda")
            sets.append((dy, y))
        else:
            sets.append((x,))
    return sets


def public_call(dim: int, backward: bool, log: bool = False, backend: str = "auto"):
    """fastsoftmax's public call of a case: ``fn(x)``, or ``fn(dy, y)`` for the backward."""
    import fastsoftmax

    if backward:
        return lambda dy, y: fastsoftmax.softmax_backward(dy, y, dim, log=log, backend=backend)
    forward = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    return lambda x: forward(x, dim, backend=backend)


def implementations(
    case: LayoutCase, backward: bool, extra: dict | None = None, peers: bool = True, log: bool = False
) -> dict:
    """name -> fn(*inputs): fastsoftmax (auto), torch and torch.compile (unless ``peers`` is
    False), and any extra ones; ``log``: log-softmax's."""
    dim = case.dim
    if peers:
        # a fresh start for every case: the compiled functions below share their code objects
        # across cases, and past torch._dynamo's recompile limit (8 shapes) torch.compile would
        # quietly run them eagerly
        torch._dynamo.reset()
    if backward:
        backward_data = torch._log_softmax_backward_data if log else torch._softmax_backward_data

        def torch_bwd(dy, y):
            return backward_data(dy, y, dim, y.dtype)

        impls = {
            "fastsoftmax": public_call(dim, True, log),
            "torch": torch_bwd,
            "compile": torch.compile(torch_bwd, dynamic=False),
        }
    else:
        forward = torch.log_softmax if log else torch.softmax
        impls = {
            "fastsoftmax": public_call(dim, False, log),
            "torch": lambda x: forward(x, dim),
            "compile": torch.compile(lambda x: forward(x, dim), dynamic=False),
        }
    if not peers:
        impls = {"fastsoftmax": impls["fastsoftmax"]}
    impls.update(extra or {})
    return impls


def run_case(
    case: LayoutCase,
    dtype: torch.dtype,
    backward: bool,
    copy: float,
    extra: dict | None = None,
    peers: bool = True,
    rounds: int = 1,
    log: bool = False,
) -> dict:
    """One row: each implementation's time and fraction of copy bandwidth, or its error. With
    ``rounds`` > 1 the implementations are timed in turn, round after round, and each keeps its
    best time: a near-tie is then not decided by the order they ran in once."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    inputs = input_sets(case, dtype, backward, log=log)
    row = {"case": case.label, "class": case.cls, "dtype": str(dtype).removeprefix("torch."), "goal": case.goal}
    row["direction"] = "backward" if backward else "forward"
    row["function"] = "log_softmax" if log else "softmax"
    floor = case.bytes_moved(itemsize, backward)
    impls = implementations(case, backward, extra, peers, log)
    best: dict = {}
    errors: dict = {}
    for _ in range(max(1, rounds)):
        for name, fn in impls.items():
            if name in errors:
                continue
            try:
                best[name] = min(best.get(name, float("inf")), time_ms(fn, inputs))
            except Exception as exc:  # one failing implementation must not hide the others
                errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    for name in impls:
        if name in errors:
            row[name] = None
            row[name + "_error"] = errors[name]
        else:
            row[name] = round(floor / best[name] / 1e6 / copy, 3)
            row[name + "_us"] = round(best[name] * 1e3, 1)
    del inputs
    torch.cuda.empty_cache()
    return row


def losses(rows: list[dict], ours: str = "fastsoftmax") -> list[str]:
    """Every case where fastsoftmax is slower than torch or torch.compile, or under its goal."""
    out = []
    for row in rows:
        mine = row.get(ours)
        function = "log-softmax " if row.get("function") == "log_softmax" else ""
        where = f"{row['case']} {row['dtype']} {function}{row['direction']}"
        if mine is None:
            out.append(f"{where}: fastsoftmax failed ({row.get(ours + '_error')})")
            continue
        for peer in ("torch", "compile"):
            theirs = row.get(peer)
            if theirs is not None and theirs > mine:
                out.append(f"{where}: {peer} {theirs:.2f} > fastsoftmax {mine:.2f}")
        if mine < row["goal"]:
            out.append(f"{where}: {mine:.2f} under the goal {row['goal']:.2f}")
    return out


def format_rows(rows: list[dict], names: list[str]) -> str:
    head = f"{'case':30} {'dtype':8} {'fn':3} {'dir':3} " + " ".join(f"{n[:9]:>9}" for n in names)
    lines = [head]
    for row in rows:
        cells = " ".join(f"{row[n]:9.2f}" if row.get(n) is not None else f"{'err':>9}" for n in names)
        function = "log" if row.get("function") == "log_softmax" else "exp"
        lines.append(f"{row['case'][:30]:30} {row['dtype'][:8]:8} {function} {row['direction'][:3]:3} {cells}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backward", action="store_true", help="time the backward too")
    parser.add_argument("--log", action="store_true", help="time log-softmax too")
    parser.add_argument("--log-only", action="store_true", help="time log-softmax alone")
    parser.add_argument("--backward-only", action="store_true", help="time the backward alone")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--json", default=None)
    parser.add_argument("--classes", help="only these classes of layout (comma-separated, e.g. view,channel)")
    parser.add_argument("--rounds", type=int, default=1, help="time the implementations in turn, best of this many")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("the layouts regime needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        copy = copy_gbps(dtype)
        for case in layout_cases(args.quick):
            if args.classes and case.cls not in args.classes.split(","):
                continue
            for log in (True,) if args.log_only else (False, True) if args.log else (False,):
                for backward in (True,) if args.backward_only else (False, True) if args.backward else (False,):
                    rows.append(run_case(case, dtype, backward, copy, rounds=args.rounds, log=log))
                    print(format_rows(rows[-1:], ["fastsoftmax", "torch", "compile"]).splitlines()[-1], flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    print("\nlosses:\n" + ("\n".join(losses(rows)) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
