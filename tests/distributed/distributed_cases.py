"""Checks that run on every rank of a process group (see distributed_harness.py).

Every rank builds the same full tensors from the shared seed, takes its own shard, and compares
its shard of the distributed result with the same slice of the single-process torch result: in
float64 for float32 inputs, and torch's float32 computation for bfloat16 inputs (bf16 tolerances).
"""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F
from reference import gradient_terms

import fastsoftmax
import fastsoftmax.distributed as fd
from fastsoftmax import functional as _functional
from fastsoftmax.distributed import _local

#: Widths of the ranks' shards of a 37-wide softmax dim: uneven, and with an empty shard.
SPLITS = {2: ([25, 12], [37, 0]), 3: ([10, 15, 12], [20, 0, 17])}
TOLERANCES = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-6},
    torch.bfloat16: {"rtol": 2e-2, "atol": 2e-3},
    torch.float16: {"rtol": 2e-3, "atol": 1e-4},
}


@contextlib.contextmanager
def reported_seed(seed: int, rank: int):
    try:
        yield
    except AssertionError as error:
        raise AssertionError(f"rank {rank}, seed {seed} (replay: pass this seed to the test body): {error}") from None


@contextlib.contextmanager
def local_path(triton_on_cpu: bool):
    saved = _local.TRITON_ON_CPU
    _local.TRITON_ON_CPU = triton_on_cpu and _local.INTERPRETED
    try:
        yield
    finally:
        _local.TRITON_ON_CPU = saved


def local_paths(device: torch.device) -> list[bool]:
    # CPU ranks check the torch path and, under the interpreter, the Triton kernels; CUDA ranks
    # always run the Triton kernels.
    if device.type == "cuda" or not _local.INTERPRETED:
        return [True]
    return [True, False]


def reference_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float32 else torch.float32


def shard(full: torch.Tensor, widths: list[int], rank: int, dim: int) -> torch.Tensor:
    start = sum(widths[:rank])
    return full.narrow(dim, start, widths[rank])


def gradient_rounding(y: torch.Tensor, dy: torch.Tensor, dim: int, log: bool, dtype: torch.dtype) -> float:
    """How far one rounding of the forward output (stored in ``dtype``) and of the terms can move
    the gradient, at its worst element: eps * reference.gradient_terms, the sum counted twice."""
    if y.numel() == 0:
        return 0.0
    bound = gradient_terms(y, dy, dim, log, sum_weight=2.0)
    return torch.finfo(dtype).eps * float(bound.nan_to_num(0.0, 0.0, 0.0).max())


def assert_close(actual, expected, dtype, what, torch_result=None, extra_atol: float = 0.0):
    """Within the dtype's tolerances of ``expected``, and also allowed twice the error of
    ``torch_result`` (torch's own answer in that type): a backward through a 16-bit output
    inherits that output's rounding, and a float32 gradient over a long row carries the rounding
    of its row sum (sum(dy) of 50000 terms: about 1e-5 where dy is of order 1)."""
    tolerances = dict(TOLERANCES[dtype])
    tolerances["atol"] += extra_atol
    if torch_result is not None:
        torch_error = (torch_result.to(expected.dtype) - expected).abs().nan_to_num(0.0)
        tolerances["atol"] += 2 * float(torch_error.max()) if torch_error.numel() else 0.0
    torch.testing.assert_close(
        actual.to(expected.dtype), expected, equal_nan=True, msg=lambda m: f"{what}: {m}", **tolerances
    )


SOFTMAX_CASES = [((6, 37), -1), ((3, 37, 4), 1), ((37, 5), 0)]
CROSS_ENTROPY_SHAPES = [(9, 37), (3, 37, 2), (37,)]
#: (reduction, label_smoothing) pairs: every reduction, with and without smoothing.
CROSS_ENTROPY_SETTINGS = [("mean", 0.0), ("sum", 0.0), ("none", 0.2), ("mean", 0.1)]


