"""Where a grid_row launch spends its time: the forward kernel of kernels/grid_row_tier.cuh
compiled from a copy whose phases write %globaltimer and clock64 (thread 0 of each CTA), beside a
floor kernel that only moves the same bytes through the chip (registers and shared memory, one
grid barrier, no arithmetic) in the same cooperative geometry.

    PYTHONPATH=$PWD python3 benchmarks/grid_row_phases.py [--shapes 1x16777216] [--dtypes bf16,f32]

Prints, per shape and kernel, the GPU time between events and, per phase, the median and the
largest time across CTAs at which the phase ended (globaltimer, from the earliest CTA start),
and the median SM cycles a CTA spent in it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from grid_row_probe import baseline_backend, gpu_time_us  # noqa: E402

from fastsoftmax.backends.cuda import compiler, plans  # noqa: E402
from fastsoftmax.backends.cuda.instances import grid_row_workspace  # noqa: E402
from fastsoftmax.backends.cuda.launch import Kernel, device_facts, raw_stream  # noqa: E402
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps  # noqa: E402

MARKS = 16
MARK_MACRO = r"""
#define FS_MARK_IN(ws, i)                                                                           \
    do {                                                                                            \
        if (threadIdx.x == 0) {                                                                     \
            unsigned long long g_;                                                                  \
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g_));                                  \
            unsigned long long* m_ = reinterpret_cast<unsigned long long*>(ws + 4 * gridDim.x) +   \
                                     2 * (blockIdx.x * 16 + (i));                                   \
            m_[0] = g_;                                                                             \
            m_[1] = clock64();                                                                      \
        }                                                                                           \
    } while (0)
