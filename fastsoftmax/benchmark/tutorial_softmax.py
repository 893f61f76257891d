"""The design of Triton's fused-softmax tutorial, as a peer: one program per row, the whole row
loaded at once into a block padded to the next power of two, max, exp, sum and divide in
registers, one store. It is the kernel seed 002 measures, and its padding is the point: a row of
2^k + 1 columns does the work of 2^(k+1), so its bandwidth dips just past every power of two.

Written here rather than imported, since the tutorial is not a package. Rows longer than
``MAX_COLS`` are refused: the padded row no longer fits in registers and the kernel spills, which
the tutorial never meant to handle (and Triton caps a block at 2^20 elements anyway).
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_COLS = 1 << 16


def num_warps_for(block: int) -> int:
    """The tutorial's rule: more warps for longer rows, so each thread holds a bounded slice."""
    if block >= 4096:
        return 16
    if block >= 2048:
        return 8
    return 4


@triton.jit
def _row_softmax(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    """Softmax over the last dim of a 2-D tensor with the tutorial's kernel."""
    import torch

    if x.dim() != 2:
        raise ValueError("the tutorial kernel takes a 2-D tensor")
    rows, cols = x.shape
    if cols > MAX_COLS:
        raise ValueError(f"the tutorial kernel holds a whole row in registers: {cols} > {MAX_COLS} columns")
    if x.stride(1) != 1:
        x = x.contiguous()
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _row_softmax[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=block, num_warps=num_warps_for(block))
    return y
