"""Inputs broadcast (stride 0) along a dim other than the softmax dim: one slice computed and copied
out to the others (functional._replicated_plan) against the path without it (the kernel reading the
broadcast input where it lies where the layout folds, else after copying it dense), alternated in
one process, each result checked against torch; GPU time per call and the fraction of copy
bandwidth at the logical size (2 tensors forward, 3 backward), with torch beside them. The rule in
functional._replicated_plan (replicate only where the input would be copied) comes from it.

    python3 benchmarks/replicate_probe.py [--out FILE]
"""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from peer_probe import gpu_us  # noqa: E402  (benchmarks/ is the script's folder)

import fastsoftmax  # noqa: E402
from fastsoftmax import _layout, dispatch, functional  # noqa: E402

# (shape, dim, broadcast dim): the input is one slice along the broadcast dim, expanded
CASES = [
    ((2, 512, 1024), 1, 0),
    ((4, 1024, 1024), 1, 0),
    ((16, 1024, 1024), 1, 0),
    ((2, 4096, 4096), 1, 0),
    ((16, 4096, 4096), 1, 0),
    ((64, 64, 1024), 2, 0),
    ((8, 2048, 1024), 2, 0),
    ((16, 4096, 4096), 2, 0),
    ((1024, 1024, 16), 1, 2),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    replicated_plan, read_in_place = functional._replicated_plan, _layout.read_in_place
    modes = {
        # replicated wherever inputs are broadcast, folding or not
        "replicated": lambda: setattr(_layout, "read_in_place", lambda *args: False),
        "direct": lambda: setattr(functional, "_replicated_plan", lambda *args: None),
    }
    copy = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    bw = 2 * copy.numel() / gpu_us(lambda: copy.clone())
    lines = [
        f"{torch.cuda.get_device_name()}; copy {bw / 1e3:.0f} GB/s; GPU us per call (fraction of copy): "
        "replicated (one slice + a copy), direct (one kernel over the broadcast input), torch"
    ]
    for dtype in (torch.bfloat16, torch.float32):
        for shape, dim, bdim in CASES:
            one = list(shape)
            one[bdim] = 1
            x = torch.randn(one, device="cuda", dtype=dtype).expand(shape)
            y = torch.softmax(x.float(), dim).to(dtype).narrow(bdim, 0, 1).expand(shape)
            dy = torch.randn(one, device="cuda", dtype=dtype).expand(shape)
            ref_f = torch.softmax(x.float(), dim)
            ref_b = torch._softmax_backward_data(dy.float(), y.float(), dim, torch.float32)
            size = x.numel() * x.element_size()
            for direction, fn, ref, floor, peer in [
                ("forward", lambda: fastsoftmax.softmax(x, dim), ref_f, 2 * size / bw, lambda: torch.softmax(x, dim)),
                (
                    "backward",
                    lambda: fastsoftmax.softmax_backward(dy, y, dim),
                    ref_b,
                    3 * size / bw,
                    lambda: torch._softmax_backward_data(dy, y, dim, dtype),
                ),
            ]:
                times = {"replicated": [], "direct": []}
                for _ in range(3):
                    for mode, apply in modes.items():
                        functional._replicated_plan, _layout.read_in_place = replicated_plan, read_in_place
                        apply()
                        dispatch.PLANS.clear()
                        out = fn()
                        err = (out.float() - ref).abs().max().item()
                        assert err < 2e-2, (mode, shape, err)
                        times[mode].append(gpu_us(fn, calls=20))
                functional._replicated_plan, _layout.read_in_place = replicated_plan, read_in_place
                dispatch.PLANS.clear()
                fn()
                chosen = gpu_us(fn, calls=20)
                t_torch = gpu_us(peer, calls=20)
                r, d = min(times["replicated"]), min(times["direct"])
                line = (
                    f"{str(dtype)[6:]:9} {direction:8} {str(shape):18} dim {dim} broadcast {bdim} "
                    f"({size / 2**20:6.1f} MiB out): replicated {r:8.1f} ({floor / r:5.2f})  "
                    f"direct {d:8.1f} ({floor / d:5.2f})  torch {t_torch:8.1f} ({floor / t_torch:5.2f})  "
                    f"-> {'replicated' if r < d else 'direct'} x{d / r:.2f}; as shipped {chosen:8.1f}"
                )
                print(line, flush=True)
                lines.append(line)
    if args.out:
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
