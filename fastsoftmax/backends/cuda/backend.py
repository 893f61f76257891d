"""The "cuda" backend: CUDA C++ kernels compiled at run time with NVRTC, launched with cuLaunchKernel.

Tiers, chosen from the shape alone (``choose_tier``):

* ``warp``            rows of n <= 1024: a warp (or a narrower lane group) per row, row in registers;
* ``block_regs``      rows of up to 32768 (16384 backward): a block per row holding the whole row
                      (in registers; long 16-bit rows staged in shared memory), one block launched
                      per row (16-bit rows from 512 columns, where it beats ``warp``);
* ``block_smem``      longer rows whose copy fits in shared memory with two blocks per SM: a block
                      per row, the row cached in shared memory between the two passes;
* ``block_uncached``  longer rows still: a block per row, the second pass re-reads the row (L2);
* ``split_row``       few long rows (fewer than the SMs): each row split over many blocks, two
                      kernels (partial (max, sum) per chunk, then merge and write);
* ``strided``         inner > 1: tiles of columns along the contiguous axis, 16-byte packs per
                      thread, reduced over n; n is split over blocks (two kernels) when the
                      tiles alone cannot fill the GPU.

The launch path is kept short on purpose: cuda.core compiles (NVRTC) and loads the kernels, but
launches go straight to the driver's ``cuLaunchKernel`` (through cuda.bindings' compiled wrapper),
with reusable argument slots (see ``_Launch``), because cuda.core's ``launch()`` costs tens of
microseconds of host time.
Everything between ``forward()`` and the driver is a handful of tensor attribute reads, one tuple
lookup into a dict of ready plans, and the stream handle from torch. Compiling, module loading,
occupancy and device queries all happen once, when a plan is first built. Without a loadable
libcuda the launches fall back to cuda.core.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

import torch

from . import compiler
from .instances import (
    BLOCK_REGS_PACK_SIZES,
    BLOCK_SIZES,
    CXX_TYPES,
    PACK_SIZES,
    SPLIT_ROW_ALIGN,
    SPLIT_ROW_BLOCK,
    STRIDED_MAX_THREADS,
    STRIDED_PACK_SIZES,
    WARP_PACK_SIZES,
    WARP_TIER_BLOCK,
    WARP_TIER_MAX_COLS,
    Instance,
    block_regs_max_cols,
    block_regs_shape,
    block_regs_staged_bytes,
    block_regs_storage,
    next_pow2,
    source_for,
    warp_shape,
)

TIERS = ("warp", "block_regs", "block_smem", "block_uncached", "split_row", "strided")
ROW_TIERS = ("warp", "block_regs", "block_smem", "block_uncached", "split_row")
#: split_row serves rows at least this long when there are fewer rows than SMs
SPLIT_ROW_MIN_COLS = 16384
#: each split_row block takes at least this many elements (8 per thread at 512 threads)
SPLIT_ROW_MIN_CHUNK = 4096
#: split_row aims for this many blocks per SM in all
SPLIT_ROW_BLOCKS_PER_SM = 4
#: block_regs: elements per thread to aim for (more when 1024 threads need them for the row), by
#: (bytes per element, backward), as (rows up to n columns, target) steps. Measured on an H100 with
#: benchmarks/cuda_probe.py: 16-bit rows want few elements a thread while short and many once long
#: (64 a thread: staged in shared memory, see block_regs_tier.cuh); float32 is at copy bandwidth
#: from 8 to 32.
BLOCK_REGS_TARGETS = {
    (4, False): ((32768, 16),),
    (2, False): ((1024, 8), (8192, 32), (32768, 64)),  # 64: staged
    (4, True): ((16384, 16),),
    (2, True): ((1024, 8), (8192, 16), (16384, 32)),
}
#: when set, every block_regs plan aims for this many elements a thread (for sweeps)
BLOCK_REGS_ELEMS_TARGET = None
#: 16-bit rows of at least this many columns go to block_regs rather than the warp tier (measured
#: faster from 512 up: a block per row keeps more loads in flight than a warp per row)
BLOCK_REGS_MIN_COLS_16BIT = 512
#: block tiers size blocks so that a row gives each thread about this many packs: the kernels
#: load kUnroll (4) packs per thread before using any, and smaller blocks leave more of them per SM
BLOCK_PACKS_PER_THREAD = 4
#: strided: a warp covers this many bytes of one row along the contiguous axis (a cache line)
STRIDED_ROW_BYTES = 128
#: strided: when the tiles of a problem fill less than this many waves of resident blocks, n is
#: split over blocks (two kernels) until they do
STRIDED_WAVES = 2
#: strided: a chunk of n gives each thread at least this many rows
STRIDED_MIN_ROWS_PER_THREAD = 8

#: shared memory the block tiers' static reduction scratch takes, on top of the row copy
_STATIC_SMEM_RESERVE = 1024
#: used by choose_tier when no device can be queried (an H100's figures)
_DEFAULT_SMEM_PER_SM = 228 * 1024
_DEFAULT_SMEM_PER_BLOCK = 227 * 1024
_DEFAULT_SM_COUNT = 132

try:  # one C call, no Python-side stream object
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - CPU-only builds of torch

    def _raw_stream(device_index):
        return torch.cuda.current_stream(device_index).cuda_stream


def block_regs_target(n: int, itemsize: int, backward: bool) -> int:
    steps = BLOCK_REGS_TARGETS[(itemsize, backward)]
    return next((target for up_to, target in steps if n <= up_to), steps[-1][1])


def row_cache_bytes(n: int, itemsize: int, backward: bool) -> int:
    """Shared memory block_smem needs for a row: n elements (y and dy, each padded to 16 of
    them, for backward)."""
    return 2 * (-(-n // 16) * 16) * itemsize if backward else -(-n * itemsize // 16) * 16


# ---- launching ----------------------------------------------------------------------------------
_CUDA_ERROR_INVALID_CONTEXT = 201


class _Driver:
    """The driver entry points the launch path needs.

    cuda.core's ``launch()`` costs tens of microseconds of host time per call (argument
    conversion, config objects). ``cuLaunchKernel`` with a ready array of argument pointers costs
    a few: through cuda.bindings' compiled wrapper ("bindings", the default), or through ctypes
    ("ctypes", which converts its eleven arguments in Python and is slower). The ctypes library is
    loaded with ``PyDLL``, which keeps the GIL during the call, and the compiled wrapper holds it
    too: a kernel's argument slots are filled and read by the driver with no other Python thread in
    between.
    """

    def __init__(self, mode: str):
        self.mode = mode
        lib = ctypes.PyDLL("libcuda.so.1")
        c_uint, c_void_p = ctypes.c_uint, ctypes.c_void_p
        self._kernel_get_function = lib.cuKernelGetFunction
        self._kernel_get_function.argtypes = [ctypes.POINTER(c_void_p), c_void_p]
        self._kernel_get_function.restype = ctypes.c_int
        self._error_name = lib.cuGetErrorName
        self._error_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self._error_name.restype = ctypes.c_int
        if mode == "bindings":
            from cuda.bindings import driver

            self.launch = driver.cuLaunchKernel
            self.function_type = driver.CUfunction
            self.success = driver.CUresult.CUDA_SUCCESS
        else:
            self.launch = lib.cuLaunchKernel
            self.launch.argtypes = [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p,
                                    c_void_p, c_void_p]
            self.launch.restype = ctypes.c_int
            self.function_type = int
            self.success = 0

    def function_of(self, core_kernel):
        """The CUfunction, in the current context, of a cuda.core Kernel (a CUkernel of a library),
        in the form this driver's ``launch`` takes."""
        handle = int(core_kernel.handle)
        function = ctypes.c_void_p()
        rc = self._kernel_get_function(ctypes.byref(function), handle)
        if rc != 0:
            raise RuntimeError(f"cuKernelGetFunction failed: {self.error_name(rc)}")
        return self.function_type(int(function.value))

    def error_name(self, rc) -> str:
        rc = int(rc)
        name = ctypes.c_char_p()
        if self._error_name(rc, ctypes.byref(name)) == 0 and name.value:
            return f"{name.value.decode()} ({rc})"
        return f"CUresult {rc}"


