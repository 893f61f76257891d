"""The "cuda" backend: CUDA C++ kernels compiled at run time with NVRTC, launched with cuda.core.

Tiers, chosen from the shape alone (``choose_tier``):

* ``warp``            rows of n <= 1024: a warp (or a narrower lane group) per row, row in registers;
* ``block_smem``      longer rows whose copy fits in shared memory with two blocks per SM: a block
                      per row, the row cached in shared memory between the two passes;
* ``block_uncached``  longer rows still: a block per row, the second pass re-reads the row (L2);
* ``split_row``       few long rows (fewer than the SMs): each row split over many blocks, two
                      kernels (partial (max, sum) per chunk, then merge and write);
* ``strided``         inner > 1: columns along the contiguous axis side by side, reduced over n.

The launch path is kept short on purpose: a launch through cuda.core costs a few microseconds of
host time, and everything between ``forward()`` and it is a handful of attribute reads, one tuple
lookup into a dict of ready launch plans and one into a dict of wrapped streams. Compiling, module
loading, occupancy queries and device queries all happen once, when a plan is first built.
"""

from __future__ import annotations

import threading

import torch

from . import compiler
from .instances import (
    BLOCK_SIZES,
    CXX_TYPES,
    PACK_SIZES,
    SPLIT_ROW_ALIGN,
    SPLIT_ROW_BLOCK,
    STRIDED_MAX_THREADS,
    WARP_TIER_BLOCK,
    WARP_PACK_SIZES,
    WARP_TIER_MAX_COLS,
    Instance,
    next_pow2,
    source_for,
    warp_shape,
)

TIERS = ("warp", "block_smem", "block_uncached", "split_row", "strided")
ROW_TIERS = ("warp", "block_smem", "block_uncached", "split_row")
#: split_row serves rows at least this long when there are fewer rows than SMs
SPLIT_ROW_MIN_COLS = 16384
#: each split_row block takes at least this many elements (8 per thread at 512 threads)
SPLIT_ROW_MIN_CHUNK = 4096
#: split_row aims for this many blocks per SM in all
SPLIT_ROW_BLOCKS_PER_SM = 4

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


