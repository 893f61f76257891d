"""How a kernel is launched: driver entry points, device facts, contexts, streams, argument packing.

Everything between a plan and the GPU goes through this module. cuda.core compiles and loads the
kernels (``backend.py``); launches go straight to the driver through cuda.bindings' compiled
``cuLaunchKernel`` (a few microseconds of host time; cuda.core's ``launch()`` costs tens), or
``cuLaunchKernelEx`` where a launch needs attributes the plain call cannot carry (cluster
dimensions, cooperative grids).

Three rules keep this safe when many threads launch at once:

* **No shared mutable argument memory.** The driver reads kernel arguments through an array of
  pointers to their values, during the launch call. A launch writes its arguments into memory no
  other thread can hold at that moment: the calling thread's own slots (``_thread_slots``), or a
  slot array taken out of a pool for the duration of the launch (``Kernel.bound``). cuda.bindings
  releases the GIL inside the driver call, so an array shared between threads could be
  overwritten by another thread before the driver read it.
* **A context is current per thread, not per process.** Before a launch, ``enter`` makes the
  tensor's device's primary context current on the calling thread: directly when torch's current
  device is that device but no context is current yet (autograd's worker thread, a new thread),
  pushed and popped again (``leave``) when torch's current device is another one, so that the
  caller's device is left as it was.
* **Errors raise.** Every driver call is checked, and a failure raises ``DriverError`` with the
  driver's name for the error; no failure switches to another path.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import threading

import torch

from ..base import dram_gbps, high_dram_bandwidth_per_sm
from .instances import CLUSTER_PORTABLE_MAX, CLUSTER_SIZES

#: most parameters a kernel of this package takes (the strided backward takes 18)
MAX_KERNEL_ARGS = 20
#: shared memory (static and dynamic together) a launch may use without opting in
DEFAULT_DYNAMIC_SMEM_LIMIT = 48 * 1024

try:  # one C call, no Python-side stream object
    raw_stream = torch._C._cuda_getCurrentRawStream
    _torch_device = torch._C._cuda_getDevice
except AttributeError:  # pragma: no cover - CPU-only builds of torch

    def raw_stream(device_index):
        return torch.cuda.current_stream(device_index).cuda_stream

    def _torch_device():
        return torch.cuda.current_device()


class DriverError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


def _driver():
    from cuda.bindings import driver

    return driver


def error_name(result) -> str:
    try:
        driver = _driver()
        if isinstance(result, int):
            result = driver.CUresult(result)
        err, name = driver.cuGetErrorName(result)
    except Exception:  # no driver to ask: the number alone
        return f"CUresult {int(result)}"
    if int(err) == 0 and name:
        return f"{name.decode() if isinstance(name, bytes) else name} ({int(result)})"
    return f"CUresult {int(result)}"


def check(returned, what: str):
    """The values a cuda.bindings call returned after its CUresult, or DriverError."""
    result, *values = returned if isinstance(returned, tuple) else (returned,)
    if int(result) != 0:
        raise DriverError(f"{what} failed: {error_name(result)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


# ---- device facts -------------------------------------------------------------------------------
class DeviceFacts:
    """What the plans need to know of one GPU, queried once. Immutable after construction."""

    __slots__ = (
        "index",
        "arch",
        "sm_count",
        "smem_per_block",
        "smem_per_sm",
        "max_threads_per_sm",
        "cluster_ctas",
        "cooperative_launch",
        "dram_gbps",
        "core_device",
        "cu_device",
        "context",
    )

    def __init__(self, index: int):
        from cuda.core import Device

        driver = _driver()
        check(driver.cuInit(0), "cuInit")
        self.index = index
        major, minor = torch.cuda.get_device_capability(index)
        self.arch = f"sm_{major}{minor}"  # CUBIN for the exact architecture: see compiler.py
        self.cu_device = check(driver.cuDeviceGet(index), f"cuDeviceGet({index})")
        # torch and cuda.core both use the device's primary context; retaining it here keeps one
        # handle that any thread can make current
        self.context = check(driver.cuDevicePrimaryCtxRetain(self.cu_device), f"cuDevicePrimaryCtxRetain({index})")
        self.core_device = Device(index)
        attr = driver.CUdevice_attribute

        def query(name):
            return int(check(driver.cuDeviceGetAttribute(getattr(attr, name), self.cu_device), name))

        self.sm_count = query("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
        self.smem_per_block = query("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        self.smem_per_sm = query("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
        self.max_threads_per_sm = query("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR")
        self.cooperative_launch = bool(query("CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH"))
        # the largest cluster resident as the cluster kernels launch them, a whole SM a CTA (16 or 8; 0:
        # none): the attribute alone says only that the GPU has clusters (some hold no more than the
        # portable 8 CTAs, some have groups of fewer SMs)
        clusters = major >= 9 and bool(query("CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH"))
        sizes = (CLUSTER_SIZES[-1], CLUSTER_PORTABLE_MAX) if clusters else ()
        self.cluster_ctas = next((ctas for ctas in sizes if holds_cluster(self, ctas)), 0)
        # some tier rules depend on the bandwidth each SM has to fill
        memory = ("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE", "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH")
        self.dram_gbps = dram_gbps(*map(query, memory))

    @property
    def cluster_launch(self) -> bool:
        """Whether the widest clusters (CLUSTER_SIZES[-1] CTAs) are resident: every cluster tier may run.
        With ``cluster_ctas`` 8, the cluster tier alone, capped there."""
        return self.cluster_ctas == CLUSTER_SIZES[-1]

    @property
    def high_bandwidth_per_sm(self) -> bool:
        """Whether this GPU has much DRAM bandwidth an SM (backends.base.high_dram_bandwidth_per_sm)."""
        return high_dram_bandwidth_per_sm(self.dram_gbps, self.sm_count)


#: a kernel that does nothing, for asking the driver how large a cluster the GPU holds
CLUSTER_PROBE_NAME = "fs_cluster_probe"
CLUSTER_PROBE_SOURCE = f'extern "C" __global__ void {CLUSTER_PROBE_NAME}() {{}}\n'
#: what the driver answers for a cluster size the GPU does not take: at the non-portable opt-in, and at
#: the occupancy query (any other answer of the query, an invalid value among them, raises)
_OPT_IN_REFUSALS = ("CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_INVALID_CLUSTER_SIZE")
_QUERY_REFUSALS = ("CUDA_ERROR_INVALID_CLUSTER_SIZE", "CUDA_ERROR_NOT_SUPPORTED")


@functools.lru_cache(maxsize=None)
def _probe_kernel(arch: str) -> tuple:
    """``(keep, kernel)``: the do-nothing kernel compiled for ``arch`` (disk-cached) and loaded, once a
    process, as a CUkernel, with ``keep`` holding what must stay referenced while it is used."""
    from cuda.core import ObjectCode

    from .compiler import compile_cubin

    code = ObjectCode.from_cubin(compile_cubin(CLUSTER_PROBE_SOURCE, arch, "cluster_probe"), name="cluster_probe")
    kernel = code.get_kernel(CLUSTER_PROBE_NAME)
    return (code, kernel), _driver().CUkernel(int(kernel.handle))


def _answered(result: tuple, names: tuple[str, ...]) -> bool:
    """Whether a driver call's result code is one of the ``CUresult`` names given."""
    return int(result[0]) in {int(getattr(_driver().CUresult, name)) for name in names}


