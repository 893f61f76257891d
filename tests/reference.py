"""Float64 references and the error bars the kernels are held to."""

from __future__ import annotations

import math
import os

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

#: Allowed error in units in the last place of the output type. Half types compute in float32 and
#: round once: one ulp. float32 gets a few ulps for the exp and the division, plus what
#: ``check_forward`` adds: the rounding of (x - max), which exp turns into a relative error of
#: |x - max| * 2^-24 (torch's kernels carry the same term); the same error of every term of the
#: sum, carried into every output by the shared denominator (sum of y * |x - max| ulps); and
#: 2 log2(n) ulps for the sum itself: a tree sum's log2(n), and as much again for the online
#: normaliser's rescaling of its running sum (one exp and one product a chunk; the Triton online
#: tier measured 11 ulps of float32 at n = 300 against a tree sum's 8).
ULPS = {torch.float32: 4, torch.float16: 1, torch.bfloat16: 1}
if os.environ.get("TRITON_INTERPRET") == "1":
    # Triton's interpreter converts float32 to bfloat16 by truncation (the GPU rounds to nearest),
    # which can cost one more ulp. The GPU suite holds bfloat16 to one ulp.
    ULPS[torch.bfloat16] = 2
#: A normwise floor (relative to the largest reference magnitude) for results that are sums of
#: cancelling terms: log-softmax near 0, gradients. float32 accumulation error, not storage.
NORMWISE = 2e-6


def ulp(reference: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    finfo = torch.finfo(dtype)
    magnitude = reference.abs().clamp_min(finfo.tiny)
    return torch.exp2(torch.floor(torch.log2(magnitude))) * finfo.eps


def softmax64(x: torch.Tensor, dim: int, log: bool = False) -> torch.Tensor:
    x64 = x.detach().to(torch.float64)
    return torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)


def grad64(x: torch.Tensor, dy: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    x64 = x.detach().to(torch.float64).requires_grad_(True)
    y64 = torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)
    (dx,) = torch.autograd.grad(y64, x64, dy.to(torch.float64))
    return dx


def check_forward(y: torch.Tensor, x: torch.Tensor, dim: int, log: bool = False) -> None:
    """``y`` is softmax (log-softmax) of ``x`` over ``dim`` to within the error bars."""
    reference = softmax64(x, dim, log)
    extra = None
    if y.dtype == torch.float32 and not log:
        x64 = x.detach().to(torch.float64)
        shifted = (x64 - x64.amax(dim, keepdim=True)).abs().nan_to_num(0.0, 0.0, 0.0)
        terms = (reference.nan_to_num(0.0, 0.0, 0.0) * shifted).sum(dim, keepdim=True) if x.dim() else 0.0
        sum_rounding = 2 * math.log2(max(2, x.size(dim) if x.dim() else 1))
        # partial sums merged across pieces of the axis (online, split, relay) are each rescaled by
        # exp(m_piece - m), whose argument carries up to |m_piece - m| * eps: at most the largest shift
        merged = shifted.amax(dim, keepdim=True) if x.dim() else 0.0
        extra = (shifted + terms + sum_rounding + merged) * torch.finfo(torch.float32).eps * reference.abs()
    assert_matches(y, reference, y.dtype, normwise=log, extra=extra)