// the forward's marks take the team's workspace (RowGridTeam::ws); RowGridTeam's own, its member
#define FS_MARK(i) FS_MARK_IN(team.ws, i)
"""

# (anchor in the forward, text placed before it); each anchor must occur once in the forward
FORWARD_MARKS = (
    ("        const T* src = load.row_ptr(row);", "FS_MARK(0);\n"),
    ("        MaxSum state = empty_maxsum();", "FS_MARK(1);\n"),
    ("        each_edge<T, P>(load, src, slice, first, count, whole, neg_inf()", "FS_MARK(2);\n"),
    (
        "#pragma unroll 1\n        for (int g = 0; g < kGridRowStages; ++g) {\n            const bool issue",
        "FS_MARK(3);\n",
    ),
    # RowGridTeam::total, the team of the grid_row tier (its forward pair; ws is the team's): the pair
    # posted, then its barrier (posted_total's, between the two marks) and the merge
    ("        float2* pairs = reinterpret_cast<float2*>(ws)", "FS_MARK_IN(ws, 4);\n"),
    ("            cooperative_groups::this_grid().sync();\n        });", "FS_MARK_IN(ws, 5);\n"),
    (
        "        });\n    }\n    template <int WARPS>\n    __device__ __forceinline__ float total(float cta",
        "FS_MARK_IN(ws, 6);\n",
    ),
    ("        // As the cluster tier", "FS_MARK(7);\n"),
    # the writes are write_held_row's, a function of its own (no workspace there): one phase
    ("        // the next row's copies land", "__syncthreads();\nFS_MARK(8);\n"),
)
# the phase that ends at each mark after the first
PHASES = (
    "issue register loads + cp.async",
    "stream rest (statistics)",
    "registers: max, exp sum",
    "shared groups: wait, max, exp sum",
    "CTA pair",
    "grid barrier",
    "merge pairs",
    "write (rest, edges, shared, registers)",
)
FLOOR_SOURCE = r"""
#include <cooperative_groups.h>
__device__ __forceinline__ void copy16(void* dst, const void* src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(src) : "memory");
}
// one row of `packs` 16-byte packs, CTA b owning [b * chunk, (b + 1) * chunk): K packs a thread in
// registers, the rest of the chunk in shared memory, one grid barrier, then everything written
extern "C" __global__ void __launch_bounds__(512, 1)
fs_floor(const uint4* x, uint4* y, float* ws, long long packs, long long chunk) {
    constexpr int K = KPACKS;
    extern __shared__ uint4 staged[];
#ifdef FS_INTERLEAVED
    // slot j of CTA b is pack (j / blockDim) * (gridDim * blockDim) + b * blockDim + j % blockDim:
    // at each step the CTAs read neighbouring blocks of memory (packs a multiple of that stride)
    const long long base = 0;
    const int count = (int)(chunk);
#define AT(j) \
    ((long long)((j) / blockDim.x) * gridDim.x * blockDim.x + (long long)blockIdx.x * blockDim.x + (j) % blockDim.x)
#else
    const long long base = (long long)blockIdx.x * chunk;
    const long long end = min(packs, base + chunk);
    const int count = (int)max(0LL, end - base);
#define AT(j) (base + (j))
#endif
    uint4 r[K];
    FS_MARK_IN(ws, 0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = k * blockDim.x + threadIdx.x;
        if (j < count) r[k] = __ldg(x + AT(j));
    }
    for (int j = K * blockDim.x + threadIdx.x; j < count; j += blockDim.x)
        copy16(&staged[j - K * blockDim.x], x + AT(j));
    FS_MARK_IN(ws, 1);
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
    unsigned acc = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) if (k * blockDim.x + threadIdx.x < count) acc ^= r[k].x;
    FS_MARK_IN(ws, 2);
    __syncthreads();
    if (threadIdx.x == 0) ws[blockIdx.x] = (float)(acc & 1);
    cooperative_groups::this_grid().sync();
    FS_MARK_IN(ws, 3);
    for (int j = K * blockDim.x + threadIdx.x; j < count; j += blockDim.x) y[AT(j)] = staged[j - K * blockDim.x];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = k * blockDim.x + threadIdx.x;
        if (j < count) y[AT(j)] = r[k];
    }
    __syncthreads();
    FS_MARK_IN(ws, 4);
}
"""
FLOOR_PHASES = ("issue register loads + cp.async", "wait for them", "block barrier + grid barrier", "write")
TAG = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def floor_source(packs: int, interleaved: bool) -> str:
    """The floor kernel's source for K = ``packs`` register slots a thread, its CTAs' slices
    contiguous or interleaved."""
    source = MARK_MACRO + FLOOR_SOURCE.replace("KPACKS", str(packs))
    return ("#define FS_INTERLEAVED\n" if interleaved else "") + source


def patched_kernel_dir() -> Path:
    target = Path(tempfile.mkdtemp(prefix="grid_row_phases_"))
    for path in compiler.KERNEL_DIR.iterdir():
        shutil.copy(path, target / path.name)
    header = target / "grid_row_tier.cuh"
    text = header.read_text()
    cut = text.index("// ---- backward")
    forward, rest = text[:cut], text[cut:]
    for anchor, mark in FORWARD_MARKS:
        if forward.count(anchor) != 1:
            raise SystemExit(f"anchor found {forward.count(anchor)} times: {anchor!r}")
        forward = forward.replace(anchor, mark + anchor)
    text = forward + rest
    text = text.replace("namespace fastsoftmax {", MARK_MACRO + "\nnamespace fastsoftmax {", 1)
    header.write_text(text)
    return target


def summarize(marks: torch.Tensor, ctas: int, names) -> list[str]:
    m = marks.view(torch.int64).view(ctas, MARKS, 2).cpu()
    used = len(names) + 1
    g = m[:, :used, 0].double()
    c = m[:, :used, 1].double()
    start = g[:, 0].min()
    lines = [f"      CTA start spread: {(g[:, 0].max() - start) / 1e3:.2f} us"]
    for i, name in enumerate(names, 1):
        ends = (g[:, i] - start) / 1e3
        cycles = statistics.median((c[:, i] - c[:, i - 1]).tolist())
        lines.append(
            f"      {name:<36} ends at median {ends.median():6.2f} us, last {ends.max():6.2f} us; "
            f"{cycles / 1e3:7.1f} k cycles"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="1x1048576,1x16777216,1x67108864")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    dev = torch.cuda.current_device()
    copy = copy_bandwidth_gbps()
    backend = baseline_backend(str(patched_kernel_dir()))
    facts = device_facts(dev)
    print(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s, {facts.sm_count} SMs", flush=True)
    stream = raw_stream(dev)
    floors = {}
    for spec in args.shapes.split(","):
        rows, n = (int(v) for v in spec.split("x"))
        for tag in args.dtypes.split(","):
            dtype = DTYPES[tag]
            x = torch.randn(rows, n, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            kernel, shape = plans.grid_row_launch(backend.kernel, dtype, n, False, False, dev)
            ws = torch.zeros(grid_row_workspace(shape.ctas, False) + 4 * MARKS * shape.ctas, device="cuda")
            launch_args = (x.data_ptr(), y.data_ptr(), ws.data_ptr(), rows, n, n, n, shape.smem_slots)
            kernel.launch(shape.ctas, stream, launch_args)
            torch.cuda.synchronize()
            err = (y.double() - torch.softmax(x.double(), -1)).abs().max().item()
            times = [gpu_time_us(lambda: kernel.launch(shape.ctas, stream, launch_args)) for _ in range(args.iters)]
            us = statistics.median(times)
            print(
                f"{TAG[dtype]} {spec}: grid_row {us:.1f} us, "
                f"{nbytes / us / 1e3 / copy:.3f} of copy (max error {err:.2g}); grid {shape.ctas} x "
                f"{shape.threads}, K={shape.packs}, {shape.smem_slots} shared slots",
                flush=True,
            )
            marks = ws[grid_row_workspace(shape.ctas, False) :]
            print("\n".join(summarize(marks, shape.ctas, PHASES)), flush=True)

            # the floor: the same bytes through the same geometry, no arithmetic
            if rows == 1:
                for variant in ("contiguous", "interleaved"):
                    key = (shape.packs, variant)
                    if key not in floors:
                        source = floor_source(shape.packs, variant == "interleaved")
                        cubin = compiler.compile_cubin(source, facts.arch, "fs_floor", use_cache=False)
                        from cuda.core import ObjectCode

                        core = ObjectCode.from_cubin(cubin, name="fs_floor").get_kernel("fs_floor")
                        floors[key] = core
                    packs = x.numel() * x.element_size() // 16
                    chunk = -(-packs // shape.ctas)
                    moved, nbytes_moved = packs, nbytes
                    if variant == "interleaved":  # whole steps of ctas x threads packs only
                        chunk = packs // (shape.ctas * shape.threads) * shape.threads
                        moved = chunk * shape.ctas
                        nbytes_moved = 2 * 16 * moved
                        y.zero_()
                    smem = max(0, chunk - shape.packs * shape.threads) * 16
                    floor = Kernel(floors[key], "fs_floor", dev, 5, shape.threads, 1, smem, 1, True)
                    floor.allow_dynamic_smem(facts.smem_per_block - 1024, 1024)
                    if smem > facts.smem_per_block - 1024:
                        print("      floor: does not fit on chip, skipped")
                        continue
                    fws = torch.zeros(4 * shape.ctas + 4 * MARKS * shape.ctas, device="cuda")
                    fargs = (x.data_ptr(), y.data_ptr(), fws.data_ptr(), packs, chunk)
                    floor.launch(shape.ctas, stream, fargs)
                    torch.cuda.synchronize()
                    assert torch.equal(
                        y.view(torch.uint8).flatten()[: 16 * moved], x.view(torch.uint8).flatten()[: 16 * moved]
                    ), "floor wrong"
                    times = [gpu_time_us(lambda: floor.launch(shape.ctas, stream, fargs)) for _ in range(args.iters)]
                    us = statistics.median(times)
                    print(
                        f"      floor {variant} {us:.1f} us, {nbytes_moved / us / 1e3 / copy:.3f} of copy", flush=True
                    )
                    # the floor's marks sit after its ctas floats: the macro's offset is 4 * gridDim.x
                    print("\n".join(summarize(fws[4 * shape.ctas :], shape.ctas, FLOOR_PHASES)), flush=True)
            del x, y
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
