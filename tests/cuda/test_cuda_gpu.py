"""Every CUDA kernel of the "cuda" backend and of the ladder against a float64 reference, on a GPU.

Inputs are fresh ``torch.randn(...) * 3`` (never zeros); every output is filled with NaN before the
kernel runs, so an element the kernel fails to write shows up. Error bars are the shared ones of
``tests/reference.py`` (ulps of the output type, the float32 rounding of x - max, and a normwise
term for results that are sums of cancelling terms: log-softmax near 0 and gradients), so every
backend is held to one standard.

Tiers are forced by calling ``BACKEND.forward(x3, y3, log, tier)`` on the canonical 3D views
(outer, n, inner) directly.
"""

from __future__ import annotations

import pytest
import torch
from inputs import around_the_fused_shift_limit, recording_loads, rows_of_special_values
from reference import assert_matches, softmax64
from reference import check_backward as check_backward_against_x
from reference import check_forward as check_forward_against_x

import fastsoftmax

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


# ---- running a tier --------------------------------------------------------------------------


def rand(shape, dtype, scale=3.0):
    return (torch.randn(shape, device="cuda", dtype=torch.float32) * scale).to(dtype)


def run_forward(backend, x3, tier, log, out=None):
    y3 = torch.full_like(x3, float("nan")) if out is None else out.fill_(float("nan"))
    backend.forward(x3, y3, log, tier)
    torch.cuda.synchronize()
    return y3


def described(what: str, check) -> None:
    """Runs ``check``, prefixing a failure with what was being checked."""
    try:
        check()
    except AssertionError as exc:
        raise AssertionError(f"{what}: {exc}") from None


def check_forward(backend, x3, tier, log, label, out=None):
    y3 = run_forward(backend, x3, tier, log, out)
    fn = "log_softmax" if log else "softmax"
    described(
        f"{fn} forward, tier {tier}, {label}, {x3.dtype}, shape (outer, n, inner) = {tuple(x3.shape)}, "
        f"input strides {x3.stride()}",
        lambda: check_forward_against_x(y3, x3, 1, log),
    )


def check_backward(backend, x3, dy3, tier, log, label):
    """Backward from the forward output of ``x3`` rounded to its dtype, as autograd hands it over."""
    y3 = forward_output(x3, log)
    dx3 = torch.full_like(dy3, float("nan"))
    backend.backward(y3, dy3, dx3, log, tier)
    torch.cuda.synchronize()
    fn = "log_softmax" if log else "softmax"
    described(
        f"{fn} backward, tier {tier}, {label}, {x3.dtype}, shape (outer, n, inner) = {tuple(x3.shape)}",
        lambda: check_backward_against_x(dx3, x3, dy3, 1, log),
    )


def forward_output(x3, log):
    """A genuine forward output in x3's dtype, as backward receives it (same strides as x3)."""
    y3 = torch.empty_like(x3)
    y3.copy_(softmax64(x3, 1, log))
    return y3


# ---- every tier, dtype, function and direction over awkward lengths ----------------------------

# (rows, columns) every block tier runs: odd lengths, one and several packs a thread
BLOCK_ROWS = [(3, 1), (5, 7), (4, 33), (3, 1000), (7, 1025), (3, 3000), (2, 4096), (3, 8195)]

