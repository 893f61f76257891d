"""Softmax, log-softmax and cross-entropy over a dimension that is split across the ranks of a
process group (vocabulary parallelism).

Each rank computes the per-row (max, sum of exp(x - max)) of its shard, one collective merges
them by the online-normaliser rule, and each rank normalises its own shard. Only per-row float32
statistics cross the interconnect, never logits.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import functional as _functional
from . import _local

COLLECTIVES = ("allgather", "allreduce", "peer")
#: the device types whose autocast computes cross_entropy in float32 (torch's float32 lists hold it
#: for CUDA and for the CPU alike; softmax only for CUDA)
CROSS_ENTROPY_AUTOCAST_TO_FLOAT32 = ("cuda", "cpu")
#: The collective used when none is named: one all-gather of the (max, sum) pairs, merged
#: locally inside the normalising kernel. Two all-reduces (the max, then the rescaled sums) move
#: fewer bytes at large world sizes but pay two latencies and a rescale between them. "peer"
#: (softmax and log-softmax forward, CUDA ranks of one host) exchanges the pairs through the GPUs'
#: memory inside a single kernel: one launch a call, for decoding.
DEFAULT_COLLECTIVE = "allgather"
REDUCTIONS = ("mean", "sum", "none")

_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

_DTYPE_CODES = {
    dtype: code
    for code, dtype in enumerate(
        (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32)
    )
}
#: Shape entries of the consistency descriptor; longer shapes are folded into the last entry.
_DESCRIBED_DIMS = 6


# --------------------------------------------------------------------------------------------
# Layout: any (tensor, dim) as a 2D (rows, n) view with the split dim last
# --------------------------------------------------------------------------------------------


def _as_rows(x: torch.Tensor, dim: int) -> torch.Tensor:
    """x with ``dim`` moved last, as (rows, n); a view when the strides allow one."""
    if x.ndim == 0:
        return x.reshape(1, 1)
    if dim == x.ndim - 1:  # the usual case, without movedim's host cost
        return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    moved = x.movedim(dim, -1)
    return moved.reshape(math.prod(moved.shape[:-1]), moved.shape[-1])


def _from_rows(y: torch.Tensor, x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.ndim == 0:
        return y.reshape(())
    if dim == x.ndim - 1:
        return y.view(x.shape)
    return y.reshape(x.movedim(dim, -1).shape).movedim(-1, dim)


def _check_floating(x: torch.Tensor, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")


def _check_untransformed(x: torch.Tensor, name: str) -> None:
    """Forward-mode AD and torch.func's transforms would need their own rules with every rank's
    collective inside them: refused, never computed without the tangent or per sample."""
    if _functional.under_transform(x):
        raise NotImplementedError(
            f"fastsoftmax.distributed.{name}: forward-mode AD and torch.func transforms (vmap, grad, jvp, ...) "
            "are not supported; take gradients with torch.autograd (loss.backward())"
        )


def _refuse_second_order(name: str) -> None:
    """A backward asked to build its own graph (create_graph=True): the collective inside it has no
    autograd formula, so a second-order gradient would come out without the other ranks' part."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"fastsoftmax.distributed.{name}: second-order gradients (backward with create_graph=True) are not "
            "supported; the statistics' collective has no autograd formula"
        )


def _check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {COLLECTIVES}, got {collective!r}")


# --------------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------------


def _world(group) -> int:
    return dist.get_world_size(group)


def _descriptor(x: torch.Tensor, dim: int) -> list[int]:
    """What every rank must agree on: rank, split dim, dtype and the shape without the split dim;
    plus this rank's width along the split dim, which may differ."""
    others = [size for axis, size in enumerate(x.shape) if axis != dim]
    if len(others) > _DESCRIBED_DIMS:
        others = others[: _DESCRIBED_DIMS - 1] + [math.prod(others[_DESCRIBED_DIMS - 1 :])]
    others += [-1] * (_DESCRIBED_DIMS - len(others))
    width = x.shape[dim] if x.ndim else 1
    return [x.ndim, dim, _DTYPE_CODES.get(x.dtype, -1), *others, width]


