"""Every CUDA kernel of the "cuda" backend and of the ladder against a float64 reference, on a GPU.

Inputs are fresh ``torch.randn(...) * 3`` (never zeros); every output is filled with NaN before the
kernel runs, so an element the kernel fails to write shows up. Tolerances: float32 within a few
float32 roundings; float16 and bfloat16 within one unit in the last place of the output type.
Backward gradients are held to the same bounds, measured against the size of the terms they are
computed from (a gradient is a difference, so its own magnitude can be far below its error).

Tiers are forced by calling ``BACKEND.forward(x3, y3, log, tier)`` on the canonical 3D views
(outer, n, inner) directly.
"""

from __future__ import annotations

import math

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
MANTISSA_BITS = {torch.float16: 10, torch.bfloat16: 7}
SMALLEST_SUBNORMAL = {torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}
FLOAT32_TINY = 2.0**-126


@pytest.fixture(scope="module")
def backend():
    from fastsoftmax.backends.cuda import BACKEND

    reason = BACKEND.unavailable_reason(torch.device("cuda", torch.cuda.current_device()))
    if reason:
        pytest.skip(f"backend 'cuda' cannot run here: {reason}")
    return BACKEND


# ---- references and tolerances -----------------------------------------------------------------

def reference_forward(x: torch.Tensor, log: bool) -> torch.Tensor:
    x64 = x.double()
    return torch.log_softmax(x64, dim=1) if log else torch.softmax(x64, dim=1)


def reference_backward(y: torch.Tensor, dy: torch.Tensor, log: bool):
    """dx in float64, and the size of the terms it is computed from (for the tolerance)."""
    y64, dy64 = y.double(), dy.double()
    if log:
        total = dy64.sum(dim=1, keepdim=True)
        dx = dy64 - torch.exp(y64) * total
        scale = dy64.abs() + torch.exp(y64) * total.abs()
    else:
        total = (dy64 * y64).sum(dim=1, keepdim=True)
        dx = y64 * (dy64 - total)
        scale = y64.abs() * (dy64.abs() + total.abs())
    return dx, scale