ROW_CASES = {
    "warp": [
        (37, 1),
        (37, 7),
        (9, 32),
        (37, 33),
        (16, 64),
        (5, 100),
        (7, 128),
        (3, 257),
        (9, 512),
        (6, 1000),
        (4, 1024),
    ],
    # up to 32768 forward, 16384 backward (test_rows_backward checks longer rows are refused)
    "block_regs": [
        *BLOCK_ROWS,
        (2, 16384),
        (3, 16385),
        (2, 20000),
        # 16-bit forward at 384 threads of 64 staged elements: 48 KiB of dynamic shared memory,
        # which beside the kernel's static memory needs the opt-in (refused at launch before)
        (2, 22529),
        (2, 24576),
        (2, 32768),
    ],
    # runs of rows through shared memory: a partial last run, group sizes 1 to 16, several runs a CTA
    # (100003 rows of 21: 300+ runs), rows starting anywhere against a 16-byte boundary
    # and rows past 64 (a lane of 32 slots, groups of 8-32 lanes): up to the 1024 the tier holds
    "flat_rows": [
        (3, 1),
        (5, 7),
        (1000, 21),
        (333, 3),
        (70, 64),
        (100003, 21),
        (4099, 33),
        (2, 50),
        (500, 150),
        (33, 129),
        (9, 513),
        (7, 1000),
        (3, 1024),
    ],
    # 12288 float32 and 24576 16-bit elements: a row cache of exactly 48 KiB
    "block_smem": [*BLOCK_ROWS, (2, 12288), (2, 20000), (2, 24576)],
    "block_uncached": [(3, 1), (4, 33), (3, 1025), (3, 3000), (2, 50257), (1, 65536), (1, 131072 + 3)],
    # rows of >= 4096 * k elements are cut into k chunks: 20000 -> 4 chunks, 131075 -> many
    "split_row": [(1, 1), (2, 33), (2, 1025), (3, 20000), (5, 16384), (3, 50257), (1, 131072 + 3)],
    # around every cluster-size boundary (16-bit: 1 CTA to 16384, 2 to 32768, 4 to 65536, 8 to
    # 131072, then 16; float32 half those; fewer than sm_count / 16 rows take 16 CTAs whatever the
    # length; the 16-bit backward of 49153-65536 at 8 on GPUs of much DRAM bandwidth an SM, 4 on
    # others), odd lengths, and K = 8 with 512 threads (float32 forward: K = 16)
    "cluster": [
        (3, 1),
        (5, 7),
        (4, 1025),
        (20, 8193),
        (20, 16383),
        (20, 16385),
        (20, 32769),
        (3, 50257),
        (20, 65535),
        (20, 65536),
        (20, 65537),
        (9, 131073),
        (1, 128256),
        (2, 262147),
        (1, 400003),
        (9, 500001),
    ],
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
    if not backend.supports(tier, outer, n, 1, dtype, True):
        assert (tier == "block_regs" and n > 16384) or (tier == "cluster" and dtype == torch.float32 and n > 262080)
        with pytest.raises(ValueError, match="too long"):
            backend.backward(*(rand((outer, n), dtype).view(outer, n, 1) for _ in range(3)), log, tier)
        return
    x3 = rand((outer, n), dtype).view(outer, n, 1)
    dy3 = rand((outer, n), dtype).view(outer, n, 1)
    check_backward(backend, x3, dy3, tier, log, "contiguous rows")


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_block_regs_every_thread_count(backend, dtype_name):
    """Rows that take block_regs at every thread count it launches with, forward and backward: the
    shared memory of the staged 16-bit rows grows with the threads and crosses the 48 KiB a launch
    gets without opting in."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import BLOCK_REGS_PACK_SIZES, block_regs_max_cols, block_regs_shape

    dtype = DTYPES[dtype_name]
    pack = BLOCK_REGS_PACK_SIZES[dtype][0]
    for backward in (False, True):
        seen = set()
        for n in range(pack, block_regs_max_cols(dtype, backward) + 1, pack):
            target = tiers.block_regs_target(n, dtype.itemsize, backward)
            shape = block_regs_shape(n, dtype, pack, backward, target)
            if shape in seen:
                continue
            seen.add(shape)
            x3 = rand((2, n), dtype).view(2, n, 1)
            if backward:
                check_backward(backend, x3, rand((2, n), dtype).view(2, n, 1), "block_regs", False, f"{shape}")
            else:
                check_forward(backend, x3, "block_regs", False, f"(elements, threads) = {shape}")


@pytest.mark.parametrize("backend_name", ["auto", "cuda"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_public_api_around_the_block_regs_and_cluster_rows(backend_name, dtype_name):
    """Through the public API, forward and autograd's backward: rows on either side of where the
    forward leaves block_regs for the cluster tier (9216 / 9224), at block_regs' 48 KiB of staged
    shared memory (22529, 24576), its longest row, and a view whose rows are off 16-byte boundaries."""
    import fastsoftmax

    dtype = DTYPES[dtype_name]
    for n in (9216, 9224, 22529, 24576, 32768):
        for x in (rand((6, n), dtype), rand((6, n + 1), dtype)[:, 1:]):
            for log in (False, True):
                fn = fastsoftmax.log_softmax if log else fastsoftmax.softmax
                leaf = x.detach().requires_grad_(True)
                y = fn(leaf, -1, backend=backend_name)
                described(f"{fn.__name__} n={n} strides {x.stride()}", lambda: check_forward_against_x(y, x, 1, log))
                dy = rand(x.shape, dtype)
                (dx,) = torch.autograd.grad(y, leaf, dy)
                described(
                    f"{fn.__name__} backward n={n} strides {x.stride()}",
                    lambda: check_backward_against_x(dx, x, dy, 1, log),
                )


@pytest.mark.parametrize("per_lane", [4, 32])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_flat_rows_tight_every_length(backend, per_lane, dtype_name, log):
    """The tight form (one kernel per slots a lane and group size; only a lane's last slot tested)
    at every row length it takes, with each lane count, forward and backward: two runs of rows and
    a partial third (rows starting anywhere against a 16-byte boundary), rows of special values at
    the front (forward), and a view whose rows lie apart (moved element by element)."""
    from fastsoftmax.backends.cuda import instances, tiers

    dtype = DTYPES[dtype_name]
    label = f"tight, {per_lane} elements a lane"
    with recording_loads(backend) as launched, tiers.tuned(flat_rows_per_lane=per_lane):
        for n in range(1, min(instances.FLAT_ROWS_TIGHT_MAX_COLS, 32 * per_lane) + 1):
            runs = instances.flat_rows_shape(n, dtype, False, per_lane)[0]
            x = rand((2 * runs + 7 + n % 5, n), dtype)
            x[:6] = rows_of_special_values(n, dtype)
            check_forward(backend, x.view(-1, n, 1), "flat_rows", log, label)
            wide = rand((37, n + 3), dtype)
            check_forward(backend, wide[:, 1 : n + 1].unsqueeze(-1), "flat_rows", log, "tight, rows apart")
            runs = instances.flat_rows_shape(n, dtype, True, per_lane)[0]
            x3, dy3 = (rand((2 * runs + 5 + n % 3, n), dtype).unsqueeze(-1) for _ in range(2))
            check_backward(backend, x3, dy3, "flat_rows", log, label)
            check_backward(
                backend,
                wide[:, 1 : n + 1].unsqueeze(-1),
                wide[:, 2 : n + 2].unsqueeze(-1),
                "flat_rows",
                log,
                "tight, rows apart",
            )
    assert launched and all(inst.tight for inst in launched)


@pytest.mark.parametrize("tight", [True, False], ids=["tight", "general"])
@pytest.mark.parametrize("per_lane", [4, 32])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_flat_rows_every_lane_count(backend, per_lane, dtype_name, log, tight):
    """flat_rows with each of its kernels' lane counts (a row over up to 32 lanes of 4 slots, or
    over lanes of 32: no shuffles for rows of up to 32, padding slots skipped), rows of 17..1000
    off 16-byte boundaries (up to 128 for lanes of 4), special values in some rows, forward and
    backward."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    longer = [(600, 127)] + ([(50, 150), (9, 999), (20, 301)] if per_lane == 32 else [])
    with tiers.tuned(flat_rows_per_lane=per_lane, flat_rows_tight=tight):
        for outer, n in [(1000, 21), (100003, 21), (4099, 33), (2, 50), (333, 17), (70, 63)] + longer:
            x = rand((outer, n), dtype)
            x[0, 3] = float("-inf")
            x[1, :] = float("-inf")
            check_forward(backend, x.view(outer, n, 1), "flat_rows", log, f"{per_lane} elements a lane")
            dy = rand((outer, n), dtype)
            x[1, :] = 0.0  # the backward takes y of finite rows
            check_backward(backend, x.view(outer, n, 1), dy.view(outer, n, 1), "flat_rows", log, f"{per_lane} a lane")


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
    # auto hands some of these to strided_warp or strided_staged; the tier forced takes them all
    assert backend.supports("strided", outer, n, inner, dtype, False)
    check_forward(backend, x3, "strided", log, "contiguous (outer, n, inner)")
    dy3 = rand((outer, n, inner), dtype)
    check_backward(backend, x3, dy3, "strided", log, "contiguous (outer, n, inner)")


@pytest.mark.parametrize("merge", [True, False], ids=["merged", "in-finish"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("outer,n,inner", [(1, 50257, 3), (2, 65536, 130), (1, 40000, 2048)])
def test_strided_split_pairs_merged_or_not(backend, outer, n, inner, dtype_name, merge):
    """Long axes over few columns split n over blocks; their pairs are merged by a kernel of their
    own or by every finishing block (strided_tier.cuh, strided_merge): both, forced, every function."""
    from fastsoftmax.backends.cuda import tiers

    torch.manual_seed(n + inner)
    dtype = DTYPES[dtype_name]
    x3 = rand((outer, n, inner), dtype)
    dy3 = rand((outer, n, inner), dtype)
    with tiers.tuned(strided_merge=merge):
        for log in (False, True):
            check_forward(backend, x3, "strided", log, f"split axis, merge={merge}")
            check_backward(backend, x3, dy3, "strided", log, f"split axis, merge={merge}")


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
    dy_view = rand((5, 24, 40), dtype)[1:5, 2:22, :37]
    check_backward(backend, x3, dy_view, "strided", False, "sliced dy view")


# ---- row pitch, alignment and aliasing -----------------------------------------------------------


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize(
    "tier,n",
    [
        ("warp", 1000),
        ("warp", 64),
        ("flat_rows", 21),
        ("flat_rows", 64),
        ("flat_rows", 150),
        ("flat_rows", 1000),
        ("block_regs", 3000),
        ("block_regs", 12000),
        ("block_smem", 3000),
        ("block_uncached", 5000),
        ("split_row", 20000),
        ("cluster", 50257),
        ("cluster", 70000),
    ],
)
@pytest.mark.parametrize("layout", ["pitch+3", "offset+1", "pitch+2", "out-pitch", "base+1"])
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
        x = rand((outer, n + 8), dtype)[:, 1 : n + 1]
    elif layout == "base+1":  # rows one after another (pitch n), the first one element in
        x = rand((outer * n + 1,), dtype)[1:].view(outer, n)
    else:
        x = rand((outer, n), dtype)
    if layout == "out-pitch":
        out = torch.empty((outer, n + 5), device="cuda", dtype=dtype)[:, :n]
    else:
        out = torch.empty((outer, n), device="cuda", dtype=dtype)
    for log in (False, True):
        check_forward(backend, x.unsqueeze(2), tier, log, f"layout {layout}", out=out.unsqueeze(2))
    dy = rand((outer, n + 3), dtype)[:, :n]
    check_backward(backend, x.unsqueeze(2), dy.unsqueeze(2), tier, False, f"layout {layout}, dy pitch {n + 3}")


def _rows_laid_out(layout: str, outer: int, n: int, dtype) -> torch.Tensor:
    """Rows of n in one of test_rows_in_their_window's layouts, filled with fresh values."""
    if layout.startswith("base+"):  # end to end, the first row `k` elements past a 16-byte boundary
        k = int(layout[5:])
        return rand((outer * n + k,), dtype)[k:].view(outer, n)
    if layout == "pitch+3":  # rows of a wider tensor: edge packs are read element by element
        return rand((outer, n + 3), dtype)[:, :n]
    return rand((outer, n), dtype)


@pytest.mark.parametrize("window", [True, False], ids=["window", "narrow-packs"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize(
    "tier,n",
    [
        ("warp", 7),
        ("warp", 37),
        ("warp", 100),
        ("warp", 255),
        ("warp", 1017),  # the widest window the warp tier holds (n + 7 = 1024)
        ("warp", 1021),  # past it: narrow packs whatever the tuning
        ("block_regs", 999),
        ("block_regs", 3001),
        ("block_regs", 16383),
        ("block_regs", 32761),
        ("block_regs", 32765),
    ],
)
@pytest.mark.parametrize("layout", ["dense", "base+1", "base+3", "pitch+3", "out-shifted", "in-place"])
def test_rows_in_their_window(backend, tier, n, dtype_name, window, layout):
    """Rows off 16-byte boundaries held in the 16-byte packs of their aligned window (warp_tier.cuh)
    or in narrow packs, forced either way: every misalignment (9 rows of odd length cycle through
    them), edge packs read whole inside the tensor or element by element at its ends and between
    the rows of a wider tensor, an output misaligned otherwise than the input (element-wise
    stores), in place, -inf at the rows' edges and a row of -inf; forward and backward, y and dy
    in the layout. The launched instance is checked to be the one asked for."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    outer = 9
    torch.manual_seed(n + outer)
    x = _rows_laid_out("base+1" if layout == "in-place" else layout, outer, n, dtype)
    x[0, 0] = x[2, -1] = float("-inf")
    x[3, :] = float("-inf")
    with recording_loads(backend) as launched:
        with tiers.tuned(row_window=window):
            for log in (False, True):
                if layout == "in-place":
                    y = _rows_laid_out("base+1", outer, n, dtype)
                    y.copy_(x)
                    backend.forward(y.unsqueeze(2), y.unsqueeze(2), log, tier)
                    torch.cuda.synchronize()
                    described(f"in place, tier {tier}, window={window}", lambda: check_forward_against_x(y, x, 1, log))
                    continue
                out = None
                if layout == "out-shifted":
                    out = torch.empty(outer * n + 1, device="cuda", dtype=dtype)[1:].view(outer, n).unsqueeze(2)
                check_forward(backend, x.unsqueeze(2), tier, log, f"layout {layout}, window={window}", out=out)
            if backend.supports(tier, outer, n, 1, dtype, True) and layout != "in-place":
                finite = x.clone()
                finite[3, :] = 0.0  # the backward takes y of finite rows
                for log in (False, True):
                    y = _rows_laid_out(layout, outer, n, dtype)
                    y.copy_(softmax64(finite, 1, log))
                    dy = _rows_laid_out(layout, outer, n, dtype)
                    dx = torch.full((outer, n), float("nan"), device="cuda", dtype=dtype)
                    backend.backward(y.unsqueeze(2), dy.unsqueeze(2), dx.unsqueeze(2), log, tier)
                    torch.cuda.synchronize()
                    described(
                        f"backward, tier {tier}, layout {layout}, window={window}, {'log' if log else 'softmax'}",
                        lambda: check_backward_against_x(dx, finite, dy, 1, log),
                    )
    from fastsoftmax.backends.cuda.instances import WARP_TIER_MAX_COLS, block_regs_max_cols

    itemsize = torch.tensor([], dtype=dtype).element_size()
    ours = [i for i in launched if i.tier == tier]
    assert {i.backward for i in ours} >= {False}, f"no {tier} instance was loaded"
    for inst in ours:
        # y and dy of the out-shifted layout are dense: the backward's rows are as aligned as n makes them
        dense = layout == "dense" or (layout == "out-shifted" and inst.backward)
        aligned = dense and n * itemsize % 16 == 0
        widest = WARP_TIER_MAX_COLS if tier == "warp" else block_regs_max_cols(dtype, inst.backward)
        fits = n + 16 // itemsize - 1 <= widest
        assert inst.window == (window and fits and not aligned), inst.name


@pytest.mark.parametrize("sector_groups", [True, False], ids=["sector-groups", "whole-warps"])
@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
@pytest.mark.parametrize("n", [17, 33, 50, 63, 64, 74, 100, 127, 128])
@pytest.mark.parametrize("layout", ["dense", "pitch+3", "base+1"])
def test_warp_sector_groups(backend, n, dtype_name, sector_groups, layout):
    """16-bit rows in packs of one or two elements held by groups of 16 or 8 lanes (a 32-byte
    sector of a row an access) or by whole warps, forced either way: forward and backward, -inf at
    the rows' edges and a row of -inf; the launched group is checked."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import SECTOR_GROUP_MAX_COLS, SECTOR_GROUPS_16BIT

    dtype = DTYPES[dtype_name]
    outer = 37
    torch.manual_seed(n)
    x = _rows_laid_out(layout, outer, n, dtype)
    x[0, 0] = x[2, -1] = float("-inf")
    x[3, :] = float("-inf")
    with recording_loads(backend) as launched:
        with tiers.tuned(warp_sector_groups=sector_groups, row_window=False):
            for log in (False, True):
                check_forward(backend, x.unsqueeze(2), "warp", log, f"layout {layout}, sector groups {sector_groups}")
            finite = x.clone()
            finite[3, :] = 0.0
            dy = _rows_laid_out(layout, outer, n, dtype)
            for log in (False, True):
                check_backward(backend, finite.unsqueeze(2), dy.unsqueeze(2), "warp", log, f"layout {layout}")
    for inst in [i for i in launched if i.tier == "warp" and not i.backward]:
        group = SECTOR_GROUPS_16BIT.get(inst.pack)
        expected = sector_groups and group is not None and group * inst.pack < n <= SECTOR_GROUP_MAX_COLS[inst.pack]
        assert (inst.group == group and inst.rows == 1 and inst.cols > inst.pack) == expected, inst.name


def _warp_tuned_rows(backend, n, dtype, seed, label, **tuning) -> list:
    """The warp tier forced under ``tuning`` on 1001 rows of n on 16-byte boundaries (no block size
    divides them), -inf at the rows' edges and a row of -inf: forward and backward, softmax and
    log-softmax, each against float64; the warp instances launched."""
    from fastsoftmax.backends.cuda import tiers

    outer = 1001
    torch.manual_seed(seed)
    x = rand((outer, n), dtype)
    x[0, 0] = x[2, -1] = float("-inf")
    x[outer - 1, :] = float("-inf")
    finite = x.clone()
    finite[outer - 1, :] = 0.0
    dy = rand((outer, n), dtype)
    with recording_loads(backend) as launched, tiers.tuned(row_window=False, **tuning):
        for log in (False, True):
            check_forward(backend, x.unsqueeze(2), "warp", log, label)
            check_backward(backend, finite.unsqueeze(2), dy.unsqueeze(2), "warp", log, label)
    return [i for i in launched if i.tier == "warp"]


@pytest.mark.parametrize("lanes", [4, 8, 16])
@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
@pytest.mark.parametrize("n", [40, 64, 72, 128, 200, 256, 384, 512])
def test_warp_lanes_a_row(backend, n, dtype_name, lanes):
    """16-bit rows on 16-byte boundaries over 4, 8 or 16 lanes, several packs a lane (Tuning.warp_lanes):
    right results, and the launched shape is the one asked for."""
    from fastsoftmax.backends.cuda.instances import WARP_LANES_MAX_COLS

    if -(-n // lanes) > WARP_LANES_MAX_COLS:
        pytest.skip(f"rows of {n} over {lanes} lanes take more than {WARP_LANES_MAX_COLS} columns a lane")
    launched = _warp_tuned_rows(backend, n, DTYPES[dtype_name], n * lanes, f"{lanes} lanes a row", warp_lanes=lanes)
    shapes = {(i.group, i.rows, i.cols * i.group >= n) for i in launched}
    assert shapes == {(lanes, 1, True)}, shapes


@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
@pytest.mark.parametrize(
    "n, cols", [(1030, 40), (1032, 40), (1500, 48), (1536, 48), (2048, 64), (2560, 80), (3000, 96), (3072, 96)]
)
def test_warp_long_rows(backend, n, cols, dtype_name):
    """16-bit forward rows of 1025-3072 over a whole warp (instances.WARP_LONG_COLS_16BIT): softmax and
    log-softmax right against float64 on 1001 rows (-inf at rows' edges, a row of -inf), at ``cols``
    columns a lane; rows of 1030 in a pitch of 1032 end in a partial pack. Rows one element off their
    16-byte boundaries (a pitch of n + 1: every phase) in the 16-byte packs of their window, at the
    columns a lane their span of n + 7 takes, or refused by name past the longest span (3072). The
    backward is refused by name."""
    from fastsoftmax.backends.cuda.instances import WARP_LONG_COLS_16BIT, WARP_LONG_MAX_COLS

    dtype = DTYPES[dtype_name]
    torch.manual_seed(n)
    pitch = -(-n // 8) * 8
    x = rand((1001, pitch), dtype)[:, :n]
    off = rand((1001, n + 1), dtype)[:, 1:]
    for rows in (x, off):
        rows[0, 0] = rows[2, n - 1] = float("-inf")
        rows[1000, :] = float("-inf")
    with recording_loads(backend) as launched:
        for log in (False, True):
            out = torch.empty((1001, pitch), dtype=dtype, device=x.device)[:, :n].unsqueeze(2)
            check_forward(backend, x.unsqueeze(2), "warp", log, "long rows", out=out)
        dy = rand(x.shape, dtype)
        with pytest.raises(ValueError, match="at most 1024 columns"):
            check_backward(backend, torch.zeros_like(x).unsqueeze(2), dy.unsqueeze(2), "warp", False, "long rows")
    shapes = {(i.cols, i.group, i.rows, i.pack, i.window) for i in launched if i.tier == "warp"}
    assert shapes == {(cols, 32, 1, 8, False)}, shapes
    with recording_loads(backend) as launched:
        if n + 7 > WARP_LONG_MAX_COLS:
            with pytest.raises(ValueError, match="rows off their 16-byte boundaries"):
                run_forward(backend, off.unsqueeze(2), "warp", False, torch.empty_like(off).unsqueeze(2))
            return
        for log in (False, True):
            check_forward(backend, off.unsqueeze(2), "warp", log, "long rows in their window")
    window_cols = next(c for c in WARP_LONG_COLS_16BIT if 32 * c >= n + 7)
    shapes = {(i.cols, i.group, i.rows, i.pack, i.window) for i in launched if i.tier == "warp"}
    assert shapes == {(window_cols, 32, 1, 8, True)}, shapes


@pytest.mark.parametrize("offset_first", [False, True], ids=["aligned_first", "offset_first"])
@pytest.mark.parametrize("dim", [-1, 1])
@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
def test_long_rows_plan_serves_calls_on_16_byte_boundaries_only(backend, dtype_name, dim, offset_first):
    """Through fastsoftmax.softmax and log_softmax, the dim as written or normalised (as autograd hands
    it on): 16-bit rows of 1152 and 1536 on 16-byte boundaries take the warp tier
    (tiers.warp_takes_long_rows), and a view of the same shape and strides one element off them
    block_regs (not the warp's window, kept to a forced tier), whichever comes first (the first call's
    plan serves no call of the other alignment), calls of each kind again after; every output right
    against float64. (Which plan a repeated call runs: tests/test_repeated_calls.py.)"""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    rows = tiers.WARP_LONG_MIN_ROWS
    for n in (1152, 1536):
        flat = rand((rows * n + 8,), dtype)
        aligned, offset = flat[: rows * n].view(rows, n), flat[1 : rows * n + 1].view(rows, n)
        for log in (False, True):
            fn = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            with recording_loads(backend) as launched:
                for x in (offset, aligned) * 2 if offset_first else (aligned, offset) * 2:
                    check_forward_against_x(fn(x, dim, backend="cuda"), x, dim, log)
            assert {i.tier for i in launched} == {"warp", "block_regs"}, [i.name for i in launched]


@pytest.mark.parametrize("rows", [1, 2, 4])
@pytest.mark.parametrize("dtype_name", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("n", [8, 16, 40, 64, 96, 128, 200, 256, 512])
def test_warp_rows_a_group(backend, n, dtype_name, rows):
    """Rows on 16-byte boundaries held one, two or four a group (a group's rows consecutive): right
    results, and the launched shape is the one asked for (one row a group: the tier's own shape,
    which may hold a 16-bit row over part of a warp in more columns a lane than several rows take)."""
    from fastsoftmax.backends.cuda.instances import warp_holds_rows, warp_shape

    dtype = DTYPES[dtype_name]
    launched = _warp_tuned_rows(backend, n, dtype, n * rows, f"{rows} rows a group", warp_rows=rows)
    assert launched
    for i in launched:
        assert (i.cols, i.group, i.rows) == warp_shape(n, i.pack, dtype.itemsize, rows=rows, backward=i.backward), (
            i.name
        )
        assert rows == 1 or warp_holds_rows(i.cols, i.pack, dtype.itemsize, rows), i.name


@pytest.mark.parametrize("dtype_name", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "tier,n",
    [
        ("warp", 1000),
        ("flat_rows", 21),
        ("block_regs", 3000),
        ("block_regs", 30000),
        ("block_smem", 3000),
        ("block_uncached", 5003),
        ("split_row", 20003),
        ("cluster", 50257),
    ],
)
def test_in_place(backend, tier, n, dtype_name):
    """y may be x: every kernel reads an element before it writes it, in the same thread (a 30000
    bf16 row is staged in shared memory first)."""
    x = rand((6, n), DTYPES[dtype_name])
    original = x.clone().unsqueeze(2)
    x3 = x.unsqueeze(2)
    backend.forward(x3, x3, False, tier)
    torch.cuda.synchronize()
    described(
        f"in-place softmax, tier {tier}, n={n}, {dtype_name}", lambda: check_forward_against_x(x3, original, 1, False)
    )


# ---- special values: like torch.softmax ----------------------------------------------------------

SPECIAL_TIERS = [
    ("warp", 1000),
    ("warp", 24),
    ("flat_rows", 21),
    ("flat_rows", 64),
    ("block_regs", 3000),
    ("block_regs", 32768),
    ("block_smem", 3000),
    ("block_uncached", 3000),
    ("split_row", 20000),
    ("cluster", 3000),
    ("cluster", 70001),
]


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
    for log in (False, True):
        check_forward(backend, rows_or_columns(x, tier), tier, log, f"magnitudes up to {scale:g}")


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,n", [("cluster", 3000), ("cluster", 70001), ("block_regs", 3000)])
def test_magnitudes_around_the_fused_shift_limit(backend, tier, n, dtype_name):
    x = around_the_fused_shift_limit(8, n, DTYPES[dtype_name])
    for log in (False, True):
        check_forward(backend, x.unsqueeze(2), tier, log, "maxima around 2^20")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("tier,n", SPECIAL_TIERS + [("strided", 300)])
def test_outputs_in_the_subnormal_range(backend, tier, n, dtype_name, log):
    """Elements about 90 below their row's maximum have probabilities near 1e-39: subnormal in
    float32 and bfloat16 (0 in float16). They come out as torch gives them (the error bar is a
    few units of the subnormal spacing), not flushed to zero."""
    dtype = DTYPES[dtype_name]
    x = (torch.rand((4, n), device="cuda") * 4 - 92).to(dtype)
    x[:, n // 3] = 0  # the maximum
    x[1, ::7] = -60
    check_forward(backend, rows_or_columns(x, tier), tier, log, "probabilities near 1e-39")


def kept_exponential_inputs(dtype):
    """(label, rows) for the cluster tier's two forms of softmax: ordinary rows around its slice
    boundaries; warps whose maximum lies 50 and 100 below the row's (outputs near 1e-22 and 1e-44,
    whose factor leaves the normal range); outputs near 1e-39; -inf, NaN and +inf rows; maxima
    around 2^20; and the type's large magnitudes."""
    cases = [(f"a row of {n}", rand((1, n), dtype)) for n in (7, 1025, 50257)]  # one row: aligned
    for n in (1024, 16392, 50264, 128256):
        cases.append((f"rows of {n}", rand((5, n), dtype)))
    n = 70008
    far = rand((4, n), dtype, scale=1.0).float()
    far[0] -= 50.0
    far[1] -= 100.0
    far[2, ::2] -= 100.0
    far[:3, :64] = 0.0  # the maximum, in the first warp only
    cases.append(("warps far below the row maximum", far.to(dtype)))
    subnormal = torch.rand((3, n), device="cuda") * 4 - 92
    subnormal[:, n // 3] = 0
    cases.append(("probabilities near 1e-39", subnormal.to(dtype)))
    cases.append(("rows with -inf, all -inf, NaN, +inf", rows_of_special_values(n, dtype)))
    cases.append(("maxima around 2^20", around_the_fused_shift_limit(8, 3000, dtype)))
    scale = 2e4 if dtype == torch.float16 else 1e30
    large = (torch.rand((3, n), device="cuda") * 2 - 1) * scale
    large[:, 0] = scale
    cases.append((f"magnitudes up to {scale:g}", large.to(dtype)))
    return cases


@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
@pytest.mark.parametrize("kept", [True, False], ids=["kept", "plain"])
def test_cluster_softmax_with_and_without_kept_exponentials(backend, dtype_name, kept):
    """The cluster tier's 16-bit softmax forward keeps its exponentials in registers where a launch
    is one wave (cluster_tier.cuh, KEEP); both forms, forced, on 16-byte aligned rows (the kept form
    needs them), against float64 and torch's NaN pattern."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    with tiers.tuned(cluster_kept=kept):
        for label, x in kept_exponential_inputs(dtype):
            check_forward(backend, x.unsqueeze(2), "cluster", False, f"{label}, kept={kept}")
            ours = run_forward(backend, x.unsqueeze(2), "cluster", False).squeeze(2).float()
            nan = torch.isnan(torch.softmax(x.float(), dim=1))
            assert torch.equal(torch.isnan(ours), nan), f"{label}, kept={kept}: NaN pattern differs from torch.softmax"


def test_cluster_kept_exponentials_refused_where_they_do_not_apply(backend):
    """Log-softmax, the backward, float32 and rows off 16-byte boundaries have no kept form:
    forcing it raises rather than running something else."""
    from fastsoftmax.backends.cuda import tiers

    x = rand((3, 50264), torch.bfloat16)
    with tiers.tuned(cluster_kept=True):
        wide = x.float()
        with pytest.raises(ValueError, match="keeps exponentials only"):
            backend.forward(wide.unsqueeze(2), torch.empty_like(wide).unsqueeze(2), False, "cluster")
        with pytest.raises(ValueError, match="keeps exponentials only"):
            backend.forward(x.unsqueeze(2), torch.empty_like(x).unsqueeze(2), True, "cluster")
        with pytest.raises(ValueError, match="keeps exponentials only"):
            backend.backward(x.unsqueeze(2), x.unsqueeze(2), torch.empty_like(x).unsqueeze(2), False, "cluster")
        shifted = rand((3, 50258), torch.bfloat16)[:, 1:]
        with pytest.raises(ValueError, match="keeps exponentials only"):
            backend.forward(shifted.unsqueeze(2), torch.empty_like(shifted).unsqueeze(2), False, "cluster")


def rows_or_columns(x, tier):
    """The (outer, n, inner) view of x's rows: as rows (inner 1), or for the strided tier as the
    columns of its transpose (inner = x's row count)."""
    rows, n = x.shape
    return x.unsqueeze(2) if tier != "strided" else x.t().contiguous().view(1, n, rows)


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
    described("softmax on a side stream", lambda: check_forward_against_x(y, x * 2, 1, False))


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("outer", [1, 8, 300])
@pytest.mark.parametrize("n", [1, 64, 1000, 1024, 1025, 4096, 16384, 32768, 50257, 128256])
def test_chosen_tier_is_right(backend, n, outer, dtype_name):
    dtype = DTYPES[dtype_name]
    x3 = rand((outer, n), dtype).view(outer, n, 1)
    tier = backend.choose_tier(outer, n, 1, dtype, False)
    check_forward(backend, x3, tier, False, "chosen tier")
    tier_b = backend.choose_tier(outer, n, 1, dtype, True)
    check_backward(backend, x3, rand((outer, n), dtype).view(outer, n, 1), tier_b, False, "chosen tier")


@pytest.mark.parametrize("dtype_name", ["bf16", "fp32"])
def test_few_long_rows_through_autograd(backend, dtype_name):
    """A few rows longer than the cluster tier's preferred length, which tier choice gives the cluster
    tier on GPUs with clusters where they lie on 16-byte boundaries (instances.CLUSTER_FEW_LONG_ROWS:
    the backward of any number, the forward of 2-7 float32 or 4-7 16-bit rows) and other tiers off
    them, through autograd, softmax and log-softmax."""
    from fastsoftmax.backends.cuda import instances

    dtype = DTYPES[dtype_name]
    clusters = backend.limits(torch.cuda.current_device()).clusters
    backward_longest = instances.cluster_max_cols(dtype, True, aligned=True)
    forward_longest = instances.cluster_max_cols(dtype, False, aligned=True)
    shapes = ((1, backward_longest), (3, backward_longest), (9, backward_longest - 7))
    shapes += ((2, forward_longest), (5, forward_longest), (7, forward_longest))
    for rows, n in shapes:
        for backward_ in (False, True):
            first, last = instances.CLUSTER_FEW_LONG_ROWS[(backward_, dtype.itemsize)]
            held = n <= instances.cluster_max_cols(dtype, backward_, aligned=True) and first <= rows <= last
            on_boundaries = n * dtype.itemsize % 16 == 0
            if clusters and n > instances.cluster_preferred_max_cols(dtype, backward_):
                chosen = backend.choose_tier(rows, n, 1, dtype, backward_)
                assert (chosen == "cluster") == (held and on_boundaries), (rows, n, backward_, chosen)
        for log in (False, True):
            x = rand((rows, n), dtype).requires_grad_()
            dy = rand((rows, n), dtype)
            fn = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            y = fn(x, -1, backend="cuda")
            label = f"{'log_softmax' if log else 'softmax'} of {rows} x {n} {dtype}"
            described(label, lambda: check_forward_against_x(y.detach(), x.detach(), 1, log))
            (dx,) = torch.autograd.grad(y, x, dy)
            described(label + " backward", lambda: check_backward_against_x(dx, x.detach(), dy, 1, log))


def test_many_short_rows(backend):
    """A million short rows: tens of thousands of blocks, the last one partly past the end."""
    outer = 1_000_003
    x3 = rand((outer, 64), torch.bfloat16).view(outer, 64, 1)
    check_forward(backend, x3, "warp", False, "many rows")


@pytest.mark.parametrize("tier", ["split_row", "block_uncached"])
def test_one_long_row(backend, tier):
    x3 = rand((1, (1 << 22) + 7), torch.bfloat16).view(1, -1, 1)
    check_forward(backend, x3, tier, False, "one long row")
    check_backward(backend, x3, rand(x3.shape, torch.bfloat16), tier, False, "one long row")


def test_longest_cluster_rows(backend):
    """The longest rows a cluster of 16 CTAs holds in registers, on 16-byte boundaries and at any
    alignment, and one element more is refused; the longest on boundaries, in rows off them (a row
    stride one element more), run through cluster_stream's plan."""
    from fastsoftmax.backends.cuda.instances import cluster_max_cols

    for dtype in (torch.bfloat16, torch.float32):
        for backward in (False, True):
            for aligned, pitch_extra in ((True, 0), (False, 1), (True, 1)):
                n = cluster_max_cols(dtype, backward, aligned)
                x3 = rand((2, n + pitch_extra), dtype)[:, :n].unsqueeze(2)
                where = "on" if aligned else "off"
                label = f"longest cluster row ({where} 16-byte boundaries), pitch n + {pitch_extra}"
                if backward:
                    dy3 = rand((2, n + pitch_extra), dtype)[:, :n].unsqueeze(2)
                    check_backward(backend, x3, dy3, "cluster", False, label)
                else:
                    check_forward(backend, x3, "cluster", True, label)
            assert not backend.supports("cluster", 1, n + 1, 1, dtype, backward)


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
    assert_ladder_close(y, x, f"ladder step {step} ({ladder.STEPS[step]}), {rows}x{n}")


@pytest.mark.parametrize("n", [1000, 4099])
@pytest.mark.parametrize("step", [6, 7])
def test_ladder_search_space(step, n):
    from fastsoftmax import ladder

    if ladder_unavailable():
        pytest.skip(ladder_unavailable())
    x = rand((33, n), torch.float32)
    for block in ladder.SEARCH_BLOCKS:
        for unroll in ladder.SEARCH_UNROLLS:
            y = torch.full_like(x, float("nan"))
            ladder.softmax(x, step, block=block, unroll=unroll, out=y)
            torch.cuda.synchronize()
            assert_ladder_close(y, x, f"ladder step {step}, block {block}, unroll {unroll}, 33x{n}")


@pytest.mark.parametrize("block", [32, 64, 128, 512, 1024])
@pytest.mark.parametrize("step", [2, 3, 4, 5])
def test_ladder_block_sizes(step, block):
    from fastsoftmax import ladder

    if ladder_unavailable():
        pytest.skip(ladder_unavailable())
    x = rand((9, 3001), torch.float32)
    y = ladder.softmax(x, step, block=block)
    torch.cuda.synchronize()
    assert_ladder_close(y, x, f"ladder step {step}, block {block}")


def assert_ladder_close(y, x, what):
    """The ladder's early steps are the textbook kernels (expf, a serial sum): they are held to the
    error bound of a serial float32 sum of n terms (n units of roundoff, relative; at least 1e-5)
    on top of the shared error bars, not to the production tiers' standard. A 3000-term serial sum
    measured 1.3e-5 relative on one row."""
    reference = softmax64(x, -1)
    bound = max(1e-5, x.shape[-1] * 2.0**-24)
    described(what, lambda: assert_matches(y, reference, torch.float32, extra=bound * reference.abs()))


def ladder_unavailable():
    from fastsoftmax.backends.cuda import BACKEND

    return BACKEND.unavailable_reason(torch.device("cuda", torch.cuda.current_device()))


@pytest.mark.parametrize("dtype_name", ["bf16", "fp32"])
def test_cluster_rows_of_many_ctas_hold_as_the_device_rule_says(backend, dtype_name):
    """Forward rows of 12288 and 16384 columns, more rows than a launch has SMs for two CTAs each,
    through fastsoftmax.softmax and log_softmax (the CUDA backend's own choice): the cluster tier, holding 64 elements a
    thread on a GPU of much DRAM bandwidth an SM (instances.CLUSTER_HELD_FIRST) and the fewest
    elsewhere for 16-bit types, right against float64 with poisoned outputs; and the two K forced
    (tuning cluster_packs) agree with float64 too."""
    import fastsoftmax
    from fastsoftmax.backends.cuda import BACKEND, instances, tiers

    dtype = DTYPES[dtype_name]
    limits = BACKEND.limits(None)
    deep = limits.high_bandwidth_per_sm
    for n in (12288, 16384):
        x = rand((limits.sm_count, n), dtype)
        for log in (False, True):
            with recording_loads(BACKEND) as loaded:
                out = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, -1, backend="cuda")
            check_forward_against_x(out, x, -1, log)
            held = {inst.cols for inst in loaded if inst.tier == "cluster"}
            rule = instances.cluster_shape(
                n, dtype, False, rows=x.shape[0], sm_count=limits.sm_count, aligned=True, high_bandwidth=deep
            )
            assert held == {rule.held}, (n, log, [inst.name for inst in loaded])
            assert rule.held == (64 if deep or dtype == torch.float32 else 32) // (2 if dtype == torch.float32 else 1)
        for packs in (4, 8):
            with tiers.tuned(cluster_packs=packs):
                check_forward(backend, x.unsqueeze(2), "cluster", False, f"{n} columns, K = {packs}")


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_cluster_first_wave_staggered(backend, dtype_name):
    """The cluster tier's backward with its first wave staggered (half the resident clusters wait
    before their first row: tuning cluster_stagger), on more rows than the resident clusters hold at
    once, rows on 16-byte boundaries and off them (the whole-pack and re-cut forms), softmax and
    log-softmax, against float64 with poisoned outputs; the forward has no wait, and forcing one raises."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    with tiers.tuned(cluster_stagger=True):
        for n in (50264, 50257):
            x = rand((300, n), dtype)
            dy = rand((300, n), dtype)
            for log in (False, True):
                check_backward(backend, x.unsqueeze(2), dy.unsqueeze(2), "cluster", log, f"rows of {n}, staggered")
        with pytest.raises(ValueError, match="backward launches only"):
            backend.forward(x.unsqueeze(2), torch.empty_like(x).unsqueeze(2), False, "cluster")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_cluster_capped_form_where_it_holds_more_clusters(backend, log):
    """The float32 cluster backward of 32 elements a thread has a form under a lower register cap
    (instances.CLUSTER_CAPPED_MAX_REGISTERS), which the plan takes where the occupancy query puts more
    of its clusters on the GPU at once: rows of 151936 (CTAs of 320 threads) and 128256 (256), right
    against float64 with poisoned outputs whichever form runs."""
    from fastsoftmax.backends.cuda import BACKEND

    for rows, n in ((32, 151936), (40, 128256)):
        x = rand((rows, n), torch.float32)
        dy = rand((rows, n), torch.float32)
        with recording_loads(BACKEND) as loaded:
            check_backward(backend, x.unsqueeze(2), dy.unsqueeze(2), "cluster", log, f"{rows} rows of {n}")
        forms = {inst.storage for inst in loaded if inst.tier == "cluster"}
        # the plan weighs both forms by the occupancy query (and launches the one of more clusters)
        assert forms == {"", "capped"}, [inst.name for inst in loaded]


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_cluster_backward_rows_with_partial_slots(backend, dtype_name):
    """The cluster backward of rows whose slices start or end inside a 16-byte pack, with more rows
    than a decode launch (which takes clusters of 16 whatever the row): rows end to end at an odd
    length (each row at its own phase, every tensor alike: the rows' whole packs, their ends apart),
    dy at an aligned pitch (only its last slot partial, re-cut to y's phase; 16-bit ones take twice
    the cluster from 4 CTAs, instances.CLUSTER_MISALIGNED_BACKWARD_DOUBLES_FROM) and at an odd one;
    softmax and log-softmax, against float64 with poisoned outputs."""
    from fastsoftmax.backends.cuda import BACKEND

    dtype = DTYPES[dtype_name]
    outer = BACKEND.limits(None).sm_count // 8 + 1  # rows x 16 CTAs past the SMs: no decode shape
    for n in (16383, 50257, 65535):
        x = rand((outer, n), dtype)
        aligned_pitch = -(-n // 8) * 8
        for label, dy in (
            ("dy end to end", rand((outer, n), dtype)),
            (f"dy at pitch {aligned_pitch}", rand((outer, aligned_pitch), dtype)[:, :n]),
            (f"dy at pitch {n + 3}", rand((outer, n + 3), dtype)[:, :n]),
        ):
            for log in (False, True):
                check_backward(backend, x.unsqueeze(2), dy.unsqueeze(2), "cluster", log, f"rows of {n}, {label}")


@pytest.mark.parametrize("dtype_name", ["fp32", "bf16"])
def test_cluster_rows_cut_by_whole_packs(backend, dtype_name):
    """The cluster tier on tensors whose rows share their offset within 16 bytes, held by the rows'
    whole packs with each row's head and tail apart (cluster_tier.cuh, InteriorSlice), and the same
    problems cut at the rows' 16-byte boundaries (tuning cluster_alike=False): x, y (forward) and y,
    dy, dx (backward) as views starting 0, 1 and P - 1 elements into rows of one pitch (aligned, or
    odd: every row at its own offset), rows shorter than a pack up to 131071 columns, decode launches
    (2 rows) and many rows; softmax and log-softmax, against float64 with poisoned outputs, nothing
    written past the rows. Forcing the form on tensors at different offsets is refused."""
    from fastsoftmax.backends.cuda import BACKEND, tiers

    dtype = DTYPES[dtype_name]
    pack = 16 // torch.tensor([], dtype=dtype).element_size()
    many = BACKEND.limits(None).sm_count // 8 + 1

    def views(outer, n, offset, pitch):
        base = torch.full((outer * pitch + offset + pack,), float("nan"), dtype=dtype, device="cuda")
        return base[offset : offset + outer * pitch].view(outer, pitch)[:, :n].unsqueeze(2)

    def check(out, outer, n, pitch, what, reference):
        described(f"{what}, {dtype}, {outer} rows", reference)
        padding = out.as_strided((outer, pitch), (pitch, 1))[:, n:]
        assert padding.isnan().all(), f"{what}: written past the rows' ends"

    cases = [(many, 5, 1, 5), (many, 1000, 3, 1000), (2, 16383, 1, 16384)]
    cases += [(many, 50257, 0, 50257), (many, 50257, pack - 1, 50264), (2, 50257, 1, 50257)]
    cases += [(many, 65535, 1, 65536), (4, 131071, pack - 1, 131071), (many, 131071, 0, 131072)]
    for outer, n, offset, pitch in cases:
        x3 = rand((outer, n, 1), dtype)
        x = views(outer, n, offset, pitch)
        x.copy_(x3)
        y = views(outer, n, offset, pitch)
        dy = views(outer, n, offset, pitch)
        dy.copy_(rand((outer, n, 1), dtype))
        for alike in (True, False):
            for log in (False, True):
                fn = "log_softmax" if log else "softmax"
                label = f"tier cluster, rows of {n} at offset {offset} of pitch {pitch}, cluster_alike={alike}"
                out = views(outer, n, offset, pitch)
                with tiers.tuned(cluster_alike=alike):
                    backend.forward(x, out, log, "cluster")
                torch.cuda.synchronize()
                check(out, outer, n, pitch, f"{fn}, {label}", lambda: check_forward_against_x(out, x3, 1, log))
                y.copy_(forward_output(x3, log))
                dx = views(outer, n, offset, pitch)
                with tiers.tuned(cluster_alike=alike):
                    backend.backward(y, dy, dx, log, "cluster")
                torch.cuda.synchronize()
                check(
                    dx, outer, n, pitch, f"{fn} backward, {label}", lambda: check_backward_against_x(dx, x3, dy, 1, log)
                )
    y = views(many, 50257, 1, 50257)
    dx = views(many, 50257, 2, 50257)
    with tiers.tuned(cluster_alike=True), pytest.raises(ValueError, match="share their offset within 16 bytes"):
        backend.backward(y, y, dx, False, "cluster")
    with tiers.tuned(cluster_alike=True), pytest.raises(ValueError, match="share their offset within 16 bytes"):
        backend.forward(y, dx, False, "cluster")


@pytest.mark.parametrize("dtype_name", ["fp32", "bf16"])
def test_block_regs_blocks_taking_rows_in_turn(backend, dtype_name):
    """block_regs under the tuning block_regs_waves: a grid of one wave of resident blocks, each
    taking many rows in turn (the register, raw and staged storages, aligned rows and rows held in
    their window), forward and backward, softmax and log-softmax, against float64 with poisoned
    outputs."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    with tiers.tuned(block_regs_waves=1):
        for n in (1000, 3000, 3001, 24576):
            x3 = rand((64 * sms if n < 10000 else 4 * sms, n, 1), dtype)
            for log in (False, True):
                check_forward(backend, x3, "block_regs", log, f"rows of {n} in turn")
                if n <= 16384:
                    check_backward(backend, x3, rand(x3.shape, dtype), "block_regs", log, f"rows of {n} in turn")


@pytest.mark.parametrize("storage", ["raw", "float", "staged"])
def test_block_regs_short_rows_in_every_storage(backend, storage):
    """16-bit forward rows of fewer than 64 elements a thread under the tuning
    short_row_storage_16bit: held as the loaded packs in registers (the default), as float32, or
    staged in shared memory, at 8-32 elements a thread, aligned rows, rows held in
    their window and rows with a ragged tail, softmax and log-softmax, against float64 with poisoned
    outputs; packs narrower than 16 bytes cannot be staged and say so."""
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(short_row_storage_16bit=storage):
        for elems in (8, 16, 32):
            with tiers.tuned(block_regs_elems=elems):  # nested: both values hold
                assert tiers.current_tuning().short_row_storage_16bit == storage
                for n in (1024, 2048, 3000, 3001, 4096 + 8):
                    x3 = rand((37, n, 1), torch.bfloat16)
                    for log in (False, True):
                        check_forward(backend, x3, "block_regs", log, f"rows of {n}, {elems} {storage} a thread")
        if storage == "staged":
            x3 = rand((8, 3002), torch.bfloat16)[:, 1:3001].unsqueeze(2)  # off 16 bytes, no window: 2-element packs
            with tiers.tuned(row_window=False), pytest.raises(ValueError, match="16-byte packs"):
                run_forward(backend, x3, "block_regs", False)
