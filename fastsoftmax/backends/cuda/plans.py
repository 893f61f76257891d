"""Plans: for one problem, the kernels to launch, their grids and every argument but the pointers.

A problem is a tier applied to a canonical view ``(outer, n, inner)`` (see ``backends/base.py``)
with given strides, dtype, direction, alignment, device and tuning. Its plan is built once and
called as ``plan(pointers, stream)``, with the pointers of the call's tensors: ``(x, y)`` forward,
``(y, dy, dx)`` backward. Forward and backward share every plan builder: the kernels of both
directions take the same arguments, the backward's with one more tensor.

Argument order of the kernels (every parameter 8 bytes, see ``instances.py``):

* one-kernel row tiers: pointers, rows, n, the pitch of each tensor;
* split_row: partials  = inputs, workspace, n, the pitch of each input, chunk, splits;
             finish    = pointers, workspace, n, the pitch of each tensor, chunk, splits;
* grid_row:  pointers, workspace, rows, n, the pitch of each tensor, shared-memory slots (in teams:
  and the CTAs a team);
* cluster_stream: as grid_row without the workspace;
* inner > 1: see ``strided.py``.
"""

from __future__ import annotations

import functools

import torch

from . import strided, tiers
from .instances import (
    BLOCK_REGS_PACK_SIZES,
    BLOCK_SIZES,
    CLUSTER_KEPT_MAX_HELD,
    CLUSTER_PORTABLE_MAX,
    CLUSTER_STATIC_SMEM,
    COLUMN_STREAM_STATIC_SMEM,
    CXX_TYPES,
    FLAT_ROWS_THREADS,
    FLAT_ROWS_TIGHT_MAX_COLS,
    GRID_ROW_STATIC_SMEM,
    GRID_ROW_THREADS,
    PACK_SIZES,
    SPLIT_ROW_ALIGN,
    SPLIT_ROW_BLOCK,
    WARP_PACK_SIZES,
    WARP_TIER_BLOCK,
    WARP_TIER_MAX_COLS,
    WINDOW_PACK,
    GridRowShape,
    Instance,
    block_regs_max_cols,
    cluster_capped,
    cluster_grid,
    cluster_keeps,
    cluster_max_cols,
    cluster_shape,
    cluster_stagger,
    cluster_stream_per_sm,
    cluster_stream_persistent,
    cluster_stream_shape,
    cluster_stream_stagger,
    flat_rows_per_lane,
    flat_rows_shape,
    flat_rows_spread,
    flat_rows_tight_slots,
    grid_row_dynamic_smem,
    grid_row_instance,
    grid_row_team_shape,
    grid_row_team_workspace,
    grid_row_workspace,
    next_pow2,
    warp_long_row,
    warp_shape,
    widest_pack,
)
from .launch import Kernel, device_facts, stream_workspace, torch_device

#: the bit of a call's alignment that says its pointers lie at different offsets within 16 bytes
#: (set only where the low bits are not all zero, so that every test of the low bits reads as before)
PHASES_DIFFER = 16


def pointer_phases_differ(pointers) -> int:
    """PHASES_DIFFER where the pointers do not all share one offset within 16 bytes, else 0."""
    first = pointers[0] if pointers else 0
    return PHASES_DIFFER if any((pointer ^ first) & 15 for pointer in pointers) else 0


def alignment(pointers, strides, itemsize: int, outer: int) -> int:
    """The largest power of two up to 16 that every pointer and every byte stride divides (the
    outer stride only counts when there is more than one row; a step along inner not at all: a
    stepped tensor is read in packs of the span its elements lie in, see strided.build), as its
    low four bits (0: 16 bytes), with PHASES_DIFFER added where the pointers' offsets within 16
    bytes differ (the strides are in the plan's key themselves)."""
    bits = 0
    for pointer in pointers:
        bits |= pointer
    for tensor_strides in strides:
        if outer > 1:
            bits |= tensor_strides[0] * itemsize
        for stride in tensor_strides[1:2]:
            bits |= stride * itemsize
    return (bits & 15) | pointer_phases_differ(pointers)