def holds_cluster(facts: DeviceFacts, ctas: int) -> bool:
    """Whether a cluster of ``ctas`` CTAs can be resident on the device when each CTA takes a whole
    SM (all the shared memory a CTA may have): the widest launches of the cluster kernels. False where
    the driver refuses the size (portable clusters hold 8 CTAs; 16 is an opt-in not every GPU with
    clusters takes) or finds no group of SMs with room for it; False where NVRTC is missing or does not
    compile for the GPU, where the backend cannot run. Other driver errors raise."""
    from .compiler import nvrtc_unavailable_reason, supported_archs

    if nvrtc_unavailable_reason() is not None or int(facts.arch.removeprefix("sm_")) not in supported_archs():
        return False
    driver = _driver()
    _, kernel = _probe_kernel(facts.arch)  # (its cache keeps the loaded code referenced)
    attribute = driver.CUfunction_attribute
    smem = facts.smem_per_block
    set_smem = driver.cuKernelSetAttribute(
        attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem, kernel, facts.cu_device
    )
    check(set_smem, f"cuKernelSetAttribute({CLUSTER_PROBE_NAME}, MAX_DYNAMIC_SHARED_SIZE_BYTES={smem})")
    if ctas > CLUSTER_PORTABLE_MAX:
        allowed = driver.cuKernelSetAttribute(
            attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, kernel, facts.cu_device
        )
        if _answered(allowed, _OPT_IN_REFUSALS):
            return False
        check(allowed, f"cuKernelSetAttribute({CLUSTER_PROBE_NAME}, NON_PORTABLE_CLUSTER_SIZE_ALLOWED=1)")
    check(driver.cuCtxPushCurrent(facts.context), "cuCtxPushCurrent")
    try:
        function = check(driver.cuKernelGetFunction(kernel), f"cuKernelGetFunction({CLUSTER_PROBE_NAME})")
        resident = driver.cuOccupancyMaxActiveClusters(function, launch_config(ctas, 32, 1, smem, 0, ctas))
    finally:
        popped = driver.cuCtxPopCurrent()  # checked below, so that it cannot hide an error raised above
    check(popped, "cuCtxPopCurrent")
    if _answered(resident, _QUERY_REFUSALS):
        return False
    return int(check(resident, f"cluster occupancy of {CLUSTER_PROBE_NAME} at {ctas} CTAs")) >= 1


