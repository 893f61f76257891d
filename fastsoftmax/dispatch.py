"""The dispatch table: which backend and which tier compute a given problem.

``backend="auto"`` resolves, per problem, in this order:

1. CPU tensors go to torch's own CPU kernel, unless the Triton interpreter is active
   (``TRITON_INTERPRET=1``), in which case the Triton kernels run on the CPU.
2. float64 goes to torch, whatever the backend asked for (the kernels are written for 32- and
   16-bit storage).
3. On CUDA, the measured table names, for the nearest measured problem, the fastest backend;
   without a table entry, Triton. A backend named by the table but not installed falls back to
   Triton, with one warning per process, or to torch where Triton measured slower than torch
   (``TORCH_OVER_TRITON_FORWARD_COLS``, lengths its realigned kernels do not take). The table is the
   GPU model's own where one was measured on it (``dispatch_table_<model>.json``, e.g.
   ``dispatch_table_nvidia-h200.json``, written by ``fastsoftmax bench table --table-out device`` on
   that model), else ``dispatch_table.json``.

The backend then picks its own tier from the shape and the tensors' device
(``Backend.choose_tier``), unless a test or a benchmark forced one with :func:`forced`. Every cache
here is keyed by device: a process may compute on several GPUs, and on GPUs of several models.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import json
import math
import re
import warnings
from pathlib import Path

import torch

BACKENDS = ("auto", "triton", "cuda", "torch")
KERNEL_BACKENDS = {"triton": "fastsoftmax.backends.triton", "cuda": "fastsoftmax.backends.cuda"}
TABLE_PATH = Path(__file__).with_name("dispatch_table.json")


def device_slug(name: str) -> str:
    """A GPU model's name as file names carry it: "NVIDIA H200" -> "nvidia-h200"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def device_table_path(name: str) -> Path:
    """Where the table measured on the GPU model ``name`` lies (beside TABLE_PATH)."""
    return TABLE_PATH.with_name(f"dispatch_table_{device_slug(name)}.json")


@functools.lru_cache(maxsize=64)
def table_path(device_index: int | None) -> Path:
    """The table "auto" reads for problems on CUDA device ``device_index``: the model's own where
    one was measured on it, else TABLE_PATH (also off CUDA, index None or -1)."""
    if device_index is None or device_index < 0 or not torch.cuda.is_available():
        return TABLE_PATH
    own = device_table_path(torch.cuda.get_device_name(device_index))
    return own if own.exists() else TABLE_PATH


#: (backend, tier) forced by ``forced`` for the current thread (or asyncio task) only: a forced
#: tier in one thread must never change what another thread computes
_OVERRIDE: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("fastsoftmax_forced", default=None)
current_override = _OVERRIDE.get
_warned: set[str] = set()

#: Resolved forward problems, keyed by what resolution depends on per call (shape, strides, dtype,
#: device, dim, requested backend; and the result's dtype where a call gives one or autocast sets
#: it): a hit skips the layout and dispatch work, most of the host time of a small softmax. The
#: module-level rules a choice reads (the table, tier thresholds, functional.FUSED_WIDENING and the
#: like) are read when a problem is first resolved: ``clear_caches`` after changing one. Bounded,
#: since dynamic shapes would grow it without end.
PLANS: dict = {}
MAX_PLANS = 4096


def remember(key, plan) -> None:
    if _OVERRIDE.get() is not None:  # a forced backend or tier is never the plan of an ordinary call
        return
    if len(PLANS) >= MAX_PLANS:
        PLANS.clear()
    PLANS[key] = plan


def clear_caches() -> None:
    """Forget every resolved choice (after installing a backend, changing the table, or changing a
    module-level rule a choice reads, such as ``functional.FUSED_WIDENING``)."""
    PLANS.clear()
    for cached in (
        kernel_backend,
        unavailable_reason,
        _choose_tier,
        _choose_backend,
        table_path,
        _table,
        _points_by_kind,
    ):
        cached.cache_clear()


def check_backend_name(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(map(repr, BACKENDS))}")


@functools.lru_cache(maxsize=None)
def kernel_backend(name: str):
    """The backend object named ``name`` ("triton" or "cuda"), imported on first use."""
    return importlib.import_module(KERNEL_BACKENDS[name]).BACKEND


def _triton_module():
    """The Triton backend's module (its tile and tier rules), imported on first use."""
    return importlib.import_module(KERNEL_BACKENDS["triton"])


@functools.lru_cache(maxsize=64)
def unavailable_reason(name: str, device_type: str, device_index: int | None) -> str | None:
    if name == "torch":
        return None
    try:
        backend = kernel_backend(name)
    except Exception as error:  # a broken install must read as a reason, not a traceback
        return f"backend={name!r} could not be loaded: {error}"
    return backend.unavailable_reason(torch.device(device_type, device_index))


def available_backends(device: torch.device | str | None = None) -> list[str]:
    """Names of the backends that can compute tensors on ``device`` (default: the current CUDA
    device, or the CPU without one)."""
    if device is None:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    names = [name for name in KERNEL_BACKENDS if unavailable_reason(name, device.type, device.index) is None]
    return names + ["torch"]