_WIDTH_FIELD = 3 + _DESCRIBED_DIMS
#: after the width: whether the rank refused its own arguments, then the call's settings (which
#: every rank must share: its collective, chunking, reduction, ...), then values worked out on the
#: device (cross_entropy's target range and checksum)
_REFUSED_FIELD = _WIDTH_FIELD + 1
_SETTINGS = 6
_DEVICE_VALUES = 3
_FIRST_SETTING = _REFUSED_FIELD + 1
_FIRST_DEVICE_VALUE = _FIRST_SETTING + _SETTINGS
#: cross_entropy's settings in that order (the last, vocab_start, is each rank's own)
_CROSS_ENTROPY_SETTINGS = ("collective", "reduction", "ignore_index", "label_smoothing", "vocab_size", "vocab_start")


def _exchange_device(x, group) -> torch.device:
    """Where a rank's descriptor travels: its tensor's device, or where the group's backend
    exchanges when the argument is not a tensor at all."""
    if isinstance(x, torch.Tensor):
        return x.device
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _gather_descriptors(
    x, dim: int, group, settings: tuple = (), device_values: torch.Tensor | None = None, refused: bool = False
) -> list[list[int]]:
    """One small all-gather of every rank's descriptor. On CUDA tensors it costs a host-device
    round trip (the result is read on the host), which is what ``check=False`` avoids. A rank that
    refused its arguments still takes part (``refused``), so that the others raise rather than wait."""
    described = [-1] * (_WIDTH_FIELD + 1) if refused else _descriptor(x, dim)
    host = [*described, int(refused), *settings, *[0] * (_SETTINGS - len(settings))]
    device = _exchange_device(x, group)
    mine = torch.tensor(host, dtype=torch.int64).to(device)
    if device_values is None:
        device_values = torch.zeros(_DEVICE_VALUES, dtype=torch.int64)
    mine = torch.cat([mine, device_values.to(device=device, dtype=torch.int64)])
    world = _world(group)
    if world == 1:
        return [mine.tolist()]
    gathered = torch.empty(world * mine.numel(), dtype=torch.int64, device=device)
    _all_gather(gathered, mine, group=group)
    return gathered.view(world, -1).tolist()


def _share_refusal(x, group) -> None:
    """Tell the other ranks, in the descriptors' exchange they are about to make, that this rank
    refused its arguments (where there are other ranks: without a process group there is no one)."""
    if dist.is_available() and dist.is_initialized():
        _gather_descriptors(x, 0, group, refused=True)


def _validate(descriptors: list[list[int]], what: str, setting_names: tuple = ()) -> None:
    for rank, theirs in enumerate(descriptors):
        if theirs[_REFUSED_FIELD]:
            raise ValueError(f"{what}: rank {rank} refused its arguments (its own error says why)")
    first = descriptors[0]
    names = {code: str(dtype).removeprefix("torch.") for dtype, code in _DTYPE_CODES.items()}
    for rank, theirs in enumerate(descriptors[1:], start=1):
        if theirs[0] != first[0] or theirs[1] != first[1]:
            raise ValueError(
                f"{what}: ranks disagree on the number of dimensions or the split dim: rank 0 has "
                f"ndim={first[0]}, dim={first[1]}, rank {rank} has ndim={theirs[0]}, dim={theirs[1]}"
            )
        if theirs[2] != first[2]:
            raise ValueError(
                f"{what}: ranks disagree on the dtype: rank 0 has {names.get(first[2], 'other')}, "
                f"rank {rank} has {names.get(theirs[2], 'other')}"
            )
        if theirs[3:_WIDTH_FIELD] != first[3:_WIDTH_FIELD]:
            shape = [s for s in first[3:_WIDTH_FIELD] if s >= 0]
            theirs_shape = [s for s in theirs[3:_WIDTH_FIELD] if s >= 0]
            raise ValueError(
                f"{what}: ranks disagree on the shape without the split dim: {shape} on rank 0 and "
                f"{theirs_shape} on rank {rank}"
            )
        for index, name in enumerate(setting_names):
            field = _FIRST_SETTING + index
            if theirs[field] != first[field]:
                raise ValueError(f"{what}: ranks disagree on {name} (rank 0 and rank {rank} differ)")


def _chunk_code(chunk_rows) -> int:
    if chunk_rows is None:
        return -1
    return -2 if chunk_rows == "auto" else chunk_rows


