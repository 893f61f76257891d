"""The CUDA backend's tier choice, plan and launch emulated on GPUs of less shared memory, no GPU needed.

Fake device facts per GPU; a fake Kernel that compiles the instance for the GPU's architecture (NVRTC,
a real CUBIN) for its static shared memory and registers, emulates occupancy, and checks each launch
(dynamic shared memory within the function's attribute, the block within an SM, a cooperative grid
resident). Run from the repository root:

    python3 benchmarks/results/2026-12-07_h100_s90/smem_audit.py OUT.json T4,A10,L4,L40S,RTX4090,RTX5090,A100,H100
"""
from __future__ import annotations

import os
import struct
import sys
import traceback
import json

sys.path.insert(0, os.getcwd())

import torch

from fastsoftmax.backends.cuda import compiler, launch, plans, strided, tiers
from fastsoftmax.backends.cuda.instances import source_for, CXX_TYPES
from fastsoftmax.backends import base

DEVICES = {
    # name: arch, spb(optin), sps, sms, dram GB/s, max threads/SM, max blocks/SM, reserved/CTA, regs/SM
    "A100": ("sm_80", 163 * 1024, 164 * 1024, 108, 1555.0, 2048, 32, 1024),
    "A10": ("sm_86", 99 * 1024, 100 * 1024, 72, 600.0, 1536, 16, 1024),
    "RTX3090": ("sm_86", 99 * 1024, 100 * 1024, 82, 936.0, 1536, 16, 1024),
    "L4": ("sm_89", 99 * 1024, 100 * 1024, 58, 300.0, 1536, 24, 1024),
    "L40S": ("sm_89", 99 * 1024, 100 * 1024, 142, 864.0, 1536, 24, 1024),
    "RTX4090": ("sm_89", 99 * 1024, 100 * 1024, 128, 1008.0, 1536, 24, 1024),
    "RTX5090": ("sm_120", 99 * 1024, 128 * 1024, 170, 1792.0, 1536, 24, 1024),
    "T4": ("sm_75", 64 * 1024, 64 * 1024, 40, 320.0, 1024, 16, 0),
    "H100": ("sm_90", 227 * 1024, 228 * 1024, 132, 3352.3, 2048, 32, 1024),
}


def make_facts(name):
    arch, spb, sps, sms, gbps, mt, mb, res = DEVICES[name]

    class Facts:
        cluster_launch = launch.DeviceFacts.cluster_launch

    f = Facts()
    f.index = 0
    f.arch, f.smem_per_block, f.smem_per_sm, f.sm_count = arch, spb, sps, sms
    f.cooperative_launch = True
    f.cluster_ctas = 16 if name == "H100" else 0
    f.dram_gbps = gbps
    f.max_threads_per_sm = mt
    f.max_blocks = mb
    f.reserved = res
    f.high_bandwidth_per_sm = base.high_dram_bandwidth_per_sm(gbps, sms)
    f.name = name
    return f


def limits_of(f):
    return tiers.Limits.of(f)


# ---- cubin facts ---------------------------------------------------------------------------------
_CUBIN = {}


def cubin_facts(inst, arch):
    key = (inst, arch)
    if key in _CUBIN:
        return _CUBIN[key]
    data = compiler.compile_cubin(source_for([inst]), arch, inst.name)
    # ELF64
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        off = shoff + i * shentsize
        name, typ, flags, addr, offset, size, link, info, align, entsize = struct.unpack_from("<IIQQQQIIQQ", data, off)
        secs.append((name, size, info))
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]

    def nm(o):
        end = data.index(b"\0", stroff + o)
        return data[stroff + o : end].decode()

    static, regs = 0, 0
    hdr = {}
    for i, (name, size, info) in enumerate(secs):
        s = nm(name)
        off = struct.unpack_from("<Q", data, shoff + i * shentsize + 0x18)[0]
        hdr[s] = (off, size)
        if s == f".nv.shared.{inst.name}":
            static = size
        if s == f".text.{inst.name}":
            regs = info >> 24
    if ".nv.shared.reserved.0" in hdr and static >= 1024:
        static -= 1024  # sm_90+ cubins lay the driver's 1 KiB reserve out in the section
    if regs == 0 and ".nv.info" in hdr:
        off, size = hdr[".nv.info"]
        p = off
        while p < off + size:
            fmt, attr = data[p], data[p + 1]
            if fmt == 4:
                sz = struct.unpack_from("<H", data, p + 2)[0]
                if attr == 0x2F:
                    regs = struct.unpack_from("<I", data, p + 8)[0]
                p += 4 + sz
            else:
                p += 4
    _CUBIN[key] = (static, regs)
    return static, regs


