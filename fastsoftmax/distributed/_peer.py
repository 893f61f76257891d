"""Collective ``"peer"``: the forward softmax of rows split across the GPUs of one host in one
kernel launch per call, the ranks' per-row (max, sum) pairs written straight into each other's
memory (``kernels/peer_rows.cuh`` says how the kernel exchanges and waits).

Each rank allocates a small exchange memory once per (process group, device), exports it with
CUDA IPC and maps every other rank's; the handles travel in one ``all_gather_object`` at the
first call. After that a call costs one launch on the host and no collective.

Requirements: CUDA tensors, every rank of the group its own process on the same host, and the
GPUs able to reach each other's memory (NVLink or PCIe peer access). The ranks must make the same
calls in the same order (as with any collective): a rank's kernel waits on the device for the
other ranks' kernels of the same call.
"""

from __future__ import annotations

import ctypes
import socket
import threading
from typing import NamedTuple

import torch
import torch.distributed as dist

from ..backends.cuda import compiler
from ..backends.cuda.instances import CXX_TYPES
from ..backends.cuda.launch import DriverError, Kernel, check, device_facts, enter, leave, on_device, raw_stream

THREADS = 256
#: Shared memory a CTA holds one row's columns in (two such buffers: the next row is read while the
#: current one waits for the other ranks); columns past it are read again from device memory in
#: the output pass (rows longer than their CTAs hold).
HELD_BYTES = 32 * 1024
#: Buffers of HELD_BYTES a CTA has: it reads DEPTH - 1 rows ahead of the one it writes.
PIPELINE_DEPTH = 2
#: Packs a thread loads before it uses any, in the statistics pass (bytes in flight).
LOAD_BATCH = 4
#: Rows per launch: the same on every rank whatever its shard width (the number of launches of a
#: call, and so the epochs, must agree); more rows take several launches.
ROWS_PER_LAUNCH = 4096
#: Bytes of a row a CTA aims to take when the grid has room (few rows): enough in flight per CTA,
#: and enough CTAs per row.
TARGET_CHUNK_BYTES = 8 * 1024
SLOT_BYTES = 16
STATE_BYTES = 64


def kernel_name(dtype: torch.dtype, log: bool, pack: int) -> str:
    return f"peer_rows_fwd_{'logsoftmax' if log else 'softmax'}_{CXX_TYPES[dtype][1]}_p{pack}"


def packs(dtype: torch.dtype) -> tuple[int, int]:
    """The pack widths compiled for a dtype: 16 bytes, and single elements for misaligned rows."""
    return 16 // CXX_TYPES[dtype][2], 1


def all_kernels() -> list[tuple[torch.dtype, bool, int]]:
    return [(dtype, log, pack) for dtype in CXX_TYPES for log in (False, True) for pack in packs(dtype)]


def source(kernels) -> str:
    lines = ['#include "peer_rows.cuh"', "using namespace fastsoftmax;", ""]
    for dtype, log, pack in kernels:
        t, _, itemsize = CXX_TYPES[dtype]
        targs = f"{t}, {'true' if log else 'false'}, {pack}, {HELD_BYTES // itemsize}, {ROWS_PER_LAUNCH}, "
        targs += f"{LOAD_BATCH}, {PIPELINE_DEPTH}"
        lines.append(
            f'extern "C" __global__ void __launch_bounds__({THREADS}) {kernel_name(dtype, log, pack)}('
            f"const {t}* x, {t}* y, i64 rows, i64 n, i64 x_pitch, i64 chunk, i64 ctas_per_row, i64 groups, "
            "i64 rank, i64 world, PeerSlot* const* peers, float2* pairs, unsigned int* tickets, PeerState* state) {\n"
            f"    peer_rows_forward<{targs}>(x, y, rows, n, x_pitch, chunk, ctas_per_row, groups, rank, world, "
            "peers, pairs, tickets, state);\n}\n"
        )
    return "\n".join(lines)


_LOCK = threading.Lock()
_KERNELS: dict = {}
_EXCHANGES: dict = {}


