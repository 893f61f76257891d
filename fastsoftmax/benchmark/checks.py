"""Correctness checks against a float64 reference, made before any output is timed.

An output passes when every element lies within ``atol + rtol * scale`` of the reference, where
``scale`` is the size of the terms that any reasonable summation order rounds:

* forward: ``|y|`` (softmax outputs are positive; rounding to the storage dtype dominates);
* backward: ``|dx| + |y * s|`` with ``s = sum(dy * y)``, because ``dx = y*dy - y*s`` may cancel
  and a kernel that evaluates it in either order is correct; plus ``|y|`` times the float32
  error of the row sum itself, ``(log2 n + 16) eps sum|dy * y|``.

``rtol`` allows a few units in the last place of the storage dtype; ``atol`` is one subnormal step
for float16 (tiny probabilities of a long row fall below its normal range) and negligible for the
other two dtypes, whose range reaches far below any probability these inputs produce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

TOLERANCES = {  # dtype name -> (rtol, atol)
    "float32": (2e-5, 1e-12),
    "float16": (2e-3, 6e-8),
    "bfloat16": (1.6e-2, 1e-12),
}

# Compare in slices so that the float64 temporaries stay a fraction of the tensor's size.
_CHUNK = 1 << 24


@dataclass
class Reference:
    expected: torch.Tensor  # float64, same shape as the output
    tolerance: torch.Tensor  # float32, elementwise allowed error


@dataclass
class CheckResult:
    passed: bool
    max_abs_err: float
    worst_ratio: float  # max of |error| / tolerance: <= 1 passes
    bad_elements: int
    message: str = ""


def forward_reference(x: torch.Tensor, dim: int, dtype_name: str, log: bool = False) -> Reference:
    x64 = x.to(torch.float64)
    expected = torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)
    del x64
    rtol, atol = TOLERANCES[dtype_name]
    if log:
        # log-softmax is exact up to rounding of |value| and of the log-sum-exp it subtracts
        scale = expected.abs() + 1.0
    else:
        scale = expected.abs()
    tolerance = (scale.mul_(rtol).add_(atol)).to(torch.float32)
    return Reference(expected, tolerance)


def backward_reference(dy: torch.Tensor, y: torch.Tensor, dim: int, dtype_name: str) -> Reference:
    y64 = y.to(torch.float64)
    dy64 = dy.to(torch.float64)
    s = (y64 * dy64).sum(dim, keepdim=True)
    expected = y64 * (dy64 - s)
    rtol, atol = TOLERANCES[dtype_name]
    scale = expected.abs() + (y64 * s).abs_()
    # the float32 row sum itself: a tree within a chunk, a running sum across chunks
    gamma = (math.log2(max(2, y.shape[dim])) + 16) * torch.finfo(torch.float32).eps
    sum_error = (y64 * dy64).abs_().sum(dim, keepdim=True).mul_(gamma)
    tolerance = scale.mul_(rtol).add_(atol).add_(y64.abs_().mul_(sum_error)).to(torch.float32)
    del y64, dy64, s, sum_error
    return Reference(expected, tolerance)


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1) if t.is_contiguous() else t.contiguous().reshape(-1)


def check(output, reference: Reference) -> CheckResult:
    """Compare ``output`` with the reference; never raises on a wrong output, only reports it."""
    if not isinstance(output, torch.Tensor):
        return CheckResult(False, float("inf"), float("inf"), -1, f"returned {type(output).__name__}, not a tensor")
    if tuple(output.shape) != tuple(reference.expected.shape):
        return CheckResult(
            False,
            float("inf"),
            float("inf"),
            -1,
            f"shape {tuple(output.shape)} != expected {tuple(reference.expected.shape)}",
        )
    if output.device != reference.expected.device:
        return CheckResult(False, float("inf"), float("inf"), -1, f"output on {output.device}")
    got = _flat(output)
    expected = _flat(reference.expected)
    tolerance = _flat(reference.tolerance)
    max_abs = 0.0
    worst = 0.0
    bad = 0
    for start in range(0, got.numel(), _CHUNK):
        stop = min(start + _CHUNK, got.numel())
        err = got[start:stop].to(torch.float64).sub_(expected[start:stop]).abs_()
        tol = tolerance[start:stop]
        # NaN compares false, so a NaN output counts as bad here
        bad += int((~(err <= tol)).sum().item())
        if torch.isnan(err).any().item():
            max_abs = worst = float("nan")
            continue
        if not math.isnan(max_abs):  # stays NaN once NaN was seen
            max_abs = max(max_abs, float(err.max().item()))
            worst = max(worst, float((err / tol).max().item()))
    passed = bad == 0
    message = "" if passed else f"{bad} of {got.numel()} elements outside tolerance"
    return CheckResult(passed, max_abs, worst, bad, message)