class LaunchRefused(Exception):
    pass


def fake_kernel_class(facts, log):
    class K:
        def __init__(self, core_kernel, name, device, nargs, block_x, block_y=1, smem=0, cluster=1, cooperative=False):
            self.core_kernel = core_kernel
            self.inst = core_kernel
            self.name, self.device, self.nargs = name, device, nargs
            self.block_x, self.block_y, self.smem = block_x, block_y, smem
            self.cluster, self.cooperative = cluster, cooperative
            self.static, self.regs = cubin_facts(core_kernel, facts.arch)
            self.max_dyn = _ATTR.get(core_kernel, 48 * 1024 - self.static)

        def set_attribute(self, name, value):
            if name == "MAX_DYNAMIC_SHARED_SIZE_BYTES":
                if value + self.static > facts.smem_per_block:
                    raise LaunchRefused(f"set MAX_DYNAMIC={value} + static {self.static} > {facts.smem_per_block}")
                _ATTR[self.core_kernel] = value
                self.max_dyn = value

        def get_attribute(self, name):
            assert name == "SHARED_SIZE_BYTES"
            return self.static

        allow_dynamic_smem = launch.Kernel.allow_dynamic_smem

        def blocks_per_sm(self, threads=None, smem=None):
            threads = self.block_x * self.block_y if threads is None else threads
            smem = self.smem if smem is None else smem
            max_dyn = _ATTR.get(self.core_kernel, 48 * 1024 - self.static)
            if smem > max_dyn:
                return 0
            per_block = smem + self.static
            if per_block > facts.smem_per_block:
                return 0
            by_threads = facts.max_threads_per_sm // threads
            by_smem = facts.smem_per_sm // (per_block + facts.reserved) if per_block else 10**9
            warps = -(-threads // 32)
            regs = max(self.regs, 1)
            regs = -(-regs // 8) * 8
            per_warp = -(-regs * 32 // 256) * 256
            by_regs = (65536 // per_warp) // warps if regs <= 255 else 0
            return max(0, min(by_threads, by_smem, by_regs, facts.max_blocks))

        def resident_clusters(self):
            if not facts.cluster_launch:
                raise LaunchRefused("resident_clusters asked on a device without clusters")
            return self.blocks_per_sm() * facts.sm_count // self.cluster

        def launch(self, grid, stream, args):
            threads = self.block_x * self.block_y
            max_dyn = _ATTR.get(self.core_kernel, 48 * 1024 - self.static)
            why = None
            if self.cluster > 1 and not facts.cluster_launch:
                why = "cluster launch on a GPU without clusters"
            elif self.smem > max_dyn:
                why = f"dynamic smem {self.smem} > attribute max {max_dyn} (static {self.static}, device {facts.smem_per_block})"
            elif self.blocks_per_sm(threads, self.smem) < 1:
                why = f"block of {threads} threads, {self.smem}+{self.static} B smem, {self.regs} regs does not fit an SM"
            elif self.cooperative and grid > self.blocks_per_sm(threads, self.smem) * facts.sm_count:
                why = f"cooperative grid {grid} > resident {self.blocks_per_sm(threads, self.smem) * facts.sm_count}"
            log.append((self.name, grid, threads, self.smem, self.static, self.regs, self.cooperative, why))
            if why:
                raise LaunchRefused(f"{self.name}: {why}")

        def bound(self, grid, tail):
            return lambda pointers, stream: self.launch(grid, stream, tuple(pointers) + tuple(tail))

    return K


_ATTR = {}


class Workspaces:
    def __call__(self, dev, stream, counter_words, scratch_words):
        return None, 0x10000


def install(facts, log):
    K = fake_kernel_class(facts, log)
    for mod in (plans, strided, launch):
        mod.device_facts = lambda dev, f=facts: f
    plans.Kernel = K
    strided.Kernel = K
    plans.torch_device = lambda dev: torch.device("cpu")
    strided.torch_device = lambda dev: torch.device("cpu")
    plans.stream_workspace = Workspaces()
    strided.stream_workspace = Workspaces()
    _ATTR.clear()


def load(inst, dev):
    return inst


def run_case(facts, outer, n, inner, dtype, backward, log_sm=False):
    lim = limits_of(facts)
    tensors = 3 if backward else 2
    itemsize = CXX_TYPES[dtype][2]
    pointers = tuple(0x100000 * (i + 1) for i in range(tensors))
    if inner == 1:
        strides = ((n,),) * tensors
        aligned = outer == 1 or n * itemsize % 16 == 0
    else:
        strides = ((n * inner, inner, 1),) * tensors
        aligned = True
    from fastsoftmax import _layout
    window = inner == 1 or all(_layout.rows_on_boundaries(n * inner, inner, itemsize, outer, n) for _ in range(1)) or \
        _layout.flat_run(n * inner, inner, inner, itemsize, outer)
    align = plans.alignment(pointers, strides if inner > 1 else strides, itemsize, outer)
    tier = tiers.choose_tier(outer, n, inner, dtype, backward, lim, aligned, window, False, log_sm)
    key = (tier, dtype, outer, n, inner, strides, log_sm, backward, align, 0, tiers.DEFAULT_TUNING)
    launches = []
    install(facts, launches)
    try:
        plan = plans.build(load, key)
        plan(pointers, 0)
        return tier, None, launches
    except LaunchRefused as e:
        return tier, f"LAUNCH REFUSED: {e}", launches
    except ValueError as e:
        return tier, f"ValueError: {e}", launches
    except Exception as e:
        return tier, f"{type(e).__name__}: {e}\n{traceback.format_exc()}", launches


ROW_NS = sorted(
    set([1 << k for k in range(3, 21)] + [50257, 128256, 32769, 32767, 30721, 30720, 31000, 32000, 30000,
         20000, 16385, 16383, 12000, 9000, 8193, 4097, 3000, 1000, 100, 20, 129, 200, 2049, 24576, 28672])
)
OUTERS = [1, 2, 4, 8, 16, 32, 39, 40, 57, 64, 107, 128, 256, 1024, 4096, 65536]
STRIDED = [
    (1, 65536, 2048), (32, 4096, 1024), (16, 21, 512 * 512), (1, 8192, 16384), (1024, 16384, 4),
    (4, 1048576, 8), (128, 1024, 1024), (8, 65536, 512), (32, 65536, 256), (1, 65536, 8192),
    (2048, 128, 2048), (64, 2048, 1024), (4096, 4096, 3), (1, 1048576, 128), (1, 131072, 1024),
    (256, 64, 2049), (2, 131072, 64), (1, 65536, 4096), (16, 262144, 16), (8, 1000, 3969),
    (1, 2048, 65536), (64, 65536, 64), (1, 16384, 16384), (4, 512, 65536), (1, 100000, 1000),
    (3, 30000, 512), (1, 4096, 1024), (2, 16384, 2048), (1, 262144, 256), (1, 32768, 4096),
    (32, 65536, 256), (1, 65536, 1536), (2, 65536, 2048), (1, 98304, 2048), (32, 4096, 1023), (8, 150, 16129),
    (1024, 2048, 5), (64, 65536, 6), (2, 1000008, 3), (1, 4194304, 4), (8, 1048576, 4), (1, 1048576, 16),
    (16, 524288, 16), (4, 131072, 96), (32, 131072, 64), (512, 48, 1024), (1, 8192, 8192), (1, 12288, 16384),
    (1, 16384, 8192), (64, 1024, 4096), (1, 65536, 16384), (4, 262144, 32), (128, 16384, 32), (64, 65536, 16),
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def main(names, out):
    results = []
    for name in names:
        facts = make_facts(name)
        cases = [(o, n, 1) for n in ROW_NS for o in OUTERS] + STRIDED
        for outer, n, inner in cases:
            for dtype in DTYPES:
                for backward in (False, True):
                    for log_sm in ((False, True) if backward else (False,)):
                        tier, err, launches = run_case(facts, outer, n, inner, dtype, backward, log_sm)
                        smem = [(l[0], l[3], l[4]) for l in launches]
                        results.append(dict(dev=name, outer=outer, n=n, inner=inner, dtype=str(dtype)[6:],
                                            backward=backward, log=log_sm, tier=tier, err=err,
                                            launches=[list(map(str, l)) for l in launches]))
                        if err:
                            print(name, (outer, n, inner), str(dtype)[6:], "bwd" if backward else "fwd",
                                  "log" if log_sm else "", tier, err.splitlines()[0], flush=True)
    with open(out, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv[2].split(","), sys.argv[1])
