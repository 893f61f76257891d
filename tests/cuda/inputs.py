"""Inputs shared by the CUDA backend's GPU tests."""

from __future__ import annotations

import torch


def around_the_fused_shift_limit(rows, n, dtype):
    """Rows whose maximum lies at, just below and just above 2^20, the largest magnitude the
    cluster and grid_row tiers take exp(x - max) as 2^(x log2e - k) for (kernels/common.cuh,
    ExpShift), with neighbours within a few units of it (in float32 a real distribution, in 16-bit
    types their nearest values), and the same negated."""
    limit = float(1 << 20)
    tops = [limit, limit - 0.5, limit + 1.0, -limit, -limit + 0.5, -limit - 1.0, 1000.0, -3.5]
    x = torch.empty((rows, n), device="cuda", dtype=torch.float32)
    for r in range(rows):
        top = tops[r % len(tops)]
        x[r] = top - torch.rand(n, device="cuda") * 8
        x[r, r % n] = top
    return x.to(dtype)