def interpreted(device: torch.device, triton_on_cpu: bool) -> bool:
    return device.type == "cpu" and triton_on_cpu


def subset(items: list, keep: bool, count: int = 1, start: int = 0) -> list:
    """All items, or ``count`` of them from ``start``. Under the interpreter every kernel launch
    costs tens of milliseconds, so the Triton path there takes a subset of the cases the torch
    path takes in full (the kernels get their own finer tests in the main process)."""
    return items if keep else items[start : start + count]


def softmax_family(rank: int, world: int, device: torch.device, seed: int, quick: bool = False) -> None:
    generator = torch.Generator().manual_seed(seed)
    with reported_seed(seed, rank):
        for triton_on_cpu in local_paths(device):
            full_set = not interpreted(device, triton_on_cpu)
            with local_path(triton_on_cpu):
                for dtype in (torch.float32, torch.bfloat16):
                    f32 = dtype == torch.float32
                    cases = subset(
                        SOFTMAX_CASES, full_set and not quick, 1 if quick else 2 if f32 else 1, 0 if f32 or quick else 1
                    )
                    splits = subset(SPLITS[world], (full_set or f32) and not quick, 1, len(SPLITS[world]) - 1)
                    for shape, dim in cases:
                        for widths in splits:
                            full = (torch.randn(shape, generator=generator) * 4).to(dtype)
                            upstream = torch.randn(shape, generator=generator).to(dtype)
                            for log in (False, True):
                                _check_softmax(
                                    rank,
                                    device,
                                    full,
                                    upstream,
                                    widths,
                                    dim,
                                    log,
                                    dtype,
                                    triton_on_cpu,
                                    f"{'log_' if log else ''}softmax {dtype} {shape} dim={dim} "
                                    f"widths={widths} triton={triton_on_cpu}",
                                )


def _check_softmax(rank, device, full, upstream, widths, dim, log, dtype, triton_on_cpu, what):
    reference_fn = torch.log_softmax if log else torch.softmax
    distributed_fn = fd.log_softmax if log else fd.softmax
    reference_input = full.to(reference_dtype(dtype)).requires_grad_()
    reference = reference_fn(reference_input, dim)
    reference.backward(upstream.to(reference.dtype))
    expected = shard(reference.detach(), widths, rank, dim)
    expected_grad = shard(reference_input.grad, widths, rank, dim)
    torch_input = full.clone().requires_grad_()
    reference_fn(torch_input, dim).backward(upstream)
    torch_grad = shard(torch_input.grad, widths, rank, dim)
    grad_shard = shard(upstream, widths, rank, dim).to(device)
    rounding = gradient_rounding(reference.detach(), upstream, dim, log, dtype)
    options = [
        {"collective": "allgather"},
        {"collective": "allreduce", "check": False},
        {"collective": "allgather", "chunk_rows": 2, "check": False},
    ]
    plain = dtype == torch.float32 and full.ndim == 2 and dim in (-1, 1)
    options = subset(options, plain or not interpreted(device, triton_on_cpu))
    if device.type == "cuda":
        options.append({"collective": "peer", "check": False})
    for option in options:
        x = shard(full, widths, rank, dim).to(device).requires_grad_()
        y = distributed_fn(x, dim, **option)
        assert y.dtype == dtype and y.shape == x.shape
        assert_close(y.cpu(), expected, dtype, f"{what} {option} forward")
        y.backward(grad_shard)
        assert_close(x.grad.cpu(), expected_grad, dtype, f"{what} {option} backward", torch_grad, rounding)