_DEVICES: dict[int, DeviceFacts] = {}
_DEVICES_LOCK = threading.Lock()


def device_facts(index: int) -> DeviceFacts:
    facts = _DEVICES.get(index)
    if facts is None:
        with _DEVICES_LOCK:
            facts = _DEVICES.get(index)
            if facts is None:
                facts = _DEVICES[index] = DeviceFacts(index)
    return facts


@functools.lru_cache(maxsize=None)
def torch_device(index: int) -> torch.device:
    """torch's device object for a CUDA index, made once (workspaces are allocated per call)."""
    return torch.device("cuda", index)


# ---- contexts -----------------------------------------------------------------------------------
_thread = threading.local()


def enter(device_index: int) -> bool:
    """Make ``device_index``'s primary context current on this thread for a launch. Returns True
    when it was pushed over another device's context: the caller then calls ``leave()`` after its
    launches. The common case (torch's current device, on a thread that launched before) costs one
    C call and one thread-local read."""
    if _torch_device() == device_index:
        if getattr(_thread, "context_ready", False):
            return False
        return _first_launch_on_thread(device_index)
    check(_driver().cuCtxPushCurrent(device_facts(device_index).context), "cuCtxPushCurrent")
    return True


def _first_launch_on_thread(device_index: int) -> bool:
    """A thread's first launch for torch's current device: torch may not have made any context
    current on this thread (it does so lazily), so look, and make the primary context current if
    none is. Any other context that is current stays untouched: ours is pushed over it."""
    driver = _driver()
    facts = device_facts(device_index)
    current = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(current) == 0:
        check(driver.cuCtxSetCurrent(facts.context), "cuCtxSetCurrent")
    elif int(current) != int(facts.context):
        check(driver.cuCtxPushCurrent(facts.context), "cuCtxPushCurrent")
        return True
    _thread.context_ready = True
    return False


def leave() -> None:
    check(_driver().cuCtxPopCurrent(), "cuCtxPopCurrent")


class on_device:
    """``with on_device(index):`` the device's context is current inside (plan building: kernel
    handles, attributes and occupancy queries need it)."""

    __slots__ = ("index", "pushed")

    def __init__(self, index: int):
        self.index = index

    def __enter__(self):
        self.pushed = enter(self.index)
        return self

    def __exit__(self, *exc):
        if self.pushed:
            leave()


# ---- streams ------------------------------------------------------------------------------------
#: cuda.bindings CUstream objects by handle: the compiled cuLaunchKernel converts a plain int into
#: a new CUstream on every call, a ready one it only reads. Entries are immutable, so a race costs
#: at most a duplicate object.
_CU_STREAMS: dict = {}


def cu_stream(handle: int):
    stream = _CU_STREAMS.get(handle)
    if stream is None:
        if len(_CU_STREAMS) > 1024:
            _CU_STREAMS.clear()
        stream = _CU_STREAMS[handle] = _driver().CUstream(handle)
    return stream