def _stack_stats(stats: torch.Tensor, group, collective: str, async_op: bool = False):
    """Start merging per-rank statistics ``(fields, rows)``. Returns (result, work): ``result`` is
    ``(world, fields, rows)`` for the all-gather variant, ``(1, fields, rows)`` already global for
    the all-reduce variant; ``work`` (or None) must be waited on before ``result`` is read."""
    world = _world(group)
    if world == 1:
        return stats.unsqueeze(0), None
    if collective == "allgather":
        # Gathered as a concatenation along dim 0, which every backend accepts (gloo takes no
        # stacked output), then viewed as a stack.
        gathered = torch.empty(
            (world * stats.shape[0],) + tuple(stats.shape[1:]), dtype=stats.dtype, device=stats.device
        )
        work = _all_gather(gathered, stats, group=group, async_op=async_op)
        return gathered.view((world,) + tuple(stats.shape)), work
    return _allreduce_stats(stats, group), None


def _allreduce_stats(stats: torch.Tensor, group) -> torch.Tensor:
    # The max first; each rank then rescales its sum (and only its sum: the other fields are
    # plain sums) to the global max, and one sum-all-reduce adds everything else.
    local_max = stats[0].clone()
    dist.all_reduce(stats[0], op=dist.ReduceOp.MAX, group=group)
    stats[1].mul_(torch.exp(local_max - _local._safe_max(stats[0])))
    dist.all_reduce(stats[1:], op=dist.ReduceOp.SUM, group=group)
    return stats.unsqueeze(0)


def _all_reduce_sum(total: torch.Tensor, group) -> torch.Tensor:
    if _world(group) > 1:
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
    return total


# --------------------------------------------------------------------------------------------
# Softmax and log-softmax
# --------------------------------------------------------------------------------------------