def cross_entropy(rank: int, world: int, device: torch.device, seed: int, quick: bool = False) -> None:
    generator = torch.Generator().manual_seed(seed)
    vocab = 37
    with reported_seed(seed, rank):
        for triton_on_cpu in local_paths(device):
            full_set = not interpreted(device, triton_on_cpu)
            with local_path(triton_on_cpu):
                for dtype in (torch.float32, torch.bfloat16):
                    f32 = dtype == torch.float32
                    shapes = subset(CROSS_ENTROPY_SHAPES, full_set and not quick, 2 if f32 and not quick else 1)
                    for logits_shape in shapes:
                        target_shape = logits_shape[:1] + logits_shape[2:] if len(logits_shape) > 1 else ()
                        splits = subset(
                            SPLITS[world],
                            (full_set or (f32 and logits_shape == shapes[0])) and not quick,
                            1,
                            len(SPLITS[world]) - 1,
                        )
                        for widths in splits:
                            full = (torch.randn(logits_shape, generator=generator) * 3).to(dtype)
                            target = torch.randint(0, vocab, target_shape, generator=generator)
                            if target.numel() > 1:
                                target.view(-1)[::3] = -100  # some ignored rows, as torch's ignore_index
                            for reduction, smoothing in CROSS_ENTROPY_SETTINGS:
                                _check_cross_entropy(
                                    rank,
                                    device,
                                    full,
                                    target,
                                    widths,
                                    reduction,
                                    smoothing,
                                    dtype,
                                    triton_on_cpu,
                                    generator,
                                    f"cross_entropy {dtype} {logits_shape} widths={widths} "
                                    f"{reduction} smoothing={smoothing} triton={triton_on_cpu}",
                                )
        _check_all_ignored(rank, device, world)


def _check_cross_entropy(
    rank, device, full, target, widths, reduction, smoothing, dtype, triton_on_cpu, generator, what
):
    class_dim = 1 if full.ndim >= 2 else 0
    reference_input = full.to(reference_dtype(dtype)).requires_grad_()
    reference = F.cross_entropy(reference_input, target, reduction=reduction, label_smoothing=smoothing)
    upstream = torch.randn(reference.shape, generator=generator, dtype=reference.dtype)
    reference.backward(upstream)
    expected_grad = shard(reference_input.grad, widths, rank, class_dim)
    torch_input = full.clone().requires_grad_()
    torch_loss = F.cross_entropy(torch_input, target, reduction=reduction, label_smoothing=smoothing)
    torch_loss.backward(upstream.to(dtype))
    torch_grad = shard(torch_input.grad, widths, rank, class_dim)
    start = sum(widths[:rank])
    options = [{}, {"collective": "allreduce"}, {"vocab_start": start, "vocab_size": sum(widths), "check": False}]
    plain = dtype == torch.float32 and full.ndim == 2
    for option in subset(options, plain or not interpreted(device, triton_on_cpu)):
        x = shard(full, widths, rank, class_dim).to(device).requires_grad_()
        loss = fd.cross_entropy(x, target.to(device), reduction=reduction, label_smoothing=smoothing, **option)
        assert loss.dtype == dtype and loss.shape == reference.shape, (loss.dtype, loss.shape)
        assert_close(loss.detach().cpu(), reference.detach(), dtype, f"{what} {option} loss", torch_loss.detach())
        loss.backward(upstream.to(device, dtype))
        assert_close(x.grad.cpu(), expected_grad, dtype, f"{what} {option} backward", torch_grad)


def _check_all_ignored(rank, device, world):
    # torch divides by the number of non-ignored targets: 0/0 is NaN, and the gradient is 0.
    x = torch.randn(4, 5, device=device, requires_grad=True)
    loss = fd.cross_entropy(x, torch.full((4,), -100, device=device))
    assert torch.isnan(loss)
    loss.backward()
    assert bool((x.grad == 0).all())


