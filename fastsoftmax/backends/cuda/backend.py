"""The "cuda" backend: CUDA C++ kernels compiled at run time with NVRTC, launched with cuLaunchKernel.

The work is split by job: ``tiers.py`` picks a tier from the shape and the device's limits,
``plans.py`` turns a problem into ready launches, ``launch.py`` talks to the driver (contexts,
streams, argument packing). This module holds the per-call paths and the caches, keyed by device:

* ``forward`` / ``backward`` take canonical 3D views (the contract of ``backends/base.py``);
* ``prepare`` returns the repeated-call path of one geometry for full tensors (no views built per
  call): the functional layer keeps it per geometry, for both directions.

Everything between a repeated call and the driver is a handful of tensor attribute reads, one
dictionary lookup into the ready launches of the geometry, and the stream handle from torch.
Compiling, module loading, occupancy and device queries happen once per plan.
"""

from __future__ import annotations

import threading

import torch

from . import compiler, launch, plans, strided, tiers
from .instances import CXX_TYPES, Instance, source_for, warp_long_row
from .launch import device_facts, enter, leave, raw_stream
from .plans import PHASES_DIFFER
from .tiers import TIERS

_data_ptr = torch.Tensor.data_ptr
_current_tuning = tiers.current_tuning


class CudaBackend:
    name = "cuda"
    tiers = TIERS

    def __init__(self):
        self._reasons: dict = {}
        self._plans: dict = {}
        self._kernels: dict = {}
        self._lock = threading.RLock()

    # ---- availability ---------------------------------------------------------------------------
    def unavailable_reason(self, device: torch.device) -> str | None:
        key = (device.type, device.index)
        try:
            return self._reasons[key]
        except KeyError:
            pass
        reason = self._reasons[key] = self._find_unavailable_reason(device)
        return reason

    @staticmethod
    def _find_unavailable_reason(device: torch.device) -> str | None:
        if device.type != "cuda":
            return f"backend='cuda' runs on CUDA tensors only, not on {device.type!r}"
        reason = compiler.nvrtc_unavailable_reason()
        if reason:
            return reason
        if not torch.cuda.is_available():
            return (
                "backend='cuda' found no CUDA driver or GPU (torch.cuda.is_available() is False); "
                "it needs an NVIDIA GPU with its driver installed"
            )
        try:
            from cuda.bindings import driver

            (err,) = driver.cuInit(0)
            if int(err) != 0:
                return f"backend='cuda' could not initialise the CUDA driver ({err})"
        except Exception as exc:  # pragma: no cover - broken driver installs
            return f"backend='cuda' could not load the CUDA driver: {exc}"
        index = torch.cuda.current_device() if device.index is None else device.index
        return compiler.arch_unsupported_reason(*torch.cuda.get_device_capability(index))

    # ---- tier choice ----------------------------------------------------------------------------
    @staticmethod
    def limits(device_index: int | None) -> tiers.Limits:
        """The limits of the device tier choice is made for (None: the current one): the GPU's
        own, or an H100's where there is no GPU to ask (CPU tests of the choice)."""
        if not torch.cuda.is_available() or device_index is not None and device_index < 0:
            return tiers.H100_LIMITS
        if device_index is None:
            device_index = torch.cuda.current_device()
        return tiers.Limits.of(device_facts(device_index))

    def choose_tier(
        self,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
        aligned: bool = True,
        window: bool = True,
        stepped: bool = False,
        log: bool = False,
    ) -> str:
        limits = self.limits(device_index)
        return tiers.choose_tier(outer, n, inner, dtype, backward, limits, aligned, window, stepped, log)

    def supports(
        self,
        tier: str,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
    ) -> bool:
        return tiers.supports(tier, outer, n, inner, dtype, backward, self.limits(device_index))

    def realigns(self, tier: str, n: int, dtype: torch.dtype, backward: bool) -> bool:
        # the warp tier's long rows were measured on 16-byte boundaries only (their windows are for a forced
        # tier): calls off them choose afresh
        return not (tier == "warp" and warp_long_row(n, CXX_TYPES[dtype][2], backward))

    def streams_columns(
        self, outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, device_index: int | None = None
    ) -> bool:
        """Whether this backend holds dense runs of n x inner interleaved columns on 16-byte
        boundaries across a cluster's registers and shared memory (cluster_stream's column kernels:
        strided.takes_column_stream), so that a dispatcher can keep such problems here."""
        facts = device_facts(torch.cuda.current_device() if device_index is None else device_index)
        dense = ((n * inner, inner, 1),)
        return strided.streams_columns(outer, n, inner, dtype, backward, dense, facts, tiers.DEFAULT_TUNING)

    def sweeps_outer_flat(
        self, outer: int, n: int, inner: int, dtype: torch.dtype, device_index: int | None = None
    ) -> bool:
        """Whether this backend takes a dense log-softmax backward over long narrow blocks of several
        outer indices (strided.flat_outer_log_backward) to its strided tier, whose finish sweeps them
        flat, so that a dispatcher can keep such problems here rather than on Triton's relay."""
        return strided.flat_outer_log_backward(outer, n, inner, CXX_TYPES[dtype][2]) and (
            self.choose_tier(outer, n, inner, dtype, True, device_index, log=True) == "strided"
        )

    # ---- per call -------------------------------------------------------------------------------
    def forward(self, x: torch.Tensor, y: torch.Tensor, log: bool, tier: str) -> None:
        self._run(tier, (x, y), log, False)

    def backward(self, y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, log: bool, tier: str) -> None:
        self._run(tier, (y, dy, dx), log, True)

    def _run(self, tier: str, views: tuple, log: bool, backward: bool) -> None:
        """One launch from canonical views: the first call of a geometry, and tests."""
        first = views[0]
        outer, n, inner = first.shape
        dev = first.get_device()
        strides = _view_strides(views, inner)
        pointers = tuple(map(_data_ptr, views))
        align = plans.alignment(pointers, strides, first.element_size(), outer)
        key = (tier, first.dtype, outer, n, inner, strides, log, backward, align, dev, _current_tuning())
        pushed = enter(dev)
        try:
            self.plan(key)(pointers, raw_stream(dev))
        finally:
            if pushed:
                leave()

    def prepare(self, tier: str, shape, strides, dtype: torch.dtype, device_index: int, backward: bool):
        """``run(x, y, log)`` (forward) or ``run(y, dy, dx, log)`` (backward) for full tensors whose
        canonical views have exactly this shape and these strides (one stride tuple per tensor, in
        the order of the arguments): the host path of a repeated call (see functional.py). The
        canonical view of a tensor starts at the tensor's own first element, so the tensor's data
        pointer is the view's.

        The common case (torch's current device, on a thread that launched before, default tuning,
        alignment seen before) is a few attribute reads and one dictionary lookup before the
        driver call; anything else takes ``general``, which also fills the common case's table."""
        outer, n, inner = shape
        dev = device_index
        strides = tuple(tuple(s) if inner > 1 else (s[0],) for s in strides)
        stride_bits = plans.alignment((), strides, CXX_TYPES[dtype][2], outer)
        ready: dict = {}  # (log, alignment, tuning) -> the plan
        common: dict = {}  # (log, alignment) -> the plan, default tuning
        plan_of = self.plan
        thread = launch._thread
        torch_device = launch._torch_device
        default_tuning = tiers.DEFAULT_TUNING

        def general(tensors, log):
            pushed = enter(dev)
            try:
                pointers = tuple(map(_data_ptr, tensors))
                bits = stride_bits
                for pointer in pointers:
                    bits |= pointer
                bits = (bits & 15) | plans.pointer_phases_differ(pointers)
                tuning = _current_tuning()
                local = (log, bits, tuning)
                go = ready.get(local)
                if go is None:
                    key = (tier, dtype, outer, n, inner, strides, log, backward, bits, dev, tuning)
                    go = ready[local] = plan_of(key)
                    if tuning is default_tuning:
                        common[(log, bits)] = go
                go(pointers, raw_stream(dev))
            finally:
                if pushed:
                    leave()

        if backward:

            def run(y, dy, dx, log):
                if torch_device() == dev and getattr(thread, "context_ready", False):
                    if _current_tuning() is default_tuning:
                        p0, p1, p2 = y.data_ptr(), dy.data_ptr(), dx.data_ptr()
                        # plans.alignment's value, PHASES_DIFFER as plans.pointer_phases_differ
                        bits = (stride_bits | p0 | p1 | p2) & 15
                        go = common.get((log, bits | PHASES_DIFFER if ((p0 ^ p1) | (p0 ^ p2)) & 15 else bits))
                        if go is not None:
                            go((p0, p1, p2), raw_stream(dev))
                            return
                general((y, dy, dx), log)

        else:

            def run(x, y, log):
                if torch_device() == dev and getattr(thread, "context_ready", False):
                    if _current_tuning() is default_tuning:
                        p0, p1 = x.data_ptr(), y.data_ptr()
                        # plans.alignment's value, PHASES_DIFFER as plans.pointer_phases_differ
                        bits = (stride_bits | p0 | p1) & 15
                        go = common.get((log, bits | PHASES_DIFFER if (p0 ^ p1) & 15 else bits))
                        if go is not None:
                            go((p0, p1), raw_stream(dev))
                            return
                general((x, y), log)

        return run

    # ---- plans and kernels (first call of a problem only) ---------------------------------------
    def plan(self, key):
        """The plan of a problem key (see ``plans.build``), built once."""
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    if len(self._plans) > 8192:
                        self._plans.clear()
                    reason = self.unavailable_reason(launch.torch_device(key[9]))
                    if reason:
                        raise RuntimeError(reason)
                    plan = self._plans[key] = plans.build(self.kernel, key)
        return plan

    def kernel(self, instance: Instance, device_index: int):
        """The loaded cuda.core kernel for ``instance`` on a device, compiling it on first use."""
        facts = device_facts(device_index)
        key = (instance, facts.arch, device_index)
        kern = self._kernels.get(key)
        if kern is None:
            with self._lock:
                kern = self._kernels.get(key)
                if kern is None:
                    from cuda.core import ObjectCode

                    cubin = self.cubin(instance, facts.arch)
                    kern = ObjectCode.from_cubin(cubin, name=instance.name).get_kernel(instance.name)
                    self._kernels[key] = kern
        return kern

    @staticmethod
    def cubin(instance: Instance, arch: str) -> bytes:
        """The CUBIN ``instance`` runs from: compiled alone, under its own name (disk-cached).
        Benchmarks that time other code (another revision's headers, another NVRTC's CUBINs)
        replace this and keep the rest of the backend."""
        return compiler.compile_cubin(source_for([instance]), arch, instance.name)

    def clear_plans(self) -> None:
        self._plans.clear()


def _view_strides(views, inner: int) -> tuple:
    """Per view, the strides its kernels take: the row pitch for rows, (stride 0, stride 1,
    stride 2) for the strided layout (stride 2, the step along inner, is 1 but for stepped inputs)."""
    if inner > 1:
        return tuple(v.stride() for v in views)
    return tuple((v.stride(0),) for v in views)


BACKEND = CudaBackend()