def rows_alike(align: int, pitches, itemsize: int, outer: int) -> bool:
    """Whether every row of every tensor of a call starts at the same offset within 16 bytes: the
    pointers' offsets agree (no PHASES_DIFFER in ``align``) and, with more than one row, so do the
    pitches'."""
    return not align & PHASES_DIFFER and (outer == 1 or len({p * itemsize & 15 for p in pitches}) == 1)


def build(load, key):
    """The plan of ``key`` = (tier, dtype, outer, n, inner, strides, log, backward, align, device,
    tuning); ``load(instance, device)`` returns the loaded cuda.core kernel of an instance."""
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    itemsize = CXX_TYPES[dtype][2]
    if align % itemsize:
        # (torch's own tensors cannot be so; memory handed over from elsewhere, e.g. by DLPack, can)
        raise ValueError(
            f"a {str(dtype).removeprefix('torch.')} tensor of this call starts at an address that is not a "
            f"multiple of its element size ({itemsize} bytes); no kernel can read its elements"
        )
    if inner != 1:
        return strided.build(load, key)
    if tier not in tiers.ROW_TIERS:
        raise ValueError(
            f"tier {tier!r} of backend 'cuda' handles rows only with inner > 1; "
            f"rows (inner == 1) go to one of {tiers.ROW_TIERS}"
        )
    pitches = tuple(s[0] for s in strides)
    if tier == "split_row":
        return _split_row(load, dtype, outer, n, pitches, log, backward, align, dev, tuning)
    if tier == "cluster":
        return _cluster(load, dtype, outer, n, pitches, log, backward, align, dev, tuning)
    if tier == "grid_row":
        return _grid_row(load, dtype, outer, n, pitches, log, backward, dev, tuning)
    if tier == "cluster_stream":
        return _cluster_stream(load, dtype, outer, n, pitches, log, backward, dev, tuning)
    if tier == "flat_rows":
        return _flat_rows(load, dtype, outer, n, pitches, log, backward, dev, tuning)
    kernel, grid = _row_kernel(load, tier, dtype, outer, n, log, backward, align, dev, tuning)
    return kernel.bound(grid, (outer, n) + pitches)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _row_kernel(load, tier, dtype, outer, n, log, backward, align, dev, tuning) -> tuple[Kernel, int]:
    """The kernel and grid of a one-kernel row tier."""
    itemsize = CXX_TYPES[dtype][2]
    nargs = 8 if backward else 6
    facts = device_facts(dev)
    if tier == "warp":
        longest = tiers.warp_max_cols(dtype, backward)
        if n > longest:
            raise ValueError(f"tier 'warp' holds rows of at most {longest} columns ({dtype}), not {n}")
        pack = widest_pack(WARP_PACK_SIZES[dtype], align, itemsize)
        # rows of up to WARP_TIER_MAX_COLS keep to its instances, windows included (the long rows' windows,
        # unmeasured, only where the tier is forced onto longer rows off 16-byte boundaries)
        widest = longest if warp_long_row(n, itemsize, backward) else WARP_TIER_MAX_COLS
        pack, span, window = _window(tier, dtype, backward, n, pack, tuning, widest)
        cols, group, rows = warp_shape(
            span,
            pack,
            itemsize,
            sector_groups=tiers.takes_sector_groups(tuning),
            rows=tuning.warp_rows,
            backward=backward,
            window=window,
            lanes=tuning.warp_lanes,
        )
        inst = Instance("warp", dtype, backward, log, pack, cols, group, rows, window=window)
        rows_per_block = WARP_TIER_BLOCK // group * rows
        return Kernel(load(inst, dev), inst.name, dev, nargs, WARP_TIER_BLOCK), -(-outer // rows_per_block)
    if tier == "block_regs":
        pack = widest_pack(BLOCK_REGS_PACK_SIZES[dtype], align, itemsize)
        widest = block_regs_max_cols(dtype, backward)
        pack, span, window = _window(tier, dtype, backward, n, pack, tuning, widest)
        elems, threads, storage, smem = tiers.block_regs_layout(n, span, dtype, pack, backward, window, tuning)
        if storage == "staged" and pack * itemsize != 16:
            raise ValueError(f"block_regs stages 16-byte packs only, not packs of {pack} {dtype} elements")
        if smem + tiers.STATIC_SMEM_RESERVE > facts.smem_per_block:  # the tier forced on a small GPU
            raise ValueError(
                f"tier 'block_regs' stages rows of {n} {dtype} elements in {smem} bytes of shared memory a "
                f"block, more than {facts.arch}'s {facts.smem_per_block} leave beside its static memory"
            )
        inst = Instance("block_regs", dtype, backward, log, pack, cols=elems, storage=storage, window=window)
        kernel = Kernel(load(inst, dev), inst.name, dev, nargs, threads, 1, smem)
        kernel.allow_dynamic_smem(smem, tiers.STATIC_SMEM_RESERVE)
        if tuning.block_regs_waves:  # blocks that take rows in turn (the kernel strides over rows)
            return kernel, min(outer, max(1, kernel.blocks_per_sm()) * facts.sm_count * tuning.block_regs_waves)
        return kernel, outer  # one block per row
    pack = widest_pack(PACK_SIZES[dtype], align, itemsize)
    inst = Instance(tier, dtype, backward, log, pack)
    smem = tiers.row_cache_bytes(n, itemsize, backward) if tier == "block_smem" else 0
    probe = Kernel(load(inst, dev), inst.name, dev, nargs, BLOCK_SIZES[0], 1, smem)
    probe.allow_dynamic_smem(smem, tiers.STATIC_SMEM_RESERVE)
    block, per_sm = _pick_block(probe, n, pack, smem)
    if per_sm == 0:
        raise ValueError(
            f"tier {tier!r}: a row of {n} {dtype} elements does not fit in shared memory "
            f"({smem} bytes needed, {facts.smem_per_block} per block)"
        )
    kernel = Kernel(probe.core_kernel, inst.name, dev, nargs, block, 1, smem)
    return kernel, min(outer, per_sm * facts.sm_count)  # grid-stride over rows


def _window(tier, dtype, backward, n, pack, tuning, widest) -> tuple[int, int, bool]:
    """(pack, columns to hold, window) of a warp or block_regs launch over rows of n whose widest
    common pack is ``pack``: a row held in its window's 16-byte packs spans up to WINDOW_PACK - 1
    columns more, and takes the window only where that still fits the tier's ``widest`` row."""
    wide = WINDOW_PACK[dtype]
    if tiers.takes_window(tier, dtype, backward, n, pack, tuning) and n + wide - 1 <= widest:
        return wide, n + wide - 1, True
    return pack, n, False


def _pick_block(kernel: Kernel, n: int, pack: int, smem: int) -> tuple[int, int]:
    """(block size, blocks per SM) for a block-per-row tier: the smallest block that gives each
    thread at most BLOCK_PACKS_PER_THREAD packs of the row (more, smaller blocks per SM overlap
    one row's reduction with other rows' loads), grown while it would not fit."""
    packs = -(-n // pack)
    want = next_pow2(-(-packs // tiers.BLOCK_PACKS_PER_THREAD))
    candidates = [b for b in BLOCK_SIZES if b >= want] or [BLOCK_SIZES[-1]]
    for block in candidates + [b for b in reversed(BLOCK_SIZES) if b < candidates[0]]:
        per_sm = kernel.blocks_per_sm(block, smem)
        if per_sm:
            return block, per_sm
    return BLOCK_SIZES[0], 0


def cluster_whole_packs(backward: bool, itemsize: int, on_boundaries: bool, boundary, whole) -> bool:
    """Whether the cluster tier cuts rows whose tensors share each row's offset within 16 bytes into
    their whole packs, the rows' ends apart (cluster_tier.cuh, InteriorSlice), rather than at their
    16-byte boundaries, by default. ``on_boundaries``: every row starts and ends on one (nothing to
    cut apart: the kernels measured there stay); ``boundary`` and ``whole``: the launch shapes of the
    two cuts (instances.cluster_shape; ``boundary`` None where that cut cannot hold the row).

    H200, alternated in one process (benchmarks/results/2026-12-02_h200_s44): the 16-bit backward
    everywhere (bf16 2670 x 50257 0.72 -> 0.93 of copy, 1024 x 131071 0.67 -> 0.99, 64 x 262143 0.44
    -> 0.71; the boundary cut placed each partial slot as it was read, one warp a row waiting on its
    loads); the forward and the float32 backward where the boundary cut takes a larger launch (its
    slices hold one pack more: bf16 forward 1024 x 131071 on 288 threads 0.80, whole packs on 256
    0.85; float32 backward 1024 x 131071 0.65 -> 1.03), not where both cuts launch alike (bf16
    forward 2670 x 50257 0.86 against 0.78, float32 log-softmax backward 0.98 against 0.86, the
    forward of decode shapes 0.03-0.09 behind)."""
    if on_boundaries:
        return False
    if backward and itemsize == 2:
        return True
    return boundary is None or (boundary.ctas, boundary.threads, boundary.held) != (
        whole.ctas,
        whole.threads,
        whole.held,
    )


def tuned_cluster_shape(n, dtype, backward, outer, facts, tuning, aligned=True, columns=1, high_bandwidth=False):
    """instances.cluster_shape for ``outer`` rows (or runs) of n on a device of ``facts`` (its clusters
    at most ``facts.cluster_ctas`` CTAs), with the cluster size, thread count and K the tuning forces."""
    return cluster_shape(
        n,
        dtype,
        backward,
        rows=outer,
        sm_count=facts.sm_count,
        ctas=tuning.cluster_ctas or 0,
        aligned=aligned,
        threads=tuning.cluster_threads or 0,
        packs=tuning.cluster_packs or 0,
        columns=columns,
        high_bandwidth=high_bandwidth,
        most=facts.cluster_ctas,
    )


def _cluster(load, dtype, outer, n, pitches, log, backward, align, dev, tuning):
    """One cluster of CTAs per row (see instances.cluster_shape for the launch contract)."""
    facts = device_facts(dev)
    if facts.cluster_ctas < 2:
        raise ValueError(
            f"tier 'cluster' needs thread-block clusters (sm_90 or newer) of at least 2 CTAs, which this {facts.arch} "
            "GPU does not hold"
        )
    itemsize = CXX_TYPES[dtype][2]

    @functools.cache  # the rule below and the launch ask for the same cut
    def shape_at(aligned: bool):
        # aligned: a slice's packs as a row's on 16-byte boundaries, and no shared memory
        return tuned_cluster_shape(
            n, dtype, backward, outer, facts, tuning, aligned=aligned, high_bandwidth=facts.high_bandwidth_per_sm
        )

    # rows whose tensors share each row's offset within 16 bytes may be cut into their whole packs,
    # the ends apart (cluster_whole_packs)
    alike = rows_alike(align, pitches, itemsize, outer)
    if tuning.cluster_alike and not alike:
        raise ValueError(
            "tier 'cluster' holds rows by their whole packs (cluster_alike) only where every tensor's rows "
            "share their offset within 16 bytes"
        )
    if alike and tuning.cluster_alike is None:
        try:
            boundary = shape_at(align == 0)
        except ValueError:  # too long for that cut
            boundary = None
        on_boundaries = align == 0 and n * itemsize % 16 == 0
        alike = cluster_whole_packs(backward, itemsize, on_boundaries, boundary, shape_at(True))
    alike = alike and tuning.cluster_alike is not False
    aligned = align == 0 or alike
    most = facts.cluster_ctas
    if cluster_max_cols(dtype, backward, aligned, most=most) < n <= cluster_max_cols(dtype, backward, True, most=most):
        # rows the cluster tier holds in registers on 16-byte boundaries only (tier choice takes it
        # for rows on them), here off them (a plan remembered for another call's alignment): held
        # across the cluster's shared memory instead (in two passes where clusters of 16, which
        # cluster_stream takes, are not held). Rows it holds at no alignment are refused
        # (cluster_shape: "too long"), as a forced tier that cannot compute them must be.
        if not facts.cluster_launch:
            return _split_row(load, dtype, outer, n, pitches, log, backward, align, dev, tuning)
        return _cluster_stream(load, dtype, outer, n, pitches, log, backward, dev, tuning)
    if tuning.cluster_stagger and not backward:
        raise ValueError("tier 'cluster' staggers the first wave of backward launches only (cluster_stagger)")
    shape = shape_at(aligned)

    def kernel_of(storage: str) -> Kernel:
        inst = Instance("cluster", dtype, backward, log, shape.pack, cols=shape.held, storage=storage)
        kernel = Kernel(
            load(inst, dev),
            inst.name,
            dev,
            9 if backward else 6,
            shape.threads,
            1,
            shape.smem_bytes,
            cluster=shape.ctas,
        )
        kernel.allow_dynamic_smem(shape.smem_bytes, CLUSTER_STATIC_SMEM)
        if shape.non_portable:
            kernel.set_attribute("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
        return kernel

    # kept exponentials (one exponential an element, more registers): for rows whose tensors are
    # all 16-byte aligned, where the launch stays one wave of clusters with them
    keeps = cluster_keeps(dtype, backward, log, shape.held) and align == 0 and not tuning.cluster_alike
    if tuning.cluster_kept and not keeps:
        raise ValueError(
            f"tier 'cluster' keeps exponentials only for 16-bit softmax forward of 16-byte aligned rows held "
            f"{CLUSTER_KEPT_MAX_HELD} elements a thread or fewer (here {dtype} "
            f"{'log-softmax' if log else 'softmax'} {'backward' if backward else 'forward'}, {shape.held} held, "
            f"alignment {align or 16} bytes)"
        )
    kept = kernel_of("kept") if keeps and tuning.cluster_kept is not False else None
    if kept is not None and (tuning.cluster_kept or kept.resident_clusters() >= outer):
        kernel = kept
    else:
        kernel = kernel_of("alike" if alike else "")
    resident = kernel.resident_clusters()
    if not alike and cluster_capped(dtype, backward, shape.held):
        # the same kernel under a lower register cap, where that puts more clusters on the GPU
        capped = kernel_of("capped")
        capped_resident = capped.resident_clusters()
        if capped_resident > resident:
            kernel, resident = capped, capped_resident
    if resident < 1:
        raise ValueError(
            f"tier 'cluster': a cluster of {shape.ctas} CTAs of {shape.threads} threads and "
            f"{shape.smem_bytes} bytes of shared memory cannot be resident on {facts.arch}"
        )
    tail = (cluster_stagger(outer, resident, tuning.cluster_stagger),) if backward else ()
    return kernel.bound(cluster_grid(outer, resident, backward) * shape.ctas, (outer, n) + pitches + tail)


def _flat_rows(load, dtype, outer, n, pitches, log, backward, dev, tuning):
    """Runs of rows through shared memory (flat_rows_tier.cuh): a CTA a run (the kernel strides
    over runs past the grid's limit)."""
    per_lane = tuning.flat_rows_per_lane or flat_rows_per_lane(backward, n, dtype)
    rows, group, smem = flat_rows_shape(n, dtype, backward, per_lane)
    tight = n <= FLAT_ROWS_TIGHT_MAX_COLS and tuning.flat_rows_tight in (None, True)
    slots = flat_rows_tight_slots(n, group) if tight else per_lane
    inst = Instance("flat_rows", dtype, backward, log, cols=slots, group=group, tight=tight)
    kernel = Kernel(load(inst, dev), inst.name, dev, 10 if backward else 8, FLAT_ROWS_THREADS, 1, smem)
    kernel.allow_dynamic_smem(smem, tiers.STATIC_SMEM_RESERVE)
    per_sm = kernel.blocks_per_sm()
    if per_sm == 0:
        raise ValueError(f"tier 'flat_rows': {smem} bytes of shared memory a CTA do not fit")
    spread = flat_rows_spread(n, dtype, per_lane) if tuning.flat_rows_spread is None else tuning.flat_rows_spread
    return kernel.bound(min(_ceil_div(outer, rows), (1 << 31) - 1), (outer, n) + pitches + (rows, int(spread)))


def _split_row(load, dtype, outer, n, pitches, log, backward, align, dev, tuning):
    itemsize = CXX_TYPES[dtype][2]
    pack = widest_pack(PACK_SIZES[dtype], align, itemsize)
    first = Instance("split_row", dtype, backward, log and backward, pack, stage="partials")
    last = Instance("split_row", dtype, backward, log, pack, stage="finish")
    inputs = 2 if backward else 1
    partials = Kernel(load(first, dev), first.name, dev, inputs + 2 + inputs + 2, SPLIT_ROW_BLOCK)
    finish = Kernel(load(last, dev), last.name, dev, 2 * (inputs + 1) + 4, SPLIT_ROW_BLOCK)
    # enough chunks for SPLIT_ROW_BLOCKS_PER_SM blocks per SM over all rows, none shorter than
    # SPLIT_ROW_MIN_CHUNK elements, each starting 16-element aligned
    per_sm = tuning.split_row_blocks_per_sm or tiers.SPLIT_ROW_BLOCKS_PER_SM
    want = -(-per_sm * device_facts(dev).sm_count // outer)
    splits = max(1, min(want, n // tiers.SPLIT_ROW_MIN_CHUNK))
    chunk = _ceil_div(_ceil_div(n, splits), SPLIT_ROW_ALIGN) * SPLIT_ROW_ALIGN
    splits = _ceil_div(n, chunk)
    grid = outer * splits
    workspace = (1 if backward else 2) * outer * splits
    first_tail = (n,) + pitches[:inputs] + (chunk, splits)
    last_tail = (n,) + pitches + (chunk, splits)
    device = torch_device(dev)

    def run(pointers, stream):
        # the tensor must outlive both launches: freed earlier, the caching allocator could hand
        # its memory to another thread's tensor whose kernels land between ours on the stream
        scratch = torch.empty(workspace, dtype=torch.float32, device=device)
        ws = scratch.data_ptr()
        partials.launch(grid, stream, pointers[:inputs] + (ws,) + first_tail)
        finish.launch(grid, stream, pointers + (ws,) + last_tail)
        del scratch  # only now: the allocator reuses it in stream order, after our kernels

    return run


def grid_row_launch(
    load, dtype, n, backward, log, dev, rows: int = 1, teams: bool = True
) -> tuple[Kernel, GridRowShape]:
    """The kernel (cooperative, block and shared memory set) and shape of a grid_row launch on
    ``rows`` rows of n columns (see instances.grid_row_shape, and grid_row_team_shape where ``teams``
    lets the grid be cut into teams, for the launch contract); also what the probe and the tests use
    to find the geometry the backend launches."""
    facts = device_facts(dev)
    if not facts.cooperative_launch:
        raise ValueError(f"tier 'grid_row' needs cooperative launches, which cuda:{dev} does not support")
    inst = grid_row_instance(dtype, backward, log)
    nargs = 10 if backward else 8
    budget = grid_row_dynamic_smem(facts)
    function = load(inst, dev)
    probe = Kernel(function, inst.name, dev, nargs, GRID_ROW_THREADS, 1, 0, 1, True)
    probe.allow_dynamic_smem(budget, GRID_ROW_STATIC_SMEM)
    # one row takes the whole grid's shape (grid_row_team_shape's answer for rows it cannot team up)
    shape = grid_row_team_shape(
        rows if teams else 1,
        n,
        dtype,
        backward,
        facts.sm_count,
        lambda smem: probe.blocks_per_sm(GRID_ROW_THREADS, smem),
        budget,
    )
    if shape.teams > 1:
        # the same registers, block and shared memory as the one-team kernel (a probe of its occupancy
        # above): only the team's meeting differs
        inst = grid_row_instance(dtype, backward, log, teams=True)
        function, nargs = load(inst, dev), nargs + 1
    kernel = Kernel(function, inst.name, dev, nargs, shape.threads, 1, shape.smem_bytes, 1, True)
    kernel.allow_dynamic_smem(shape.smem_bytes, GRID_ROW_STATIC_SMEM)
    return kernel, shape


def _grid_row(load, dtype, outer, n, pitches, log, backward, dev, tuning):
    """Every resident CTA on each row in turn, or teams of them on rows of their own, one cooperative
    launch. Any alignment: the kernel reads each row's misalignments itself."""
    # teams wherever they hold the rows, also on the few rows tier choice gives grid_row for their length
    # alone (tiers.GRID_ROW_ROW_BYTES: backward rows from 4 MiB): there level with the whole grid or
    # ahead (H100, results 2026-12-06_h100_s72/c6/small.txt: bf16 2 x 2^21 0.405 against 0.406, 3 x 2^21
    # 0.492 against 0.443, float32 2 x 2^20 0.477 against 0.433)
    teams = tuning.grid_row_teams is not False
    kernel, shape = grid_row_launch(load, dtype, n, backward, log, dev, outer, teams)
    if tuning.grid_row_teams and shape.teams == 1:
        raise ValueError(f"grid_row_teams=True: {outer} rows of {n} do not fit on chip in teams of the grid")
    if shape.teams > 1:
        counters, scratch = grid_row_team_workspace(outer, shape.team_ctas, backward)
        tail = (shape.smem_slots, shape.team_ctas)
    else:
        counters, scratch = 0, grid_row_workspace(shape.ctas, backward)
        tail = (shape.smem_slots,)
    go = kernel.bound(shape.ctas, (outer, n) + pitches + tail)

    def run(pointers, stream):
        # the stream's workspace (one launch a call): the teams' counters are left at zero by each
        # launch; nothing else needs clearing, every pair being written before the barrier that
        # precedes its reads. A grid larger than the device holds at once is refused by the driver
        # (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, raised by the launch), never left to deadlock
        buffer, address = stream_workspace(dev, stream, counters, scratch)
        go(pointers + (address,), stream)
        del buffer  # only now that the launch is enqueued

    return run


def cluster_stream_launch(
    load,
    dtype,
    n,
    backward,
    log,
    dev,
    ctas: int = 0,
    per_sm: int = 1,
    columns: int = 1,
) -> tuple[Kernel, GridRowShape, int]:
    """The kernel (cluster size, block and shared memory set), shape and resident clusters (the
    driver's count of them on the whole device at once) of a cluster_stream launch on rows of n
    columns (see instances.cluster_stream_shape for the launch contract), ``per_sm`` CTAs an SM
    sharing its shared memory; rows that are runs of ``columns`` interleaved columns where it is more
    than 1 (the kernel then takes ``columns`` as its last argument; one CTA an SM)."""
    facts = device_facts(dev)
    if not facts.cluster_launch:
        raise ValueError(f"tier 'cluster_stream' needs thread-block clusters (sm_90 or newer), not {facts.arch}")
    inst = grid_row_instance(dtype, backward, log, "cluster_stream", per_sm, columns > 1)
    static = COLUMN_STREAM_STATIC_SMEM if columns > 1 else GRID_ROW_STATIC_SMEM
    budget = grid_row_dynamic_smem(facts, per_sm, static)
    shape = cluster_stream_shape(n, dtype, backward, budget, ctas, per_sm, columns)
    nargs = (9 if backward else 7) + 1  # rows: stagger; runs of columns: inner
    kernel = Kernel(load(inst, dev), inst.name, dev, nargs, shape.threads, 1, shape.smem_bytes, cluster=shape.ctas)
    kernel.allow_dynamic_smem(shape.smem_bytes, static)
    if shape.ctas > CLUSTER_PORTABLE_MAX:
        kernel.set_attribute("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
    resident = kernel.resident_clusters()
    if resident < 1:
        raise ValueError(
            f"tier 'cluster_stream': a cluster of {shape.ctas} CTAs of {shape.threads} threads and "
            f"{shape.smem_bytes} bytes of shared memory cannot be resident on {facts.arch}"
        )
    return kernel, shape, resident


def _cluster_stream(load, dtype, outer, n, pitches, log, backward, dev, tuning):
    """A thread-block cluster a row, its CTAs holding their slices in registers and shared memory and
    re-reading the rest; a grid of the resident clusters walking the rows where they outnumber them
    (instances.cluster_stream_persistent). Any alignment, as grid_row; no workspace (the pairs meet in
    shared memory)."""
    facts = device_facts(dev)
    per_sm = tuning.cluster_stream_per_sm or cluster_stream_per_sm(
        n, dtype, backward, outer, grid_row_dynamic_smem(facts, 2), facts.high_bandwidth_per_sm
    )
    ctas = tuning.cluster_ctas or 0
    kernel, shape, resident = cluster_stream_launch(load, dtype, n, backward, log, dev, ctas, per_sm)
    stagger = cluster_stream_stagger(outer, resident, tuning.cluster_stream_stagger)
    persistent = cluster_stream_persistent(outer, resident, tuning.cluster_stream_persistent)
    clusters = resident if persistent else outer
    return kernel.bound(clusters * shape.ctas, (outer, n) + pitches + (shape.smem_slots, stagger))
