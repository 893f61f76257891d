"""strided_staged over inputs broadcast along outer (expanded, stride 0): tiles in the plain order
against outer index fastest (strided.STAGED_OUTER_FASTEST_WHEN_BROADCAST), alternated in one
process, each result checked against torch; fractions of copy bandwidth (3 tensors backward, 2
forward, counted at their logical size).

    python3 benchmarks/broadcast_order_probe.py
"""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from peer_probe import gpu_us  # noqa: E402  (benchmarks/ is the script's folder)

import fastsoftmax  # noqa: E402
from fastsoftmax.backends.cuda import BACKEND, strided  # noqa: E402


def main() -> None:
    copy = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    bw = 2 * copy.numel() / gpu_us(lambda: copy.clone())
    for shape, dim, dtype in [
        ((16, 4096, 4096), 1, torch.bfloat16),
        ((16, 4096, 4096), 1, torch.float32),
        ((64, 1024, 2048), 1, torch.bfloat16),
        ((16, 4096, 4096), 2, torch.bfloat16),
    ]:
        base = torch.randn((1,) + shape[1:], device="cuda", dtype=dtype)
        y = torch.softmax(base.float(), dim).to(dtype).expand(shape)
        dy = torch.randn((1,) + shape[1:], device="cuda", dtype=dtype).expand(shape)
        x = base.expand(shape)
        ref_b = torch._softmax_backward_data(dy.float(), y.float(), dim, torch.float32)
        ref_f = torch.softmax(x.float(), dim)
        floor_b = 3 * y.numel() * y.element_size() / bw
        floor_f = 2 * y.numel() * y.element_size() / bw
        res = {}
        for rep in range(2):
            for flag in (False, True):
                strided.STAGED_OUTER_FASTEST_WHEN_BROADCAST = flag
                BACKEND.clear_plans()
                for be in ("cuda", "auto"):
                    ob = fastsoftmax.softmax_backward(dy, y, dim, backend=be)
                    of = fastsoftmax.softmax(x, dim, backend=be)
                    torch.testing.assert_close(ob.float(), ref_b, rtol=3e-2, atol=3e-3)
                    torch.testing.assert_close(of.float(), ref_f, rtol=2e-2, atol=2e-3)
                    tb = gpu_us(lambda: fastsoftmax.softmax_backward(dy, y, dim, backend=be))
                    tf = gpu_us(lambda: fastsoftmax.softmax(x, dim, backend=be))
                    res.setdefault((flag, be), []).append((floor_b / tb, floor_f / tf))
        tc_b = gpu_us(lambda: torch._softmax_backward_data(dy, y, dim, dtype))
        print(shape, "dim", dim, dtype, "torch bwd %.2f" % (floor_b / tc_b))
        for k, v in res.items():
            print(
                "   outer_fastest=%s backend=%s  bwd %s  fwd %s"
                % (k[0], k[1], " ".join("%.2f" % a for a, _ in v), " ".join("%.2f" % b for _, b in v))
            )


if __name__ == "__main__":
    # no arguments; --help before the GPU check, which it does not need
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
