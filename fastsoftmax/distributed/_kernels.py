"""Triton kernels for a softmax whose rows are split over ranks.

Every kernel sees this rank's shard as a 2D ``(rows, n)`` strided view, works on tiles of
``BLOCK_R`` rows by ``BLOCK_N`` columns (one row per program for long rows, several for short
ones, so that every program still moves kilobytes) and keeps its arithmetic in float32.

Per-row statistics live in a float32 buffer of shape ``(fields, rows)``: field 0 is the max, field
1 the sum of ``exp(x - max)``; cross-entropy adds field 2, the sum of the row's logits (for label
smoothing), and field 3, the target logit (0 on ranks that do not own the target column). Fields
are the slow axis so that field 0 alone, and fields 1.. together, are contiguous: the all-reduce
variant reduces them with different operations.

The kernels that consume statistics take those of ``WORLD`` ranks, stacked with a stride of
``rank_stride`` (``WORLD == 1`` when they are already global), and merge them by the
online-normaliser rule, so that the all-gather variant needs no merge kernel of its own.

Numerics, as in ``fastsoftmax/backends/triton/kernels.py``: a max of ``-inf`` is replaced by 0
before subtracting, so a shard or a row of ``-inf`` (or an empty shard) contributes a sum of 0
instead of NaN, and a row that is all ``-inf`` still ends as 0/0 = NaN; ``+inf`` or NaN anywhere
makes the row NaN.
"""

import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))


@triton.jit
def _safe_max(m):
    return tl.where(m == NEG_INF, 0.0, m)


@triton.jit
def _row_tile(pid, ROWS, BLOCK_R: tl.constexpr):
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    return rows, rows < ROWS


