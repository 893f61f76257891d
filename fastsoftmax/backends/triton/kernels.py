"""Triton softmax kernels over the canonical ``(outer, n, inner)`` problem.

Every kernel here but the realigned rows' (last, below) works on 3D tiles ``[BLOCK_O, BLOCK_N,
BLOCK_I]`` and reduces over the middle axis. One body serves both layouts:

* rows (``inner == 1``): ``BLOCK_I == 1`` and the tile is ``BLOCK_O`` rows by ``BLOCK_N`` columns.
  The column stride is 1, which Triton specialises at compile time, so loads along a row
  vectorise to 16 bytes when the row pitch allows it.
* strided (``inner > 1``): ``BLOCK_O == 1`` and the tile is ``BLOCK_N`` reduced elements by
  ``BLOCK_I`` neighbours along the contiguous axis. A warp reads neighbouring addresses
  (coalesced), each lane keeps its own running max and sum, and no transpose is ever made.

Three strategies, by how much of the reduced axis fits on chip:

1. ``*_tile``: the whole reduced axis is in registers; one read, one write. A strided tile may
   hold an axis just past a power of two as two pieces, ``BLOCK_N`` rows and ``BLOCK_N2`` after
   them (21 channels: 16 + 8 rows rather than 32 with 11 masked; the plan says where).
2. ``*_online``: the reduced axis is walked in chunks twice. The first walk keeps a running max
   and a running sum that is rescaled whenever the max grows (the online normaliser), so one
   walk gives both statistics; the second walk re-reads and writes. It walks backwards so that
   the chunks read last, still in L2, are read first, and the grid is persistent (a few programs
   per SM taking rows in turn) so that the rows in flight fit in L2.
3. ``*_partials`` + ``*_split``: the reduced axis is cut into ``SPLITS`` pieces, each taken by its
   own program, so that even a single row of 2^24 elements spreads over the whole GPU. The first
   kernel writes each piece's (max, sum); the second merges them (a few hundred values, read by
   every program) and writes the output of its piece.

Numerics. Arithmetic is in float32 whatever the storage type. A max of ``-inf`` (a chunk or a row
of ``-inf``) is replaced by 0 before subtracting, so that ``exp(-inf - -inf)`` never turns a
partial sum into NaN; a row that is entirely ``-inf`` still ends as 0/0 = NaN, as in torch. A
``+inf`` or NaN anywhere in a row makes the row NaN, as in torch.
"""

import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))