_DRIVER_STATE: dict = {}
#: FASTSOFTMAX_LAUNCH picks the launch path: "bindings" (default), "ctypes" or "core" (cuda.core)
LAUNCH_MODES = ("bindings", "ctypes", "core")


def _driver():
    """The driver of the launch path, or None for cuda.core's ``launch()`` (chosen, or when
    libcuda cannot be loaded directly). Loaded once."""
    if "driver" not in _DRIVER_STATE:
        mode = os.environ.get("FASTSOFTMAX_LAUNCH", "bindings")
        if mode not in LAUNCH_MODES:
            raise ValueError(f"FASTSOFTMAX_LAUNCH must be one of {', '.join(LAUNCH_MODES)}, not {mode!r}")
        driver = None
        if mode != "core":
            try:
                driver = _Driver(mode)
            except (OSError, AttributeError, ImportError):
                driver = None
        _DRIVER_STATE["driver"] = driver
    return _DRIVER_STATE["driver"]


class _Launch:
    """One kernel with a fixed block shape and dynamic shared memory, launched on any grid.

    Every kernel parameter is 8 bytes (a pointer or an i64), so the arguments live in one reusable
    array of int64 slots, overwritten per call, and the driver gets a ready array of pointers to
    them. Without a direct driver the same call goes through cuda.core's ``launch()``.
    """

    __slots__ = ("core_kernel", "device", "block_x", "block_y", "smem", "slots", "pointers", "params", "function",
                 "driver", "configs", "nargs", "cu_launch", "success", "bindings")

    def __init__(self, core_kernel, device, nargs: int, block_x: int, block_y: int = 1, smem: int = 0):
        self.core_kernel = core_kernel
        self.device = device  # cuda.core Device, to make its context current again if needed
        self.nargs = nargs
        self.block_x, self.block_y, self.smem = block_x, block_y, smem
        self.slots = (ctypes.c_int64 * nargs)()
        base = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * nargs)(*[base + 8 * i for i in range(nargs)])
        self.params = self.pointers
        self.configs = {}
        self.driver = _driver()
        self.function = None
        if self.driver is not None:
            try:
                self.function = self.driver.function_of(core_kernel)
            except RuntimeError:
                self.driver = None
        self.bindings = self.driver is not None and self.driver.mode == "bindings"
        if self.bindings:  # the compiled wrapper takes the pointer array by address (kept alive in pointers)
            self.params = ctypes.addressof(self.pointers)
        self.cu_launch = self.driver.launch if self.driver is not None else None
        self.success = self.driver.success if self.driver is not None else None

    def __call__(self, grid: int, stream: int, args) -> None:
        self.slots[:] = args
        if self.cu_launch is None:
            return self._launch_core(grid, stream, args)
        rc = self._driver_launch(grid, stream)
        if rc is not self.success and rc != self.success:
            self._failed(rc, grid, stream)

    def _driver_launch(self, grid: int, stream: int):
        """One driver call with the arguments already in the slots; returns its CUresult."""
        if self.bindings:
            return self.cu_launch(self.function, grid, 1, 1, self.block_x, self.block_y, 1, self.smem,
                                  _cu_stream(stream), self.params, 0)[0]
        return self.cu_launch(self.function, grid, 1, 1, self.block_x, self.block_y, 1, self.smem, stream,
                              self.params, None)

    def bound(self, grid: int, rest: tuple):
        """``go(xp, yp, stream)``: this kernel on a fixed grid with every argument after the two
        pointers fixed to ``rest``, in argument slots of its own: the repeated-call path, which
        then writes two slots and makes one driver call."""
        own = _Launch(self.core_kernel, self.device, self.nargs, self.block_x, self.block_y, self.smem)
        if not own.bindings:
            def go(xp, yp, stream):
                own(grid, stream, (xp, yp) + rest)

            return go
        own.slots[2:] = rest
        slots, function, cu_launch, params, success = own.slots, own.function, own.cu_launch, own.params, own.success
        block_x, block_y, smem = own.block_x, own.block_y, own.smem
        streams = _CU_STREAMS

        def go(xp, yp, stream):
            slots[0] = xp
            slots[1] = yp
            handle = streams.get(stream)  # _cu_stream, inlined: this is the hottest path
            if handle is None:
                handle = _cu_stream(stream)
            rc = cu_launch(function, grid, 1, 1, block_x, block_y, 1, smem, handle, params, 0)[0]
            if rc is not success and rc != success:
                own._failed(rc, grid, stream)

        return go

    def _failed(self, rc, grid: int, stream: int) -> None:
        if int(rc) == _CUDA_ERROR_INVALID_CONTEXT:  # a thread where torch has not made the context current
            self.device.set_current()
            rc = self._driver_launch(grid, stream)
            if int(rc) == 0:
                return
        raise RuntimeError(f"cuLaunchKernel of {self.core_kernel!r} (grid {grid}, block "
                           f"{(self.block_x, self.block_y)}, {self.smem} bytes of shared memory) failed: "
                           f"{self.driver.error_name(rc)}")

    def _launch_core(self, grid: int, stream: int, args) -> None:
        import cuda.core as core

        cfg = self.configs.get(grid)
        if cfg is None:
            if len(self.configs) > 4096:
                self.configs.clear()
            block = (self.block_x, self.block_y) if self.block_y > 1 else self.block_x
            cfg = self.configs[grid] = core.LaunchConfig(grid=grid, block=block, shmem_size=self.smem)
        core.launch(_wrap_stream(stream), cfg, self.core_kernel, *[ctypes.c_int64(a) for a in args])


