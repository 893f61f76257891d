"""The shard-local half of the distributed softmax: per-row statistics, normalisation, backward
pieces. CUDA tensors (and CPU tensors under the Triton interpreter) run the Triton kernels of
``_kernels.py``; other CPU tensors, and CUDA tensors where Triton is missing, run torch ops with
the same float32 arithmetic.

All functions take the shard as a 2D ``(rows, n)`` view; outputs are contiguous.
"""

from __future__ import annotations

import functools
import os

import torch

try:
    from ..backends.triton.launch import launch
    from . import _kernels
except ImportError:  # pragma: no cover - exercised only where triton is missing
    _kernels = None

#: Triton chooses the interpreter when the kernels are decorated, i.e. when this module loads.
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"
#: Whether CPU tensors take the Triton kernels (only possible under the interpreter). Tests turn
#: it off to check the torch path as well.
TRITON_ON_CPU = INTERPRETED

#: Elements per tile of the row reductions (a row, or several short ones, per program) and of the
#: elementwise kernels: 16 and 8 KiB of 16-bit data, enough bytes in flight per program to hide
#: memory latency. Under the interpreter, where every program costs milliseconds of Python, tiles
#: are as large as the tensor allows.
ROW_CHUNK = 8192
ELEMENTWISE_BLOCK = 4096
INTERPRETED_TILE = 1 << 16
#: With fewer rows than SMs (decoding), each row's single program is the whole kernel: it takes
#: 32768 elements per chunk with 32 warps (32 registers per thread, as the row tier of the Triton
#: backend holds) so that four times as many bytes are in flight per trip through the loop.
FEW_ROWS_CHUNK = 32768
#: Rows per program of the per-row cross-entropy kernel.
ROWS_PER_PROGRAM = 128

FIELDS_SOFTMAX = 2
FIELDS_CROSS_ENTROPY = 4


@functools.cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _pow2(value: int) -> int:
    return 1 << max(0, (int(value) - 1).bit_length())


def uses_triton(tensor: torch.Tensor) -> bool:
    if _kernels is None:
        return False
    return tensor.is_cuda or (tensor.device.type == "cpu" and TRITON_ON_CPU and INTERPRETED)


def _device_index(tensor: torch.Tensor) -> int:
    return tensor.device.index if tensor.is_cuda else -1


def _launch(kernel, programs: int, tensors: tuple, scalars: tuple, config: dict, like: torch.Tensor) -> None:
    launch(kernel, programs, tensors, scalars, tuple(config.items()), _device_index(like), not like.is_cuda)