# ---- stream workspaces --------------------------------------------------------------------------
#: (device index, stream handle) -> (buffer, zone): one float32 workspace a stream for the kernels
#: that keep state between their CTAs in device memory and are launched once a call (the
#: strided_staged teams, grid_row). Its first `zone` words hold nothing but counters, which every
#: such kernel leaves at zero when it ends (its last CTA to leave a counter clears it); the rest is
#: scratch no kernel needs cleared. Kernels of one stream run one after another, so one buffer a
#: stream is never used by two at once, and no call pays for an allocation or a clearing fill: a
#: fresh buffer and a fill a call had cost 13 us of host time and a dependent kernel launch (H100,
#: bf16 (4194304, 4) over dim 0: 61 us a call against the kernel's 48). Not for plans of several
#: launches: another thread's launch on the same stream could land between them.
_STREAM_BUFFERS: dict = {}
_STREAM_LOCK = threading.Lock()
_STREAM_ZONE_WORDS = 1024
_STREAM_SCRATCH_WORDS = 1 << 16


def stream_capturing(stream: int) -> bool:
    """Whether the stream (a handle) is capturing a CUDA graph."""
    status = check(_driver().cuStreamIsCapturing(cu_stream(stream)), "cuStreamIsCapturing")
    return int(status) != 0