def cross_entropy_edges(rank: int, world: int, device: torch.device, seed: int) -> None:
    """A -inf logit without smoothing (a masked vocabulary: torch gives a finite loss), targets that
    are strided or expanded views, a vocabulary with no classes, and second-order gradients (refused,
    never wrong), on every local path."""
    generator = torch.Generator().manual_seed(seed)
    widths = SPLITS[world][0]
    vocab = sum(widths)
    with reported_seed(seed, rank):
        for triton_on_cpu in local_paths(device):
            with local_path(triton_on_cpu):
                full = torch.randn(6, vocab, generator=generator) * 3
                full[:, 3] = float("-inf")  # a masked class, on the first rank's shard
                full[1, vocab - 1] = float("-inf")  # and one on the last
                labels = torch.randint(4, vocab - 1, (6, 2), generator=generator)
                targets = {
                    "a column of a (6, 2) tensor": labels[:, 0],
                    "an expanded class": torch.tensor(vocab - 2).expand(6),
                    "contiguous": labels[:, 1].contiguous(),
                }
                for name, target in targets.items():
                    for reduction, smoothing in (("none", 0.0), ("mean", 0.0), ("sum", 0.0), ("none", 0.2)):
                        what = f"cross_entropy, -inf logits, target {name}, {reduction} smoothing={smoothing}"
                        reference_input = full.double().requires_grad_()
                        reference = F.cross_entropy(
                            reference_input, target, reduction=reduction, label_smoothing=smoothing
                        )
                        upstream = torch.randn(reference.shape, generator=generator, dtype=torch.float64)
                        reference.backward(upstream)
                        x = shard(full, widths, rank, 1).to(device).requires_grad_()
                        loss = fd.cross_entropy(x, target.to(device), reduction=reduction, label_smoothing=smoothing)
                        assert_close(loss.detach().cpu(), reference.detach(), torch.float32, f"{what} loss")
                        loss.backward(upstream.to(device, torch.float32))
                        expected = shard(reference_input.grad, widths, rank, 1)
                        assert_close(x.grad.cpu(), expected, torch.float32, f"{what} backward")
        # under autocast (CUDA's and the CPU's), torch's cross_entropy is a float32 op: a float32 loss
        target = torch.randint(0, vocab, (4,), generator=generator).to(device)  # drawn alike on every rank
        logits = (torch.randn(4, widths[rank], generator=generator) * 3).to(device, torch.bfloat16)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = fd.cross_entropy(logits.requires_grad_(), target)
            assert loss.dtype == F.cross_entropy(logits.detach()[:, :1], target * 0).dtype == torch.float32
        loss.backward()
        assert logits.grad.dtype == torch.bfloat16
        assert fd.cross_entropy(logits.detach(), target).dtype == torch.bfloat16  # outside autocast: the logits' type
        # softmax and log_softmax under autocast: float32, as fastsoftmax.softmax and torch's CUDA autocast
        # (this device type made one of autocast's float32 types for the check, as CUDA is)
        full = torch.randn(4, vocab, generator=torch.Generator().manual_seed(seed)) * 3  # alike on every rank
        float32_types = _functional.AUTOCAST_TO_FLOAT32
        try:
            _functional.AUTOCAST_TO_FLOAT32 = (device.type,)
            for log in (False, True):
                x = shard(full, widths, rank, 1).to(device, torch.bfloat16).requires_grad_()
                with torch.autocast(device.type, dtype=torch.bfloat16):
                    y = (fd.log_softmax if log else fd.softmax)(x, -1)
                assert y.dtype == torch.float32, f"distributed softmax under autocast gave {y.dtype}"
                reference = (torch.log_softmax if log else torch.softmax)(full.to(torch.bfloat16).double(), -1)
                assert_close(y.detach().cpu(), shard(reference, widths, rank, 1), torch.float32, "under autocast")
                y.sum().backward()
                assert x.grad.dtype == torch.bfloat16
        finally:
            _functional.AUTOCAST_TO_FLOAT32 = float32_types
        empty = torch.randn(3, 0, device=device, requires_grad=True)
        loss = fd.cross_entropy(empty, torch.full((3,), -100, device=device))
        assert torch.isnan(loss), "a vocabulary of no classes, every target ignored: torch's mean is NaN"
        for name, call in (
            ("cross_entropy", lambda x: fd.cross_entropy(x, torch.zeros(4, dtype=torch.int64, device=device))),
            ("softmax", lambda x: (fd.softmax(x, -1) ** 2).sum()),
        ):
            x = torch.randn(4, 5, device=device, requires_grad=True)
            with pytest.raises(RuntimeError, match=f"distributed.{name}: second-order gradients"):
                torch.autograd.grad(call(x), x, create_graph=True)


