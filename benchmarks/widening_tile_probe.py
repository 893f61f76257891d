"""The Triton kernels' one pass (a 16-bit input written as float32) against the same kernels' plain
forms over the same problem, in one process: does the widened store cost more than its bytes? On the
H200 (results 2026-12-05_h200_s63/c9/) the one pass reached 0.36 of copy on a (16, 21, 512, 512)
channel head over dim 1 (6 bytes an element), where its backward over the same head (10 bytes)
reached 1.02 and the float32 tile forward had reached 0.88.

    python3 benchmarks/widening_tile_probe.py [--out FILE] [--log] [--kernels] [--sweep [--backward]]

Forms, each with ``backend="triton"``: bf16 -> bf16, bf16 -> float32 (the one pass), float32 ->
float32; "auto" bf16 -> bf16 beside them. GPU time a call (20 calls behind a spin that hides host
time), the median of 5 rounds, the forms alternated in each; the fraction of copy bandwidth at each
form's own bytes (2 + 2, 2 + 4, 4 + 4 an element). ``--kernels`` lists the kernels one call of each
form launches (torch.profiler), to see which ran. ``--sweep`` times the channel heads' Triton
forms again under each tile shape of ``SWEEP`` (the Triton backend's TILE_TARGET and
WIDE_TILE_PER_THREAD, set on the module and the plans cleared), alternated in one process; with
``--backward``, their backwards under the same tile shapes.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from peer_probe import gpu_and_host_us  # noqa: E402
from probe_report import Report  # noqa: E402

import fastsoftmax  # noqa: E402
from fastsoftmax.backends.triton import settings as triton_settings  # noqa: E402

#: (shape, dim, channels-last): channel heads (contiguous and channels-last), a dim-0 axis, bulk rows
CASES = [
    ((16, 21, 512, 512), 1, False),
    ((16, 21, 512, 512), 1, True),
    ((8, 150, 128, 128), 1, False),
    ((65536, 2048), 0, False),
    ((16384, 4096), -1, False),
]
ROUNDS = 5
#: (TILE_TARGET, elements a thread of the wide tiles) pairs for --sweep: the module's own first, then
#: the 32 a thread the tiles took before, then others
SWEEP = [(4096, 64), (4096, 32), (2048, 64), (4096, 128), (8192, 64), (8192, 128), (4096, 16)]


def _forms(log: bool, dim: int):
    """name -> (bytes an element, call on the bf16 input and its float32 copy)."""
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    return {
        "bf16 -> bf16 (triton)": (4, lambda x, x32: op(x, dim, backend="triton")),
        "bf16 -> fp32 one pass (triton)": (6, lambda x, x32: op(x, dim, dtype=torch.float32, backend="triton")),
        "fp32 -> fp32 (triton)": (8, lambda x, x32: op(x32, dim, backend="triton")),
        "bf16 -> bf16 (auto)": (4, lambda x, x32: op(x, dim)),
    }


def _kernels(call) -> str:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        call()
        torch.cuda.synchronize()
    names = [event.name for event in profile.events() if event.device_type == torch.autograd.DeviceType.CUDA]
    return ", ".join(names)


def _backward_forms(log: bool, dim: int):
    """name -> (bytes an element, call on y and dy in bf16 and in float32): the backwards of the
    forms of ``_forms`` (the one pass's: float32 y and dy to a bf16 gradient)."""
    widened = fastsoftmax.functional.widened_backward
    return {
        "bf16 backward (triton)": (6, lambda y, dy, y32, dy32: fastsoftmax.softmax_backward(dy, y, dim, log=log)),
        "fp32 -> bf16 one pass backward (triton)": (10, lambda y, dy, y32, dy32: widened(dy32, y32, dim, log, y.dtype)),
        "fp32 backward (triton)": (12, lambda y, dy, y32, dy32: fastsoftmax.softmax_backward(dy32, y32, dim, log=log)),
    }


def _with_tiles(target: int, per_thread: int, call):
    """``call`` forced onto Triton (softmax_backward's "auto" would pick the CUDA kernels) under its
    TILE_TARGET ``target`` and wide tiles of ``per_thread`` elements a thread, its plans made afresh
    on both sides."""
    with (
        triton_settings({"TILE_TARGET": target, "WIDE_TILE_PER_THREAD": per_thread}),
        fastsoftmax.dispatch.forced("triton"),
    ):
        return call()


def _tile_plan(outer: int, n: int, inner: int, itemsize: int, backward: bool) -> dict:
    """The tile tier's plan of the problem, or where that tier does not hold its axis, a line saying so
    (the call took another tier)."""
    try:
        return fastsoftmax.backends.triton.plan("tile", outer, n, inner, itemsize, backward, 132)
    except ValueError:
        return {"configs": [(None, "another tier than the tiles'")]}


def _sweep(log: bool, copy: float, say, backward: bool = False) -> None:
    """The channel heads' Triton forms (their backwards where ``backward``) under each tile shape of
    SWEEP, alternated (each call replans; the spin hides the host time, so the times are the GPU's)."""
    for shape, dim, channels_last in CASES[:3]:
        x = (torch.randn(shape, device="cuda") * 4).to(torch.bfloat16)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y64 = (torch.log_softmax if log else torch.softmax)(x.double(), dim)
        if backward:
            dy64 = torch.randn_like(y64)
            summand = dy64 if log else dy64 * y64
            total = summand.sum(dim, keepdim=True)
            reference = dy64 - y64.exp() * total if log else y64 * (dy64 - total)
            inputs = (y64.to(x.dtype), dy64.to(x.dtype), y64.float(), dy64.float())
            forms = _backward_forms(log, dim)
        else:
            reference, inputs = y64, (x, x.float())
            forms = {name: form for name, form in _forms(log, dim).items() if "triton" in name}
        runs = {}
        for tiles in SWEEP:
            for name, (size, call) in forms.items():
                run = functools.partial(_with_tiles, *tiles, functools.partial(call, *inputs))
                error = float((run().double() - reference).abs().max())
                assert error < 3e-2 * max(1.0, float(reference.abs().max())), (name, tiles, error)
                runs[(tiles, name)] = (size, run)
        times = {key: [] for key in runs}
        for _ in range(ROUNDS):
            for key, (_, run) in runs.items():
                times[key].append(gpu_and_host_us(run, 20, spin=40_000_000)[0])  # covers replanning
        layout = " channels-last" if channels_last else ""
        outer, n, inner = shape[0], shape[1], x[0, 0].numel()
        for (tiles, name), (size, _) in runs.items():
            us = statistics.median(times[(tiles, name)])
            config, itemsize = "", 4 if name.startswith("fp32") else 2  # the kernel's input's
            if not channels_last:
                config = _with_tiles(*tiles, lambda: _tile_plan(outer, n, inner, itemsize, backward))
            say(
                f"sweep {shape} dim {dim}{layout} TILE_TARGET {tiles[0]} WIDE_TILE_PER_THREAD {tiles[1]} {name}: "
                f"{us:7.1f} us {x.numel() * size / (us * 1e-6) / copy:5.3f} {config and config['configs'][0][1:]}"
            )
        del x, y64, inputs, reference
        torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--log", action="store_true", help="log-softmax instead of softmax")
    parser.add_argument("--kernels", action="store_true", help="list the kernels each form launches")
    parser.add_argument("--sweep", action="store_true", help="the channel heads under each tile shape of SWEEP")
    parser.add_argument("--backward", action="store_true", help="with --sweep: the backwards")
    args = parser.parse_args()
    report = Report()
    say = report.say

    copy = report.gpu_header()
    if args.sweep:
        _sweep(args.log, copy, say, args.backward)
    for shape, dim, channels_last in CASES:
        x32 = torch.randn(shape, device="cuda") * 4
        if channels_last:
            x32 = x32.to(memory_format=torch.channels_last)
        x = x32.to(torch.bfloat16)
        x32 = x.float()  # the same values in both types
        reference = (torch.log_softmax if args.log else torch.softmax)(x.double(), dim)
        forms = _forms(args.log, dim)
        times = {name: [] for name in forms}
        for name, (_, call) in forms.items():
            error = float((call(x, x32).double() - reference).abs().max())
            assert error < 2e-2 * max(1.0, float(reference.abs().max())), (name, error)
            if args.kernels:
                launched = _kernels(lambda call=call, x=x, x32=x32: call(x, x32))
                say(f"  {shape} dim {dim}{' channels-last' if channels_last else ''} {name}: {launched}")
        for _ in range(ROUNDS):
            for name, (_, call) in forms.items():
                times[name].append(gpu_and_host_us(lambda call=call, x=x, x32=x32: call(x, x32), 20, spin=5_000_000)[0])
        row = []
        for name, (size, _) in forms.items():
            us = statistics.median(times[name])
            row.append(f"{name} {us:7.1f} us {x.numel() * size / (us * 1e-6) / copy:5.3f}")
        layout = " channels-last" if channels_last else ""
        say(f"{'log_softmax' if args.log else 'softmax'} {shape} dim {dim}{layout}: " + " | ".join(row))
        del x, x32, reference
        torch.cuda.empty_cache()
    report.write(args.out)


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