@contextlib.contextmanager
def forced(backend: str, tier: str | None = None):
    """Run the enclosed calls of this thread on ``backend`` ("triton" or "cuda") and, if given,
    ``tier``, whatever ``backend=`` the caller passed. Meant for tests and benchmarks. Other
    threads are not affected; the backward of a forward computed under it is computed under it
    too, on autograd's thread. Raises ValueError at call time if the tier cannot hold the problem.
    Remembered plans never bypass it: a forced call looks no plan up and remembers none."""
    if backend not in KERNEL_BACKENDS:
        raise ValueError(f"can only force a kernel backend ({', '.join(KERNEL_BACKENDS)}), got {backend!r}")
    token = _OVERRIDE.set((backend, tier))
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


@contextlib.contextmanager
def overridden(override: tuple | None):
    """Re-enter an override taken with ``current_override()`` (None: none), e.g. on another thread."""
    token = _OVERRIDE.set(override)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


def is_forced() -> bool:
    return _OVERRIDE.get() is not None


def resolve(
    requested: str,
    device: torch.device,
    dtype: torch.dtype,
    outer: int,
    n: int,
    inner: int,
    backward: bool,
    aligned: bool = True,
    stepped: bool = False,
    window: bool = True,
    runs: bool = True,
    log: bool = False,
):
    """``(backend_object_or_None, tier)`` for a problem; None means torch computes it. ``aligned``:
    every tensor of the call starts on a 16-byte boundary and has unit stride along inner (tier
    choice may depend on it); ``stepped``: an input has a step along inner (then not ``aligned``);
    ``window``: every input's rows start at one 16-byte phase (the inputs' pointers share it, their
    row strides are whole 16-byte pieces), every tensor with unit stride along inner; for a stepped
    call, whether its inputs' spans can be staged (see ``backends/base.py``); ``runs``: each outer
    index's (n, inner) block of every tensor is one contiguous run; ``log``: a log-softmax problem
    (tier choice may depend on it)."""
    override = _OVERRIDE.get()
    index = _device_index(device)
    if override is not None:
        name, tier = override
        backend = _require(name, device)
        if tier is None:
            tier = backend.choose_tier(outer, n, inner, dtype, backward, index, aligned, window, stepped, log)
        elif not backend.supports(tier, outer, n, inner, dtype, backward, index):
            raise ValueError(
                f"tier {tier!r} of backend {name!r} cannot compute a problem of shape "
                f"(outer={outer}, n={n}, inner={inner}) {dtype}"
            )
        return backend, tier
    name = _choose_backend(
        requested, device.type, device.index, dtype, outer, n, inner, backward, aligned, stepped, window, runs, log
    )
    if name == "torch":
        return None, None
    backend = _require(name, device)
    return backend, _choose_tier(name, outer, n, inner, dtype, backward, index, aligned, window, stepped, log)


def _device_index(device: torch.device) -> int:
    """The CUDA device index of a tensor's device; -1 off CUDA (the interpreter on the CPU)."""
    if device.type != "cuda":
        return -1
    return device.index if device.index is not None else torch.cuda.current_device()


@functools.lru_cache(maxsize=8192)
def _choose_tier(
    name: str,
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    device_index: int,
    aligned: bool,
    window: bool = True,
    stepped: bool = False,
    log: bool = False,
) -> str:
    return kernel_backend(name).choose_tier(
        outer, n, inner, dtype, backward, device_index, aligned, window, stepped, log
    )


def _require(name: str, device: torch.device):
    reason = unavailable_reason(name, device.type, device.index)
    if reason is not None:
        raise RuntimeError(reason)
    return kernel_backend(name)


#: inputs with a step along inner over at most this many columns go to the Triton backend, whose
#: tiles span them whole; wider ones to the CUDA strided tier. H100, inputs stepping by 2 over dim
#: 1 of (outer, 16384, inner), 2^26 elements (benchmarks/step_inner_probe.py --inner-sweep, results
#: 2026-11-24_h100_s14/step_inner_sweep.txt): inner 4 bf16 0.44 of copy against 0.35 forward,
#: 0.40 against 0.32 backward, float32 0.42 against 0.37 and 0.40 against 0.33; inner 8 0.36-0.41
#: against 0.33-0.38; inner 16 level or slower (float32 backward 0.30 against 0.33); 32 and wider
#: 0.10-0.24 against 0.28-0.37
STEPPED_TRITON_MAX_INNER = 8
#: 16-bit inputs whose rows lie at different 16-byte phases (row strides of no whole number of
#: 16-byte pieces, e.g. NCHW over C with an odd H x W): reduced axes up to this long (forward,
#: backward) go to Triton, whose tile tier holds them (its MAX_TILE, MAX_TILE_BACKWARD over a 32-byte
#: sector of columns), longer ones to the CUDA strided tier. H100 (results
#: 2026-11-25_h100_s16/odd_rows_*.txt): bf16 (16, 21, 513, 513) over dim 1 Triton 0.554 of copy
#: forward and 0.677 backward, against the CUDA staged tiles' 2-byte copies 0.242 and 0.241 and the
#: strided tier's 0.181 and 0.203 (torch.compile 0.833 and 0.966); (32, 4096, 1023) Triton 0.284
#: and 0.363, strided 0.340 and 0.428, staged 0.205 and 0.140; the staged tiles with each row in its
#: window measured 0.313 and 0.427, and 0.349 and 0.344 (results 2026-11-25_h100_s17/odd_rows_window.txt)
STAGGERED_TRITON_MAX_N = {False: 2048, True: 1024}
#: The forward of rows of this many columns, first to last, whose length is no multiple of 16, which
#: Triton's tile kernels read an element at a time: where "auto" would give it to Triton and the CUDA
#: backend is unavailable (e.g. installed without its extra), torch.softmax takes it, which ran it
#: faster. H100, Triton against torch in one process, 2^26 elements (results 2026-12-07_h100_s82/
#: a4/flat_rows.txt), us a call: bf16 1118481 x 60 236.1 against 154.8, 1032444 x 65 430.0 against
#: 198.9, 932067 x 72 389.2 against 180.6, 671088 x 100 249.4 against 145.1, 528416 x 127 202.8
#: against 121.5; float32 251.2 against 186.0, 430.6 against 207.5, 393.6 against 195.6, 258.6
#: against 184.9, 220.4 against 187.9 (2^27 elements, a4/main_*_05-48-02.json.gz: bf16 x 72 774.9
#: against 355.4). Rows of 8 and 160 ran faster on Triton (bf16 116.9 against 180.2, 94.3 against
#: 140.9), rows of 1000 level; from 49: the bf16 rows of 56 Triton ran at 0.22-0.34 of copy (results
#: 2026-11-24_h100_s9, see ROW_ALIGNMENT_DISTANCE). Other lengths were not timed against torch but bf16
#: 2670 x 50257 (Triton 401.1 against 264.1). The backward stays on Triton (ahead but for bf16 rows of
#: 65 and 72). Since Triton's realigned kernels take such rows (triton.REALIGNED_ROW_COLS: 16-byte
#: vectors whatever the length, where the tensors' pointers lie on 16-byte boundaries), torch keeps
#: only the lengths they do not take (none now: they ran ahead of torch on all of 60-127, results
#: 2026-12-07_h100_s83/r1/realign.txt, bf16 x 65 114.4 against 197.4 us, float32 183.6 against 205.5);
#: rows whose pointers lie off a boundary, which Triton still reads an element at a time, are not told
#: apart here. The one pass from 16-bit inputs to float32 results never realigns (two element sizes)
#: and casts first on all of them (functional._widens_in_kernel)
TORCH_OVER_TRITON_FORWARD_COLS = (49, 127)