def _kernel(dtype: torch.dtype, log: bool, pack: int, device_index: int) -> tuple[Kernel, int]:
    """The loaded kernel and how many of its CTAs the device holds at once."""
    key = (dtype, log, pack, device_index)
    found = _KERNELS.get(key)
    if found is None:
        with _LOCK:
            found = _KERNELS.get(key)
            if found is None:
                from cuda.core import ObjectCode

                facts = device_facts(device_index)
                name = kernel_name(dtype, log, pack)
                cubin = compiler.compile_cubin(source([(dtype, log, pack)]), facts.arch, name)
                core = ObjectCode.from_cubin(cubin, name=name).get_kernel(name)
                kernel = Kernel(core, name, device_index, 14, THREADS, 1, PIPELINE_DEPTH * HELD_BYTES)
                # every launch of these kernels takes the same shared memory
                kernel.set_attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES", PIPELINE_DEPTH * HELD_BYTES)
                found = _KERNELS[key] = (kernel, kernel.blocks_per_sm() * facts.sm_count)
    return found


class _Exchange:
    """One rank's exchange memory for one (group, device), and the other ranks' mapped.

    Layout: the slots first (at the same offset in every rank's memory: a rank finds another's
    slots at that rank's base), then this rank's own state, row tickets, the table of every
    rank's slot address and the CTA pairs (PIPELINE_DEPTH sets)."""

    def __init__(self, group, device_index: int):
        from cuda.bindings import driver

        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        facts = device_facts(device_index)
        max_ctas = facts.sm_count * max(1, facts.max_threads_per_sm // THREADS)
        slots_bytes = SLOT_BYTES * 2 * ROWS_PER_LAUNCH * self.world
        state_at = slots_bytes
        tickets_at = state_at + STATE_BYTES
        table_at = tickets_at + _round16(4 * ROWS_PER_LAUNCH)
        pairs_at = table_at + _round16(8 * self.world)
        size = pairs_at + PIPELINE_DEPTH * 8 * max_ctas
        with on_device(device_index):
            self.base = int(check(driver.cuMemAlloc(size), "cuMemAlloc (peer exchange memory)"))
            check(driver.cuMemsetD8(self.base, 0, size), "cuMemsetD8")
            check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
            handle = check(driver.cuIpcGetMemHandle(self.base), "cuIpcGetMemHandle")
        mine = (socket.gethostname(), ctypes.string_at(handle.getPtr(), 64))
        everyone = [None] * self.world
        dist.all_gather_object(everyone, mine, group=group)
        bases = []
        with on_device(device_index):
            for rank, (host, raw) in enumerate(everyone):
                if rank == self.rank:
                    bases.append(self.base)
                    continue
                if host != mine[0]:
                    raise RuntimeError(
                        f"collective='peer' needs every rank of the group on one host: rank {self.rank} is on "
                        f"{mine[0]!r}, rank {rank} on {host!r}; use collective='allgather'"
                    )
                theirs = driver.CUipcMemHandle()
                ctypes.memmove(theirs.getPtr(), raw, 64)
                flags = driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
                pointer = check(driver.cuIpcOpenMemHandle(theirs, flags), f"cuIpcOpenMemHandle (rank {rank}'s memory)")
                bases.append(int(pointer))
            table = (ctypes.c_uint64 * self.world)(*bases)
            check(driver.cuMemcpyHtoD(self.base + table_at, ctypes.addressof(table), 8 * self.world), "cuMemcpyHtoD")
        self.state = self.base + state_at
        self.tickets = self.base + tickets_at
        self.table = self.base + table_at
        self.pairs = self.base + pairs_at
        # every rank's memory is zeroed before any rank can write into it
        dist.barrier(group=group)


def _round16(value: int) -> int:
    return -(-value // 16) * 16


def exchange(group, device_index: int) -> _Exchange:
    key = (group if group is not None else dist.group.WORLD, device_index)
    found = _EXCHANGES.get(key)
    if found is None:
        with _LOCK:
            found = _EXCHANGES.get(key)
            if found is None:
                try:
                    found = _EXCHANGES[key] = _Exchange(group, device_index)
                except DriverError as error:
                    raise RuntimeError(
                        f"collective='peer' could not map the other ranks' memory ({error}); it needs every rank "
                        "its own process on one host, with peer access between the GPUs"
                    ) from error
    return found


def _aligned(pointer: int, row_pitch: int, itemsize: int) -> bool:
    return pointer % 16 == 0 and (row_pitch * itemsize) % 16 == 0


_PLANS: dict = {}


class PeerShape(NamedTuple):
    """How a call's rows spread over a rank's GPU: each CTA of a row takes ``chunk`` columns (a
    multiple of the pack), ``ctas`` CTAs a row; each launch takes ``count`` rows from row ``start``
    with ``groups`` groups of CTAs taking them in turn."""

    ctas: int
    chunk: int
    launches: tuple[tuple[int, int, int], ...]  # (start, count, groups)


def peer_shape(rows: int, n: int, itemsize: int, pack: int, resident: int) -> PeerShape:
    """Few rows: a group of CTAs a row, each CTA TARGET_CHUNK_BYTES of it. Many rows: as few CTAs
    a row as hold it (at least what the grid allows), the groups taking rows in turn. The grid never
    exceeds ``resident`` (what the GPU holds at once: peer_rows.cuh, progress), and the launches
    depend on ``rows`` alone, so that every rank makes the same ones."""
    per_launch = min(rows, ROWS_PER_LAUNCH)
    row_bytes = n * itemsize
    holding = max(1, -(-row_bytes // HELD_BYTES))
    spread = max(holding, -(-row_bytes // TARGET_CHUNK_BYTES))
    ctas = spread if per_launch * spread <= resident else max(holding, resident // max(per_launch, 1))
    ctas = min(ctas, resident)
    chunk = -(-max(n, 1) // ctas)
    chunk = -(-chunk // pack) * pack
    ctas = max(1, -(-n // chunk))
    launches = []
    for start in range(0, rows, per_launch):
        count = min(per_launch, rows - start)
        launches.append((start, count, min(count, resident // ctas)))
    return PeerShape(ctas, chunk, tuple(launches))


def _plan(group, device_index: int, dtype: torch.dtype, log: bool, rows: int, n: int, x_pitch: int, pack: int):
    """The launches of a call: [(x offset, y offset, go)], ``go(pointers, stream)`` one bound
    launch (see peer_shape)."""
    reason = compiler.nvrtc_unavailable_reason()
    if reason:
        raise RuntimeError(f"collective='peer' compiles its kernel at run time: {reason}")
    ex = exchange(group, device_index)
    kernel, resident = _kernel(dtype, log, pack, device_index)
    itemsize = CXX_TYPES[dtype][2]
    if resident < 1:
        raise RuntimeError(f"collective='peer': no CTA of its kernel fits on cuda:{device_index}")
    shape = peer_shape(rows, n, itemsize, pack, resident)
    exchange_memory = (ex.table, ex.pairs, ex.tickets, ex.state)
    launches = []
    bound = {}
    for start, count, groups in shape.launches:
        if (count, groups) not in bound:
            tail = (count, n, x_pitch, shape.chunk, shape.ctas, groups, ex.rank, ex.world) + exchange_memory
            bound[(count, groups)] = kernel.bound(groups * shape.ctas, tail)
        launches.append((start * x_pitch * itemsize, start * n * itemsize, bound[(count, groups)]))
    return tuple(launches)


def forward(x: torch.Tensor, group, log: bool) -> torch.Tensor:
    """This rank's shard of the softmax (log-softmax) of rows ``x`` (rows, n) split over
    ``group``; contiguous output."""
    if x.stride(1) != 1 and x.shape[1] > 1:
        x = x.contiguous()
    rows, n = x.shape
    y = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    if rows == 0:
        return y
    device_index = x.device.index
    x_pitch = x.stride(0) if rows > 1 else n
    x_address, y_address = x.data_ptr(), y.data_ptr()
    itemsize = x.element_size()
    aligned = _aligned(x_address, x_pitch, itemsize) and _aligned(y_address, n, itemsize)
    key = (group, device_index, x.dtype, log, rows, n, x_pitch, aligned)
    launches = _PLANS.get(key)
    if launches is None:
        pack = packs(x.dtype)[0] if aligned else 1
        with _LOCK:
            if len(_PLANS) > 4096:
                _PLANS.clear()
        launches = _PLANS[key] = _plan(group, device_index, x.dtype, log, rows, n, x_pitch, pack)
    stream = raw_stream(device_index)
    pushed = enter(device_index)
    try:
        for x_offset, y_offset, go in launches:
            go((x_address + x_offset, y_address + y_offset), stream)
    finally:
        if pushed:
            leave()
    return y