def ulp(ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """One unit in the last place of ``dtype`` at the magnitude of ``ref`` (float64)."""
    _, exponent = torch.frexp(ref.abs().clamp_min(1e-300))
    spacing = torch.pow(2.0, (exponent - 1 - MANTISSA_BITS[dtype]).double())
    return spacing.clamp_min(SMALLEST_SUBNORMAL[dtype])


def tolerance(ref: torch.Tensor, dtype: torch.dtype, scale: torch.Tensor | None = None) -> torch.Tensor:
    size = ref.abs() if scale is None else torch.maximum(ref.abs(), scale)
    if dtype == torch.float32:
        # a few float32 roundings of the result and of the terms it came from
        return 1e-5 * size + 1e-6 * (scale if scale is not None else 0) + FLOAT32_TINY
    # the float32 result rounds to within half an ulp; allow one, plus float32-level error of
    # the terms (gradients) and the float32 subnormal floor (exp of very negative arguments)
    tol = ulp(ref, dtype) + FLOAT32_TINY
    if scale is not None:
        tol = tol + 1e-5 * size
    return tol


def assert_close(out: torch.Tensor, ref: torch.Tensor, tol: torch.Tensor, what: str) -> None:
    out64 = out.double()
    nan_ref, nan_out = torch.isnan(ref), torch.isnan(out64)
    if not torch.equal(nan_ref, nan_out):
        where = (nan_ref != nan_out).nonzero()[0].tolist()
        raise AssertionError(
            f"{what}: NaN pattern differs from the reference at index {where}: kernel gave "
            f"{out64[tuple(where)].item()!r}, reference {ref[tuple(where)].item()!r} "
            f"({int((nan_out & ~nan_ref).sum())} unexpected NaN -- unwritten outputs show as NaN --, "
            f"{int((nan_ref & ~nan_out).sum())} missing NaN)")
    ok = ~nan_ref
    inf_mismatch = torch.isinf(ref) & ok & (out64 != ref)
    if inf_mismatch.any():
        where = inf_mismatch.nonzero()[0].tolist()
        raise AssertionError(f"{what}: at {where} the kernel gave {out64[tuple(where)].item()!r}, "
                             f"the reference {ref[tuple(where)].item()!r}")
    finite = ok & torch.isfinite(ref)
    err = torch.where(finite, (out64 - ref).abs(), torch.zeros_like(ref))
    excess = err - torch.where(finite, tol, torch.zeros_like(tol))
    worst = excess.argmax()
    if excess.flatten()[worst] > 0:
        where = list(torch.unravel_index(worst, ref.shape))
        where = [int(i) for i in where]
        raise AssertionError(
            f"{what}: {int((excess > 0).sum())} of {ref.numel()} elements outside tolerance; worst at "
            f"{where}: kernel {out64[tuple(where)].item():.9g}, reference {ref[tuple(where)].item():.9g}, "
            f"error {err[tuple(where)].item():.3g} > tolerance {tol[tuple(where)].item():.3g}")


# ---- running a tier --------------------------------------------------------------------------

def rand(shape, dtype, scale=3.0):
    return (torch.randn(shape, device="cuda", dtype=torch.float32) * scale).to(dtype)


def run_forward(backend, x3, tier, log, out=None):
    y3 = torch.full_like(x3, float("nan")) if out is None else out.fill_(float("nan"))
    backend.forward(x3, y3, log, tier)
    torch.cuda.synchronize()
    return y3


def check_forward(backend, x3, tier, log, label, out=None):
    y3 = run_forward(backend, x3, tier, log, out)
    ref = reference_forward(x3, log)
    fn = "log_softmax" if log else "softmax"
    assert_close(y3, ref, tolerance(ref, x3.dtype),
                 f"{fn} forward, tier {tier}, {label}, {x3.dtype}, shape (outer, n, inner) = {tuple(x3.shape)}, "
                 f"input strides {x3.stride()}")


def check_backward(backend, y3, dy3, tier, log, label):
    dx3 = torch.full_like(dy3, float("nan"))
    backend.backward(y3, dy3, dx3, log, tier)
    torch.cuda.synchronize()
    ref, scale = reference_backward(y3, dy3, log)
    fn = "log_softmax" if log else "softmax"
    assert_close(dx3, ref, tolerance(ref, y3.dtype, scale),
                 f"{fn} backward, tier {tier}, {label}, {y3.dtype}, shape (outer, n, inner) = {tuple(y3.shape)}")


def forward_output(x3, log):
    """A genuine forward output in x3's dtype, as backward receives it."""
    return reference_forward(x3, log).to(x3.dtype)


# ---- every tier, dtype, function and direction over awkward lengths ----------------------------

ROW_CASES = {
    "warp": [(37, 1), (37, 7), (9, 32), (37, 33), (16, 64), (5, 100), (7, 128), (3, 257), (9, 512), (6, 1000),
             (4, 1024)],
    "block_smem": [(3, 1), (5, 7), (4, 33), (3, 1000), (7, 1025), (3, 3000), (2, 4096), (3, 8195), (2, 20000)],
    "block_uncached": [(3, 1), (4, 33), (3, 1025), (3, 3000), (2, 50257), (1, 65536), (1, 131072 + 3)],
    # rows of >= 4096 * k elements are cut into k chunks: 20000 -> 4 chunks, 131075 -> many
    "split_row": [(1, 1), (2, 33), (2, 1025), (3, 20000), (5, 16384), (3, 50257), (1, 131072 + 3)],
}
STRIDED_CASES = [(3, 7, 5), (2, 1000, 33), (4, 64, 512), (1, 3000, 2), (5, 1, 17), (2, 33, 100), (1, 50257, 3)]


def row_params():
    for tier, cases in ROW_CASES.items():
        for outer, n in cases:
            yield pytest.param(tier, outer, n, id=f"{tier}-{outer}x{n}")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,outer,n", list(row_params()))
def test_rows_forward(backend, tier, outer, n, dtype_name, log):
    torch.manual_seed(n * 31 + outer)
    x = rand((outer, n), DTYPES[dtype_name])
    check_forward(backend, x.view(outer, n, 1), tier, log, "contiguous rows")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,outer,n", list(row_params()))
def test_rows_backward(backend, tier, outer, n, dtype_name, log):
    torch.manual_seed(n * 17 + outer)
    dtype = DTYPES[dtype_name]
    x3 = rand((outer, n), dtype).view(outer, n, 1)
    y3 = forward_output(x3, log)
    dy3 = rand((outer, n), dtype).view(outer, n, 1)
    check_backward(backend, y3, dy3, tier, log, "contiguous rows")


def strided_params():
    for outer, n, inner in STRIDED_CASES:
        yield pytest.param(outer, n, inner, id=f"{outer}x{n}x{inner}")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("outer,n,inner", list(strided_params()))
def test_strided_forward_and_backward(backend, outer, n, inner, dtype_name, log):
    torch.manual_seed(outer * n + inner)
    dtype = DTYPES[dtype_name]
    x3 = rand((outer, n, inner), dtype)
    assert backend.choose_tier(outer, n, inner, dtype, False) == "strided"
    check_forward(backend, x3, "strided", log, "contiguous (outer, n, inner)")
    y3 = forward_output(x3, log)
    dy3 = rand((outer, n, inner), dtype)
    check_backward(backend, y3, dy3, "strided", log, "contiguous (outer, n, inner)")


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_strided_views_with_arbitrary_strides(backend, dtype_name):
    """Softmax over dim 0 of a transposed/sliced tensor: stride(0) and stride(1) both unusual."""
    dtype = DTYPES[dtype_name]
    base = rand((6, 40, 50), dtype)
    x3 = base[1:5, ::2, 3:40]  # (4, 20, 37), strides (2000, 100, 1)
    y_base = torch.full((5, 21, 45), float("nan"), device="cuda", dtype=dtype)
    y3 = y_base[:4, :20, :37]
    for log in (False, True):
        check_forward(backend, x3, "strided", log, "sliced input and output views", out=y3)
    y_view = forward_output(x3, False)
    dy_view = rand((5, 24, 40), dtype)[1:5, 2:22, :37]
    check_backward(backend, y_view, dy_view, "strided", False, "sliced dy view")


# ---- row pitch, alignment and aliasing -----------------------------------------------------------

@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,n", [("warp", 1000), ("warp", 64), ("block_smem", 3000), ("block_uncached", 5000),
                                    ("split_row", 20000)])