@functools.lru_cache(maxsize=8192)
def _choose_backend(
    requested: str,
    device_type: str,
    device_index,
    dtype,
    outer,
    n,
    inner,
    backward,
    aligned: bool = True,
    stepped: bool = False,
    window: bool = True,
    runs: bool = True,
    log: bool = False,
) -> str:
    if requested != "auto":
        return requested
    if dtype == torch.float64:
        return "torch"
    if device_type == "cpu":
        return "triton" if unavailable_reason("triton", "cpu", None) is None else "torch"
    if device_type != "cuda":
        return "torch"
    index = torch.cuda.current_device() if device_index is None else device_index
    preferred = _table_choice(backward, inner > 1, dtype, n, outer * n * inner, inner, device_index=index)
    if inner > 1 and not aligned:
        # the table was measured on tensors on 16-byte boundaries; off one (a storage offset), the
        # CUDA backend's strided tier realigns its packs where Triton's loads go narrow (and it
        # reads an input with a step along inner in 16-byte packs it picks elements from). H100,
        # (32, 4096, 1024) over dim 1 one element in: bf16 0.49 of copy against 0.35, float32 0.57
        # against 0.44 (benchmarks/results/2026-11-23_h100_s6/layouts_views_check.txt)
        preferred = "cuda"
        if stepped and inner <= STEPPED_TRITON_MAX_INNER:
            preferred = "triton"
    if inner > 1 and not stepped and not window:
        from .backends.cuda.strided import takes_spread_columns

        if takes_spread_columns(n, inner, dtype, backward) and not _float32_few_classes_to_triton(
            n, inner, outer * n * inner, dtype, backward
        ):
            # where strided_warp's spread columns lead (strided.choose_tier takes them)
            preferred = "cuda"
        elif dtype.itemsize == 2:
            # 16-bit rows at different 16-byte phases: Triton where its tiles hold the reduced axis
            # (one read), the CUDA strided tier elsewhere (strided.choose_tier)
            preferred = "triton" if n <= STAGGERED_TRITON_MAX_N[backward] else "cuda"
        elif _float32_staggered_to_triton(n, inner, outer * n * inner, backward):
            preferred = "triton"
    elif inner > 1 and aligned and dtype == torch.float32:
        if _float32_wide_to_triton(n, inner, outer * n * inner, backward):
            preferred = "triton"
    elif inner > 1 and aligned and dtype.itemsize == 2 and not stepped and not backward:
        if _half_short_axis_to_triton(n, inner, outer * n * inner):
            preferred = "triton"
    if inner > 1 and aligned and window:
        if runs and backward and log and _flat_outer_log_backward(outer, n, inner, dtype, device_index):
            preferred = "cuda"
        elif _relay_backward(outer, n, inner, dtype, backward, device_index, runs, log):
            preferred = "triton"
    candidates = [preferred] if preferred else []
    candidates += [name for name in ("triton", "cuda") if name not in candidates]
    for name in candidates:
        reason = unavailable_reason(name, device_type, device_index)
        if reason is None:
            if name == "triton" and _torch_over_triton(n, inner, dtype, backward, device_type, device_index):
                return "torch"
            return name
        if name == preferred and name not in _warned:
            _warned.add(name)
            warnings.warn(
                f"fastsoftmax: the measured table prefers backend {name!r} here, but {reason}; "
                "falling back to the next backend",
                RuntimeWarning,
                stacklevel=4,
            )
    return "torch"