def _tile(rows: int, n: int, elements: int, like: torch.Tensor) -> tuple[int, int]:
    """(BLOCK_R, BLOCK_N): up to ``elements`` per tile, whole rows while they fit."""
    if not like.is_cuda:
        elements = INTERPRETED_TILE
    block_n = min(_pow2(max(n, 1)), elements)
    return min(_pow2(max(rows, 1)), max(1, elements // block_n)), block_n


def _reduce_config(rows: int, n: int, like: torch.Tensor) -> tuple[int, dict]:
    """(programs, config) of the row reductions."""
    few_rows = like.is_cuda and rows < _sm_count(like.device.index)
    block_r, block_n = _tile(rows, n, FEW_ROWS_CHUNK if few_rows else ROW_CHUNK, like)
    warps = max(1, min(32 if few_rows else 16, block_r * block_n // 512))
    return -(-rows // block_r), {"BLOCK_R": block_r, "BLOCK_N": block_n, "num_warps": warps}


def _elementwise_config(rows: int, n: int, like: torch.Tensor) -> tuple[int, int, dict]:
    """(programs, column blocks, config) of the elementwise kernels."""
    block_r, block_n = _tile(rows, n, ELEMENTWISE_BLOCK, like)
    column_blocks = -(-n // block_n)
    warps = max(1, min(8, block_r * block_n // 512))
    return (
        -(-rows // block_r) * column_blocks,
        column_blocks,
        {"BLOCK_R": block_r, "BLOCK_N": block_n, "num_warps": warps},
    )


def _safe_max(m: torch.Tensor) -> torch.Tensor:
    return torch.where(m == float("-inf"), 0.0, m)


def row_stats(x: torch.Tensor, target: torch.Tensor | None = None, vocab_start: int = 0) -> torch.Tensor:
    """float32 ``(fields, rows)``: max, sum of exp(x - max) and, given a target (one global class
    index per row), the row's sum and the target logit where this shard owns it (else 0)."""
    rows, n = x.shape
    fields = FIELDS_SOFTMAX if target is None else FIELDS_CROSS_ENTROPY
    stats = torch.empty(fields, rows, device=x.device, dtype=torch.float32)
    if rows == 0:
        return stats
    if uses_triton(x):
        programs, config = _reduce_config(rows, n, x)
        config["WITH_CROSS_ENTROPY"] = target is not None
        target_arg = target if target is not None else stats
        _launch(
            _kernels.row_stats,
            programs,
            (x, stats, target_arg),
            (rows, n, x.stride(0), x.stride(1), vocab_start),
            config,
            x,
        )
        return stats
    xf = x.float()
    if n == 0:
        stats[0].fill_(float("-inf"))
        stats[1:].zero_()
        return stats
    m = xf.amax(dim=1)
    stats[0] = m
    stats[1] = torch.exp(xf - _safe_max(m)[:, None]).sum(dim=1)
    if target is not None:
        stats[2] = xf.sum(dim=1)
        local = target - vocab_start
        owned = (local >= 0) & (local < n)
        picked = xf.gather(1, torch.where(owned, local, 0)[:, None])[:, 0]
        stats[3] = torch.where(owned, picked, 0.0)
    return stats


def merge_stats(stats: torch.Tensor) -> torch.Tensor:
    """(max, sum) of rows whose ranks' statistics are stacked as ``(world, fields, rows)``."""
    m = stats[:, 0].amax(dim=0)
    s = (stats[:, 1] * torch.exp(stats[:, 0] - _safe_max(m))).sum(dim=0)
    return torch.stack((m, s))


def normalise(x: torch.Tensor, stats: torch.Tensor, log: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax (or log-softmax) of the shard given the statistics of every rank, stacked as
    ``(world, fields, rows)`` (world 1: already global). Written to ``out`` (rows with unit
    column stride) or a new contiguous tensor of x's dtype."""
    rows, n = x.shape
    y = torch.empty((rows, n), device=x.device, dtype=x.dtype) if out is None else out
    if rows == 0 or n == 0:
        return y
    world = stats.shape[0]
    if uses_triton(x):
        programs, column_blocks, config = _elementwise_config(rows, n, x)
        config.update(LOG=log, BLOCK_W=_pow2(world))
        _launch(
            _kernels.normalise,
            programs,
            (x, y, stats),
            (rows, n, x.stride(0), x.stride(1), y.stride(0), world, stats.stride(0), column_blocks),
            config,
            x,
        )
        return y
    m, s = merge_stats(stats) if world > 1 else stats[0, :2]
    shifted = x.float() - _safe_max(m)[:, None]
    out = shifted - torch.log(s)[:, None] if log else torch.exp(shifted) / s[:, None]
    return y.copy_(out)


def grad_total(y: torch.Tensor, dy: torch.Tensor, log: bool) -> torch.Tensor:
    """float32 per row of the shard: sum(dy * y) (softmax) or sum(dy) (log-softmax)."""
    rows, n = y.shape
    total = torch.empty(rows, device=y.device, dtype=torch.float32)
    if rows == 0:
        return total
    if uses_triton(y):
        programs, config = _reduce_config(rows, n, y)
        config["LOG"] = log
        _launch(
            _kernels.grad_total, programs, (y, dy, total), (rows, n, y.stride(0), dy.stride(0), dy.stride(1)), config, y
        )
        return total
    summand = dy.float() if log else dy.float() * y.float()
    return total.copy_(summand.sum(dim=1))


def grad_apply(y: torch.Tensor, dy: torch.Tensor, total: torch.Tensor, log: bool) -> torch.Tensor:
    rows, n = y.shape
    dx = torch.empty((rows, n), device=y.device, dtype=y.dtype)
    if rows == 0 or n == 0:
        return dx
    if uses_triton(y):
        programs, column_blocks, config = _elementwise_config(rows, n, y)
        config["LOG"] = log
        _launch(
            _kernels.grad_apply,
            programs,
            (y, dy, dx, total),
            (rows, n, y.stride(0), dy.stride(0), dy.stride(1), dx.stride(0), column_blocks),
            config,
            y,
        )
        return dx
    yf, dyf = y.float(), dy.float()
    out = dyf - torch.exp(yf) * total[:, None] if log else yf * (dyf - total[:, None])
    return dx.copy_(out)


def cross_entropy_rows(
    stats: torch.Tensor, target: torch.Tensor, ignore_index: int, on_target: float, uniform: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row (float32): the whole row's logsumexp and the loss (0 where the target is ignored),
    from every rank's statistics stacked as ``(world, 4, rows)``."""
    world, _, rows = stats.shape
    lse = torch.empty(rows, device=stats.device, dtype=torch.float32)
    loss = torch.empty_like(lse)
    if rows == 0:
        return lse, loss
    if uses_triton(stats):
        block_r = min(ROWS_PER_PROGRAM if stats.is_cuda else INTERPRETED_TILE, _pow2(rows))
        config = {"BLOCK_R": block_r, "BLOCK_W": _pow2(world), "num_warps": 4}
        _launch(
            _kernels.cross_entropy_rows,
            -(-rows // config["BLOCK_R"]),
            (stats, target, lse, loss),
            (rows, world, stats.stride(0), ignore_index, on_target, uniform),
            config,
            stats,
        )
        return lse, loss
    m, s = merge_stats(stats)
    lse.copy_(_safe_max(m) + torch.log(s))
    row_sum, target_logit = stats[:, 2].sum(dim=0), stats[:, 3].sum(dim=0)
    # without smoothing the row's sum takes no part (as torch): a -inf logit would make 0 * -inf
    smoothing = uniform * row_sum if uniform else 0.0
    loss.copy_(torch.where(target == ignore_index, 0.0, lse - on_target * target_logit - smoothing))
    return lse, loss


def cross_entropy_grad(
    x: torch.Tensor,
    lse: torch.Tensor,
    target: torch.Tensor,
    scale: torch.Tensor,
    vocab_start: int,
    ignore_index: int,
    on_target: float,
    uniform: float,
) -> torch.Tensor:
    """d loss / d x of this shard: scale * (softmax - (1 - eps) * onehot - eps / V) per row."""
    rows, n = x.shape
    dx = torch.empty((rows, n), device=x.device, dtype=x.dtype)
    if rows == 0 or n == 0:
        return dx
    if uses_triton(x):
        programs, column_blocks, config = _elementwise_config(rows, n, x)
        _launch(
            _kernels.cross_entropy_grad,
            programs,
            (x, dx, lse, target, scale),
            (
                rows,
                n,
                x.stride(0),
                x.stride(1),
                dx.stride(0),
                vocab_start,
                ignore_index,
                on_target,
                uniform,
                column_blocks,
            ),
            config,
            x,
        )
        return dx
    grad = torch.exp(x.float() - lse[:, None]) - uniform
    columns = torch.arange(vocab_start, vocab_start + n, device=x.device)
    grad -= torch.where(columns[None, :] == target[:, None], on_target, 0.0)
    grad = torch.where((target == ignore_index)[:, None], 0.0, grad * scale[:, None])
    return dx.copy_(grad)