def assert_matches(
    out: torch.Tensor,
    reference: torch.Tensor,
    dtype: torch.dtype,
    normwise: bool = False,
    extra: torch.Tensor | None = None,
) -> None:
    """``out`` (of ``dtype``) equals the float64 ``reference`` to within the error bars; NaN must be
    exactly where the reference has NaN, and infinities must match."""
    assert out.dtype == dtype, f"output dtype {out.dtype}, expected {dtype}"
    assert out.shape == reference.shape, f"output shape {tuple(out.shape)}, expected {tuple(reference.shape)}"
    # compared where the reference lies (the GPU in the GPU suites: float64 on the host was most of
    # the time of the large cases)
    out64 = out.detach().to(device=reference.device, dtype=torch.float64)
    if extra is not None:
        extra = extra.to(reference.device)
    # A result beyond the output type's range may come out as that type's infinity or, where
    # float32 to 16-bit conversion truncates (the interpreter), as its largest finite value.
    rounded = reference.to(dtype).to(torch.float64)
    overflow = torch.isinf(rounded) & torch.isfinite(reference)
    if overflow.any():
        got = out64[overflow]
        assert bool(
            ((torch.sign(got) == torch.sign(rounded[overflow])) & (got.abs() >= torch.finfo(dtype).max)).all()
        ), "a result past the type's range is not saturated"
        out64, reference = out64[~overflow], reference[~overflow]
        if extra is not None:
            extra = extra[~overflow]
    nan_out, nan_ref = torch.isnan(out64), torch.isnan(reference)
    assert torch.equal(nan_out, nan_ref), (
        f"NaN at {int(nan_out.sum())} places, expected at {int(nan_ref.sum())} (an unwritten element is NaN)"
    )
    finite = torch.isfinite(reference)
    assert torch.equal(out64[~finite & ~nan_ref], reference[~finite & ~nan_ref]), "infinities differ"
    if not finite.any():
        return
    ref, got = reference[finite], out64[finite]
    tolerance = ULPS[dtype] * ulp(ref, dtype)
    if extra is not None:
        tolerance = tolerance + extra[finite]
    if normwise:
        tolerance = tolerance + NORMWISE * ref.abs().max()
    error = (got - ref).abs()
    worst = int(torch.argmax(error - tolerance))
    assert bool((error <= tolerance).all()), (
        f"error {error[worst].item():.3e} > tolerance {tolerance[worst].item():.3e} at reference value "
        f"{ref[worst].item():.6e} (got {got[worst].item():.6e}); max error {error.max().item():.3e}"
    )


def check_backward(dx: torch.Tensor, x: torch.Tensor, dy: torch.Tensor, dim: int, log: bool = False) -> None:
    """``dx`` is the input gradient of softmax (log-softmax) of ``x`` for the output gradient ``dy``.
    The reference differentiates the float64 function; the kernels start from the rounded forward
    output, so the error bar has a normwise part as well as the ulps of the result."""
    reference = grad64(x, dy, dim, log)
    extra = _forward_rounding(x, dy, dim, log) + _sum_rounding(x, dy, dim, log)
    assert_matches(dx, reference, dx.dtype, normwise=True, extra=extra)


def check_widened_backward(dx: torch.Tensor, x: torch.Tensor, dy: torch.Tensor, dim: int, log: bool = False) -> None:
    """``dx`` (in ``x``'s 16-bit type) is the input gradient of a float32 result computed from the
    16-bit ``x`` (``dtype=torch.float32``, autocast), for the float32 output gradient ``dy``: the
    work in float32 and one rounding of the result."""
    reference = grad64(x, dy, dim, log)
    assert dx.dtype == x.dtype, f"gradient dtype {dx.dtype}, expected the input's {x.dtype}"
    eps = torch.finfo(x.dtype).eps
    torch.testing.assert_close(dx.double(), reference, rtol=eps, atol=4 * eps * reference.abs().max().item())