def triton_reads_rows_slowly(n: int, inner: int, backward: bool) -> bool:
    """Whether Triton's tile kernels, which read rows off multiples of 16 an element at a time, ran the
    forward of rows of ``n`` slower than torch.softmax and the CUDA backend (TORCH_OVER_TRITON_FORWARD_COLS;
    where the realigned kernels take such rows, _torch_over_triton leaves them to Triton)."""
    low, high = TORCH_OVER_TRITON_FORWARD_COLS
    return inner == 1 and not backward and n % 16 != 0 and low <= n <= high


def _torch_over_triton(n: int, inner: int, dtype, backward: bool, device_type: str, device_index) -> bool:
    """Whether torch.softmax takes this problem from Triton: it ran it faster where Triton's realigned
    kernels do not take it, and the CUDA backend, faster than both, is unavailable
    (TORCH_OVER_TRITON_FORWARD_COLS)."""
    if not triton_reads_rows_slowly(n, inner, backward):
        return False
    if _triton_module().realigned_length(n, backward, dtype.itemsize):
        return False
    return unavailable_reason("cuda", device_type, device_index) is not None


def _float32_staggered_to_triton(n: int, inner: int, numel: int, backward: bool) -> bool:
    """Whether a float32 problem whose rows lie at several 16-byte phases leaves the table's choice
    (the CUDA staged tiles' 4-byte copies) for Triton's tiles of scalar loads: where those tiles
    hold the axis (up to STAGGERED_TRITON_MAX_N) over inner sizes they were measured on, and the
    GPU time outlasts a Triton launch's host time. Forward over the whole-column tiles, H100, both
    backends in one process (results 2026-11-25_h100_s18/f32_staggered.txt): (16, 21, 513, 513) over
    dim 1 0.911 of copy against 0.837 (torch.compile 0.90), (256, 64, 2049) 0.948 against 0.810.
    Since the tiles' 32-bit offsets and the longer axes' tiles (SCALAR_LONG_*), H200, both backends
    in one process (results 2026-11-28_h200_s30): backward (16, 21, 513, 513) 0.971 against 0.844
    (torch.compile 0.964; the H100 had measured 0.934 against 0.963 before them), (256, 64, 2049)
    0.938 against 0.740; over dim 1 of (8, 150, 127, 127) forward 0.671 against 0.578, backward
    0.785 against 0.641, (64, 512, 1023) 0.617 against 0.582 and 0.755 against 0.633, (16, 1000,
    63, 63) 0.631 against 0.550 and 0.635 against 0.568, (8, 2000, 33, 33) forward 0.474 against
    0.448 (its backward, past the limit, level: 0.488 against 0.499)."""
    triton_backend = _triton_module()
    holds = triton_backend.scalar_tiles_hold(n, inner) or (
        n <= STAGGERED_TRITON_MAX_N[backward] and triton_backend.scalar_long_tiles_hold(n, inner, 4, backward)
    )
    return holds and not _moves_too_little(numel, 4, backward)


#: float32 forward problems over rows at several 16-byte phases whose axis has at most this many rows
#: and which hold at most this many elements take Triton's scalar tiles where strided_warp's spread
#: columns would take them (_float32_few_classes_to_triton)
FEW_CLASSES_TRITON = (24, 1 << 25)


def _float32_few_classes_to_triton(n: int, inner: int, numel: int, dtype: torch.dtype, backward: bool) -> bool:
    """Whether a float32 forward over few classes of odd H x W (segmentation heads over 19-21
    classes) leaves strided_warp's spread columns for Triton's scalar tiles, as compiled under their
    register cap (triton.SCALAR_TILE_F32_FORWARD_MAXNREG): on the smaller tensors, where the spread
    columns' last wave weighs more. H200, kernel by kernel in one process (results
    2026-12-04_h200_s56/c2/f32_forward_cap.txt, c3/f32_forward_cap.txt), over dim 1, spread columns
    against the capped tiles (torch.compile): (8, 21, 255, 255) 26.6 against 24.3 us (24.0), (16, 21,
    255, 255) 47.8 against 46.6 (46.2), (4, 21, 513, 513) 49.1 against 48.0 (48.4), (2, 21, 513, 513)
    27.1 against 25.3 (25.4), (64, 21, 127, 127) 46.9 against 45.2 (44.7), (8, 19, 255, 255) 24.1
    against 23.0 (22.4); but from 43.7M elements the spread columns lead ((32, 21, 255, 255) 90.0
    against 92.0, (8, 21, 513, 513) 93.3 against 94.4, (16, 21, 513, 513) 179.9 against 185.4), as
    they do over 32 rows ((8, 32, 255, 255) 36.6 against 36.9)."""
    most_n, most_numel = FEW_CLASSES_TRITON
    few = dtype == torch.float32 and not backward and n <= most_n and numel <= most_numel
    return few and _triton_module().scalar_tiles_hold(n, inner) and not _moves_too_little(numel, 4, backward)


def _flat_outer_log_backward(outer: int, n: int, inner: int, dtype: torch.dtype, device_index) -> bool:
    """Whether a log-softmax backward on 16-byte boundaries in single runs goes to the CUDA strided tier,
    which sweeps its float32 blocks flat (strided.flat_outer_log_backward: ahead of the relay), where the
    CUDA backend takes it there (its sweeps_outer_flat)."""
    if unavailable_reason("cuda", "cuda", device_index) is not None:
        return False
    return kernel_backend("cuda").sweeps_outer_flat(outer, n, inner, dtype, device_index)


