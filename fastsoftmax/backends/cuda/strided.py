"""Softmax over a strided axis (``inner > 1`` in the canonical ``(outer, n, inner)`` view): its
tiers, their choice, their kernel instances and their plans, apart from the row tiers.

Kernel argument order (every parameter 8 bytes, see ``instances.py``): pointers, workspace, n,
inner, (stride 0, stride 1) of each tensor, chunk, splits, stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .instances import CXX_TYPES, DTYPES, WARP_PACK_SIZES, next_pow2

#: the tiers of this module, in the order tier choice considers them
TIERS = ("strided",)

STRIDED_MAX_THREADS = 256
#: packs along the contiguous axis: 16 bytes, or single elements for unaligned views (and pairs
#: of 16-bit elements for views aligned to 4 bytes)
STRIDED_PACK_SIZES = WARP_PACK_SIZES
#: a warp covers this many bytes of one row along the contiguous axis (a cache line)
STRIDED_ROW_BYTES = 128
#: when the tiles of a problem fill less than this many waves of resident blocks, n is split over
#: blocks (two kernels) until they do
STRIDED_WAVES = 2
#: a chunk of n gives each thread at least this many rows
STRIDED_MIN_ROWS_PER_THREAD = 8


def choose_tier(outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, limits) -> str:
    return "strided"


def supports(tier: str, outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, limits) -> bool:
    return tier in TIERS and inner > 1


@dataclass(frozen=True)
class StridedInstance:
    """One strided kernel with every template parameter fixed."""

    dtype: torch.dtype
    backward: bool
    log: bool
    pack: int = 1
    tier = "strided"
    header = "strided_tier.cuh"

    @property
    def name(self) -> str:
        tag = CXX_TYPES[self.dtype][1]
        fn = "logsoftmax" if self.log else "softmax"
        return f"fs_strided_{fn}_{'bwd' if self.backward else 'fwd'}_{tag}_p{self.pack}"

    def wrapper(self) -> str:
        t = CXX_TYPES[self.dtype][0]
        log = "true" if self.log else "false"
        # every parameter is 8 bytes (pointers and i64), stage included: the launcher's argument
        # slots are uniform
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, float* partials, i64 n, i64 inner, i64 ys0, "
                f"i64 ys1, i64 dys0, i64 dys1, i64 dxs0, i64 dxs1, i64 chunk, i64 splits, i64 stage"
            )
            args = "y, dy, dx, partials, n, inner, ys0, ys1, dys0, dys1, dxs0, dxs1, chunk, splits, (int)stage"
        else:
            params = (
                f"const {t}* x, {t}* y, float* partials, i64 n, i64 inner, i64 xs0, i64 xs1, i64 ys0, "
                f"i64 ys1, i64 chunk, i64 splits, i64 stage"
            )
            args = "x, y, partials, n, inner, xs0, xs1, ys0, ys1, chunk, splits, (int)stage"
        fn = "strided_backward" if self.backward else "strided_forward"
        return (
            f'extern "C" __global__ void __launch_bounds__({STRIDED_MAX_THREADS}) {self.name}({params}) {{\n'
            f"    {fn}<{t}, {self.pack}, {log}>({args});\n}}\n"
        )


def all_instances():
    """Every strided kernel the backend may launch: what CI compiles."""
    return [
        StridedInstance(dtype, backward, log, pack)
        for dtype in DTYPES
        for backward in (False, True)
        for log in (False, True)
        for pack in STRIDED_PACK_SIZES[dtype]
    ]


def _widest_pack(packs, align: int, itemsize: int, fits) -> int:
    return next(p for p in packs if align % (p * itemsize) == 0 and fits(p))


def build(load, key):
    """The plan of a problem key with inner > 1 (see ``plans.build``)."""
    from .launch import Kernel, device_facts
    from .plans import torch_device

    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    if tier not in TIERS:
        raise ValueError(f"tier {tier!r} of backend 'cuda' needs inner == 1; use one of {TIERS} for inner > 1")
    facts = device_facts(dev)
    itemsize = CXX_TYPES[dtype][2]
    # the widest pack every pointer and stride is aligned to, and no wider than the columns
    pack = _widest_pack(STRIDED_PACK_SIZES[dtype], align, itemsize, lambda p: p <= inner or p == 1)
    inst = StridedInstance(dtype, backward, log, pack)
    width = min(32, next_pow2(-(-inner // pack)), max(1, STRIDED_ROW_BYTES // (pack * itemsize)))
    # slices fill the block up to STRIDED_MAX_THREADS, no more than n needs (kUnroll rows each)
    slices = min(STRIDED_MAX_THREADS // width, max(max(1, 32 // width), next_pow2(-(-n // 4))))
    kernel = Kernel(load(inst, dev), inst.name, dev, 15 if backward else 12, width, slices)
    tiles = outer * -(-inner // (width * pack))
    resident = max(1, kernel.blocks_per_sm()) * facts.sm_count
    splits = 1
    if tiles < STRIDED_WAVES * resident:
        most = max(1, n // (slices * STRIDED_MIN_ROWS_PER_THREAD))
        splits = min(most, -(-STRIDED_WAVES * resident // tiles))
    chunk = -(-n // splits)
    splits = -(-n // chunk)
    grid = tiles * splits
    flat = tuple(s for tensor_strides in strides for s in tensor_strides)
    if splits == 1:
        return kernel.bound(grid, (0, n, inner) + flat + (n, 1, 0))
    workspace = tiles * splits * kernel.block_x * pack * (1 if backward else 2)
    device = torch_device(dev)
    middle = (n, inner) + flat + (chunk, splits)

    def run(pointers, stream):
        scratch = torch.empty(workspace, dtype=torch.float32, device=device)  # held over both launches
        ws = scratch.data_ptr()
        kernel.launch(grid, stream, pointers + (ws,) + middle + (1,))
        kernel.launch(grid, stream, pointers + (ws,) + middle + (2,))
        del scratch  # only now: the allocator reuses it in stream order, after our kernels

    return run