def stream_workspace(device_index: int, stream: int, counter_words: int, scratch_words: int) -> tuple:
    """``(buffer, address)``: a workspace whose ``counter_words`` float32 words from ``address`` are
    zero counters the kernel leaves at zero, followed by ``scratch_words`` words of scratch. Keep
    ``buffer`` referenced until the launch is enqueued (a buffer outgrown on another thread is
    freed when the last reference goes; the caching allocator then reuses it only in this stream's
    order). Under graph capture a cleared buffer of the graph's own is made per call instead: a
    graph replays with the addresses it captured, possibly beside direct calls on the stream."""
    if stream_capturing(stream):
        buffer = torch.zeros(counter_words + scratch_words, dtype=torch.float32, device=torch_device(device_index))
        return buffer, buffer.data_ptr()
    key = (device_index, stream)

    def holds(entry) -> bool:
        return entry is not None and entry[1] >= counter_words and entry[0].numel() - entry[1] >= scratch_words

    entry = _STREAM_BUFFERS.get(key)
    if not holds(entry):
        with _STREAM_LOCK:
            entry = _STREAM_BUFFERS.get(key)
            if not holds(entry):
                zone, scratch = _STREAM_ZONE_WORDS, _STREAM_SCRATCH_WORDS
                if entry is not None:
                    zone, scratch = entry[1], entry[0].numel() - entry[1]
                zone = max(zone, -(-counter_words // 4) * 4)
                scratch = max(scratch, scratch_words)
                if len(_STREAM_BUFFERS) > 64:  # streams come and go: drop the idle ones' buffers
                    _STREAM_BUFFERS.clear()
                # on the stream of the launches that use it (torch's current stream of the device)
                buffer = torch.zeros(zone + scratch, dtype=torch.float32, device=torch_device(device_index))
                entry = _STREAM_BUFFERS[key] = (buffer, zone)
    buffer, zone = entry
    # the kernel's counters end where the zone does, its scratch starts there
    return buffer, buffer.data_ptr() + 4 * (zone - counter_words)


# ---- argument packing ---------------------------------------------------------------------------
def argument_memory(values):
    """A fresh ``(slots, pointers, address)``: int64 slots holding ``values``, the array of
    pointers to them, and that array's address (what cuLaunchKernel takes as kernelParams)."""
    slots = (ctypes.c_int64 * len(values))(*values)
    base = ctypes.addressof(slots)
    pointers = (ctypes.c_void_p * len(values))(*[base + 8 * i for i in range(len(values))])
    return slots, pointers, ctypes.addressof(pointers)


def _thread_slots():
    """This thread's argument memory: MAX_KERNEL_ARGS int64 slots, the array of pointers to them,
    and the array's address (what cuLaunchKernel takes as kernelParams)."""
    slots = getattr(_thread, "slots", None)
    if slots is None:
        values = (ctypes.c_int64 * MAX_KERNEL_ARGS)()
        base = ctypes.addressof(values)
        pointers = (ctypes.c_void_p * MAX_KERNEL_ARGS)(*[base + 8 * i for i in range(MAX_KERNEL_ARGS)])
        slots = _thread.slots = (values, pointers, ctypes.addressof(pointers))
    return slots


def launch_config(grid: int, block_x: int, block_y: int, smem: int, stream, cluster: int = 1, cooperative=False):
    """The ``CUlaunchConfig`` of ``cuLaunchKernelEx`` (and of the cluster occupancy query): a grid of
    ``grid`` blocks, in clusters of ``cluster`` where that is more than one, cooperative if asked."""
    driver = _driver()
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block_x, block_y, 1
    config.sharedMemBytes = smem
    config.hStream = stream
    attrs = []
    if cluster > 1:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        attrs.append(attr)
    if cooperative:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attr.value.cooperative = 1
        attrs.append(attr)
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config


# ---- kernels ------------------------------------------------------------------------------------
class Kernel:
    """One loaded kernel on one device, with a fixed block shape, dynamic shared memory and
    cluster size, launched on any grid. Immutable, so plans holding it are shared by threads.

    Every kernel parameter of this package is 8 bytes (a pointer or an i64), so arguments are
    written as int64 values into the launching thread's slots.
    """

    __slots__ = (
        "core_kernel",
        "name",
        "device",
        "function",
        "block_x",
        "block_y",
        "smem",
        "cluster",
        "cooperative",
        "nargs",
    )

    def __init__(
        self,
        core_kernel,
        name: str,
        device: int,
        nargs: int,
        block_x: int,
        block_y: int = 1,
        smem: int = 0,
        cluster: int = 1,
        cooperative: bool = False,
    ):
        if nargs > MAX_KERNEL_ARGS:
            raise ValueError(f"{name}: {nargs} kernel arguments, at most {MAX_KERNEL_ARGS} are packed")
        driver = _driver()
        self.core_kernel = core_kernel
        self.name = name
        self.device = device
        self.nargs = nargs
        self.block_x, self.block_y, self.smem = block_x, block_y, smem
        self.cluster, self.cooperative = cluster, cooperative
        with on_device(device):
            self.function = check(
                driver.cuKernelGetFunction(driver.CUkernel(int(core_kernel.handle))), f"cuKernelGetFunction({name})"
            )

    def __repr__(self) -> str:
        return f"Kernel({self.name}, block {(self.block_x, self.block_y)}, smem {self.smem}, cluster {self.cluster})"

    def set_attribute(self, name: str, value: int) -> None:
        """A function attribute (``CU_FUNC_ATTRIBUTE_<name>``) for every launch on this device."""
        driver = _driver()
        attr = getattr(driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        check(
            driver.cuKernelSetAttribute(
                attr, value, driver.CUkernel(int(self.core_kernel.handle)), device_facts(self.device).cu_device
            ),
            f"cuKernelSetAttribute({self.name}, {name}={value})",
        )

    def get_attribute(self, name: str) -> int:
        """A function attribute (``CU_FUNC_ATTRIBUTE_<name>``) of this kernel on its device."""
        driver = _driver()
        attr = getattr(driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        with on_device(self.device):
            value = check(driver.cuFuncGetAttribute(attr, self.function), f"cuFuncGetAttribute({self.name}, {name})")
        return int(value)

    def allow_dynamic_smem(self, smem: int, static: int = 0) -> None:
        """Opts in to ``smem`` bytes of dynamic shared memory where that and the kernel's static
        shared memory together pass the 48 KiB a launch gets without it (48 KiB of dynamic memory
        beside any static memory is refused: CUDA_ERROR_INVALID_VALUE at the launch). The attribute
        belongs to the function, which every plan of an instance shares, so it is set to the most
        the device allows (less the kernel's static shared memory, or ``static`` where that is
        more), never to one plan's need: a smaller value set by a later plan would make the earlier
        plans' launches fail."""
        if smem == 0:
            return
        static = max(static, self.get_attribute("SHARED_SIZE_BYTES"))
        if smem + static > DEFAULT_DYNAMIC_SMEM_LIMIT:
            self.set_attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES", device_facts(self.device).smem_per_block - static)

    def blocks_per_sm(self, threads: int | None = None, smem: int | None = None) -> int:
        """Blocks of this kernel resident per SM, at its own block shape and shared memory or at
        the ones given."""
        threads = self.block_x * self.block_y if threads is None else threads
        smem = self.smem if smem is None else smem
        with on_device(self.device):
            return int(
                check(
                    _driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(self.function, threads, smem),
                    f"occupancy of {self.name} at {threads} threads, {smem} bytes of shared memory",
                )
            )

    def resident_clusters(self) -> int:
        """Clusters of this kernel's cluster size resident on the whole device at once."""
        config = self._launch_config(self.cluster, 0)
        with on_device(self.device):
            return int(
                check(
                    _driver().cuOccupancyMaxActiveClusters(self.function, config), f"cluster occupancy of {self.name}"
                )
            )

    def _launch_config(self, grid: int, stream):
        return launch_config(grid, self.block_x, self.block_y, self.smem, stream, self.cluster, self.cooperative)

    def launch(self, grid: int, stream: int, args) -> None:
        """Launch on ``grid`` blocks (a multiple of the cluster size) on the stream handle, with
        the device's context current (see ``enter``)."""
        values, _, params = _thread_slots()
        values[: len(args)] = args
        if self.cluster == 1 and not self.cooperative:
            result = _driver().cuLaunchKernel(
                self.function, grid, 1, 1, self.block_x, self.block_y, 1, self.smem, cu_stream(stream), params, 0
            )[0]
        else:
            result = _driver().cuLaunchKernelEx(self._launch_config(grid, cu_stream(stream)), self.function, params, 0)[
                0
            ]
        if int(result) != 0:
            self.failed(result, grid)

    def bound(self, grid: int, tail: tuple):
        """``go(pointers, stream)``: this kernel on a fixed grid with the arguments after the
        pointers fixed to ``tail``: the repeated-call path, which packs and launches in one step.

        Its argument memory comes from a pool of ready slot arrays with ``tail`` written in: a
        launch takes one out (``deque.pop`` is atomic), writes the pointers, launches and puts it
        back, so no two threads ever write the same array, and only the pointers are written.

        The driver is called through cuda.bindings: libcuda's ``cuLaunchKernel`` through ctypes
        measured 2.5 us slower per call (8.3 against 5.8 us on an H100 host,
        benchmarks/results/2026-11-23_h100/host_probe_1010.txt)."""
        if self.cluster != 1 or self.cooperative:
            return self._bound_ex(grid, tail)
        function, block_x, block_y, smem = self.function, self.block_x, self.block_y, self.smem
        cu_launch = _driver().cuLaunchKernel
        streams = _CU_STREAMS
        pool = collections.deque()
        failed = self.failed

        def go(pointers, stream):
            try:
                memory = pool.pop()
            except IndexError:
                memory = argument_memory(pointers + tail)
            memory[0][: len(pointers)] = pointers
            handle = streams.get(stream)  # cu_stream, inlined: this is the hottest path
            if handle is None:
                handle = cu_stream(stream)
            result = cu_launch(function, grid, 1, 1, block_x, block_y, 1, smem, handle, memory[2], 0)[0]
            pool.append(memory)
            if result:
                failed(result, grid)

        return go

    def _bound_ex(self, grid: int, tail: tuple):
        """``bound`` for launches that need ``cuLaunchKernelEx``: each thread keeps its own launch
        configuration per kernel and grid (only its stream changes between calls) and packs the
        arguments into its own slots."""
        cu_launch_ex = _driver().cuLaunchKernelEx
        function = self.function
        key = (self, grid)

        def go(pointers, stream):
            configs = getattr(_thread, "configs", None)
            if configs is None:
                configs = _thread.configs = {}
            config = configs.get(key)
            if config is None:
                if len(configs) > 256:
                    configs.clear()
                config = configs[key] = self._launch_config(grid, cu_stream(stream))
            else:
                config.hStream = cu_stream(stream)
            values, _, params = _thread_slots()
            args = pointers + tail
            values[: len(args)] = args
            result = cu_launch_ex(config, function, params, 0)[0]
            if result:
                self.failed(result, grid)

        return go

    def failed(self, result, grid: int) -> None:
        raise DriverError(
            f"launch of {self.name} on cuda:{self.device} (grid {grid}, block "
            f"{(self.block_x, self.block_y)}, cluster {self.cluster}, {self.smem} bytes of shared "
            f"memory) failed: {error_name(result)}"
        )