#: float32 backwards over this many columns or fewer stay on the relay tier where the CUDA backend
#: would hold them on chip (see _relay_backward)
RELAY_F32_MAX_INNER = 8


def _relay_backward(
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    device_index,
    runs: bool = True,
    log: bool = False,
) -> bool:
    """Whether a backward on 16-byte boundaries leaves the table's choice for Triton's relay tier
    (triton.relay_takes: long axes of narrow inner sizes, each outer index's (n, inner) block more
    than the CUDA tiers hold on chip, which read it twice), unless the CUDA backend holds the blocks
    on chip across a cluster (its cluster_stream column kernels, ``streams_columns``), which measured
    faster where it does. H200, alternated in one process (results 2026-11-28_h200_s32/
    relay_against_column_stream.txt), over dim 1: bf16 (64, 65536, 16) 0.624 of copy against the
    relay's 0.560, (128, 65536, 8) 0.669 against 0.597, (128, 16384, 32) 0.681 against 0.604, (32,
    65536, 16) 0.605 against 0.513; float32 (128, 16384, 32) 0.653 against 0.611. float32 over
    RELAY_F32_MAX_INNER columns or fewer stays on the relay, whose pseudo-columns read them as rows
    of 16-byte loads: (128, 65536, 8) 0.696 against 0.652.
    The log-softmax backward stays on the relay wherever it takes it (but for the float32 blocks the
    CUDA strided tier sweeps flat, which _choose_backend gives it first): its first read is of dy alone
    (the sum of dy), where the column kernels hold y and dy both. H200, kernel by kernel in one process
    (benchmarks/kernel_breakdown.py --log, results 2026-12-04_h200_s55/c4/): bf16 (64, 65536, 16) 133.2
    us against the column kernels' 165.2 (torch.compile 132.7), (128, 16384, 32) 131.4 against 153.2
    (128.9); float32 (128, 16384, 32) 275.9 against 296.5 (249.5).
    Measured on an H200 only; the table's points there are the CUDA staged teams and strided tier.
    ``runs``: every tensor's blocks are single runs (else the CUDA backend would stage them in tiles,
    and the relay keeps them)."""
    if not _triton_module().relay_takes(outer, n, inner, backward):
        return False
    if log or not runs or (dtype == torch.float32 and inner <= RELAY_F32_MAX_INNER):
        return True
    if unavailable_reason("cuda", "cuda", device_index) is not None:
        return True
    return not kernel_backend("cuda").streams_columns(outer, n, inner, dtype, backward, device_index)


#: float32 strided problems on 16-byte boundaries whose reduced axis is this long (at least, at
#: most) go to Triton's wide tiles where those hold them (see _float32_wide_to_triton)
WIDE_TRITON_N = (33, 1024)


def _float32_wide_to_triton(n: int, inner: int, numel: int, backward: bool) -> bool:
    """Whether a float32 problem on 16-byte boundaries leaves the table's choice for Triton's wide
    tiles of 16-byte loads (triton.wide_tiles_hold: inner sizes of 128 or more) over axes of
    WIDE_TRITON_N, where the GPU time outlasts a Triton launch's host time. The table's points
    were timed on the tiles before them. H200, both backends in one process (results
    2026-11-28_h200_s30/tile_probe_aligned_planned.txt), over dim 1, forward and backward: (128,
    1024, 1024) 0.905 of copy against 0.811, 0.956 against 0.906; (32, 512, 1024) 0.832 against
    0.784, 0.904 against 0.788; (64, 256, 2048) 0.878 against 0.884, 0.979 against 0.953; (8, 150,
    128, 128) 0.851 against 0.746, 0.915 against 0.871; (4096, 64, 512) 0.997 against 0.961, 1.044
    against 1.033. Shorter axes stay: (16, 21, 512, 512) forward 0.840 against 0.931. Not measured
    on an H100; bf16 went either way (forward (128, 1024, 1024) 0.616 against 0.712, (64, 256,
    2048) 0.740 against 0.666) and keeps the table's choice."""
    holds = WIDE_TRITON_N[0] <= n <= WIDE_TRITON_N[1] and _triton_module().wide_tiles_hold(n, inner, scalar=False)
    return holds and not _moves_too_little(numel, 4, backward)


#: 16-bit forwards on 16-byte boundaries over axes this long (at least, at most), whose axis fills at
#: least HALF_SHORT_TRITON_MIN_FILL of its tile's rows (the axis padded to a power of two), go to
#: Triton's wide tiles (see _half_short_axis_to_triton)
HALF_SHORT_TRITON_N = (32, 64)
HALF_SHORT_TRITON_MIN_FILL = 0.75