def collectives(device: torch.device) -> tuple[str, ...]:
    """The collectives a device's tensors take: "peer" needs CUDA tensors."""
    return fd.COLLECTIVES if device.type == "cuda" else tuple(c for c in fd.COLLECTIVES if c != "peer")


def numerics(rank: int, world: int, device: torch.device, seed: int) -> None:
    """Rows of -inf, +inf and NaN give what torch gives on the gathered row."""
    widths = SPLITS[world][0]
    full = torch.randn(5, 37, generator=torch.Generator().manual_seed(seed))
    full[0] = float("-inf")  # all -inf: NaN
    full[1, 3] = float("inf")  # +inf on the first rank: NaN
    full[2, -1] = float("nan")  # NaN on the last rank: NaN
    full[3, : widths[0]] = float("-inf")  # a whole shard of -inf: the other shards decide
    full[4] *= 1e4  # large logits do not overflow
    with reported_seed(seed, rank):
        for triton_on_cpu in local_paths(device):
            with local_path(triton_on_cpu):
                for log in (False, True):
                    for collective in collectives(device):
                        x = shard(full, widths, rank, 1).to(device)
                        y = (fd.log_softmax if log else fd.softmax)(x, collective=collective)
                        expected = (torch.log_softmax if log else torch.softmax)(full.double(), 1)
                        assert_close(y.cpu(), shard(expected, widths, rank, 1), torch.float32, f"log={log}")


def mismatches(rank: int, world: int, device: torch.device) -> None:
    """Ranks that disagree on rows or dtype get a clear error on every rank, not a hang."""
    import pytest

    x = torch.randn(4 + rank, 10, device=device)
    for fn in (fd.softmax, fd.log_softmax):
        with pytest.raises(ValueError, match="shape without the split dim"):
            fn(x)
    with pytest.raises(ValueError, match="shape without the split dim"):
        fd.cross_entropy(x, torch.zeros(4 + rank, dtype=torch.int64, device=device))
    dtype = torch.float32 if rank == 0 else torch.bfloat16
    with pytest.raises(ValueError, match="dtype"):
        fd.softmax(torch.randn(4, 10, device=device, dtype=dtype))
    with pytest.raises(IndexError, match="out of bounds"):
        fd.cross_entropy(torch.randn(4, 10, device=device), torch.full((4,), 10 * world, device=device))
    # argument errors are found before any collective, identically on every rank
    x = torch.randn(4, 10, device=device)
    with pytest.raises(ValueError, match="collective"):
        fd.softmax(x, collective="ring")
    with pytest.raises(ValueError, match="chunk_rows"):
        fd.softmax(x, collective="allreduce", chunk_rows=2)
    with pytest.raises(TypeError, match="floating-point"):
        fd.log_softmax(torch.ones(4, 10, dtype=torch.int64, device=device))
    with pytest.raises(TypeError, match="float64"):
        fd.softmax(x.double())
    with pytest.raises(IndexError):
        fd.softmax(x, dim=2)
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        fd.softmax(x.cpu(), collective="peer")
    with pytest.raises(ValueError, match="serves softmax and log_softmax"):
        fd.cross_entropy(x, torch.zeros(4, dtype=torch.int64, device=device), collective="peer")
    with pytest.raises(ValueError, match="reduction"):
        fd.cross_entropy(x, torch.zeros(4, dtype=torch.int64, device=device), reduction="max")
    with pytest.raises(TypeError, match="class indices"):
        fd.cross_entropy(x, torch.rand(4, 10, device=device))
    with pytest.raises(ValueError, match="target shape"):
        fd.cross_entropy(x, torch.zeros(5, dtype=torch.int64, device=device))
    with pytest.raises(ValueError, match="vocab_start"):
        fd.cross_entropy(
            torch.randn(4, 10, device=device), torch.zeros(4, dtype=torch.int64, device=device), vocab_start=3
        )
    one_rank_mismatches(rank, world, device)