def jvp64(x: torch.Tensor, tangent: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    """The forward-mode derivative of softmax (log-softmax) of ``x`` along ``tangent``, in float64."""
    x64 = x.detach().to(torch.float64)
    t64 = tangent.detach().to(device=x64.device, dtype=torch.float64)
    op = torch.log_softmax if log else torch.softmax
    return torch.func.jvp(lambda a: op(a, dim), (x64,), (t64,))[1]


def check_jvp(out: torch.Tensor, x: torch.Tensor, tangent: torch.Tensor, dim: int, log: bool = False) -> None:
    """``out`` is the tangent of softmax (log-softmax) of ``x`` along ``tangent``. Softmax's Jacobian
    is symmetric, so its tangent is its backward applied to the tangent (check_backward's error
    bars); log-softmax's, t - sum(t * exp(y)), moves with the rounded y inside exp and with the
    float32 sum."""
    if not log:
        check_backward(out, x, tangent, dim)
        return
    reference = jvp64(x, tangent, dim, True)
    y64 = softmax64(x, dim, True)
    p = torch.exp(y64)
    t64 = tangent.detach().to(device=p.device, dtype=torch.float64).abs()
    half_ulp = 0.5 * (ULPS[x.dtype] if x.dtype != torch.float32 else 1) * ulp(y64, x.dtype)
    n = x.size(dim) if x.dim() else 1
    gamma = (math.log2(max(n, 2)) + 16) * torch.finfo(torch.float32).eps
    moved = (p * torch.expm1(half_ulp) * t64).sum(dim, keepdim=True) + gamma * (p * t64).sum(dim, keepdim=True)
    assert_matches(out, reference, out.dtype, normwise=True, extra=moved.nan_to_num(0.0).expand_as(reference))


def _sum_rounding(x: torch.Tensor, dy: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    """The float32 error of the row sum in the gradient, carried into every element: a tree sum
    within a chunk and a running sum across chunks, bounded by (log2 n + 16) eps sum|terms|."""
    y64 = softmax64(x, dim, log)
    dy64 = dy.detach().to(device=y64.device, dtype=torch.float64)
    n = x.size(dim) if x.dim() else 1
    gamma = (math.log2(max(n, 2)) + 16) * torch.finfo(torch.float32).eps
    if log:
        return (gamma * torch.exp(y64) * dy64.abs().sum(dim, keepdim=True)).nan_to_num(0.0)
    return (gamma * y64.abs() * (dy64 * y64).abs().sum(dim, keepdim=True)).nan_to_num(0.0)


def _forward_rounding(x: torch.Tensor, dy: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    """How far the gradient can move when the forward output y is rounded to x's type (half an ulp
    of each y, one under the interpreter's truncation): the backward kernels see the rounded y."""
    y64 = softmax64(x, dim, log)
    dy64 = dy.detach().to(device=y64.device, dtype=torch.float64)
    half_ulp = 0.5 * ULPS[x.dtype] * ulp(y64, x.dtype) if x.dtype != torch.float32 else 0.5 * ulp(y64, x.dtype)
    if log:
        # dx = dy - exp(y) * sum(dy): dy is exact, exp(y) moves by exp(y) (exp(du) - 1), not only
        # by its first-order part exp(y) du (a 16-bit y near -1 moves by 2^-8: 0.4% more)
        return (torch.exp(y64) * torch.expm1(half_ulp) * dy64.sum(dim, keepdim=True).abs()).nan_to_num(0.0)
    # dx = y * (dy - sum(dy * y)): y moves in both factors, and their movements multiply
    total = (dy64 * y64).sum(dim, keepdim=True)
    moved_sum = (dy64.abs() * half_ulp).sum(dim, keepdim=True)
    return (half_ulp * (dy64 - total).abs() + (y64.abs() + half_ulp) * moved_sum).nan_to_num(0.0)


def gradient_terms(y: torch.Tensor, dy: torch.Tensor, dim: int, log: bool, sum_weight: float = 1.0) -> torch.Tensor:
    """Per element, the sum of absolute terms behind the softmax gradient y * (dy - sum(dy * y)),
    or the log-softmax gradient dy - exp(y) * sum(dy), in float64: one rounding of each term moves
    the result by eps times this, for any summation order. Where the gradient cancels (dy close to
    sum(dy * y)) it is far larger than the result. ``sum_weight`` scales the reduced term (2 counts
    the rounding of the stored output y inside the sum as well as of the sum)."""
    y, dy = y.double(), dy.double()
    if log:
        return dy.abs() + sum_weight * y.exp() * dy.abs().sum(dim, keepdim=True)
    return y.abs() * (dy.abs() + sum_weight * (dy * y).abs().sum(dim, keepdim=True))