@triton.jit
def _tile_of_program(ROWS, N, COLUMN_BLOCKS, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """Rows and columns of this program's tile. Row blocks are taken last first: the pass before
    read the last rows last, so they are the likeliest to still be in L2."""
    pid = tl.program_id(0)
    row_blocks = tl.cdiv(ROWS, BLOCK_R)
    rows, row_mask = _row_tile(row_blocks - 1 - pid // COLUMN_BLOCKS, ROWS, BLOCK_R)
    cols = (pid % COLUMN_BLOCKS) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = row_mask[:, None] & (cols < N)[None, :]
    return rows, row_mask, cols, mask


@triton.jit
def row_stats(
    x_ptr,
    stats_ptr,
    target_ptr,
    ROWS,
    N,
    xs_r,
    xs_n,
    VOCAB_START,
    WITH_CROSS_ENTROPY: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """One read of each row: running (max, sum of exp(x - max)), merged per chunk (one exp per
    element); with WITH_CROSS_ENTROPY also the row's sum and the target logit if this shard owns
    the target's column."""
    rows, row_mask = _row_tile(tl.program_id(0), ROWS, BLOCK_R)
    row_offsets = rows.to(tl.int64)[:, None] * xs_r
    cols = tl.arange(0, BLOCK_N)
    m = tl.full((BLOCK_R,), NEG_INF, tl.float32)
    s = tl.zeros((BLOCK_R,), tl.float32)
    total = tl.zeros((BLOCK_R, BLOCK_N), tl.float32)
    for start in range(0, N, BLOCK_N):
        mask = row_mask[:, None] & (start + cols < N)[None, :]
        offsets = row_offsets + (start + cols).to(tl.int64)[None, :] * xs_n
        x = tl.load(x_ptr + offsets, mask=mask, other=NEG_INF).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        shift = _safe_max(m_new)
        s = s * tl.exp(m - shift) + tl.sum(tl.exp(x - shift[:, None]), axis=1)
        m = m_new
        if WITH_CROSS_ENTROPY:
            total += tl.where(mask, x, 0.0)
    tl.store(stats_ptr + rows, m, mask=row_mask)
    tl.store(stats_ptr + ROWS + rows, s, mask=row_mask)
    if WITH_CROSS_ENTROPY:
        tl.store(stats_ptr + 2 * ROWS + rows, tl.sum(total, axis=1), mask=row_mask)
        local = tl.load(target_ptr + rows, mask=row_mask, other=-1) - VOCAB_START
        owned = row_mask & (local >= 0) & (local < N)
        offsets = rows.to(tl.int64) * xs_r + tl.where(owned, local, 0) * xs_n
        target_logit = tl.load(x_ptr + offsets, mask=owned, other=0.0).to(tl.float32)
        tl.store(stats_ptr + 3 * ROWS + rows, target_logit, mask=row_mask)


@triton.jit
def _merged(stats_ptr, rows, row_mask, ROWS, WORLD, rank_stride, BLOCK_W: tl.constexpr):
    """Global (max, sum) of rows from WORLD ranks' (max, sum) pairs, shaped [BLOCK_R, BLOCK_W]
    before the merge."""
    ranks = tl.arange(0, BLOCK_W)
    mask = row_mask[:, None] & (ranks < WORLD)[None, :]
    offsets = ranks.to(tl.int64)[None, :] * rank_stride + rows[:, None]
    m = tl.load(stats_ptr + offsets, mask=mask, other=NEG_INF)
    s = tl.load(stats_ptr + offsets + ROWS, mask=mask, other=0.0)
    m_all = tl.max(m, axis=1)
    s_all = tl.sum(s * tl.exp(m - _safe_max(m_all)[:, None]), axis=1)
    return m_all, s_all, offsets, mask


@triton.jit
def normalise(
    x_ptr,
    y_ptr,
    stats_ptr,
    ROWS,
    N,
    xs_r,
    xs_n,
    ys_r,
    WORLD,
    rank_stride,
    COLUMN_BLOCKS,
    LOG: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    rows, row_mask, cols, mask = _tile_of_program(ROWS, N, COLUMN_BLOCKS, BLOCK_R, BLOCK_N)
    m, s, _, _ = _merged(stats_ptr, rows, row_mask, ROWS, WORLD, rank_stride, BLOCK_W)
    s = tl.where(row_mask, s, 1.0)  # padding rows of the tile: keep 1/s and log(s) finite
    rows = rows.to(tl.int64)[:, None]
    x = tl.load(x_ptr + rows * xs_r + cols.to(tl.int64)[None, :] * xs_n, mask=mask, other=0.0).to(tl.float32)
    shifted = x - _safe_max(m)[:, None]
    if LOG:
        y = shifted - tl.log(s)[:, None]
    else:
        y = tl.exp(shifted) * (1.0 / s)[:, None]
    tl.store(y_ptr + rows * ys_r + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def grad_total(
    y_ptr,
    dy_ptr,
    total_ptr,
    ROWS,
    N,
    ys_r,
    dys_r,
    dys_n,
    LOG: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Per row of the shard: sum(dy * y) (softmax) or sum(dy) (log-softmax)."""
    rows, row_mask = _row_tile(tl.program_id(0), ROWS, BLOCK_R)
    row = rows.to(tl.int64)[:, None]
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_R, BLOCK_N), tl.float32)
    for start in range(0, N, BLOCK_N):
        mask = row_mask[:, None] & (start + cols < N)[None, :]
        dy = tl.load(dy_ptr + row * dys_r + (start + cols).to(tl.int64)[None, :] * dys_n, mask=mask, other=0.0)
        if LOG:
            acc += dy.to(tl.float32)
        else:
            y = tl.load(y_ptr + row * ys_r + (start + cols)[None, :], mask=mask, other=0.0)
            acc += dy.to(tl.float32) * y.to(tl.float32)
    tl.store(total_ptr + rows, tl.sum(acc, axis=1), mask=row_mask)


@triton.jit
def grad_apply(
    y_ptr,
    dy_ptr,
    dx_ptr,
    total_ptr,
    ROWS,
    N,
    ys_r,
    dys_r,
    dys_n,
    dxs_r,
    COLUMN_BLOCKS,
    LOG: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """dx = y * (dy - total) for softmax, dx = dy - exp(y) * total for log-softmax."""
    rows, row_mask, cols, mask = _tile_of_program(ROWS, N, COLUMN_BLOCKS, BLOCK_R, BLOCK_N)
    total = tl.load(total_ptr + rows, mask=row_mask, other=0.0)[:, None]
    rows = rows.to(tl.int64)[:, None]
    y = tl.load(y_ptr + rows * ys_r + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + rows * dys_r + cols.to(tl.int64)[None, :] * dys_n, mask=mask, other=0.0).to(tl.float32)
    if LOG:
        dx = dy - tl.exp(y) * total
    else:
        dx = y * (dy - total)
    tl.store(dx_ptr + rows * dxs_r + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_rows(
    stats_ptr,
    target_ptr,
    lse_ptr,
    loss_ptr,
    ROWS,
    WORLD,
    rank_stride,
    IGNORE_INDEX,
    on_target,
    uniform,
    BLOCK_R: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    """Per row: lse = log(sum(exp(x))) over the whole row, and the loss
    lse - (1 - eps) * x[target] - eps / V * sum(x), 0 where the target is ignored."""
    rows, row_mask = _row_tile(tl.program_id(0), ROWS, BLOCK_R)
    m, s, offsets, mask = _merged(stats_ptr, rows, row_mask, ROWS, WORLD, rank_stride, BLOCK_W)
    row_sum = tl.sum(tl.load(stats_ptr + offsets + 2 * ROWS, mask=mask, other=0.0), axis=1)
    target_logit = tl.sum(tl.load(stats_ptr + offsets + 3 * ROWS, mask=mask, other=0.0), axis=1)
    # Padding rows of the tile have s = 0; keep log() off them.
    lse = _safe_max(m) + tl.log(tl.where(row_mask, s, 1.0))
    # without smoothing the row's sum takes no part (as torch): a -inf logit would make 0 * -inf
    loss = lse - on_target * target_logit - tl.where(uniform != 0.0, uniform * row_sum, 0.0)
    ignored = tl.load(target_ptr + rows, mask=row_mask, other=IGNORE_INDEX) == IGNORE_INDEX
    tl.store(lse_ptr + rows, lse, mask=row_mask)
    tl.store(loss_ptr + rows, tl.where(ignored, 0.0, loss), mask=row_mask)


@triton.jit
def cross_entropy_grad(
    x_ptr,
    dx_ptr,
    lse_ptr,
    target_ptr,
    scale_ptr,
    ROWS,
    N,
    xs_r,
    xs_n,
    dxs_r,
    VOCAB_START,
    IGNORE_INDEX,
    on_target,
    uniform,
    COLUMN_BLOCKS,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """dx = scale * (softmax(x) - (1 - eps) * onehot(target) - eps / V), 0 on ignored rows; the
    softmax is recomputed from x and the saved per-row lse, so no logits cross the wire."""
    rows, row_mask, cols, mask = _tile_of_program(ROWS, N, COLUMN_BLOCKS, BLOCK_R, BLOCK_N)
    target = tl.load(target_ptr + rows, mask=row_mask, other=IGNORE_INDEX)[:, None]
    scale = tl.load(scale_ptr + rows, mask=row_mask, other=0.0)[:, None]
    lse = tl.load(lse_ptr + rows, mask=row_mask, other=0.0)[:, None]
    rows = rows.to(tl.int64)[:, None]
    x = tl.load(x_ptr + rows * xs_r + cols.to(tl.int64)[None, :] * xs_n, mask=mask, other=0.0).to(tl.float32)
    grad = tl.exp(x - lse) - uniform - tl.where(cols[None, :] + VOCAB_START == target, on_target, 0.0)
    grad = tl.where(target == IGNORE_INDEX, 0.0, grad * scale)
    tl.store(dx_ptr + rows * dxs_r + cols[None, :], grad.to(dx_ptr.dtype.element_ty), mask=mask)