@triton.jit
def _tile_offsets(
    pid,
    OUTER,
    N,
    INNER,
    n_start,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    WIDE: tl.constexpr,
):
    """Indices and mask of the tile that program ``pid`` owns, starting at ``n_start`` along the
    reduced axis. Programs are numbered inner-block fastest so neighbours share DRAM pages.
    ``WIDE``: offsets in 64 bits (a strided axis of 65536 with a stride of 32768 is already 2^31
    elements); otherwise in 32, which the host allows only where every element's offset fits
    (masked lanes past the tensor may wrap: they are never loaded or stored)."""
    inner_blocks = tl.cdiv(INNER, BLOCK_I)
    first = pid // inner_blocks
    if WIDE:  # a constexpr: only one branch is compiled, so first and n may change type
        first = first.to(tl.int64)  # before the product: outers past 2^31 - BLOCK_O rows do not wrap
    o = first * BLOCK_O + tl.arange(0, BLOCK_O)
    i = (pid % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    n = n_start + tl.arange(0, BLOCK_N)
    mask = (o < OUTER)[:, None, None] & (n < N)[None, :, None] & (i < INNER)[None, None, :]
    if WIDE:
        n = n.to(tl.int64)
    return o[:, None, None], n[None, :, None], i[None, None, :], mask


@triton.jit
def _safe_max(m):
    # exp(x - m) with m = -inf would give NaN for x = -inf; with 0 it gives exp(-inf) = 0.
    return tl.where(m == NEG_INF, 0.0, m)


@triton.jit
def _merge_stats(m, s, chunk_max, chunk_sum_at_chunk_max):
    """Online-normaliser merge of two (max, sum-of-exp) pairs."""
    m_new = tl.maximum(m, chunk_max)
    base = _safe_max(m_new)
    s_new = s * tl.exp(m - base) + chunk_sum_at_chunk_max * tl.exp(chunk_max - base)
    return m_new, s_new


@triton.jit
def _finish(x, m, s, LOG: tl.constexpr):
    """Softmax or log-softmax of a tile given the row statistics (shaped [BO, 1, BI])."""
    base = _safe_max(m)
    if LOG:
        return (x - base) - tl.log(s)
    return tl.exp(x - base) * (1.0 / s)


# --------------------------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------------------------


@triton.jit
def softmax_fwd_tile(
    x_ptr,
    y_ptr,
    OUTER,
    N,
    INNER,
    xs_o,
    xs_n,
    xs_i,
    ys_o,
    ys_n,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    WIDE: tl.constexpr,
    BLOCK_N2: tl.constexpr,
):
    pid = tl.program_id(0)
    o, n, i, mask = _tile_offsets(pid, OUTER, N, INNER, 0, BLOCK_O, BLOCK_N, BLOCK_I, WIDE)
    # offsets summed before the pointer is moved: one 64-bit address an element, not three
    x = tl.load(x_ptr + (o * xs_o + n * xs_n + i * xs_i), mask=mask, other=NEG_INF).to(tl.float32)
    m = tl.max(x, axis=1, keep_dims=True)
    if BLOCK_N2 > 0:  # a constexpr: the second piece's code exists only in its instances
        o2, n2, i2, mask2 = _tile_offsets(pid, OUTER, N, INNER, BLOCK_N, BLOCK_O, BLOCK_N2, BLOCK_I, WIDE)
        x2 = tl.load(x_ptr + (o2 * xs_o + n2 * xs_n + i2 * xs_i), mask=mask2, other=NEG_INF).to(tl.float32)
        m = tl.maximum(m, tl.max(x2, axis=1, keep_dims=True))
    base = _safe_max(m)
    e = tl.exp(x - base)
    s = tl.sum(e, axis=1, keep_dims=True)
    if BLOCK_N2 > 0:
        e2 = tl.exp(x2 - base)
        s += tl.sum(e2, axis=1, keep_dims=True)
        y2 = _finish(x2, m, s, LOG) if LOG else e2 * (1.0 / s)
        tl.store(y_ptr + (o2 * ys_o + n2 * ys_n + i2), y2.to(y_ptr.dtype.element_ty), mask=mask2)
    y = _finish(x, m, s, LOG) if LOG else e * (1.0 / s)
    tl.store(y_ptr + (o * ys_o + n * ys_n + i), y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _online_stats(
    x_ptr,
    xs_o,
    xs_n,
    xs_i,
    pid,
    OUTER,
    N,
    INNER,
    n_begin,
    n_end,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    """Running (max, sum of exp(x - max)) over reduced indices [n_begin, n_end), per column."""
    m = tl.full((BLOCK_O, 1, BLOCK_I), NEG_INF, tl.float32)
    s = tl.zeros((BLOCK_O, 1, BLOCK_I), tl.float32)
    for n_start in range(n_begin, n_end, BLOCK_N):
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, BLOCK_O, BLOCK_N, BLOCK_I, True)
        x = tl.load(x_ptr + o * xs_o + n * xs_n + i * xs_i, mask=mask, other=NEG_INF).to(tl.float32)
        chunk_max = tl.max(x, axis=1, keep_dims=True)
        chunk_sum = tl.sum(tl.exp(x - _safe_max(chunk_max)), axis=1, keep_dims=True)
        m, s = _merge_stats(m, s, chunk_max, chunk_sum)
    return m, s


@triton.jit
def _write_chunks_backwards(
    x_ptr,
    y_ptr,
    xs_o,
    xs_n,
    xs_i,
    ys_o,
    ys_n,
    m,
    s,
    pid,
    OUTER,
    N,
    INNER,
    n_begin,
    n_end,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    chunks = tl.cdiv(n_end - n_begin, BLOCK_N)
    for k in range(0, chunks):
        n_start = n_begin + (chunks - 1 - k) * BLOCK_N
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, BLOCK_O, BLOCK_N, BLOCK_I, True)
        x = tl.load(x_ptr + o * xs_o + n * xs_n + i * xs_i, mask=mask, other=NEG_INF).to(tl.float32)
        y = _finish(x, m, s, LOG)
        tl.store(y_ptr + o * ys_o + n * ys_n + i, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_fwd_online(
    x_ptr,
    y_ptr,
    OUTER,
    N,
    INNER,
    xs_o,
    xs_n,
    xs_i,
    ys_o,
    ys_n,
    COLUMN_PROGRAMS,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    # Persistent: a few programs per SM walk all the rows (or column blocks) in turn, so the data
    # between a row's first and second walk (the rows in flight) stays small enough for L2, and
    # the second walk is served from L2 rather than from device memory.
    for pid in range(tl.program_id(0), COLUMN_PROGRAMS, tl.num_programs(0)):
        m, s = _online_stats(x_ptr, xs_o, xs_n, xs_i, pid, OUTER, N, INNER, 0, N, BLOCK_O, BLOCK_N, BLOCK_I)
        _write_chunks_backwards(
            x_ptr, y_ptr, xs_o, xs_n, xs_i, ys_o, ys_n, m, s, pid, OUTER, N, INNER, 0, N, LOG, BLOCK_O, BLOCK_N, BLOCK_I
        )


@triton.jit
def _split_coords(SPLITS, CHUNK, N, INNER, BLOCK_I: tl.constexpr, REVERSE: tl.constexpr):
    """(column-block program id, split index, chunk bounds) of this program. The split index runs
    fastest so that the pieces of one row are spread over the whole GPU at once."""
    pid = tl.program_id(0)
    split = pid % SPLITS
    if REVERSE:
        split = SPLITS - 1 - split
    column_pid = pid // SPLITS
    n_begin = split * CHUNK
    n_end = tl.minimum(n_begin + CHUNK, N)
    return column_pid, split, n_begin, n_end


@triton.jit
def _stat_offsets(
    column_pid, first_split, SPLITS, OUTER, INNER, BLOCK_O: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_I: tl.constexpr
):
    """Where per-split statistics live: a float32 buffer (OUTER, SPLITS, INNER). Addresses splits
    [first_split, first_split + BLOCK_S) of this program's columns, shaped [BO, BS, BI]."""
    inner_blocks = tl.cdiv(INNER, BLOCK_I)
    o = (column_pid // inner_blocks).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    i = (column_pid % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    k = first_split + tl.arange(0, BLOCK_S)
    offsets = (o[:, None, None] * SPLITS + k[None, :, None]) * INNER + i[None, None, :]
    mask = (o < OUTER)[:, None, None] & (k < SPLITS)[None, :, None] & (i < INNER)[None, None, :]
    return offsets, mask


@triton.jit
def softmax_fwd_partials(
    x_ptr,
    max_ptr,
    sum_ptr,
    OUTER,
    N,
    INNER,
    xs_o,
    xs_n,
    xs_i,
    SPLITS,
    CHUNK,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    column_pid, split, n_begin, n_end = _split_coords(SPLITS, CHUNK, N, INNER, BLOCK_I, False)
    m, s = _online_stats(
        x_ptr, xs_o, xs_n, xs_i, column_pid, OUTER, n_end, INNER, n_begin, n_end, BLOCK_O, BLOCK_N, BLOCK_I
    )
    offsets, mask = _stat_offsets(column_pid, split, SPLITS, OUTER, INNER, BLOCK_O, 1, BLOCK_I)
    tl.store(max_ptr + offsets, m, mask=mask)
    tl.store(sum_ptr + offsets, s, mask=mask)


@triton.jit
def _merged_partials(
    max_ptr,
    sum_ptr,
    column_pid,
    SPLITS,
    OUTER,
    INNER,
    BLOCK_O: tl.constexpr,
    BLOCK_S: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    """Merge every split's (max, sum) of this program's columns into the row statistics."""
    offsets, mask = _stat_offsets(column_pid, 0, SPLITS, OUTER, INNER, BLOCK_O, BLOCK_S, BLOCK_I)
    split_max = tl.load(max_ptr + offsets, mask=mask, other=NEG_INF)
    split_sum = tl.load(sum_ptr + offsets, mask=mask, other=0.0)
    m = tl.max(split_max, axis=1, keep_dims=True)
    s = tl.sum(split_sum * tl.exp(split_max - _safe_max(m)), axis=1, keep_dims=True)
    return m, s


@triton.jit
def softmax_fwd_split(
    x_ptr,
    y_ptr,
    max_ptr,
    sum_ptr,
    OUTER,
    N,
    INNER,
    xs_o,
    xs_n,
    xs_i,
    ys_o,
    ys_n,
    SPLITS,
    CHUNK,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    # Reverse split order: the pieces the partials kernel read last are likeliest to be in L2.
    column_pid, split, n_begin, n_end = _split_coords(SPLITS, CHUNK, N, INNER, BLOCK_I, True)
    m, s = _merged_partials(max_ptr, sum_ptr, column_pid, SPLITS, OUTER, INNER, BLOCK_O, BLOCK_S, BLOCK_I)
    _write_chunks_backwards(
        x_ptr,
        y_ptr,
        xs_o,
        xs_n,
        xs_i,
        ys_o,
        ys_n,
        m,
        s,
        column_pid,
        OUTER,
        n_end,
        INNER,
        n_begin,
        n_end,
        LOG,
        BLOCK_O,
        BLOCK_N,
        BLOCK_I,
    )


# --------------------------------------------------------------------------------------------
# Backward: dx = y * (dy - sum(dy * y)) for softmax, dx = dy - exp(y) * sum(dy) for log-softmax.
# Both need one reduction per row, of dy * y or of dy, then an elementwise pass.
# --------------------------------------------------------------------------------------------


@triton.jit
def _grad_terms(y_ptr, dy_ptr, offsets_y, offsets_dy, mask):
    y = tl.load(y_ptr + offsets_y, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offsets_dy, mask=mask, other=0.0).to(tl.float32)
    return y, dy


@triton.jit
def _grad_summand(y, dy, LOG: tl.constexpr):
    if LOG:
        return dy
    return dy * y


@triton.jit
def _grad(y, dy, total, LOG: tl.constexpr):
    if LOG:
        return dy - tl.exp(y) * total
    return y * (dy - total)


@triton.jit
def softmax_bwd_tile(
    y_ptr,
    dy_ptr,
    dx_ptr,
    OUTER,
    N,
    INNER,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    dxs_o,
    dxs_n,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    WIDE: tl.constexpr,
    BLOCK_N2: tl.constexpr,
):
    pid = tl.program_id(0)
    o, n, i, mask = _tile_offsets(pid, OUTER, N, INNER, 0, BLOCK_O, BLOCK_N, BLOCK_I, WIDE)
    y, dy = _grad_terms(y_ptr, dy_ptr, o * ys_o + n * ys_n + i * ys_i, o * dys_o + n * dys_n + i * dys_i, mask)
    total = tl.sum(_grad_summand(y, dy, LOG), axis=1, keep_dims=True)
    if BLOCK_N2 > 0:  # a constexpr: the second piece's code exists only in its instances
        o2, n2, i2, mask2 = _tile_offsets(pid, OUTER, N, INNER, BLOCK_N, BLOCK_O, BLOCK_N2, BLOCK_I, WIDE)
        offsets_y, offsets_dy = o2 * ys_o + n2 * ys_n + i2 * ys_i, o2 * dys_o + n2 * dys_n + i2 * dys_i
        y2, dy2 = _grad_terms(y_ptr, dy_ptr, offsets_y, offsets_dy, mask2)
        total += tl.sum(_grad_summand(y2, dy2, LOG), axis=1, keep_dims=True)
        dx2 = _grad(y2, dy2, total, LOG)
        tl.store(dx_ptr + (o2 * dxs_o + n2 * dxs_n + i2), dx2.to(dx_ptr.dtype.element_ty), mask=mask2)
    dx = _grad(y, dy, total, LOG)
    tl.store(dx_ptr + (o * dxs_o + n * dxs_n + i), dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _grad_sum(
    y_ptr,
    dy_ptr,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    pid,
    OUTER,
    INNER,
    n_begin,
    n_end,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    total = tl.zeros((BLOCK_O, 1, BLOCK_I), tl.float32)
    for n_start in range(n_begin, n_end, BLOCK_N):
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, BLOCK_O, BLOCK_N, BLOCK_I, True)
        y, dy = _grad_terms(y_ptr, dy_ptr, o * ys_o + n * ys_n + i * ys_i, o * dys_o + n * dys_n + i * dys_i, mask)
        total += tl.sum(_grad_summand(y, dy, LOG), axis=1, keep_dims=True)
    return total


@triton.jit
def _write_grad_backwards(
    y_ptr,
    dy_ptr,
    dx_ptr,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    dxs_o,
    dxs_n,
    total,
    pid,
    OUTER,
    INNER,
    n_begin,
    n_end,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    chunks = tl.cdiv(n_end - n_begin, BLOCK_N)
    for k in range(0, chunks):
        n_start = n_begin + (chunks - 1 - k) * BLOCK_N
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, BLOCK_O, BLOCK_N, BLOCK_I, True)
        y, dy = _grad_terms(y_ptr, dy_ptr, o * ys_o + n * ys_n + i * ys_i, o * dys_o + n * dys_n + i * dys_i, mask)
        dx = _grad(y, dy, total, LOG)
        tl.store(dx_ptr + o * dxs_o + n * dxs_n + i, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_online(
    y_ptr,
    dy_ptr,
    dx_ptr,
    OUTER,
    N,
    INNER,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    dxs_o,
    dxs_n,
    COLUMN_PROGRAMS,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    # Persistent, as softmax_fwd_online, so that the second walk over y and dy hits L2.
    for pid in range(tl.program_id(0), COLUMN_PROGRAMS, tl.num_programs(0)):
        total = _grad_sum(
            y_ptr,
            dy_ptr,
            ys_o,
            ys_n,
            ys_i,
            dys_o,
            dys_n,
            dys_i,
            pid,
            OUTER,
            INNER,
            0,
            N,
            LOG,
            BLOCK_O,
            BLOCK_N,
            BLOCK_I,
        )
        _write_grad_backwards(
            y_ptr,
            dy_ptr,
            dx_ptr,
            ys_o,
            ys_n,
            ys_i,
            dys_o,
            dys_n,
            dys_i,
            dxs_o,
            dxs_n,
            total,
            pid,
            OUTER,
            INNER,
            0,
            N,
            LOG,
            BLOCK_O,
            BLOCK_N,
            BLOCK_I,
        )


@triton.jit
def softmax_bwd_partials(
    y_ptr,
    dy_ptr,
    sum_ptr,
    OUTER,
    N,
    INNER,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    SPLITS,
    CHUNK,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    column_pid, split, n_begin, n_end = _split_coords(SPLITS, CHUNK, N, INNER, BLOCK_I, False)
    total = _grad_sum(
        y_ptr,
        dy_ptr,
        ys_o,
        ys_n,
        ys_i,
        dys_o,
        dys_n,
        dys_i,
        column_pid,
        OUTER,
        INNER,
        n_begin,
        n_end,
        LOG,
        BLOCK_O,
        BLOCK_N,
        BLOCK_I,
    )
    offsets, mask = _stat_offsets(column_pid, split, SPLITS, OUTER, INNER, BLOCK_O, 1, BLOCK_I)
    tl.store(sum_ptr + offsets, total, mask=mask)


@triton.jit
def softmax_bwd_split(
    y_ptr,
    dy_ptr,
    dx_ptr,
    sum_ptr,
    OUTER,
    N,
    INNER,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    dxs_o,
    dxs_n,
    SPLITS,
    CHUNK,
    LOG: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    column_pid, split, n_begin, n_end = _split_coords(SPLITS, CHUNK, N, INNER, BLOCK_I, True)
    offsets, mask = _stat_offsets(column_pid, 0, SPLITS, OUTER, INNER, BLOCK_O, BLOCK_S, BLOCK_I)
    total = tl.sum(tl.load(sum_ptr + offsets, mask=mask, other=0.0), axis=1, keep_dims=True)
    _write_grad_backwards(
        y_ptr,
        dy_ptr,
        dx_ptr,
        ys_o,
        ys_n,
        ys_i,
        dys_o,
        dys_n,
        dys_i,
        dxs_o,
        dxs_n,
        total,
        column_pid,
        OUTER,
        INNER,
        n_begin,
        n_end,
        LOG,
        BLOCK_O,
        BLOCK_N,
        BLOCK_I,
    )


# --------------------------------------------------------------------------------------------
# Relay: the split tier's two kernels in one launch, so that the second read hits L2.
#
# Each reduction unit (a row, or a block of BLOCK_I columns of one outer index) is cut into SPLITS
# pieces, and every piece is two work items: "gather" (the piece's partial statistics) and
# "finish" (merge the unit's partials, then re-read the piece and write it). A persistent grid's
# programs take items in the order of tickets drawn from a counter, one item at a time, and the
# items are ordered so that a unit's finish items come LAG units after its gather items: a piece is
# re-read after only the items in between have streamed through L2, rather than after the whole
# tensor (as in split). A finish item waits until its unit's SPLITS gather items have published
# their partials. Every gather item holds a smaller ticket than the finish items that wait on it,
# so it is held by a program already running, and gather items wait on nothing: the launch
# completes whatever the number of programs resident at once, without a grid barrier.
#
# ``flags``: int32, zeroed before the launch: [0] the ticket counter, [1 + u] unit u's published
# gather items.
#
# FOLD < BLOCK_I: the launch passes a contiguous (n, inner) block of FOLD columns as rows of BLOCK_I
# "pseudo-columns" (BLOCK_I a multiple of FOLD), so that a tile's rows are whole 16-byte vectors
# whatever the inner size; pseudo-column q is column q % FOLD, and the statistics of the
# pseudo-columns of one column are merged before they are used.
# --------------------------------------------------------------------------------------------


@triton.jit
def _relay_item(ticket, UNITS, SPLITS, LAG, CHUNK, N):
    """(the ticket's unit, split, whether it is a finish item, the piece's bounds along the reduced
    axis). Slots of SPLITS tickets run: gather of units 0..LAG-1, then gather of unit LAG + j and
    finish of unit j in turn, then the last LAG units' finish; finish items in the reverse order of
    the pieces."""
    slot = ticket // SPLITS
    split = ticket % SPLITS
    middle = slot - LAG
    lead = slot < LAG
    tail = slot >= 2 * UNITS - LAG
    finish = tail | ((slot >= LAG) & (middle % 2 == 1))
    unit = tl.where(lead, slot, tl.where(tail, slot - UNITS, tl.where(finish, middle // 2, LAG + middle // 2)))
    # a unit's finish items take its pieces last-gathered first, the likeliest still in L2 (level
    # with gathered-first on an H200: L2's hit rate 30.7% against 30.6%, Nsight Compute)
    split = tl.where(finish, SPLITS - 1 - split, split)
    n_begin = split * CHUNK
    return unit, split, finish, n_begin, tl.minimum(n_begin + CHUNK, N)


@triton.jit
def _relay_publish(flags_ptr, unit):
    """Count this gather item as published, once every thread's partials are stored."""
    tl.debug_barrier()
    tl.atomic_add(flags_ptr + 1 + unit, 1, sem="release")


@triton.jit
def _relay_wait(flags_ptr, unit, SPLITS):
    """Wait until unit ``unit``'s SPLITS gather items have published their partials."""
    published = tl.atomic_add(flags_ptr + 1 + unit, 0, sem="acquire")
    while published < SPLITS:
        published = tl.atomic_add(flags_ptr + 1 + unit, 0, sem="acquire")


@triton.jit
def _fold_stats(m, s, FOLD: tl.constexpr, BLOCK_I: tl.constexpr):
    """Merge the (max, sum) pairs ([1, 1, BLOCK_I]) of pseudo-columns q, q + FOLD, ... into their
    column's, and give each pseudo-column its column's pair."""
    if FOLD < BLOCK_I:
        rows: tl.constexpr = BLOCK_I // FOLD
        pm = tl.reshape(m, (rows, FOLD))
        top = tl.max(pm, axis=0, keep_dims=True)
        total = tl.sum(tl.reshape(s, (rows, FOLD)) * tl.exp(pm - _safe_max(top)), axis=0, keep_dims=True)
        m = tl.reshape(tl.broadcast_to(top, (rows, FOLD)), (1, 1, BLOCK_I))
        s = tl.reshape(tl.broadcast_to(total, (rows, FOLD)), (1, 1, BLOCK_I))
    return m, s


@triton.jit
def _fold_sums(total, FOLD: tl.constexpr, BLOCK_I: tl.constexpr):
    """Sum the pseudo-columns of each column ([1, 1, BLOCK_I]) and give each its column's sum."""
    if FOLD < BLOCK_I:
        rows: tl.constexpr = BLOCK_I // FOLD
        column = tl.sum(tl.reshape(total, (rows, FOLD)), axis=0, keep_dims=True)
        total = tl.reshape(tl.broadcast_to(column, (rows, FOLD)), (1, 1, BLOCK_I))
    return total


@triton.jit
def _lane_stats(
    x_ptr,
    xs_o,
    xs_n,
    xs_i,
    pid,
    OUTER,
    INNER,
    n_begin,
    n_end,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    """(max, sum of exp(x - max)) over reduced indices [n_begin, n_end), per column, kept per lane
    of the tile while walking and merged over the tile once at the end (no reduction across warps
    per step). A lane's update takes one exponential: with d = x - m, exp(-|d|) is both the
    rescale of the old sum when x is the new maximum and the new term otherwise."""
    m = tl.full((1, BLOCK_N, BLOCK_I), NEG_INF, tl.float32)
    s = tl.zeros((1, BLOCK_N, BLOCK_I), tl.float32)
    for n_start in range(n_begin, n_end, BLOCK_N):
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, 1, BLOCK_N, BLOCK_I, True)
        x = tl.load(x_ptr + o * xs_o + n * xs_n + i * xs_i, mask=mask, other=NEG_INF).to(tl.float32)
        d = x - m
        e = tl.where(x == NEG_INF, 0.0, tl.exp(-tl.abs(d)))  # -inf - -inf is NaN, not a term
        s = tl.where(d > 0, s * e + 1.0, s + e)
        m = tl.maximum(m, x)
    total_max = tl.max(m, axis=1, keep_dims=True)
    total = tl.sum(s * tl.exp(m - _safe_max(total_max)), axis=1, keep_dims=True)
    return total_max, total


@triton.jit
def softmax_fwd_relay(
    x_ptr,
    y_ptr,
    max_ptr,
    sum_ptr,
    flags_ptr,
    OUTER,
    N,
    INNER,
    xs_o,
    xs_n,
    xs_i,
    ys_o,
    ys_n,
    UNITS,
    SPLITS,
    CHUNK,
    LAG,
    LOG: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_S: tl.constexpr,
    FOLD: tl.constexpr,
):
    items = 2 * UNITS * SPLITS
    ticket = tl.atomic_add(flags_ptr, 1)
    while ticket < items:
        unit, split, finish, n_begin, n_end = _relay_item(ticket, UNITS, SPLITS, LAG, CHUNK, N)
        if finish:
            _relay_wait(flags_ptr, unit, SPLITS)
            m, s = _merged_partials(max_ptr, sum_ptr, unit, SPLITS, OUTER, INNER, 1, BLOCK_S, BLOCK_I)
            m, s = _fold_stats(m, s, FOLD, BLOCK_I)
            _write_chunks_backwards(
                x_ptr, y_ptr, xs_o, xs_n, xs_i, ys_o, ys_n, m, s, unit, OUTER, n_end, INNER, n_begin, n_end, LOG, 1,
                BLOCK_N, BLOCK_I,
            )  # fmt: skip
        else:
            m, s = _lane_stats(x_ptr, xs_o, xs_n, xs_i, unit, OUTER, INNER, n_begin, n_end, BLOCK_N, BLOCK_I)
            offsets, mask = _stat_offsets(unit, split, SPLITS, OUTER, INNER, 1, 1, BLOCK_I)
            tl.store(max_ptr + offsets, m, mask=mask)
            tl.store(sum_ptr + offsets, s, mask=mask)
            _relay_publish(flags_ptr, unit)
        ticket = tl.atomic_add(flags_ptr, 1)


@triton.jit
def _lane_grad_sum(
    y_ptr,
    dy_ptr,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    pid,
    OUTER,
    INNER,
    n_begin,
    n_end,
    LOG: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    """sum(dy * y) (or sum(dy)) over reduced indices [n_begin, n_end), per column, kept per lane
    while walking and summed over the tile once at the end."""
    total = tl.zeros((1, BLOCK_N, BLOCK_I), tl.float32)
    for n_start in range(n_begin, n_end, BLOCK_N):
        o, n, i, mask = _tile_offsets(pid, OUTER, n_end, INNER, n_start, 1, BLOCK_N, BLOCK_I, True)
        y, dy = _grad_terms(y_ptr, dy_ptr, o * ys_o + n * ys_n + i * ys_i, o * dys_o + n * dys_n + i * dys_i, mask)
        total += _grad_summand(y, dy, LOG)
    return tl.sum(total, axis=1, keep_dims=True)


@triton.jit
def softmax_bwd_relay(
    y_ptr,
    dy_ptr,
    dx_ptr,
    sum_ptr,
    flags_ptr,
    OUTER,
    N,
    INNER,
    ys_o,
    ys_n,
    ys_i,
    dys_o,
    dys_n,
    dys_i,
    dxs_o,
    dxs_n,
    UNITS,
    SPLITS,
    CHUNK,
    LAG,
    LOG: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_S: tl.constexpr,
    FOLD: tl.constexpr,
):
    items = 2 * UNITS * SPLITS
    ticket = tl.atomic_add(flags_ptr, 1)
    while ticket < items:
        unit, split, finish, n_begin, n_end = _relay_item(ticket, UNITS, SPLITS, LAG, CHUNK, N)
        if finish:
            _relay_wait(flags_ptr, unit, SPLITS)
            slots, present = _stat_offsets(unit, 0, SPLITS, OUTER, INNER, 1, BLOCK_S, BLOCK_I)
            total = tl.sum(tl.load(sum_ptr + slots, mask=present, other=0.0), axis=1, keep_dims=True)
            total = _fold_sums(total, FOLD, BLOCK_I)
            _write_grad_backwards(
                y_ptr, dy_ptr, dx_ptr, ys_o, ys_n, ys_i, dys_o, dys_n, dys_i, dxs_o, dxs_n, total, unit, OUTER,
                INNER, n_begin, n_end, LOG, 1, BLOCK_N, BLOCK_I,
            )  # fmt: skip
        else:
            partial = _lane_grad_sum(
                y_ptr, dy_ptr, ys_o, ys_n, ys_i, dys_o, dys_n, dys_i, unit, OUTER, INNER, n_begin, n_end, LOG,
                BLOCK_N, BLOCK_I,
            )  # fmt: skip
            offsets, mask = _stat_offsets(unit, split, SPLITS, OUTER, INNER, 1, 1, BLOCK_I)
            tl.store(sum_ptr + offsets, partial, mask=mask)
            _relay_publish(flags_ptr, unit)
        ticket = tl.atomic_add(flags_ptr, 1)


# --------------------------------------------------------------------------------------------
# Realigned rows: rows (inner == 1) that start at several 16-byte phases (a pitch of no whole
# number of 16-byte vectors: rows of 50257 or 65) or end off one.
#
# The tile and online kernels address row r's column c at r * pitch + c; Triton cannot prove such
# a row's vectors aligned and loads and stores it an element at a time. Here each row is cut where
# its own 16-byte boundaries lie: a head of up to VEC - 1 elements before its first boundary, a body
# of whole vectors (its start and its length hinted multiples of VEC, so the body moves in 16-byte
# vectors) and a tail of up to VEC - 1 elements after it. Head and tail share one [BLOCK_O, 2 * VEC]
# edge tile. Every tensor of a launch has its pointer on a 16-byte boundary and its pitch at the
# same phase as the others' (the host checks), so one cut serves them all. Held (WALKED false), a
# program keeps its rows' bodies in registers (one read, as the tile tier), where the plan says so as
# two pieces, BLOCK_N and BLOCK_N2 after it, rather than one block of twice BLOCK_N half empty; walked,
# a persistent grid takes the rows in turn and walks each body in BLOCK_N chunks twice (as the online
# tier).
# --------------------------------------------------------------------------------------------


@triton.jit
def _realigned_rows(block, OUTER, N, pitch, BLOCK_O: tl.constexpr, VEC: tl.constexpr, WIDE: tl.constexpr):
    """The rows of row block ``block`` ([BLOCK_O]), whether each exists, and each row's head
    (elements before its first 16-byte boundary, [BLOCK_O]) and body (the whole vectors after it,
    a multiple of VEC, [BLOCK_O, 1])."""
    if WIDE:  # a constexpr: row offsets past 2^31 elements in 64 bits
        block = block.to(tl.int64)
    rows = block * BLOCK_O + tl.arange(0, BLOCK_O)
    head = tl.minimum((VEC - (rows * pitch) % VEC) % VEC, N)
    body = tl.multiple_of((N - head) // VEC * VEC, VEC)
    return rows, (rows < OUTER)[:, None], head, body[:, None]


@triton.jit
def _body_start(rows, pitch, head, VEC: tl.constexpr):
    """Each row's first element on a 16-byte boundary ([BLOCK_O, 1]), hinted a multiple of VEC."""
    return tl.multiple_of(rows * pitch + head, VEC)[:, None]


@triton.jit
def _edge_offsets(rows, pitch, live, head, body, N, VEC: tl.constexpr):
    """Offsets and mask of the edge tile ([BLOCK_O, 2 * VEC]): its first VEC lanes the head, its
    last VEC the tail."""
    k = tl.arange(0, 2 * VEC)[None, :]
    tail = k >= VEC
    columns = tl.where(tail, head[:, None] + body + (k - VEC), k)
    return (rows * pitch)[:, None] + columns, live & tl.where(tail, columns < N, k < head[:, None])


@triton.jit
def _realigned_stats(x_ptr, x_edge, start, live, body, N, BLOCK_N: tl.constexpr):
    """Running (max, sum of exp(x - max)) of rows: their edge ``x_edge``, then their bodies from
    ``start`` in chunks of BLOCK_N."""
    m = tl.max(x_edge, axis=1, keep_dims=True)
    s = tl.sum(tl.exp(x_edge - _safe_max(m)), axis=1, keep_dims=True)
    for c in range(0, N, BLOCK_N):
        j = c + tl.arange(0, BLOCK_N)[None, :]
        x = tl.load(x_ptr + start + j, mask=live & (j < body), other=NEG_INF).to(tl.float32)
        chunk_max = tl.max(x, axis=1, keep_dims=True)
        m, s = _merge_stats(m, s, chunk_max, tl.sum(tl.exp(x - _safe_max(chunk_max)), axis=1, keep_dims=True))
    return m, s


@triton.jit
def softmax_fwd_realigned(
    x_ptr,
    y_ptr,
    OUTER,
    N,
    xs_o,
    ys_o,
    LOG: tl.constexpr,
    WALKED: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    VEC: tl.constexpr,
    WIDE: tl.constexpr,
    BLOCK_N2: tl.constexpr,
):
    if WALKED:
        # persistent, as softmax_fwd_online: the second walk finds the chunks of the first in L2
        for block in range(tl.program_id(0), tl.cdiv(OUTER, BLOCK_O), tl.num_programs(0)):
            rows, live, head, body = _realigned_rows(block, OUTER, N, xs_o, BLOCK_O, VEC, WIDE)
            x_edges, edge_mask = _edge_offsets(rows, xs_o, live, head, body, N, VEC)
            x_edge = tl.load(x_ptr + x_edges, mask=edge_mask, other=NEG_INF).to(tl.float32)
            x_start = _body_start(rows, xs_o, head, VEC)
            m, s = _realigned_stats(x_ptr, x_edge, x_start, live, body, N, BLOCK_N)
            y_edges, _ = _edge_offsets(rows, ys_o, live, head, body, N, VEC)
            tl.store(y_ptr + y_edges, _finish(x_edge, m, s, LOG).to(y_ptr.dtype.element_ty), mask=edge_mask)
            y_start = _body_start(rows, ys_o, head, VEC)
            chunks = tl.cdiv(N, BLOCK_N)
            for k in range(0, chunks):  # backwards: the chunks read last come first
                j = (chunks - 1 - k) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
                inside = live & (j < body)
                x = tl.load(x_ptr + x_start + j, mask=inside, other=NEG_INF).to(tl.float32)
                tl.store(y_ptr + y_start + j, _finish(x, m, s, LOG).to(y_ptr.dtype.element_ty), mask=inside)
    else:
        rows, live, head, body = _realigned_rows(tl.program_id(0), OUTER, N, xs_o, BLOCK_O, VEC, WIDE)
        j = tl.arange(0, BLOCK_N)[None, :]
        inside = live & (j < body)
        x = tl.load(x_ptr + (_body_start(rows, xs_o, head, VEC) + j), mask=inside, other=NEG_INF).to(tl.float32)
        x_edges, edge_mask = _edge_offsets(rows, xs_o, live, head, body, N, VEC)
        x_edge = tl.load(x_ptr + x_edges, mask=edge_mask, other=NEG_INF).to(tl.float32)
        m = tl.maximum(tl.max(x, axis=1, keep_dims=True), tl.max(x_edge, axis=1, keep_dims=True))
        if BLOCK_N2 > 0:  # a constexpr: a body just past a power of two held as two pieces, BLOCK_N + BLOCK_N2
            j2 = BLOCK_N + tl.arange(0, BLOCK_N2)[None, :]
            inside2 = live & (j2 < body)
            x2 = tl.load(x_ptr + (_body_start(rows, xs_o, head, VEC) + j2), mask=inside2, other=NEG_INF)
            x2 = x2.to(tl.float32)
            m = tl.maximum(m, tl.max(x2, axis=1, keep_dims=True))
        base = _safe_max(m)
        e = tl.exp(x - base)
        e_edge = tl.exp(x_edge - base)
        s = tl.sum(e, axis=1, keep_dims=True) + tl.sum(e_edge, axis=1, keep_dims=True)
        if BLOCK_N2 > 0:
            e2 = tl.exp(x2 - base)
            s += tl.sum(e2, axis=1, keep_dims=True)
            y2 = _finish(x2, m, s, LOG) if LOG else e2 * (1.0 / s)
            tl.store(y_ptr + (_body_start(rows, ys_o, head, VEC) + j2), y2.to(y_ptr.dtype.element_ty), mask=inside2)
        y = _finish(x, m, s, LOG) if LOG else e * (1.0 / s)
        y_edge = _finish(x_edge, m, s, LOG) if LOG else e_edge * (1.0 / s)
        tl.store(y_ptr + (_body_start(rows, ys_o, head, VEC) + j), y.to(y_ptr.dtype.element_ty), mask=inside)
        y_edges, _ = _edge_offsets(rows, ys_o, live, head, body, N, VEC)
        tl.store(y_ptr + y_edges, y_edge.to(y_ptr.dtype.element_ty), mask=edge_mask)


@triton.jit
def softmax_bwd_realigned(
    y_ptr,
    dy_ptr,
    dx_ptr,
    OUTER,
    N,
    ys_o,
    dys_o,
    dxs_o,
    LOG: tl.constexpr,
    WALKED: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_N: tl.constexpr,
    VEC: tl.constexpr,
    WIDE: tl.constexpr,
    BLOCK_N2: tl.constexpr,
):
    if WALKED:
        for block in range(tl.program_id(0), tl.cdiv(OUTER, BLOCK_O), tl.num_programs(0)):
            rows, live, head, body = _realigned_rows(block, OUTER, N, ys_o, BLOCK_O, VEC, WIDE)
            y_edges, edge_mask = _edge_offsets(rows, ys_o, live, head, body, N, VEC)
            dy_edges, _ = _edge_offsets(rows, dys_o, live, head, body, N, VEC)
            y_edge, dy_edge = _grad_terms(y_ptr, dy_ptr, y_edges, dy_edges, edge_mask)
            total = tl.sum(_grad_summand(y_edge, dy_edge, LOG), axis=1, keep_dims=True)
            y_start, dy_start = _body_start(rows, ys_o, head, VEC), _body_start(rows, dys_o, head, VEC)
            for c in range(0, N, BLOCK_N):
                j = c + tl.arange(0, BLOCK_N)[None, :]
                y, dy = _grad_terms(y_ptr, dy_ptr, y_start + j, dy_start + j, live & (j < body))
                total += tl.sum(_grad_summand(y, dy, LOG), axis=1, keep_dims=True)
            dx_edges, _ = _edge_offsets(rows, dxs_o, live, head, body, N, VEC)
            dx_edge = _grad(y_edge, dy_edge, total, LOG)
            tl.store(dx_ptr + dx_edges, dx_edge.to(dx_ptr.dtype.element_ty), mask=edge_mask)
            dx_start = _body_start(rows, dxs_o, head, VEC)
            chunks = tl.cdiv(N, BLOCK_N)
            for k in range(0, chunks):  # backwards: the chunks read last come first
                j = (chunks - 1 - k) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
                inside = live & (j < body)
                y, dy = _grad_terms(y_ptr, dy_ptr, y_start + j, dy_start + j, inside)
                tl.store(dx_ptr + dx_start + j, _grad(y, dy, total, LOG).to(dx_ptr.dtype.element_ty), mask=inside)
    else:
        rows, live, head, body = _realigned_rows(tl.program_id(0), OUTER, N, ys_o, BLOCK_O, VEC, WIDE)
        j = tl.arange(0, BLOCK_N)[None, :]
        inside = live & (j < body)
        y, dy = _grad_terms(
            y_ptr, dy_ptr, _body_start(rows, ys_o, head, VEC) + j, _body_start(rows, dys_o, head, VEC) + j, inside
        )
        y_edges, edge_mask = _edge_offsets(rows, ys_o, live, head, body, N, VEC)
        dy_edges, _ = _edge_offsets(rows, dys_o, live, head, body, N, VEC)
        y_edge, dy_edge = _grad_terms(y_ptr, dy_ptr, y_edges, dy_edges, edge_mask)
        total = tl.sum(_grad_summand(y, dy, LOG), axis=1, keep_dims=True)
        total += tl.sum(_grad_summand(y_edge, dy_edge, LOG), axis=1, keep_dims=True)
        if BLOCK_N2 > 0:  # a constexpr: the body's second piece (see softmax_fwd_realigned)
            j2 = BLOCK_N + tl.arange(0, BLOCK_N2)[None, :]
            inside2 = live & (j2 < body)
            y2, dy2 = _grad_terms(
                y_ptr,
                dy_ptr,
                _body_start(rows, ys_o, head, VEC) + j2,
                _body_start(rows, dys_o, head, VEC) + j2,
                inside2,
            )
            total += tl.sum(_grad_summand(y2, dy2, LOG), axis=1, keep_dims=True)
            dx2 = _grad(y2, dy2, total, LOG)
            tl.store(dx_ptr + (_body_start(rows, dxs_o, head, VEC) + j2), dx2.to(dx_ptr.dtype.element_ty), mask=inside2)
        dx = _grad(y, dy, total, LOG)
        tl.store(dx_ptr + (_body_start(rows, dxs_o, head, VEC) + j), dx.to(dx_ptr.dtype.element_ty), mask=inside)
        dx_edges, _ = _edge_offsets(rows, dxs_o, live, head, body, N, VEC)
        tl.store(dx_ptr + dx_edges, _grad(y_edge, dy_edge, total, LOG).to(dx_ptr.dtype.element_ty), mask=edge_mask)