def _auto_chunk_rows(x: torch.Tensor, group) -> int | None:
    """Rows per chunk such that a chunk of the shard is a third of L2: the chunk being
    normalised and the next one, whose statistics pass is issued first, both fit. Every rank must
    cut the rows alike (each chunk is one collective over the same rows), and shards may differ in
    width, so the ranks agree on the smallest choice: one all-reduce of 4 bytes, read on the host."""
    if not x.is_cuda:
        return None
    l2 = getattr(torch.cuda.get_device_properties(x.device), "L2_cache_size", 50 << 20)
    row_bytes = max(1, x.shape[1] * x.element_size())
    choice = torch.tensor([max(1, l2 // 3 // row_bytes)], dtype=torch.int64, device=x.device)
    if _world(group) > 1:
        dist.all_reduce(choice, op=dist.ReduceOp.MIN, group=group)
    return int(choice.item())


def _forward_rows(x: torch.Tensor, group, log: bool, collective: str, chunk_rows) -> torch.Tensor:
    if collective == "peer":
        # imported at first use: it loads the CUDA backend, 50 ms that calls on the other
        # collectives (and CPU tensors) never need
        from . import _peer

        return _peer.forward(x, group, log)
    rows = x.shape[0]
    if chunk_rows == "auto":
        chunk_rows = _auto_chunk_rows(x, group)
    if chunk_rows is None or chunk_rows >= rows or _world(group) == 1:
        merged, work = _stack_stats(_local.row_stats(x), group, collective)
        if work is not None:
            work.wait()
        return _local.normalise(x, merged, log)
    # Pipelined: chunk i+1's statistics pass runs while chunk i's all-gather is in flight, and
    # chunk i is normalised right after, while its rows are still in L2.
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    pending = None
    for start in range(0, rows + chunk_rows, chunk_rows):
        current = None
        if start < rows:
            chunk = slice(start, min(start + chunk_rows, rows))
            merged, work = _stack_stats(_local.row_stats(x[chunk]), group, collective, async_op=True)
            current = (chunk, merged, work)
        if pending is not None:
            chunk, merged, work = pending
            work.wait()
            _local.normalise(x[chunk], merged, log, out=y[chunk])
        pending = current
    return y


def _backward_rows(y: torch.Tensor, dy: torch.Tensor, group, log: bool) -> torch.Tensor:
    total = _all_reduce_sum(_local.grad_total(y, dy, log), group)
    return _local.grad_apply(y, dy, total, log)


class _DistributedSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, group, log, collective, chunk_rows):
        rows = _as_rows(x, dim)
        y = _from_rows(_forward_rows(rows, group, log, collective, chunk_rows), x, dim)
        ctx.save_for_backward(y)
        ctx.dim, ctx.group, ctx.log = dim, group, log
        return y

    @staticmethod
    def backward(ctx, dy):
        _refuse_second_order("log_softmax" if ctx.log else "softmax")
        (y,) = ctx.saved_tensors
        dx = _backward_rows(_as_rows(y, ctx.dim), _as_rows(dy, ctx.dim), ctx.group, ctx.log)
        return _from_rows(dx, y, ctx.dim), None, None, None, None, None


def _softmax_arguments(x, dim, name: str, collective, chunk_rows) -> int:
    """This rank's own checks of a softmax call's arguments; the normalised dim."""
    _check_floating(x, name)
    _check_untransformed(x, name)
    _check_collective(collective)
    if chunk_rows not in (None, "auto") and not (isinstance(chunk_rows, int) and chunk_rows > 0):
        raise ValueError(f"chunk_rows must be None, 'auto' or a positive int, got {chunk_rows!r}")
    if chunk_rows is not None and collective != "allgather":
        raise ValueError(
            "chunk_rows overlaps each chunk's all-gather with the next chunk's statistics; "
            "use collective='allgather' with it"
        )
    if x.dtype == torch.float64:
        raise TypeError(f"{name}: float64 is not supported (statistics are float32); use float32, float16 or bfloat16")
    if collective == "peer" and not x.is_cuda:
        raise ValueError(
            f"{name}: collective='peer' exchanges through GPU memory and needs CUDA tensors, got {x.device}"
        )
    return _functional._normalize_dim(dim, x.ndim)


_LOCAL_REFUSALS = (TypeError, ValueError, IndexError, NotImplementedError)


def _softmax(x, dim, group, log, collective, chunk_rows, check):
    name = "log_softmax" if log else "softmax"
    try:
        dim = _softmax_arguments(x, dim, name, collective, chunk_rows)
    except _LOCAL_REFUSALS:
        if check:  # the other ranks are about to exchange descriptors: they must hear of it
            _share_refusal(x, group)
        raise
    if _functional.autocasts_to_float32(x):
        # as fastsoftmax.softmax and torch's autocast: softmax and log_softmax are float32 ops
        # (log-probabilities keep float32's digits); the gradient comes back through the cast
        x = x.float()
    if check:
        settings = (COLLECTIVES.index(collective), _chunk_code(chunk_rows))
        descriptors = _gather_descriptors(x, dim, group, settings)
        _validate(descriptors, f"fastsoftmax.distributed.{name}", ("collective", "chunk_rows"))
    if not (x.requires_grad and torch.is_grad_enabled()):
        # Inference (decoding) skips autograd's bookkeeping: a few microseconds per call.
        return _from_rows(_forward_rows(_as_rows(x, dim), group, log, collective, chunk_rows), x, dim)
    return _DistributedSoftmax.apply(x, dim, group, log, collective, chunk_rows)


def softmax(
    x: torch.Tensor,
    dim: int = -1,
    group=None,
    *,
    collective: str = DEFAULT_COLLECTIVE,
    chunk_rows: int | str | None = None,
    check: bool = True,
) -> torch.Tensor:
    """This rank's shard of the softmax of a tensor split along ``dim`` over ``group``.

    ``x`` is this rank's shard (shards may be uneven, or empty). ``collective`` is
    ``"allgather"`` (one all-gather of 8 bytes per row per rank, merged locally),
    ``"allreduce"`` (an all-reduce of the max, then of the rescaled sums) or ``"peer"`` (CUDA
    ranks of one host: the pairs exchanged through the GPUs' memory inside one kernel, one launch
    a call; the backward all-reduces as ``"allgather"`` does). ``chunk_rows`` (None,
    an int or ``"auto"``: sized to L2) processes rows in chunks whose all-gather overlaps the next
    chunk's statistics pass. ``check`` all-gathers a small shape/dtype descriptor first and raises
    if ranks disagree; it costs one extra collective and, on CUDA, a host-device round trip.
    """
    return _softmax(x, dim, group, False, collective, chunk_rows, check)


def log_softmax(
    x: torch.Tensor,
    dim: int = -1,
    group=None,
    *,
    collective: str = DEFAULT_COLLECTIVE,
    chunk_rows: int | str | None = None,
    check: bool = True,
) -> torch.Tensor:
    """This rank's shard of the log-softmax of a tensor split along ``dim`` over ``group``; the
    arguments are those of :func:`softmax`."""
    return _softmax(x, dim, group, True, collective, chunk_rows, check)


# --------------------------------------------------------------------------------------------
# Cross-entropy
# --------------------------------------------------------------------------------------------


class _DistributedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, logits, target, group, ignore_index, reduction, label_smoothing, vocab_start, vocab_size, collective
    ):
        rows = _as_rows(logits, 1 if logits.ndim >= 2 else 0)
        # the kernels index the targets by row: one contiguous run (a view such as labels[:, 0]
        # or an expanded target keeps its strides through reshape)
        flat_target = target.reshape(-1).contiguous()
        on_target = 1.0 - float(label_smoothing)
        uniform = float(label_smoothing) / vocab_size if vocab_size else 0.0
        merged, work = _stack_stats(_local.row_stats(rows, flat_target, vocab_start), group, collective)
        if work is not None:
            work.wait()
        lse, loss = _local.cross_entropy_rows(merged, flat_target, ignore_index, on_target, uniform)
        count = None
        if reduction == "none":
            out = loss.reshape(target.shape)
        elif reduction == "sum":
            out = loss.sum()
        else:
            count = (flat_target != ignore_index).sum()
            out = loss.sum() / count
        ctx.save_for_backward(logits, flat_target, lse, count)
        ctx.settings = (ignore_index, reduction, on_target, uniform, vocab_start)
        # under autocast torch's cross_entropy is a float32 op: its loss comes back in float32 (the
        # loss is float32 here already; the gradient still comes back in the logits' type)
        if _functional.autocasts_to_float32(logits, CROSS_ENTROPY_AUTOCAST_TO_FLOAT32):
            return out
        return out.to(logits.dtype)

    @staticmethod
    def backward(ctx, grad):
        _refuse_second_order("cross_entropy")
        logits, flat_target, lse, count = ctx.saved_tensors
        ignore_index, reduction, on_target, uniform, vocab_start = ctx.settings
        dim = 1 if logits.ndim >= 2 else 0
        rows = _as_rows(logits, dim)
        grad = grad.float()
        if reduction == "none":
            scale = grad.reshape(-1).contiguous()
        elif reduction == "sum":
            scale = grad.expand(rows.shape[0]).contiguous()
        else:
            scale = (grad / count).expand(rows.shape[0]).contiguous()
        dx = _local.cross_entropy_grad(rows, lse, flat_target, scale, vocab_start, ignore_index, on_target, uniform)
        return _from_rows(dx, logits, dim), None, None, None, None, None, None, None, None


def _cross_entropy_arguments(logits, target, collective, reduction, label_smoothing) -> tuple[int, torch.Tensor]:
    """This rank's own checks of a cross_entropy call's arguments; the class dim and the targets
    as int64."""
    _check_floating(logits, "cross_entropy")
    _check_untransformed(logits, "cross_entropy")
    _check_collective(collective)
    if collective == "peer":
        raise ValueError(
            "cross_entropy: collective='peer' serves softmax and log_softmax; use 'allgather' or 'allreduce'"
        )
    if logits.dtype == torch.float64:
        raise TypeError("cross_entropy: float64 is not supported (statistics are float32)")
    if not isinstance(target, torch.Tensor) or target.is_floating_point() or target.is_complex():
        raise TypeError(
            "cross_entropy: target must be a tensor of class indices (probability targets are not supported)"
        )
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if logits.ndim == 0:
        raise ValueError("cross_entropy: logits must have at least one dimension (the classes)")
    dim = 1 if logits.ndim >= 2 else 0
    expected = tuple(logits.shape[:dim] + logits.shape[dim + 1 :])
    if tuple(target.shape) != expected:
        raise ValueError(
            f"cross_entropy: target shape {tuple(target.shape)} does not match the logits' shape "
            f"without the class dim {expected}"
        )
    if target.device != logits.device:
        raise ValueError(f"cross_entropy: target is on {target.device}, logits on {logits.device}")
    return dim, target.to(torch.int64)


def _target_summary(target: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """On the device, without a host read: the smallest and largest target not ignored (0 and -1
    when none is), and a checksum of all of them in order, so that ranks holding different targets
    are told apart."""
    flat = target.reshape(-1)
    kept = flat != ignore_index
    smallest = torch.where(kept, flat, torch.iinfo(torch.int64).max).amin() if flat.numel() else flat.new_tensor(0)
    largest = torch.where(kept, flat, -1).amax() if flat.numel() else flat.new_tensor(-1)
    order = torch.arange(1, flat.numel() + 1, device=flat.device, dtype=torch.int64)
    return torch.stack([torch.where(largest < 0, 0, smallest), largest, (flat * order).sum()])


def _check_vocabulary(descriptors: list[list[int]], widths: list[int]) -> None:
    """The vocab_start and vocab_size given on each rank (-1: not given) against
    the shards' widths, judged alike on every rank."""
    size_field, start_field = (_FIRST_SETTING + _CROSS_ENTROPY_SETTINGS.index(n) for n in ("vocab_size", "vocab_start"))
    for rank, theirs in enumerate(descriptors):
        start = sum(widths[:rank])
        if theirs[start_field] not in (-1, start):
            raise ValueError(
                f"cross_entropy: vocab_start={theirs[start_field]} on rank {rank}, but the shards before it "
                f"hold {start} classes"
            )
        if theirs[size_field] not in (-1, sum(widths)):
            raise ValueError(
                f"cross_entropy: vocab_size={theirs[size_field]} on rank {rank}, but the shards hold "
                f"{sum(widths)} classes"
            )


def _check_targets(descriptors: list[list[int]], vocab_size: int) -> None:
    """Every rank's targets in range and the same on every rank, judged alike on every rank."""
    smallest, largest, checksum = range(_FIRST_DEVICE_VALUE, _FIRST_DEVICE_VALUE + _DEVICE_VALUES)
    for rank, theirs in enumerate(descriptors):
        if theirs[smallest] < 0 or theirs[largest] >= vocab_size:
            raise IndexError(f"cross_entropy: target out of bounds for {vocab_size} classes (on rank {rank})")
        if theirs[checksum] != descriptors[0][checksum]:
            raise ValueError(f"cross_entropy: ranks disagree on the targets (rank 0 and rank {rank} differ)")


def cross_entropy(
    logits_shard: torch.Tensor,
    target: torch.Tensor,
    group=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    *,
    vocab_start: int | None = None,
    vocab_size: int | None = None,
    collective: str = DEFAULT_COLLECTIVE,
    check: bool = True,
) -> torch.Tensor:
    """``torch.nn.functional.cross_entropy`` of logits whose class dim is split over ``group``.

    ``logits_shard`` is this rank's slice of the classes (dim 1, or dim 0 for a single row of
    logits), in rank order; ``target`` holds global class indices. ``vocab_start`` (the global
    index of this shard's first class) and ``vocab_size`` (all classes) are found with one small
    all-gather of the shard widths when either is not given; with both given and
    ``check=False`` a call makes exactly one collective (and none in backward).
    """
    exchanging = check or vocab_start is None or vocab_size is None
    try:
        dim, target = _cross_entropy_arguments(logits_shard, target, collective, reduction, label_smoothing)
    except _LOCAL_REFUSALS:
        if exchanging:  # the other ranks are about to exchange descriptors: they must hear of it
            _share_refusal(logits_shard, group)
        raise
    if exchanging:
        settings = (
            COLLECTIVES.index(collective),
            REDUCTIONS.index(reduction),
            ignore_index,
            round(float(label_smoothing) * 2**30),
            -1 if vocab_size is None else vocab_size,
            -1 if vocab_start is None else vocab_start,  # each rank's own: checked against the widths
        )
        descriptors = _gather_descriptors(
            logits_shard, dim, group, settings, _target_summary(target, ignore_index) if check else None
        )
        if check:
            _validate(
                descriptors,
                "fastsoftmax.distributed.cross_entropy",
                _CROSS_ENTROPY_SETTINGS[:-1],  # vocab_start differs by rank: _check_vocabulary
            )
        widths = [d[_WIDTH_FIELD] for d in descriptors]
        rank = dist.get_rank(group) if _world(group) > 1 else 0
        found_start, found_size = sum(widths[:rank]), sum(widths)
        if check:
            _check_vocabulary(descriptors, widths)
        vocab_start = found_start if vocab_start is None else vocab_start
        vocab_size = found_size if vocab_size is None else vocab_size
        if check:
            _check_targets(descriptors, vocab_size)
    return _DistributedCrossEntropy.apply(
        logits_shard, target, group, ignore_index, reduction, label_smoothing, vocab_start, vocab_size, collective
    )