@pytest.mark.parametrize("layout", ["pitch+3", "offset+1", "pitch+2", "out-pitch"])
def test_row_pitch_and_alignment(backend, tier, n, dtype_name, layout):
    """Rows of a wider tensor (stride(0) > n) and rows starting off a 16-byte boundary force the
    narrower packs; the output may have its own pitch."""
    dtype = DTYPES[dtype_name]
    outer = 5
    if layout == "pitch+3":  # odd pitch: no row but the first is aligned beyond one element
        x = rand((outer, n + 3), dtype)[:, :n]
    elif layout == "pitch+2":  # pitch of n + 2 elements: 4- or 8-byte packs at most
        x = rand((outer, n + 2), dtype)[:, :n]
    elif layout == "offset+1":  # every row starts one element past a 16-byte boundary
        x = rand((outer, n + 8), dtype)[:, 1:n + 1]
    else:
        x = rand((outer, n), dtype)
    if layout == "out-pitch":
        out = torch.empty((outer, n + 5), device="cuda", dtype=dtype)[:, :n]
    else:
        out = torch.empty((outer, n), device="cuda", dtype=dtype)
    for log in (False, True):
        check_forward(backend, x.unsqueeze(2), tier, log, f"layout {layout}", out=out.unsqueeze(2))
    y3 = forward_output(x.unsqueeze(2), False)
    dy = rand((outer, n + 3), dtype)[:, :n]
    check_backward(backend, y3, dy.unsqueeze(2), tier, False, f"layout {layout}, dy pitch {n + 3}")