def _half_short_axis_to_triton(n: int, inner: int, numel: int) -> bool:
    """Whether a 16-bit forward on 16-byte boundaries (not stepped) leaves the table's choice for
    Triton's wide tiles (64 elements a thread since the sixty-sixth set): axes of HALF_SHORT_TRITON_N
    that fill three quarters of their tile (32, 48-64) over inner sizes of 128 or more, from the launch
    bound (_moves_too_little: about 30 MB). Both backends as planned, alternated in one process, bf16
    softmax over dim 1 (results 2026-12-05_h200_s67/): on an H200 (c1/) (512, 32, 1024) 0.757 of copy
    against 0.626, (128, 64, 4096) 0.849 against 0.768, (4096, 64, 512) 0.943 against 0.938; on an
    H100 (c3/) (256, 48, 2048) 0.855 against 0.821, (1024, 32, 512) 0.825 against 0.767, (64, 64, 8192)
    0.893 against 0.858. Longer and shorter axes go the other way ((256, 128, 1024) 0.888 against
    0.910; (16, 21, 512, 512) 0.711 against 0.867). The backwards ran level (Triton ahead by at most
    0.025, the same files) and keep the table's choice. Through "auto" against each backend forced on
    eight more shapes, float16 among them (H100, results 2026-12-05_h100_s68/c1/): ahead on (2048, 32,
    256) bf16 0.882 against 0.803, (512, 32, 1024) fp16 0.885 against 0.817, (512, 48, 1024) bf16 0.900
    against 0.853, (256, 64, 2048) fp16 0.924 against 0.893, (32, 56, 16384) bf16 0.909 against 0.873,
    and on two larger inputs (then kept from the rule by a 64 MiB bound, dropped since: Triton forced
    0.964 against 0.949 on (512, 64, 2048) bf16, 0.984 against 0.973 on (1024, 48, 2048) fp16); behind
    over an axis of 40 ((128, 40, 4096) bf16 0.792 against 0.843; (2048, 40, 1024) bf16 0.889 against
    0.959 in c3/ last set, the bound's reason): such an axis fills 40 of the 64 rows its tile is
    planned for, and HALF_SHORT_TRITON_MIN_FILL keeps the axes of 33-47 on the table's choice (only 40
    measured). log-softmax takes the rule unmeasured (the same loads and tiles)."""
    if not HALF_SHORT_TRITON_N[0] <= n <= HALF_SHORT_TRITON_N[1]:
        return False
    triton_module = _triton_module()
    if n < HALF_SHORT_TRITON_MIN_FILL * triton_module._pow2(n):  # the rows the tile is planned for
        return False
    return triton_module.wide_tiles_hold(n, inner, scalar=False) and not _moves_too_little(numel, 2, False)