def row_cache_bytes(n: int, itemsize: int, backward: bool) -> int:
    """Shared memory block_smem needs for a row: n elements (y and dy, each padded to 16 of
    them, for backward)."""
    return 2 * (-(-n // 16) * 16) * itemsize if backward else -(-n * itemsize // 16) * 16


def _wrap_stream(handle: int):
    """A cuda.core Stream for a torch stream handle. Handle 0 is torch's default stream, the
    legacy default stream, which cuda.core names LEGACY_DEFAULT_STREAM."""
    import cuda.core as core

    if handle == 0 and hasattr(core, "LEGACY_DEFAULT_STREAM"):
        return core.LEGACY_DEFAULT_STREAM
    return core.Stream.from_handle(handle)


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


class _Plan:
    """A kernel plus everything needed to launch it for any number of rows."""

    __slots__ = ("kernel", "block", "smem", "rows_per_block", "resident", "configs", "instance", "finish",
                 "sm_count")

    def __init__(self, kernel, block, smem, rows_per_block, resident, instance, finish=None, sm_count=0):
        self.kernel = kernel
        self.finish = finish  # split_row: the second kernel
        self.sm_count = sm_count  # split_row: sizes the split
        self.block = block
        self.smem = smem
        self.rows_per_block = rows_per_block  # warp tier: rows one block covers; else 0
        self.resident = resident  # grid-stride tiers: blocks the device runs at once
        self.configs = {}
        self.instance = instance

    def config(self, work: int):
        """LaunchConfig for ``work`` rows (row tiers), column tiles (strided tier) or chunks
        (split_row: one block each)."""
        if self.rows_per_block:
            grid = -(-work // self.rows_per_block)
        elif self.resident == 0:
            grid = work
        else:
            grid = work if work < self.resident else self.resident
        cfg = self.configs.get(grid)
        if cfg is None:
            from cuda.core import LaunchConfig

            if len(self.configs) > 4096:
                self.configs.clear()
            cfg = LaunchConfig(grid=grid, block=self.block, shmem_size=self.smem)
            self.configs[grid] = cfg
        return cfg


class CudaBackend:
    name = "cuda"
    tiers = TIERS

    def __init__(self):
        self._reasons: dict = {}
        self._devices: dict[int, _DeviceInfo] = {}
        self._plans: dict = {}
        self._streams: dict = {}
        self._kernels: dict = {}
        self._launch = None
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
        if n <= WARP_TIER_MAX_COLS:
            return "warp"
        per_block, per_sm, sms = self._limits()
        if n >= SPLIT_ROW_MIN_COLS and outer < sms:
            return "split_row"
        need = row_cache_bytes(n, CXX_TYPES[dtype][2], backward) + _STATIC_SMEM_RESERVE
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
        if tier == "block_smem":
            per_block, _, _ = self._limits()
            return row_cache_bytes(n, CXX_TYPES[dtype][2], backward) + _STATIC_SMEM_RESERVE <= per_block
        return True

    # ---- launching ------------------------------------------------------------------------------
    def _stream(self, device_index: int):
        handle = _raw_stream(device_index)
        stream = self._streams.get(handle)
        if stream is None:
            stream = self._streams[handle] = _wrap_stream(handle)
        return stream

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
            xp, yp, xs, ys = x.data_ptr(), y.data_ptr(), x.stride(0), y.stride(0)
            align = (xp | yp | ((xs | ys) * x.element_size() if outer > 1 else 0)) & 15
            key = (tier, x.dtype, n, log, False, align, dev)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_row_plan(key)
            if plan.finish is not None:  # split_row
                stream = self._stream(dev)
                chunk, splits = self._split(plan, outer, n)
                partials = torch.empty(2 * outer * splits, dtype=torch.float32, device=x.device)
                cfg = plan.config(outer * splits)
                self._launch(stream, cfg, plan.kernel, xp, partials.data_ptr(), n, xs, chunk, splits)
                self._launch(stream, cfg, plan.finish, xp, yp, partials.data_ptr(), n, xs, ys, chunk, splits)
                return
            self._launch(self._stream(dev), plan.config(outer), plan.kernel, xp, yp, outer, n, xs, ys)
        else:
            key = (tier, x.dtype, n, log, False, inner, dev)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_strided_plan(key)
            self._launch(self._stream(dev), plan.config(outer * (-(-inner // plan.block[0]))), plan.kernel,
                         x.data_ptr(), y.data_ptr(), outer, n, inner, x.stride(0), x.stride(1), y.stride(0), y.stride(1))

    def backward(self, y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, log: bool, tier: str) -> None:
        outer, n, inner = y.shape
        dev = y.get_device()
        if dev != self._last_device or self._many_devices:
            self._enter(dev)
        if inner == 1:
            yp, dyp, dxp = y.data_ptr(), dy.data_ptr(), dx.data_ptr()
            ys, dys, dxs = y.stride(0), dy.stride(0), dx.stride(0)
            align = (yp | dyp | dxp | ((ys | dys | dxs) * y.element_size() if outer > 1 else 0)) & 15
            key = (tier, y.dtype, n, log, True, align, dev)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_row_plan(key)
            if plan.finish is not None:  # split_row
                stream = self._stream(dev)
                chunk, splits = self._split(plan, outer, n)
                partials = torch.empty(outer * splits, dtype=torch.float32, device=y.device)
                cfg = plan.config(outer * splits)
                self._launch(stream, cfg, plan.kernel, yp, dyp, partials.data_ptr(), n, ys, dys, chunk, splits)
                self._launch(stream, cfg, plan.finish, yp, dyp, dxp, partials.data_ptr(), n, ys, dys, dxs, chunk,
                             splits)
                return
            self._launch(self._stream(dev), plan.config(outer), plan.kernel, yp, dyp, dxp, outer, n, ys, dys, dxs)
        else:
            key = (tier, y.dtype, n, log, True, inner, dev)
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build_strided_plan(key)
            self._launch(self._stream(dev), plan.config(outer * (-(-inner // plan.block[0]))), plan.kernel,
                         y.data_ptr(), dy.data_ptr(), dx.data_ptr(), outer, n, inner, y.stride(0), y.stride(1),
                         dy.stride(0), dy.stride(1), dx.stride(0), dx.stride(1))

    # ---- building plans (first call for a shape only) --------------------------------------------
    def _device(self, index: int) -> _DeviceInfo:
        info = self._devices.get(index)
        if info is None:
            reason = self.unavailable_reason(torch.device("cuda", index))
            if reason:
                raise RuntimeError(reason)
            info = _DeviceInfo(index)
            self._devices[index] = info
            if self._launch is None:
                from cuda.core import launch

                self._launch = launch
        return info

    def kernel(self, instance: Instance, device_index: int):
        """The loaded kernel for ``instance`` on a device, compiling it on first use."""
        info = self._device(device_index)
        key = (instance, info.arch, device_index)
        kern = self._kernels.get(key)
        if kern is None:
            from cuda.core import ObjectCode

            cubin = compiler.compile_cubin(source_for([instance]), info.arch, instance.name)
            kern = ObjectCode.from_cubin(cubin, name=instance.name).get_kernel(instance.name)
            self._kernels[key] = kern
        return kern

    def _build_row_plan(self, key) -> _Plan:
        tier, dtype, n, log, backward, align, dev = key
        if tier not in ROW_TIERS:
            raise ValueError(f"tier {tier!r} of backend 'cuda' handles rows only with inner > 1; "
                             f"rows (inner == 1) go to one of {ROW_TIERS}")
        itemsize = CXX_TYPES[dtype][2]
        # the widest pack that every pointer and row pitch is aligned to
        packs = WARP_PACK_SIZES[dtype] if tier == "warp" else PACK_SIZES[dtype]
        pack = next(p for p in packs if align % (p * itemsize) == 0)
        info = self._device(dev)
        with self._lock:
            if tier == "warp":
                if n > WARP_TIER_MAX_COLS:
                    raise ValueError(f"tier 'warp' holds rows of at most {WARP_TIER_MAX_COLS} columns, not {n}")
                cols, group, rows = warp_shape(n, pack)
                inst = Instance("warp", dtype, backward, log, pack, cols, group, rows)
                kern = self.kernel(inst, dev)
                plan = _Plan(kern, WARP_TIER_BLOCK, 0, WARP_TIER_BLOCK // group * rows, 0, inst)
            elif tier == "split_row":
                inst = Instance("split_row", dtype, backward, log, pack, stage="finish")
                first = Instance("split_row", dtype, backward, log and backward, pack, stage="partials")
                plan = _Plan(self.kernel(first, dev), SPLIT_ROW_BLOCK, 0, 0, 0, inst, self.kernel(inst, dev),
                             info.sm_count)
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
                plan = _Plan(kern, block, smem, 0, per_sm * info.sm_count, inst)
            self._plans[key] = plan
        return plan

    def _build_strided_plan(self, key) -> _Plan:
        tier, dtype, n, log, backward, inner, dev = key
        if tier != "strided":
            raise ValueError(f"tier {tier!r} of backend 'cuda' needs inner == 1; use tier 'strided' for inner > 1")
        info = self._device(dev)
        with self._lock:
            inst = Instance("strided", dtype, backward, log)
            kern = self.kernel(inst, dev)
            width = min(32, next_pow2(inner))
            # about 8 elements per thread along n, and at least two warps per block
            slices = max(next_pow2(-(-n // 8)), 64 // width)
            slices = min(slices, STRIDED_MAX_THREADS // width)
            per_sm = self._occupancy(kern, info, width * slices, 0)
            plan = _Plan(kern, (width, slices), 0, 0, per_sm * info.sm_count, inst)
            self._plans[key] = plan
        return plan

    @staticmethod
    def _split(plan: _Plan, outer: int, n: int) -> tuple[int, int]:
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
        """Block size for a block-per-row tier: the one keeping the most warps resident per SM,
        the larger on a tie (more threads share the row's work); never more threads than the row
        has packs, rounded up to whole warps."""
        packs = -(-n // pack)
        cap = max(BLOCK_SIZES[0], -(-packs // 32) * 32)
        best = (0, 0, 0)
        for block in BLOCK_SIZES:
            if block > cap:
                break
            per_sm = self._occupancy(kern, info, block, smem)
            score = (per_sm * block, block, per_sm)
            if per_sm and score >= best:
                best = score
        return best[1] or BLOCK_SIZES[0], best[2]

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