_CORE_STREAMS: dict = {}
#: cuda.bindings CUstream objects by handle: the compiled cuLaunchKernel converts a plain int into
#: a new CUstream on every call, a ready one it only reads
_CU_STREAMS: dict = {}


def _cu_stream(handle: int):
    stream = _CU_STREAMS.get(handle)
    if stream is None:
        from cuda.bindings import driver

        if len(_CU_STREAMS) > 1024:
            _CU_STREAMS.clear()
        stream = _CU_STREAMS[handle] = driver.CUstream(handle)
    return stream



def _wrap_stream(handle: int):
    """A cuda.core Stream for a torch stream handle. Handle 0 is torch's default stream, the
    legacy default stream, which cuda.core names LEGACY_DEFAULT_STREAM."""
    stream = _CORE_STREAMS.get(handle)
    if stream is None:
        import cuda.core as core

        if handle == 0 and hasattr(core, "LEGACY_DEFAULT_STREAM"):
            stream = core.LEGACY_DEFAULT_STREAM
        else:
            stream = core.Stream.from_handle(handle)
        _CORE_STREAMS[handle] = stream
    return stream


class _DeviceInfo:
    __slots__ = ("index", "arch", "sm_count", "smem_per_block", "smem_per_sm", "core_device")

    def __init__(self, index: int):
        from cuda.core import Device

        self.index = index
        major, minor = torch.cuda.get_device_capability(index)
        # CUBIN for the exact architecture: see compiler.py for why not PTX
        self.arch = f"sm_{major}{minor}"
        self.core_device = Device(index)
        self.core_device.set_current()
        props = self.core_device.properties
        self.sm_count = int(props.multiprocessor_count)
        self.smem_per_block = int(props.max_shared_memory_per_block_optin)
        self.smem_per_sm = int(props.max_shared_memory_per_multiprocessor)


