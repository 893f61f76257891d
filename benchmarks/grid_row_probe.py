"""GPU probe of the grid_row tier (kernels/grid_row_tier.cuh) against split_row, the tier that
serves huge rows today: both forced through the backend, alternated call by call on the same
tensors in one process (A/B), as a fraction of device-to-device copy bandwidth; every result is
checked against float64 first.

    PYTHONPATH=$PWD python3 benchmarks/grid_row_probe.py [--quick] [--out DIR]
        [--tiers split_row,cluster] [--shapes 64x262152,8x524160] [--dtypes bf16,f32]

(--tiers and --shapes A/B any row tiers on any shapes (OUTERxNxINNER: a softmax over the middle
axis, for the strided tiers; OUTERxNxINNERs2: its inputs x[..., ::2] of a tensor twice as wide, the
output dense; OUTERxNxINNERo1: its inputs one element into their storage, the output dense), e.g.
where the cluster tier hands long rows to split_row; a tier may carry tuning fields, e.g.
split_row:split_row_blocks_per_sm=2. With --baseline DIR, a copy of kernels/ from another revision,
a tier written base/NAME runs kernels compiled from DIR's headers: the same tier before and after a
kernel change, in one process;
--baseline PREFIX=DIR, repeated, names several such folders, their tiers written PREFIX/NAME;
--baseline-replace "PREFIX|OLD|NEW" edits that folder's kernels where OLD occurs, in its headers
(a copy) and in the wrappers, e.g. a kernel's constant or a wrapper's launch bounds;
--baseline-cubins PREFIX=DIR runs tiers PREFIX/NAME on CUBINs another NVRTC compiled,
benchmarks/export_cubins.py. The tier ``quack`` calls Quack's softmax instead (2-D rows, softmax
forward and backward; the peer bundle's folder in FASTSOFTMAX_PEER_SITE), alternated with ours.
--flush zeroes a buffer of twice the L2 before every timed call, as the main benchmark's timer
(triton.testing.do_bench) does, which leaves L2 full of dirty lines; without it, only the rotated
input sets keep L2 cold.)

Shapes: 1 x 2^20, 1 x 2^24, 1 x (2^24 + 7), 1 x 2^26, 4 x 2^22; bf16, fp16 and fp32; forward
(softmax and log-softmax) and backward (softmax). The goal that decides whether tier choice takes
grid_row for these rows: about 0.8 of copy at 2^24 and 0.7 at 2^26 (split_row: 0.46 at 1 x 2^24
bf16 forward on an H100). Details go to ``$OUT/grid_row_probe.txt`` (or --out); the compact table
is printed last.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

DTYPES = (torch.bfloat16, torch.float16, torch.float32)
TAG = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
SHAPES = ((1, 1 << 20), (1, 1 << 24), (1, (1 << 24) + 7), (1, 1 << 26), (4, 1 << 22))
TIERS = ("split_row", "grid_row")
# longer than the host takes to enqueue one call, so host time is not timed: 100_000 cycles (about
# 50 us) was not, for grid_row's cooperative launch (H100: 51 us of host time a call; 1 x 2^24 bf16
# timed 64 us behind that spin, 44 us behind this one and 44 us replayed from a CUDA graph)
SPIN_CYCLES = 2_000_000
LOG_FILE: list = []


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    for f in LOG_FILE:
        f.write(line + "\n")
        f.flush()


#: --flush: the buffer zeroed before every timed call (twice the L2, as triton.testing.do_bench)
FLUSH: list = []


def gpu_time_us(fn) -> float:
    """GPU time of one fn() between two events, behind a spin kernel that covers the host's
    enqueue time (and, with --flush, behind the zeroing of FLUSH's buffer)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(SPIN_CYCLES)
    for buffer in FLUSH:
        buffer.zero_()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000


def tolerance(dtype) -> float:
    return {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]


def error(out, reference) -> float:
    """Largest error relative to the reference's largest magnitude (NaN counts as infinite)."""
    scale = reference.abs().max().item() or 1.0
    return (out.double() - reference).abs().nan_to_num(float("inf")).max().item() / scale


def axis_of(shape) -> int:
    """The softmax axis of a probe shape: rows x n, or (outer, n, inner) reduced over n."""
    return 1 if len(shape) == 3 else -1


def parse_shape(item: str) -> tuple[tuple[int, ...], int, int, int]:
    """'64x262152' -> ((64, 262152), 1, 0, 0); '32x4096x1024s2' -> ((32, 4096, 1024), 2, 0, 0): the
    inputs a view that steps by 2 along inner (x[..., ::2] of a tensor twice as wide), the output dense;
    '2670x50257p50264' -> ((2670, 50257), 1, 50264, 0): every tensor, the output too, the first 50257
    columns of rows 50264 apart (x[:, :n] of a wider tensor); '32x4096x1024o1' -> ((32, 4096, 1024),
    1, 0, 1): the inputs one element into their storage (x[1:].view(shape)), the output dense."""
    item, _, pitch = item.partition("p")
    item, _, offset = item.partition("o")
    dims, _, step = item.partition("s")
    return tuple(int(v) for v in dims.split("x")), int(step or 1), int(pitch or 0), int(offset or 0)


def padded(t: torch.Tensor, pitch: int) -> torch.Tensor:
    """``t``'s values in the first columns of a tensor whose last dim is ``pitch`` (the rest NaN)."""
    if not pitch:
        return t
    wide = torch.full((*t.shape[:-1], pitch), float("nan"), dtype=t.dtype, device=t.device)
    view = wide[..., : t.shape[-1]]
    view.copy_(t)
    return view


def stepped(t: torch.Tensor, step: int) -> torch.Tensor:
    """``t``'s values in a view that steps by ``step`` along the last dim (the rest of its storage
    NaN, which a kernel reading it would show)."""
    if step == 1:
        return t
    wide = torch.full((*t.shape[:-1], t.shape[-1] * step), float("nan"), dtype=t.dtype, device=t.device)
    view = wide[..., ::step]
    view.copy_(t)
    return view


def shifted(t: torch.Tensor, offset: int) -> torch.Tensor:
    """``t``'s values in a dense view ``offset`` elements into its storage (the first NaN)."""
    if not offset:
        return t
    storage = torch.full((offset + t.numel(),), float("nan"), dtype=t.dtype, device=t.device)
    return storage[offset:].view(t.shape).copy_(t)


def make_sets(shape, dtype, backward, step=1, device="cuda", pitch=0, offset=0):
    """Independent tensor sets (up to 8: inputs that step by ``step`` along the last dim or lie
    ``offset`` elements into their storage, outputs dense). Rotated a call at a time they leave L2
    cold between calls where eight sets outgrow it; decode rows stay warm, every call alike."""
    per_set = math.prod(shape) * dtype.itemsize * (3 if backward else 2)
    count = max(1, min(8, -(-200_000_000 // per_set)))
    sets = []
    for _ in range(count):
        x = (torch.randn(*shape, device=device) * 4).to(dtype)
        if backward:
            y = torch.softmax(x.float(), axis_of(shape)).to(dtype)
            dy = torch.randn(*shape, device=device).to(dtype)
            sets.append(
                (
                    padded(shifted(stepped(y, step), offset), pitch),
                    padded(shifted(stepped(dy, step), offset), pitch),
                    padded(torch.empty_like(x), pitch),
                )
            )
        else:
            sets.append((padded(shifted(stepped(x, step), offset), pitch), padded(torch.empty_like(x), pitch)))
    return sets


def parse_spec(spec: str) -> tuple[str, dict]:
    """A tier as given on the command line: NAME or NAME:KEY=VALUE[:KEY=VALUE...], the values
    fields of the backend's tuning (tiers.Tuning) as Python literals (integers, True, False), e.g.
    split_row:split_row_blocks_per_sm=2, strided:strided_stepped_packs=False."""
    name, *fields = spec.split(":")
    return name, {key: ast.literal_eval(value) for key, _, value in (field.partition("=") for field in fields)}


BASELINE_PREFIX = "base"
BASELINES: dict = {}  # prefix -> the backend compiled from that --baseline folder


def baseline_backend(kernel_dir: str, replacements=()):
    """A CUDA backend whose kernels are compiled from the headers in ``kernel_dir`` (with this
    revision's wrappers, so the launch contracts must agree; each (old, new) of ``replacements``
    applied to the headers, in a copy, and to the wrappers: compiler.KernelVariant), not cached on
    disk."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.backend import CudaBackend
    from fastsoftmax.backends.cuda.instances import source_for

    variant = compiler.KernelVariant(replacements, Path(kernel_dir))
    atexit.register(variant.close)

    class BaselineBackend(CudaBackend):
        @staticmethod
        def cubin(instance, arch):
            return variant.compile(source_for([instance]), arch, instance.name)

    return BaselineBackend()


def cubin_backend(folder: str):
    """A CUDA backend whose kernels are loaded from ``folder/<instance name>.cubin``, CUBINs another
    NVRTC compiled (benchmarks/export_cubins.py); an instance without one is an error, never
    compiled here instead."""
    from fastsoftmax.backends.cuda.backend import CudaBackend

    class CubinBackend(CudaBackend):
        @staticmethod
        def cubin(instance, arch):
            path = Path(folder) / f"{instance.name}.cubin"
            if not path.exists():
                raise FileNotFoundError(f"no CUBIN for {instance.name} in {folder} (benchmarks/export_cubins.py)")
            return path.read_bytes()

    return CubinBackend()


def run_quack(tensors, log, backward, into_output=False) -> None:
    """Quack's softmax over 2-D rows (its own outputs, copied into ours only when checked). What it
    refuses (log-softmax, other layouts, lengths off its vectors) is a ValueError, as a tier's."""
    if log or tensors[0].dim() != 2:
        raise ValueError("quack: softmax of 2-D rows only")
    from quack.softmax import softmax_bwd, softmax_fwd

    try:
        out = softmax_bwd(tensors[1], tensors[0]) if backward else softmax_fwd(tensors[0])
    except Exception as exc:  # noqa: BLE001 - its refusals come as assertions and DSL errors
        raise ValueError(f"quack: {type(exc).__name__}: {exc}") from exc
    if into_output:
        tensors[-1].copy_(out)


def run(backend, spec, tensors, log, backward, into_output=False):
    from fastsoftmax.backends.cuda import tiers

    if spec == "quack":
        return run_quack(tensors, log, backward, into_output)
    prefix, slash, rest = spec.partition("/")
    if slash:
        backend, spec = BASELINES[prefix], rest
    tier, tuning = parse_spec(spec)
    views = [t.unsqueeze(2) if t.dim() == 2 else t for t in tensors]
    with tiers.tuned(**tuning):
        if backward:
            backend.backward(*views, log, tier)
        else:
            backend.forward(*views, log, tier)


def checked(backend, tier, tensors, log, backward, dtype, call=None) -> str:
    """Runs once on poisoned outputs (through ``call(tensors, backward)`` when given) and compares
    with float64: '' or what is wrong."""
    tensors[-1].fill_(float("nan"))
    if call is None:
        run(backend, tier, tensors, log, backward, into_output=True)
    else:
        call(tensors, backward)
    torch.cuda.synchronize()
    axis = axis_of(tensors[0].shape)
    if backward:
        y64, dy64 = tensors[0].double(), tensors[1].double()
        if log:
            reference = dy64 - y64.exp() * dy64.sum(axis, keepdim=True)
        else:
            reference = y64 * (dy64 - (dy64 * y64).sum(axis, keepdim=True))
    else:
        x64 = tensors[0].double()
        reference = torch.log_softmax(x64, axis) if log else torch.softmax(x64, axis)
    err = error(tensors[-1], reference)
    del reference
    return "" if err <= tolerance(dtype) else f"error {err:.3g} > {tolerance(dtype):g}"


def shape_line(backend, rows, n, dtype, backward) -> str:
    from fastsoftmax.backends.cuda import plans

    _, s = plans.grid_row_launch(backend.kernel, dtype, n, backward, False, torch.cuda.current_device())
    regs = s.ctas * s.packs * s.threads * s.pack
    smem = s.ctas * s.smem_slots * s.pack
    shared = min(max(0, n - regs), smem) / n
    return (
        f"grid {s.ctas} x {s.threads}, K={s.packs}, smem {s.smem_bytes} B; per tensor on chip: registers "
        f"{min(n, regs) / n:.2f}, shared {shared:.2f}, re-read {max(0, n - regs - smem) / n:.2f}"
    )


def ab(backend, copy, shape, dtype, backward, log, iters, tiers=TIERS, step=1, pitch=0, offset=0) -> tuple[str, bool]:
    sets = make_sets(shape, dtype, backward, step, pitch=pitch, offset=offset)
    nbytes = math.prod(shape) * dtype.itemsize * (3 if backward else 2)
    ok = True
    problems = {}
    refused = {}
    for tier in tiers:
        try:
            problems[tier] = checked(backend, tier, sets[0], log, backward, dtype)
        except ValueError as exc:  # a tier (or its tuning) that cannot take the shape: the others still run
            refused[tier] = str(exc)
            continue
        ok &= not problems[tier]
    tiers = [tier for tier in tiers if tier not in refused]
    times = {tier: [] for tier in tiers}
    calls = 0
    for i in range(iters):  # alternate: both tiers see the same clocks and the same memory state
        for tier in tiers if i % 2 == 0 else reversed(tiers):
            # the next set each call: on the same set a tier after the first would read what the first
            # left in L2 (inputs that fit it: decode rows)
            tensors = sets[calls % len(sets)]
            calls += 1
            times[tier].append(gpu_time_us(lambda t=tensors, tier=tier: run(backend, tier, t, log, backward)))
    cells = []
    for tier in tiers:
        us = statistics.median(times[tier])
        frac = nbytes / (us * 1e-6) / 1e9 / copy
        cells.append(f"{tier} {frac:.3f} ({us:.1f}us){' WRONG ' + problems[tier] if problems[tier] else ''}")
    cells += [f"{tier} -" for tier in refused]
    label = "x".join(map(str, shape)) + (f"s{step}" if step > 1 else "") + (f"p{pitch}" if pitch else "")
    label += f"o{offset}" if offset else ""
    line = f"{TAG[dtype]:<4} {'bwd' if backward else 'fwd'} {'log' if log else 'exp'} {label:<12} " + " | ".join(cells)
    say(line)
    for tier, why in refused.items():
        say(f"    {tier} refused: {why}")
    if "grid_row" in tiers and len(shape) == 2:
        say("    " + shape_line(backend, *shape, dtype, backward))
    del sets
    torch.cuda.empty_cache()
    return line, ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--quick", action="store_true", help="fewer calls; softmax forward and backward only unless --directions"
    )
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument(
        "--tiers", default=",".join(TIERS), help="row tiers to alternate, each NAME or NAME:KEY=VALUE (a tuning field)"
    )
    parser.add_argument("--shapes", help="ROWSxCOLS comma list (default: the huge rows above)")
    parser.add_argument("--dtypes", help="comma list of bf16, f16, f32")
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        help="a kernels/ folder of another revision, for tiers named base/NAME; PREFIX=DIR for tiers PREFIX/NAME",
    )
    parser.add_argument(
        "--baseline-replace",
        action="append",
        default=[],
        help="PREFIX|OLD|NEW: OLD replaced by NEW in the source of that baseline's kernels",
    )
    parser.add_argument(
        "--baseline-cubins",
        action="append",
        default=[],
        help="PREFIX=DIR: tiers PREFIX/NAME run CUBINs from DIR (benchmarks/export_cubins.py)",
    )
    parser.add_argument(
        "--directions", help="comma list of fwd, log, bwd, logbwd (log-softmax backward; default: the first three)"
    )
    parser.add_argument("--flush", action="store_true", help="zero twice the L2 before every timed call")
    args = parser.parse_args()
    tiers = tuple(args.tiers.split(","))
    shapes = tuple((shape, 1, 0, 0) for shape in SHAPES)
    if args.shapes:
        shapes = tuple(parse_shape(item) for item in args.shapes.split(","))
    dtypes = DTYPES
    if args.dtypes:
        by_tag = {tag: dtype for dtype, tag in TAG.items()}
        dtypes = tuple(by_tag[tag] for tag in args.dtypes.split(","))
    if not torch.cuda.is_available():
        print("grid_row probe: no CUDA device")
        return 0
    from fastsoftmax.backends.cuda import BACKEND

    reason = BACKEND.unavailable_reason(torch.device("cuda", torch.cuda.current_device()))
    if reason:
        print(f"grid_row probe: {reason}")
        return 0
    replacements: dict = {}
    for item in args.baseline_replace:
        prefix, old, new = item.split("|")
        replacements.setdefault(prefix, []).append((old, new))
    for item in args.baseline:
        prefix, equals, folder = item.rpartition("=")
        prefix = prefix if equals else BASELINE_PREFIX
        BASELINES[prefix] = baseline_backend(folder, replacements.get(prefix, ()))
    cubin_notes = []
    for item in args.baseline_cubins:
        prefix, equals, folder = item.partition("=")
        if not equals:
            parser.error("--baseline-cubins takes PREFIX=DIR")
        BASELINES[prefix] = cubin_backend(folder)
        cubin_notes.append(f"{prefix}/: CUBINs from {folder} ({(Path(folder) / 'nvrtc.txt').read_text().strip()})")
    if "quack" in tiers:
        from fastsoftmax.benchmark.peers import add_peer_site

        add_peer_site()
    if args.flush:
        from fastsoftmax.benchmark.timing import l2_flush_bytes

        FLUSH.append(torch.empty(l2_flush_bytes(), dtype=torch.int8, device="cuda"))
    os.makedirs(args.out, exist_ok=True)
    LOG_FILE.append(open(os.path.join(args.out, "grid_row_probe.txt"), "w"))  # noqa: SIM115 - closed at exit
    start = time.time()
    props = torch.cuda.get_device_properties(0)
    say(f"{props.name}, {props.multi_processor_count} SMs")
    copy = copy_bandwidth_gbps()
    say(f"copy bandwidth: {copy:.0f} GB/s (512 MiB device-to-device, read + write)")
    from fastsoftmax.backends.cuda.compiler import versions

    say(f"kernels compiled here by NVRTC {versions()['nvrtc']}")
    for note in cubin_notes:
        say(note)
    if FLUSH:
        say(f"every timed call behind the zeroing of {FLUSH[0].numel() >> 20} MiB (twice the L2)")
    iters = 20 if args.quick else 50
    table, ok = [], True
    directions = {"fwd": (False, False), "log": (False, True), "bwd": (True, False), "logbwd": (True, True)}
    # --quick leaves the log-softmax out of the default directions, never out of those asked for
    chosen = args.directions.split(",") if args.directions else ["fwd", "bwd"] if args.quick else ["fwd", "log", "bwd"]
    for backward, log in (directions[d] for d in chosen):
        for dtype in dtypes:
            for shape, step, pitch, offset in shapes:
                try:
                    line, good = ab(BACKEND, copy, shape, dtype, backward, log, iters, tiers, step, pitch, offset)
                except Exception as exc:  # noqa: BLE001 - one failing shape must not end the probe
                    line, good = (
                        f"{TAG[dtype]} {'x'.join(map(str, shape))} {'bwd' if backward else 'fwd'}: "
                        f"{type(exc).__name__}: {exc}",
                        False,
                    )
                    say(line)
                table.append(line)
                ok &= good
    print("\n==== summary ====")
    print(f"copy {copy:.0f} GB/s; results {'all correct' if ok else 'WRONG (see above)'}; {time.time() - start:.0f} s")
    for line in table:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