@pytest.mark.parametrize("tier,n", [("warp", 1000), ("block_smem", 3000), ("block_uncached", 5003),
                                    ("split_row", 20003)])
def test_in_place(backend, tier, n):
    """y may be x: every kernel reads an element before it writes it, in the same thread."""
    x = rand((6, n), torch.float32)
    ref = reference_forward(x.unsqueeze(2), False)
    x3 = x.unsqueeze(2)
    backend.forward(x3, x3, False, tier)
    torch.cuda.synchronize()
    assert_close(x3, ref, tolerance(ref, torch.float32), f"in-place softmax, tier {tier}, n={n}")


# ---- special values: like torch.softmax ----------------------------------------------------------

SPECIAL_TIERS = [("warp", 1000), ("warp", 24), ("block_smem", 3000), ("block_uncached", 3000), ("split_row", 20000)]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,n", SPECIAL_TIERS)
def test_infinities_and_nan(backend, tier, n, dtype_name, log):
    """Row 0: some -inf (they get probability 0); row 1: all -inf (NaN, as torch gives); row 2: one
    NaN (the whole row NaN); row 3: +inf (NaN, as torch); rows 4-5: ordinary."""
    dtype = DTYPES[dtype_name]
    x = rand((6, n), dtype)
    x[0, ::3] = float("-inf")
    x[1, :] = float("-inf")
    x[2, n // 2] = float("nan")
    x[3, n // 3] = float("inf")
    check_forward(backend, x.unsqueeze(2), tier, log, "rows with -inf, all -inf, NaN, +inf")
    torch_out = (torch.log_softmax if log else torch.softmax)(x.float(), dim=1)
    ours = run_forward(backend, x.unsqueeze(2), tier, log).squeeze(2).float()
    assert torch.equal(torch.isnan(ours), torch.isnan(torch_out)), "NaN pattern differs from torch.softmax"


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,n", SPECIAL_TIERS + [("strided", 300)])
def test_large_magnitudes(backend, tier, n, dtype_name):
    """Inputs near the top of the type's range: the max subtraction keeps exp from overflowing."""
    dtype = DTYPES[dtype_name]
    scale = 2e4 if dtype == torch.float16 else 1e30
    x = (torch.rand((4, n), device="cuda") * 2 - 1) * scale
    x[:, 0] = scale  # a shared maximum
    x[:, 1] = scale * 0.9999
    x = x.to(dtype)
    x3 = x.unsqueeze(2) if tier != "strided" else x.t().contiguous().view(1, n, 4)
    for log in (False, True):
        check_forward(backend, x3, tier, log, f"magnitudes up to {scale:g}")


# ---- streams, tier choice, many rows ------------------------------------------------------------

def test_runs_on_torch_current_stream(backend):
    """Work launched on a side stream is ordered after that stream's earlier work."""
    x = rand((4096, 1000), torch.float32)
    y = torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x2 = x * 2  # queued on the side stream: the kernel must see its result
        backend.forward(x2.unsqueeze(2), y.unsqueeze(2), False, "warp")
    side.synchronize()
    assert_close(y.unsqueeze(2), reference_forward((x * 2).unsqueeze(2), False),
                 tolerance(reference_forward((x * 2).unsqueeze(2), False), torch.float32), "softmax on a side stream")


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("outer", [1, 8, 300])
@pytest.mark.parametrize("n", [1, 64, 1000, 1024, 1025, 4096, 16384, 32768, 50257, 128256])
def test_chosen_tier_is_right(backend, n, outer, dtype_name):
    dtype = DTYPES[dtype_name]
    x3 = rand((outer, n), dtype).view(outer, n, 1)
    tier = backend.choose_tier(outer, n, 1, dtype, False)
    check_forward(backend, x3, tier, False, "chosen tier")
    tier_b = backend.choose_tier(outer, n, 1, dtype, True)
    check_backward(backend, forward_output(x3, False), rand((outer, n), dtype).view(outer, n, 1), tier_b, False,
                   "chosen tier")


def test_many_short_rows(backend):
    """A million short rows: tens of thousands of blocks, the last one partly past the end."""
    outer = 1_000_003
    x3 = rand((outer, 64), torch.bfloat16).view(outer, 64, 1)
    check_forward(backend, x3, "warp", False, "many rows")


@pytest.mark.parametrize("tier", ["split_row", "block_uncached"])
def test_one_long_row(backend, tier):
    x3 = rand((1, (1 << 22) + 7), torch.bfloat16).view(1, -1, 1)
    check_forward(backend, x3, tier, False, "one long row")
    check_backward(backend, forward_output(x3, False), rand(x3.shape, torch.bfloat16), tier, False, "one long row")


def test_host_overhead_is_small(backend):
    """Not a correctness check: reports the host time of one launch on a 4x1024 bf16 tensor."""
    from fastsoftmax.benchmark.timing import host_us_per_call

    x3 = rand((4, 1024), torch.bfloat16).view(4, 1024, 1)
    y3 = torch.empty_like(x3)
    us = host_us_per_call(lambda: backend.forward(x3, y3, False, "warp"))
    print(f"\nhost time per BACKEND.forward call (4x1024 bf16): {us:.2f} us")
    assert us < 50, f"BACKEND.forward costs {us:.1f} us of host time per call"


# ---- the ladder ---------------------------------------------------------------------------------

LADDER_WIDTHS = [1, 7, 33, 1000, 1024, 1025, 3000, 4099]


@pytest.mark.parametrize("n", LADDER_WIDTHS)
@pytest.mark.parametrize("step", range(1, 8))
def test_ladder_step(step, n):
    from fastsoftmax import ladder

    if ladder_unavailable():
        pytest.skip(ladder_unavailable())
    rows = 67
    x = rand((rows, n), torch.float32)
    y = torch.full_like(x, float("nan"))
    ladder.softmax(x, step, out=y)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=-1)
    assert_close(y, ref, tolerance(ref, torch.float32), f"ladder step {step} ({ladder.STEPS[step]}), {rows}x{n}")


@pytest.mark.parametrize("n", [1000, 4099])
@pytest.mark.parametrize("step", [6, 7])
def test_ladder_search_space(step, n):
    from fastsoftmax import ladder

    if ladder_unavailable():
        pytest.skip(ladder_unavailable())
    x = rand((33, n), torch.float32)
    ref = torch.softmax(x.double(), dim=-1)
    for block in ladder.SEARCH_BLOCKS:
        for unroll in ladder.SEARCH_UNROLLS:
            y = torch.full_like(x, float("nan"))
            ladder.softmax(x, step, block=block, unroll=unroll, out=y)
            torch.cuda.synchronize()
            assert_close(y, ref, tolerance(ref, torch.float32),
                         f"ladder step {step}, block {block}, unroll {unroll}, 33x{n}")


@pytest.mark.parametrize("block", [32, 64, 128, 512, 1024])
@pytest.mark.parametrize("step", [2, 3, 4, 5])
def test_ladder_block_sizes(step, block):
    from fastsoftmax import ladder

    if ladder_unavailable():
        pytest.skip(ladder_unavailable())
    x = rand((9, 3001), torch.float32)
    y = ladder.softmax(x, step, block=block)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=-1)
    assert_close(y, ref, tolerance(ref, torch.float32), f"ladder step {step}, block {block}")


def ladder_unavailable():
    from fastsoftmax.backends.cuda import BACKEND

    return BACKEND.unavailable_reason(torch.device("cuda", torch.cuda.current_device()))


def test_tolerance_helper_is_one_ulp():
    """Guards the test's own yardstick: one bf16 ulp at 1.0 is 2^-7, at 0.75 is 2^-8."""
    ref = torch.tensor([1.0, 0.75, -3.0], dtype=torch.float64)
    assert ulp(ref, torch.bfloat16).tolist() == [2.0**-7, 2.0**-8, 2.0**-6]
    assert ulp(ref, torch.float16).tolist() == [2.0**-10, 2.0**-11, 2.0**-9]
    assert math.isclose(SMALLEST_SUBNORMAL[torch.float16], 5.960464477539063e-08)