def one_rank_mismatches(rank: int, world: int, device: torch.device) -> None:
    """An argument refused on one rank only, or a setting one rank alone holds: every rank raises,
    the refusing rank its own error and the others a ValueError naming it, rather than waiting on a
    collective the refusing rank never joins."""
    x = torch.randn(4, 10, device=device)
    zeros = torch.zeros(4, dtype=torch.int64, device=device)
    last = rank == world - 1
    refused = "refused its arguments"
    with pytest.raises(TypeError if last else ValueError, match="float64" if last else refused):
        fd.softmax(x.double() if last else x)
    with pytest.raises(ValueError, match="label_smoothing" if last else refused):
        fd.cross_entropy(x, zeros, label_smoothing=2.0 if last else 0.1)
    with pytest.raises(IndexError, match=f"out of bounds for {10 * world} classes \\(on rank {world - 1}\\)"):
        fd.cross_entropy(x, torch.full((4,), 10 * world, device=device) if last else zeros)
    with pytest.raises(ValueError, match="disagree on collective"):
        fd.softmax(x, collective="allreduce" if last else "allgather")
    with pytest.raises(ValueError, match="disagree on chunk_rows"):
        fd.log_softmax(x, chunk_rows=2 if last else None)
    with pytest.raises(ValueError, match="disagree on reduction"):
        fd.cross_entropy(x, zeros, reduction="sum" if last else "mean")
    with pytest.raises(ValueError, match="disagree on the targets"):
        fd.cross_entropy(x, zeros + int(last))
    with pytest.raises(ValueError, match=f"vocab_start=1 on rank {world - 1}"):
        fd.cross_entropy(x, zeros, vocab_start=1 if last else None)
    # and each still computes afterwards, agreeing again
    y = fd.softmax(x)
    assert y.shape == x.shape and torch.isfinite(y).all()


