"""16-bit inputs with a float32 result (``dtype=torch.float32``, or under CUDA autocast): one pass on
the Triton kernels (``backend="triton"``, which convert at the store) against the input cast to
float32 first and computed by fastsoftmax's float32 kernels, torch (``torch.softmax(x, dim,
dtype=torch.float32)``: one fused pass for float16 on CUDA; bfloat16 it casts first, then runs its
float32 kernel), and what "auto" does now (``functional.FUSED_WIDENING``: the one pass from
``FUSED_WIDENING_MIN_NUMEL`` elements; below, ``TORCH_WIDENS_MIN_ROWS``: torch's fused kernel for 64 or more contiguous
float16 rows, the cast otherwise), in one process; each result is checked against float64 first.
Forward, and the backward through autograd (y and dy float32, dx in the input's type). GPU time per
call (a spin ahead of the calls, so host time hides), the host's time to issue a forward call, and
the fraction of copy bandwidth at the bytes a one-pass call moves (2 + 4 an element forward, 4 + 4 +
2 backward). Decides ``FUSED_WIDENING``'s sizes and the rows at which torch's kernel is taken.

    python3 benchmarks/widening_probe.py [--out FILE] [--dtypes bfloat16,float16]
"""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from peer_probe import gpu_and_host_us  # noqa: E402  (benchmarks/ is the script's folder)
from probe_report import Report  # noqa: E402

import fastsoftmax  # noqa: E402
from fastsoftmax import functional  # noqa: E402

# (shape, dim): decode and vocabulary rows, bulk rows, a non-last dim, a channel head
CASES = [
    ((8, 128256), -1),
    ((32, 151936), -1),
    ((128, 128256), -1),
    ((64, 1048576), -1),
    ((4194304, 32), -1),
    ((1046, 128256), -1),
    ((2048, 65536), -1),
    ((16384, 4096), -1),
    ((262144, 256), -1),
    ((65536, 2048), 0),
    ((16, 21, 512, 512), 1),
    # about the rule's size (functional.FUSED_WIDENING_MIN_NUMEL)
    ((1024, 4096), -1),
    ((2048, 4096), -1),
    ((4096, 4096), -1),
    ((256, 131072), -1),
    ((1, 16777216), -1),
]


def _timed(fn) -> tuple[float, float]:
    """(GPU us, host us) a call, behind a spin that hides host time up to about 200 us a call."""
    return gpu_and_host_us(fn, 50, spin=20_000_000)


def _variants(log: bool, dim: int):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    ref = torch.log_softmax if log else torch.softmax
    return {
        "one pass (triton)": lambda x: op(x, dim, dtype=torch.float32, backend="triton"),
        "cast, then fastsoftmax": lambda x: op(x.float(), dim),
        "torch": lambda x: ref(x, dim, dtype=torch.float32),
        "auto": lambda x: op(x, dim, dtype=torch.float32),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--dtypes", default="bfloat16,float16", help="torch fuses float16 only")
    args = parser.parse_args()
    report = Report()
    say = report.say

    copy = report.gpu_header()
    say(
        f"auto: FUSED_WIDENING {functional.FUSED_WIDENING} from {functional.FUSED_WIDENING_MIN_NUMEL} elements, "
        f"TORCH_WIDENS_MIN_ROWS {functional.TORCH_WIDENS_MIN_ROWS}"
    )
    for dtype in [getattr(torch, name) for name in args.dtypes.split(",")]:
        for shape, dim in CASES:
            for log in (False, True):
                x = (torch.randn(shape, device="cuda") * 4).to(dtype)
                dy = torch.randn(shape, device="cuda")
                x64 = x.double().requires_grad_(True)
                y64 = (torch.log_softmax if log else torch.softmax)(x64, dim)
                (dx64,) = torch.autograd.grad(y64, x64, dy.double())
                y64 = y64.detach()
                row = []
                for name, call in _variants(log, dim).items():
                    y = call(x)
                    assert y.dtype == torch.float32, name
                    error = float((y.double() - y64).abs().max())
                    xg = x.detach().requires_grad_(True)
                    yg = call(xg)
                    (dx,) = torch.autograd.grad(yg, xg, dy, retain_graph=True)  # timed again below
                    grad_error = float((dx.double() - dx64).abs().max() / dx64.abs().max())
                    forward, host = _timed(lambda call=call, x=x: call(x))
                    backward, _ = _timed(lambda yg=yg, xg=xg, dy=dy: torch.autograd.grad(yg, xg, dy, retain_graph=True))
                    numel = x.numel()
                    row.append(
                        f"{name} fwd {forward:8.1f} us {numel * 6 / (forward * 1e-6) / copy:5.3f} (host {host:5.1f})"
                        f" bwd {backward:8.1f} us {numel * 10 / (backward * 1e-6) / copy:5.3f}"
                        f" (err {error:.1e}, grad {grad_error:.1e})"
                    )
                fn = "log_softmax" if log else "softmax"
                say(f"{str(dtype)[6:]} {fn} {shape} dim {dim}: " + " | ".join(row))
                del x, dy, x64, y64, dx64
                torch.cuda.empty_cache()
    report.write(args.out)


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