class _RowPlan:
    """A row tier's kernel(s) for one (tier, dtype, n, direction, alignment, device)."""

    __slots__ = ("launch", "finish", "rows_per_block", "resident", "sm_count", "instance")

    def __init__(self, launch, rows_per_block, resident, instance, finish=None, sm_count=0):
        self.launch = launch
        self.finish = finish  # split_row: the second kernel
        self.sm_count = sm_count  # split_row: sizes the split
        self.rows_per_block = rows_per_block  # warp tier: rows one block covers; else 0
        self.resident = resident  # block tiers (grid-stride): blocks the device runs at once
        self.instance = instance

    def grid(self, rows: int) -> int:
        if self.rows_per_block:
            return -(-rows // self.rows_per_block)
        return rows if rows < self.resident else self.resident


class _StridedPlan:
    """The strided tier for one full problem: its grid, its split of n and its workspace size."""

    __slots__ = ("launch", "grid", "chunk", "splits", "workspace", "instance")

    def __init__(self, launch, grid, chunk, splits, workspace, instance):
        self.launch = launch
        self.grid = grid
        self.chunk = chunk
        self.splits = splits
        self.workspace = workspace  # float32 elements of partials (0 without a split)
        self.instance = instance


class CudaBackend:
    name = "cuda"
    tiers = TIERS

    def __init__(self):
        self._reasons: dict = {}
        self._devices: dict[int, _DeviceInfo] = {}
        self._plans: dict = {}
        self._kernels: dict = {}
        self._last_device = -1
        self._many_devices = False
        self._lock = threading.Lock()
        self._default_smem = None

    # ---- availability ---------------------------------------------------------------------------
    def unavailable_reason(self, device: torch.device) -> str | None:
        key = (device.type, device.index)
        try:
            return self._reasons[key]
        except KeyError:
            pass
        reason = self._find_unavailable_reason(device)
        self._reasons[key] = reason
        return reason

    @staticmethod
    def _find_unavailable_reason(device: torch.device) -> str | None:
        if device.type != "cuda":
            return f"backend='cuda' runs on CUDA tensors only, not on {device.type!r}"
        reason = compiler.nvrtc_unavailable_reason()
        if reason:
            return reason
        if not torch.cuda.is_available():
            return ("backend='cuda' found no CUDA driver or GPU (torch.cuda.is_available() is False); "
                    "it needs an NVIDIA GPU with its driver installed")
        try:
            from cuda.bindings import driver

            (err,) = driver.cuInit(0)
            if int(err) != 0:
                return f"backend='cuda' could not initialise the CUDA driver ({err})"
        except Exception as exc:  # pragma: no cover - broken driver installs
            return f"backend='cuda' could not load the CUDA driver: {exc}"
        return None

    # ---- tier choice ----------------------------------------------------------------------------
    def _limits(self) -> tuple[int, int, int]:
        """(shared memory per block, per SM, SM count) of the current device, queried once:
        choose_tier has no device argument, and a process rarely mixes GPU models."""
        if self._default_smem is None:
            per_block, per_sm, sms = _DEFAULT_SMEM_PER_BLOCK, _DEFAULT_SMEM_PER_SM, _DEFAULT_SM_COUNT
            try:
                if torch.cuda.is_available():
                    props = torch.cuda.get_device_properties(torch.cuda.current_device())
                    per_block = int(getattr(props, "shared_memory_per_block_optin", per_block))
                    per_sm = int(getattr(props, "shared_memory_per_multiprocessor", per_sm))
                    sms = int(props.multi_processor_count)
            except Exception:
                pass
            self._default_smem = (per_block, per_sm, sms)
        return self._default_smem

    def choose_tier(self, outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool) -> str:
        if inner > 1:
            return "strided"
        itemsize = CXX_TYPES[dtype][2]
        if n <= WARP_TIER_MAX_COLS and (itemsize == 4 or n < BLOCK_REGS_MIN_COLS_16BIT):
            return "warp"
        per_block, per_sm, sms = self._limits()
        if n >= SPLIT_ROW_MIN_COLS and outer < sms:
            return "split_row"
        if n <= block_regs_max_cols(dtype, backward):
            return "block_regs"
        need = row_cache_bytes(n, itemsize, backward) + _STATIC_SMEM_RESERVE
        # Caching pays while two blocks still share an SM: with one, every barrier idles the SM.
        if need <= min(per_block, per_sm // 2):
            return "block_smem"
        return "block_uncached"

    def supports(self, tier: str, outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool) -> bool:
        if dtype not in CXX_TYPES or tier not in TIERS:
            return False
        if tier == "strided":
            return inner > 1
        if inner != 1:
            return False
        if tier == "warp":
            return n <= WARP_TIER_MAX_COLS
        if tier == "block_regs":
            return n <= block_regs_max_cols(dtype, backward)
        if tier == "block_smem":
            per_block, _, _ = self._limits()
            return row_cache_bytes(n, CXX_TYPES[dtype][2], backward) + _STATIC_SMEM_RESERVE <= per_block
        return True

    # ---- launching ------------------------------------------------------------------------------
    def _enter(self, device_index: int) -> None:
        """Make the device's primary context current, as torch does, when the device changes."""
        if device_index != self._last_device or self._many_devices:
            info = self._device(device_index)
            if self._last_device not in (-1, device_index):
                self._many_devices = True
            info.core_device.set_current()
            self._last_device = device_index

    def forward(self, x: torch.Tensor, y: torch.Tensor, log: bool, tier: str) -> None:
        outer, n, inner = x.shape
        dev = x.get_device()
        if dev != self._last_device or self._many_devices:
            self._enter(dev)
        if inner == 1:
            self._forward_rows(tier, x.dtype, dev, x.data_ptr(), y.data_ptr(), outer, n, x.stride(0), y.stride(0),
                               log)
            return
        self._forward_strided(tier, x.dtype, dev, x.data_ptr(), y.data_ptr(), outer, n, inner, x.stride(), y.stride(),
                              log)

    def prepare_forward(self, tier: str, shape, x_strides, y_strides, dtype: torch.dtype, device_index: int):
        """``run(x, y, log)`` for full tensors whose canonical views have exactly this shape and
        these strides: the host path of a repeated call, with no views built (see functional.py).
        The canonical view of a tensor starts at the tensor's own first element, so the tensor's
        data pointer is the view's."""
        outer, n, inner = shape
        dev = device_index
        if inner != 1:
            def run(x, y, log):
                if dev != self._last_device or self._many_devices:
                    self._enter(dev)
                self._forward_strided(tier, dtype, dev, x.data_ptr(), y.data_ptr(), outer, n, inner, x_strides,
                                      y_strides, log)
            return run

        xs, ys = x_strides[0], y_strides[0]
        pitch_align = (xs | ys) * CXX_TYPES[dtype][2] if outer > 1 else 0
        ready: dict = {}  # (log, alignment) -> go(xp, yp, stream) of a one-kernel plan

        def run(x, y, log):
            if dev != self._last_device or self._many_devices:
                self._enter(dev)
            xp = x.data_ptr()
            yp = y.data_ptr()
            go = ready.get((log, (xp | yp | pitch_align) & 15))
            if go is None:
                align = (xp | yp | pitch_align) & 15
                plan = self._row_plan(tier, dtype, n, log, False, align, dev)
                if plan.finish is not None:  # split_row: two kernels and a workspace
                    self._forward_rows(tier, dtype, dev, xp, yp, outer, n, xs, ys, log)
                    return
                go = ready[(log, align)] = plan.launch.bound(plan.grid(outer), (outer, n, xs, ys))
            go(xp, yp, _raw_stream(dev))

        return run

    def _row_plan(self, tier, dtype, n, log, backward, align, dev) -> _RowPlan:
        key = (tier, dtype, n, log, backward, align, dev)
        plan = self._plans.get(key)
        return plan if plan is not None else self._build_row_plan(key)

    def _forward_rows(self, tier, dtype, dev, xp, yp, outer, n, xs, ys, log) -> None:
        align = (xp | yp | ((xs | ys) * CXX_TYPES[dtype][2] if outer > 1 else 0)) & 15
        plan = self._row_plan(tier, dtype, n, log, False, align, dev)
        if plan.finish is None:
            plan.launch(plan.grid(outer), _raw_stream(dev), (xp, yp, outer, n, xs, ys))
            return
        chunk, splits = self._split(plan, outer, n)
        partials = torch.empty(2 * outer * splits, dtype=torch.float32, device=self._torch_device(dev)).data_ptr()
        stream = _raw_stream(dev)
        plan.launch(outer * splits, stream, (xp, partials, n, xs, chunk, splits))
        plan.finish(outer * splits, stream, (xp, yp, partials, n, xs, ys, chunk, splits))

    def _forward_strided(self, tier, dtype, dev, xp, yp, outer, n, inner, x_strides, y_strides, log) -> None:
        xs0, xs1 = x_strides[0], x_strides[1]
        ys0, ys1 = y_strides[0], y_strides[1]
        isz = CXX_TYPES[dtype][2]
        align = (xp | yp | ((xs0 | ys0) * isz if outer > 1 else 0) | (xs1 | ys1) * isz) & 15
        key = (tier, dtype, outer, n, inner, log, False, align, dev)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build_strided_plan(key)
        stream = _raw_stream(dev)
        if plan.splits == 1:
            plan.launch(plan.grid, stream, (xp, yp, 0, n, inner, xs0, xs1, ys0, ys1, n, 1, 0))
            return
        partials = torch.empty(plan.workspace, dtype=torch.float32, device=self._torch_device(dev)).data_ptr()
        chunk, splits = plan.chunk, plan.splits
        plan.launch(plan.grid, stream, (xp, yp, partials, n, inner, xs0, xs1, ys0, ys1, chunk, splits, 1))
        plan.launch(plan.grid, stream, (xp, yp, partials, n, inner, xs0, xs1, ys0, ys1, chunk, splits, 2))

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def _torch_device(index: int) -> torch.device:
        return torch.device("cuda", index)

    def backward(self, y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, log: bool, tier: str) -> None:
        outer, n, inner = y.shape
        dev = y.get_device()
        if dev != self._last_device or self._many_devices:
            self._enter(dev)
        yp, dyp, dxp = y.data_ptr(), dy.data_ptr(), dx.data_ptr()
        if inner == 1:
            ys, dys, dxs = y.stride(0), dy.stride(0), dx.stride(0)
            align = (yp | dyp | dxp | ((ys | dys | dxs) * y.element_size() if outer > 1 else 0)) & 15
            key = (tier, y.dtype, n, log, True, align, dev)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_row_plan(key)
            if plan.finish is None:
                plan.launch(plan.grid(outer), _raw_stream(dev), (yp, dyp, dxp, outer, n, ys, dys, dxs))
                return
            chunk, splits = self._split(plan, outer, n)
            partials = torch.empty(outer * splits, dtype=torch.float32, device=y.device).data_ptr()
            stream = _raw_stream(dev)
            plan.launch(outer * splits, stream, (yp, dyp, partials, n, ys, dys, chunk, splits))
            plan.finish(outer * splits, stream, (yp, dyp, dxp, partials, n, ys, dys, dxs, chunk, splits))
            return
        ys0, ys1, dys0, dys1, dxs0, dxs1 = y.stride(0), y.stride(1), dy.stride(0), dy.stride(1), dx.stride(0), dx.stride(1)
        isz = y.element_size()
        align = (yp | dyp | dxp | ((ys0 | dys0 | dxs0) * isz if outer > 1 else 0) | (ys1 | dys1 | dxs1) * isz) & 15
        key = (tier, y.dtype, outer, n, inner, log, True, align, dev)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build_strided_plan(key)
        stream = _raw_stream(dev)
        strides = (ys0, ys1, dys0, dys1, dxs0, dxs1)
        if plan.splits == 1:
            plan.launch(plan.grid, stream, (yp, dyp, dxp, 0, n, inner, *strides, n, 1, 0))
            return
        partials = torch.empty(plan.workspace, dtype=torch.float32, device=y.device).data_ptr()
        chunk, splits = plan.chunk, plan.splits
        plan.launch(plan.grid, stream, (yp, dyp, dxp, partials, n, inner, *strides, chunk, splits, 1))
        plan.launch(plan.grid, stream, (yp, dyp, dxp, partials, n, inner, *strides, chunk, splits, 2))

    # ---- building plans (first call for a shape only) --------------------------------------------
    def _device(self, index: int) -> _DeviceInfo:
        info = self._devices.get(index)
        if info is None:
            reason = self.unavailable_reason(torch.device("cuda", index))
            if reason:
                raise RuntimeError(reason)
            info = _DeviceInfo(index)
            self._devices[index] = info
        return info

    def kernel(self, instance: Instance, device_index: int):
        """The loaded cuda.core kernel for ``instance`` on a device, compiling it on first use."""
        info = self._device(device_index)
        key = (instance, info.arch, device_index)
        kern = self._kernels.get(key)
        if kern is None:
            from cuda.core import ObjectCode

            cubin = compiler.compile_cubin(source_for([instance]), info.arch, instance.name)
            kern = ObjectCode.from_cubin(cubin, name=instance.name).get_kernel(instance.name)
            self._kernels[key] = kern
        return kern

    def _build_row_plan(self, key) -> _RowPlan:
        tier, dtype, n, log, backward, align, dev = key
        if tier not in ROW_TIERS:
            raise ValueError(f"tier {tier!r} of backend 'cuda' handles rows only with inner > 1; "
                             f"rows (inner == 1) go to one of {ROW_TIERS}")
        itemsize = CXX_TYPES[dtype][2]
        # the widest pack that every pointer and row pitch is aligned to
        packs = {"warp": WARP_PACK_SIZES, "block_regs": BLOCK_REGS_PACK_SIZES}.get(tier, PACK_SIZES)[dtype]
        pack = next(p for p in packs if align % (p * itemsize) == 0)
        info = self._device(dev)
        device = info.core_device
        nargs = 8 if backward else 6
        with self._lock:
            if tier == "warp":
                if n > WARP_TIER_MAX_COLS:
                    raise ValueError(f"tier 'warp' holds rows of at most {WARP_TIER_MAX_COLS} columns, not {n}")
                cols, group, rows = warp_shape(n, pack)
                inst = Instance("warp", dtype, backward, log, pack, cols, group, rows)
                launch = _Launch(self.kernel(inst, dev), device, nargs, WARP_TIER_BLOCK)
                plan = _RowPlan(launch, WARP_TIER_BLOCK // group * rows, 0, inst)
            elif tier == "block_regs":
                target = BLOCK_REGS_ELEMS_TARGET or block_regs_target(n, itemsize, backward)
                elems, threads = block_regs_shape(n, dtype, pack, backward, target)
                inst = Instance("block_regs", dtype, backward, log, pack, cols=elems)
                kern = self.kernel(inst, dev)
                smem = 0
                if block_regs_storage(dtype, backward, elems) == "staged":
                    smem = block_regs_staged_bytes(dtype, elems, threads)
                    if smem > 48 * 1024:
                        self._allow_dynamic_smem(kern, info, smem)
                plan = _RowPlan(_Launch(kern, device, nargs, threads, 1, smem), 1, 0, inst)
            elif tier == "split_row":
                inst = Instance("split_row", dtype, backward, log, pack, stage="finish")
                first = Instance("split_row", dtype, backward, log and backward, pack, stage="partials")
                partials = _Launch(self.kernel(first, dev), device, 8 if backward else 6, SPLIT_ROW_BLOCK)
                finish = _Launch(self.kernel(inst, dev), device, 10 if backward else 8, SPLIT_ROW_BLOCK)
                plan = _RowPlan(partials, 0, 0, inst, finish, info.sm_count)
            else:
                inst = Instance(tier, dtype, backward, log, pack)
                kern = self.kernel(inst, dev)
                smem = row_cache_bytes(n, itemsize, backward) if tier == "block_smem" else 0
                if smem > 48 * 1024:
                    self._allow_dynamic_smem(kern, info, smem)
                block, per_sm = self._pick_block(kern, info, n, pack, smem)
                if per_sm == 0:
                    raise ValueError(f"tier {tier!r}: a row of {n} {dtype} elements does not fit in shared "
                                     f"memory ({smem} bytes needed, {info.smem_per_block} per block)")
                plan = _RowPlan(_Launch(kern, device, nargs, block, 1, smem), 0, per_sm * info.sm_count, inst)
            self._plans[key] = plan
        return plan

    def _build_strided_plan(self, key) -> _StridedPlan:
        tier, dtype, outer, n, inner, log, backward, align, dev = key
        if tier != "strided":
            raise ValueError(f"tier {tier!r} of backend 'cuda' needs inner == 1; use tier 'strided' for inner > 1")
        info = self._device(dev)
        itemsize = CXX_TYPES[dtype][2]
        # the widest pack every pointer and stride is aligned to, and no wider than the columns
        pack = next(p for p in STRIDED_PACK_SIZES[dtype] if align % (p * itemsize) == 0 and (p <= inner or p == 1))
        with self._lock:
            inst = Instance("strided", dtype, backward, log, pack)
            kern = self.kernel(inst, dev)
            width = min(32, next_pow2(-(-inner // pack)), max(1, STRIDED_ROW_BYTES // (pack * itemsize)))
            # slices fill the block up to STRIDED_MAX_THREADS, no more than n needs (kUnroll rows each)
            slices = min(STRIDED_MAX_THREADS // width, max(max(1, 32 // width), next_pow2(-(-n // 4))))
            tiles = outer * -(-inner // (width * pack))
            resident = max(1, self._occupancy(kern, info, width * slices, 0)) * info.sm_count
            splits = 1
            if tiles < STRIDED_WAVES * resident:
                most = max(1, n // (slices * STRIDED_MIN_ROWS_PER_THREAD))
                splits = min(most, -(-STRIDED_WAVES * resident // tiles))
            chunk = -(-n // splits)
            splits = -(-n // chunk)
            workspace = 0 if splits == 1 else tiles * splits * width * pack * (1 if backward else 2)
            launch = _Launch(kern, info.core_device, 15 if backward else 12, width, slices, 0)
            plan = _StridedPlan(launch, tiles * splits, chunk, splits, workspace, inst)
            self._plans[key] = plan
        return plan

    @staticmethod
    def _split(plan: _RowPlan, outer: int, n: int) -> tuple[int, int]:
        """(chunk, splits): enough chunks for SPLIT_ROW_BLOCKS_PER_SM blocks per SM over all rows,
        none shorter than SPLIT_ROW_MIN_CHUNK elements, each starting 16-element aligned."""
        want = -(-SPLIT_ROW_BLOCKS_PER_SM * plan.sm_count // outer)
        splits = max(1, min(want, n // SPLIT_ROW_MIN_CHUNK))
        chunk = -(-(-(-n // splits)) // SPLIT_ROW_ALIGN) * SPLIT_ROW_ALIGN
        return chunk, -(-n // chunk)

    @staticmethod
    def _occupancy(kern, info: _DeviceInfo, block: int, smem: int) -> int:
        """Blocks of ``block`` threads and ``smem`` bytes of dynamic shared memory resident per SM."""
        try:
            return int(kern.occupancy.max_active_blocks_per_multiprocessor(block, smem))
        except Exception:  # no occupancy API: bound by threads and shared memory alone
            by_threads = 2048 // block
            by_smem = info.smem_per_sm // (smem + _STATIC_SMEM_RESERVE)
            return max(0, min(by_threads, by_smem, 32))

    def _pick_block(self, kern, info: _DeviceInfo, n: int, pack: int, smem: int) -> tuple[int, int]:
        """(block size, blocks per SM) for a block-per-row tier: the smallest block that gives each
        thread at most BLOCK_PACKS_PER_THREAD packs of the row (more, smaller blocks per SM overlap
        one row's reduction with other rows' loads), grown while it would not fit."""
        packs = -(-n // pack)
        want = next_pow2(-(-packs // BLOCK_PACKS_PER_THREAD))
        candidates = [b for b in BLOCK_SIZES if b >= want] or [BLOCK_SIZES[-1]]
        for block in candidates + [b for b in reversed(BLOCK_SIZES) if b < candidates[0]]:
            per_sm = self._occupancy(kern, info, block, smem)
            if per_sm:
                return block, per_sm
        return BLOCK_SIZES[0], 0

    @staticmethod
    def _allow_dynamic_smem(kern, info: _DeviceInfo, smem: int) -> None:
        """Kernels may use more than 48 KiB of dynamic shared memory only after opting in."""
        from cuda.bindings import driver

        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        limit = info.smem_per_block - _STATIC_SMEM_RESERVE
        (err,) = driver.cuKernelSetAttribute(attr, limit, kern.handle, driver.CUdevice(info.index))
        if int(err) != 0:
            raise RuntimeError(f"could not allow {smem} bytes of dynamic shared memory: {err}")


BACKEND = CudaBackend()