def dtensor_inputs(rank: int, world: int, device: torch.device, seed: int) -> None:
    """fastsoftmax.softmax, log_softmax and softmax_backward (the single-device API) on DTensors:
    replicated, sharded along another dim, and sharded along the softmax's own dim (redistributed
    first), forward and backward through autograd, against float64 on the full tensors."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    mesh = init_device_mesh(device.type, (world,))
    generator = torch.Generator().manual_seed(seed)
    with reported_seed(seed, rank):
        full = (torch.randn(6, 4 * world, 37, generator=generator) * 3).to(device)
        upstream = torch.randn(full.shape, generator=generator).to(device)
        for log in (False, True):
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            reference = full.double().requires_grad_(True)
            expected = (torch.log_softmax if log else torch.softmax)(reference, 2)
            (expected_grad,) = torch.autograd.grad(expected, reference, upstream.double())
            for placement in (Replicate(), Shard(0), Shard(1), Shard(2)):
                what = f"{'log_softmax' if log else 'softmax'} over a DTensor {placement}"
                x = distribute_tensor(full, mesh, [placement]).requires_grad_(True)
                y = op(x, 2)
                assert isinstance(y, DTensor), f"{what}: the result is a {type(y).__name__}"
                assert_close(y.full_tensor(), expected, torch.float32, what)
                dy = distribute_tensor(upstream, mesh, [placement])
                (dx,) = torch.autograd.grad(y, x, dy)
                assert_close(dx.full_tensor(), expected_grad, torch.float32, f"{what}, its gradient")
                direct = fastsoftmax.softmax_backward(dy, y.detach(), 2, log=log)
                assert_close(direct.full_tensor(), expected_grad, torch.float32, f"{what}, softmax_backward")


def everything(rank: int, world: int, device: torch.device, seed: int) -> None:
    softmax_family(rank, world, device, seed)
    cross_entropy(rank, world, device, seed)
    numerics(rank, world, device, seed)
    mismatches(rank, world, device)
    dtensor_inputs(rank, world, device, seed)
    cross_entropy_edges(rank, world, device, seed)


def everything_quick(rank: int, world: int, device: torch.device, seed: int) -> None:
    softmax_family(rank, world, device, seed, quick=True)
    cross_entropy(rank, world, device, seed, quick=True)
    numerics(rank, world, device, seed)
    mismatches(rank, world, device)


def large_shapes(rank: int, world: int, device: torch.device, seed: int) -> None:
    """GPU sizes: long uneven shards (several chunks of the row loops), many rows (several
    chunks of the pipelined forward), decode-sized batches."""
    generator = torch.Generator().manual_seed(seed)
    with reported_seed(seed, rank):
        for rows, vocab in ((3, 128256), (300, 50000), (4096, 3000)):
            widths = [vocab // world + 7] * (world - 1)
            widths.append(vocab - sum(widths))
            for dtype in (torch.float32, torch.bfloat16):
                full = (torch.randn(rows, vocab, generator=generator) * 4).to(dtype)
                upstream = torch.randn(rows, vocab, generator=generator).to(dtype)
                for log in (False, True):
                    _check_softmax(
                        rank,
                        device,
                        full,
                        upstream,
                        widths,
                        1,
                        log,
                        dtype,
                        True,
                        f"{'log_' if log else ''}softmax {dtype} {rows}x{vocab}",
                    )
                    x = shard(full, widths, rank, 1).to(device)
                    fn = fd.log_softmax if log else fd.softmax
                    expected = fn(x, collective="allgather")
                    for chunk_rows in ("auto", 7):
                        # the same kernels per row; tiles (and so summation order) may differ with the rows
                        torch.testing.assert_close(fn(x, chunk_rows=chunk_rows), expected)
                target = torch.randint(0, vocab, (rows,), generator=generator)
                _check_cross_entropy(
                    rank,
                    device,
                    full,
                    target,
                    widths,
                    "mean",
                    0.1,
                    dtype,
                    True,
                    generator,
                    f"cross_entropy {dtype} {rows}x{vocab}",
                )


def split(total: int, world: int) -> list[int]:
    """Uneven widths of ``total`` columns over ``world`` ranks."""
    widths = [total // world + 8 * r for r in range(world - 1)]
    return widths + [total - sum(widths)]


def peer_exchange_small(rank: int, world: int, device: torch.device, seed: int) -> None:
    """collective="peer" on sizes a sanitizer gets through: one row, odd widths (single-element
    packs), an empty shard, more rows than groups of CTAs (rows taken in turn), two calls each."""
    generator = torch.Generator().manual_seed(seed)
    with reported_seed(seed, rank):
        for rows, vocab, widths in (
            (1, 4096, None),
            (3, 5001, None),
            (5, 1000, [1000] + [0] * (world - 1)),
            (600, 20000, None),
        ):
            widths = widths or split(vocab, world)
            for dtype in (torch.float32, torch.bfloat16):
                full = (torch.randn(rows, vocab, generator=generator) * 4).to(dtype)
                _check_peer(rank, device, full, widths, False, f"{rows}x{vocab} {dtype}", calls=2)
        _check_peer(rank, device, full, widths, True, f"{rows}x{vocab} log", calls=1)


def peer_exchange(rank: int, world: int, device: torch.device, seed: int) -> None:
    """collective="peer" (CUDA ranks of one host): decode-sized and long rows, uneven and empty
    shards, misaligned views, more rows than one launch takes, back-to-back calls (the epochs and
    the two slot parities), replays of a captured CUDA graph on new data, against float64 (float32
    inputs) or torch's float32 result on the gathered rows (16-bit inputs); the memory each output
    takes is poisoned with NaN first, so that unwritten elements show."""
    generator = torch.Generator().manual_seed(seed)
    with reported_seed(seed, rank):
        for rows, vocab, widths in (
            (1, 128256, None),
            (8, 151936, None),
            (3, 50257, None),  # odd widths: rows misaligned for 16-byte packs
            (130, 4096, None),
            (4100, 300, None),  # two launches (4096 rows each at most)
            (5, 1000, [1000] + [0] * (world - 1)),  # empty shards
            (64, 400000, None),  # more rows than groups of CTAs: each group takes rows in turn
            (1, 8000000, None),  # float32: a row longer than the whole grid holds on chip
        ):
            widths = widths or split(vocab, world)
            for dtype in (torch.float32, torch.bfloat16, torch.float16):
                full = (torch.randn(rows, vocab, generator=generator) * 4).to(dtype)
                for log in (False, True):
                    _check_peer(rank, device, full, widths, log, f"{rows}x{vocab} {dtype} widths={widths} log={log}")
        # a view one element past a 16-byte boundary (x[:, 1:]), and a softmax over dim 0
        full = (torch.randn(4, 3001, generator=generator) * 4).to(torch.bfloat16)
        widths = split(3001, world)
        x = shard(full, widths, rank, 1)
        padded = torch.cat((torch.zeros(4, 1, dtype=x.dtype), x), 1).to(device)
        for log in (False, True):
            y = (fd.log_softmax if log else fd.softmax)(padded[:, 1:], collective="peer", check=False)
            expected = shard((torch.log_softmax if log else torch.softmax)(full.float(), 1), widths, rank, 1)
            assert_close(y.cpu(), expected, torch.bfloat16, f"peer misaligned view log={log}")
        moved = torch.randn(3001, 3, generator=generator) * 4
        y = fd.softmax(shard(moved, widths, rank, 0).to(device), dim=0, collective="peer", check=False)
        assert_close(y.cpu(), shard(torch.softmax(moved.double(), 0), widths, rank, 0), torch.float32, "peer dim 0")
        _check_peer_graph(rank, world, device, generator)
        # zero rows: nothing to exchange, on every rank
        assert fd.softmax(torch.empty(0, 7, device=device), collective="peer", check=False).shape == (0, 7)


def _poison_next_output(like: torch.Tensor) -> None:
    """Leaves a NaN-filled block of ``like``'s size at the top of the caching allocator, which the
    next allocation of that size on the stream takes."""
    poison = torch.full_like(like, float("nan"), memory_format=torch.contiguous_format)
    del poison


def _check_peer(rank, device, full, widths, log, what, calls=3):
    fn = fd.log_softmax if log else fd.softmax
    reference = (torch.log_softmax if log else torch.softmax)(full.to(reference_dtype(full.dtype)), 1)
    expected = shard(reference, widths, rank, 1)
    x = shard(full, widths, rank, 1).to(device)
    for call in range(calls):  # back to back: epochs advance, slot parities alternate
        _poison_next_output(x)
        y = fn(x, collective="peer", check=False)
        assert y.dtype == x.dtype and y.shape == x.shape and y.is_contiguous()
        assert_close(y.cpu(), expected, full.dtype, f"peer {what} call {call}")
        del y


def _check_peer_graph(rank, world, device, generator):
    """A call captured in a CUDA graph and replayed on new inputs: the epoch lives on the device."""
    widths = [64128] * world
    full = torch.empty(4, sum(widths))
    static = torch.empty(4, widths[rank], device=device, dtype=torch.bfloat16)
    fd.softmax(static.normal_(), collective="peer", check=False)  # maps the exchange memory outside capture
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fd.softmax(static, collective="peer", check=False)
    for replay in range(4):
        full.normal_(generator=generator).mul_(4)
        static.copy_(shard(full, widths, rank, 1).to(torch.bfloat16))
        out.fill_(float("nan"))
        graph.replay()
        expected = shard(torch.softmax(full.to(torch.bfloat16).float(), 1), widths, rank, 1)
        assert_close(out.cpu(), expected, torch.bfloat16, f"peer graph replay {replay}")