@functools.lru_cache(maxsize=8)
def _table(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def points_by_kind(points) -> dict:
    """``points`` (a table's) by (direction, layout, dtype), in their order: a choice scans the few
    hundred of its kind, not the table's thousands."""
    by_kind: dict = {}
    for point in points:
        by_kind.setdefault((point.get("direction"), point.get("layout"), point.get("dtype")), []).append(point)
    return by_kind


@functools.lru_cache(maxsize=8)
def _points_by_kind(path: Path) -> dict:
    """points_by_kind of the table at ``path``, as _table reads it."""
    return points_by_kind(_table(path).get("points", ()))


def _point_inner(point: dict) -> int:
    """The contiguous size after the reduced dim at a measured point (1 for rows). Grid points
    store their canonical (outer, n, inner) shape and no dim; main-suite points their shape and dim."""
    shape = point.get("shape")
    if point.get("layout") != "strided" or not shape:
        return 1
    dim = point.get("dim")
    dim = len(shape) - 2 if dim is None else dim % len(shape)
    return max(1, math.prod(shape[dim + 1 :]))


def _table_choice(
    backward: bool,
    strided: bool,
    dtype: torch.dtype,
    n: int,
    numel: int,
    inner: int = 1,
    device_index: int = -1,
    tables: list | None = None,
    row_octave_distance: float | None = None,
) -> str | None:
    """The fastest backend at the measured point nearest to this problem among the points of CUDA
    device ``device_index``'s own table (table_path; -1: TABLE_PATH) and, where that is another, of
    TABLE_PATH, whose points count OTHER_MODEL_DISTANCE further (in log n and log numel,
    and for strided problems log inner: the kernels' access patterns change with it far more than
    with n, e.g. an H100 ran (16, 21, 512, 512) over dim 1 at 0.83 of copy on the CUDA backend and
    0.20 on Triton, where a grid point of inner 256 times the two the same; for rows, points of another
    row_kind and on the other side of a row_octaves step count ROW_ALIGNMENT_DISTANCE and
    ROW_OCTAVE_DISTANCE further, and the sibling dtype's SIBLING_DTYPE_DISTANCE). A problem too small to
    keep the GPU busy for as long as a Triton launch keeps the host (_launch_bound) takes the CUDA
    backend whatever its nearest point says (that point may be many times larger, or timed with
    more host time a call than a cached plan costs), unless that point is as small and the CUDA
    backend's kernel took longer there than two Triton launches' host time: GPU time, which no launch
    explains (bf16 (1, 65536, 4) over dim 1 backward in the table of 2026-11-23: a 116 us kernel, 158 us
    a call against Triton's 99). ``tables``: [(points_by_kind of a table, its extra distance)] to
    choose from instead; ``row_octave_distance``: instead of ROW_OCTAVE_DISTANCE (both for judging a
    table, benchmarks/dispatch_heldout.py)."""
    direction = "backward" if backward else "forward"
    layout = "strided" if strided else "row"
    dtype_name = str(dtype).removeprefix("torch.")
    sibling = SIBLING_DTYPES.get(dtype_name)
    itemsize = dtype.itemsize
    best, best_point, best_distance = None, None, math.inf
    if tables is None:
        own = table_path(device_index)
        tables = [(_points_by_kind(own), 0.0)]
        if own != TABLE_PATH:
            tables.append((_points_by_kind(TABLE_PATH), OTHER_MODEL_DISTANCE))
    if row_octave_distance is None:
        row_octave_distance = ROW_OCTAVE_DISTANCE
    # its own dtype's points first, then the sibling's: of two points at exactly one distance, its own decides
    keys = [(direction, layout, name) for name in (dtype_name, sibling) if name]
    kind, octaves = row_kind(n, itemsize), row_octaves(n, itemsize)
    for point, farther in (
        (point, farther) for by_kind, farther in tables for key in keys for point in by_kind.get(key, ())
    ):
        timings = {name: t for name, t in point.get("us", {}).items() if name in KERNEL_BACKENDS and t and t > 0}
        if not timings:
            continue
        distance = abs(math.log2(point["n"]) - math.log2(n)) + 0.5 * abs(math.log2(point["numel"]) - math.log2(numel))
        distance += farther
        if strided:
            distance += abs(math.log2(_point_inner(point)) - math.log2(inner))
        else:
            distance += ROW_ALIGNMENT_DISTANCE * (row_kind(point["n"], itemsize) != kind)
            distance += row_octave_distance * (row_octaves(point["n"], itemsize) != octaves)
        if point["dtype"] != dtype_name:
            distance += SIBLING_DTYPE_DISTANCE
        if distance < best_distance:
            best, best_point, best_distance = min(timings, key=lambda name: _pace(name, timings)), point, distance
    if best is not None and _moves_too_little(numel, itemsize, backward):
        cuda_us = best_point["us"].get("cuda")
        # the kernel's own time where the point stores it: a small point's cost adds the host's, whose
        # timings spread (H100, the grid of 2026-12-06: 9-106 us a CUDA call, kernels of 4-29 us)
        kernel_us = best_point.get("gpu_us", {}).get("cuda", cuda_us)
        slow_kernel = (
            _moves_too_little(best_point["numel"], itemsize, backward)
            and (kernel_us or 0) > 2 * LAUNCH_HOST_US["triton"]
        )
        if cuda_us and not slow_kernel:
            return "cuda"
    return best


#: A point of the reference table (TABLE_PATH, measured on an H100) counts as this many octaves of n
#: further away than a point of the GPU model's own table. A model's table holds the grid of powers
#: of two and the rows one past them (fastsoftmax bench table; the H200's also rows of lengths drawn at
#: random); the reference table adds the main suite's shapes (odd lengths,
#: narrow rows, layouts), which the grid's nearest point answered wrongly on the H100 and would on
#: another model: on an H200, bf16 rows of 3000 forward take the CUDA backend's block_regs at 0.88 of
#: copy where Triton, the winner at 2048 and 4096 there, ran 0.60 (its loads go narrow where n is
#: not a multiple of 16; results 2026-12-02_h200_s40/backend_preference_rows.txt). One octave: the
#: own grid's points of the same row kind, at most half an octave of n away, still decide.
OTHER_MODEL_DISTANCE = 1.0
#: Rows of different kinds (row_kind) run different kernels: a measured point of another kind counts
#: as this many octaves of n further away. H100: bf16 rows of 100 backward took 0.89 of copy on the
#: CUDA backend (flat_rows) and 0.54 on Triton, whose nearest point, rows of 128, the two backends ran
#: level (benchmarks/results/2026-11-24_h100_s6/flat_rows_probe_long_rows.txt); bf16 rows of 56, 72,
#: 88 and 104 forward took 0.22-0.34 on Triton (slower than torch.softmax) and 0.78-0.91 on the CUDA
#: backend, while rows of 48, 64, 80, 96 and 112 ran 0.95-0.96 on Triton (results
#: 2026-11-24_h100_s9, main_*_13-43-21.json.gz and main_*_13-39-58.json.gz). Those Triton figures are
#: its tile kernels'; its realigned kernels now take such rows, another kernel again for each kind.
ROW_ALIGNMENT_DISTANCE = 2.0
#: float16 and bfloat16 run the same kernels over the same bytes in both backends (only the
#: conversions to and from float32 differ), so each takes the other's points too, this much farther
#: than its own: a point of its own at the same place decides, and where the table has none near, the
#: other type's does. Points were added for bfloat16 alone (the channel shapes: (16, 21, 512, 512) over
#: dim 1 backward, H100, 189 us on the CUDA backend against Triton's 318), and without them float16
#: took the point of (4096, 64, 256) there, where Triton led by 2 us in 141, and sent the channel
#: backward to Triton
SIBLING_DTYPES = {"float16": "bfloat16", "bfloat16": "float16"}
SIBLING_DTYPE_DISTANCE = 0.5


#: Rows on either side of a power of two that one backend's row kernels round a row up to
#: (row_octaves) count as this many octaves of n further apart: just past it a kernel holds up to
#: twice the lanes it fills. H100, rows of 2^26 elements, bf16 forward: the CUDA backend 107.4 us at
#: 519 (its warp tier) and 113.8 at 1031 (block_regs), 94.9-98.8 at 600-999; Triton's realigned
#: kernels 94.6 at 519 and 112.8 at 521 (a body of 520 in a block of 1024), 94.7 at 1031 and 108.5 at
#: 1033 (results 2026-12-07_h100_s85/g1_*/, 2026-12-07_h100_s86/g2_*/; Triton now holds such bodies in
#: two pieces, triton.REALIGNED_TWO_PIECES, and the CUDA backend's step stands). A table needs points on
#: both sides (bench table's edge lengths): without them bf16 rows of 1025 took the point of 999 and the
#: CUDA backend (114.0 us against Triton's 95.0). With the edge points, one octave took the chosen
#: backend's time over the faster one's on held-out rows from 1.0232 to 1.0197 on an H200 (geometric
#: mean; 2026-12-07_h100_s86/e2/) and from 1.0045 to 1.0053 on an H100 (2026-12-07_h100_s87/e3/: its
#: backends lie closer, and 0.5-2 octaves are within 0.0002 of each other).
ROW_OCTAVE_DISTANCE = 1.0


def row_octaves(n: int, itemsize: int) -> tuple[int, int]:
    """The powers of two (their exponents) a row of n elements is rounded up to: by the CUDA backend's
    row tiers, n itself (measured on its warp tier and block_regs, rows up to 32768); by Triton's held
    realigned kernels, the row's whole 16-byte vectors (their body; rows from 9, up to the row tier's
    longest: its online tier walks chunks and rounds nothing, where the distance is kept all the same)."""
    vector = 16 // itemsize
    return (n - 1).bit_length(), max(n // vector * vector - 1, 0).bit_length()


def row_kind(n: int, itemsize: int) -> tuple[bool, bool]:
    """What decides the kernels a row of n elements gets: whether its byte length is a multiple of
    16 (the CUDA backend's 16-byte packs, else flat_rows or narrow packs), and whether n is a
    multiple of 16 (Triton specializes a kernel for integer arguments divisible by 16, the row pitch
    among them; the others measured far slower there)."""
    return n * itemsize % 16 == 0, n % 16 == 0


#: Triton wins a measured point only by more than this fraction of the CUDA backend's time where
#: that time is short (under TRITON_MARGIN_BELOW_US): the points time the GPU, and a Triton launch
#: costs more host time (few-row launches on Triton, host-bound, measured 12.7 us in one H100 run
#: and 73 us in the next on 8 x 128256 float32, where the CUDA backend took 12.7 and 11.7)
TRITON_MARGIN = 0.03
#: past this many microseconds of GPU time a call hides the host's launch cost, and Triton wins by
#: more than TRITON_MARGIN_LONG, about the spread of one process's timings: on an H100 it ran bf16
#: and fp16 rows of 64, 4096, 8192 and 16384 columns (2^27 elements) 1-3% faster than the CUDA
#: backend in two runs (benchmarks/results/2026-11-23_h100_s8), which the 3% margin left on CUDA
TRITON_MARGIN_BELOW_US = 100.0
TRITON_MARGIN_LONG = 0.01


#: Host time a call through each kernel backend costs at the least (microseconds, a plan already
#: cached): back-to-back calls of a problem whose GPU time is shorter run at this pace instead. The
#: table's small points were timed in runs whose Triton launches cost less host time than they can
#: (12.7 us in one H100 run, 73 in the next, above). H100, every problem of
#: benchmarks/host_small_probe.py, "auto" pinned to each backend in turn, in two calls on two
#: machines (results 2026-11-24_h100_s10/host_small_backends.txt, host_small_after_first_rule.txt):
#: the CUDA backend 13-17 us a forward call, 13-23 backward; Triton 26-35 and 31-71 forward, 31-95
#: and 36-95 backward (40-55 on most); torch.softmax 10-14 forward. There "auto" had taken Triton
#: for bf16 (8, 150, 8, 8) over dim 1 (37 us a call against the CUDA backend's 14 and torch's 16),
#: (16, 512, 16) over dim 1 (33 against 13 and 10) and (2048, 8) over dim 0 (34 against 14 and 12);
#: with a Triton floor of 30 us, still for the backward of (256, 512, 64) over dim 1 (46 us against
#: the CUDA backend's 27). Since the Triton backend's prepared path an H200's host measured Triton at
#: 16-26 us forward and 20-32 backward, the CUDA backend at 9-16 and 11-19 (results
#: 2026-11-28_h200_s30/host_per_call_prepared.txt); the figure is kept until the small problems' GPU
#: times are measured against a lower one.
LAUNCH_HOST_US = {"triton": 40.0, "cuda": 13.0}


#: Bytes a microsecond at which _launch_bound reckons a problem's GPU time: half an H100's copy
#: bandwidth (2966 GB/s), a pace every tier of the CUDA backend keeps on problems this small
LAUNCH_BOUND_BYTES_PER_US = 1.5e6


def _moves_too_little(numel: int, itemsize: int, backward: bool) -> bool:
    """_launch_bound for a problem of ``numel`` elements (one read and one write an element
    forward, two reads and one write backward)."""
    return _launch_bound(numel * itemsize * (3 if backward else 2))


def _launch_bound(bytes_moved: int) -> bool:
    """Whether a problem moving ``bytes_moved`` keeps the GPU busy for less time than a Triton
    launch keeps the host: back-to-back calls then run at the pace of their launches, and the CUDA
    backend's cost less host time (LAUNCH_HOST_US)."""
    return bytes_moved / LAUNCH_BOUND_BYTES_PER_US < LAUNCH_HOST_US["triton"]


def _pace(name: str, timings: dict) -> float:
    """A backend's time a call at a measured point, as the choice compares them: its GPU time or
    its launch's host time, whichever is longer, times its margin (_handicap)."""
    return max(timings[name], LAUNCH_HOST_US.get(name, 0.0)) * _handicap(name, timings)


def _handicap(name: str, timings: dict) -> float:
    if name != "triton":
        return 1.0
    return 1.0 + (TRITON_MARGIN if timings.get("cuda", 0.0) < TRITON_MARGIN_BELOW_US else TRITON_MARGIN_LONG)
