"""Minimal cluster kernels for telling a compute-sanitizer synccheck fault of the package's cluster
kernels from one of the launch shape alone: run under ``compute-sanitizer --tool synccheck``.

    PYTHONPATH=. compute-sanitizer --tool synccheck python3 benchmarks/cluster_synccheck_probe.py \
        [--kernels barrier,exchange] [--clusters 8,16] [--waves 1,4]

Each kernel runs on clusters of each size, in grids of one wave (the clusters resident at once) and
of several, by default one CTA an SM (the launch's dynamic shared memory takes most of an SM; --smem 0
lets CTAs of several clusters share an SM):
  * barrier: every thread arrives at and waits on the cluster barrier, thread 0 writes a flag;
  * exchange: every CTA's thread 0 posts one word into each peer's shared memory with st.async and
    its mbarrier transaction count (as cluster_tier.cuh's ClusterAllToAll), waits for the words of
    all peers, and writes their sum, which the script checks;
  * split: the same with the cluster barrier split around a load from device memory (arrive first,
    wait before the first post), as ClusterAllToAll's constructor and first exchange split it.
A line a launch ("ok" or the error) says which shapes the sanitizer stops on.
"""

from __future__ import annotations

import argparse
import sys

import torch

SOURCE = r"""
extern "C" __global__ void probe_barrier(float* out, const float*) {
    asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
    if (threadIdx.x == 0) out[blockIdx.x] = 1.0f;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ unsigned peer_addr(unsigned addr, unsigned rank) {
    unsigned out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}

// SPLIT: the cluster barrier's arrive at the start and its wait only before the first post, with the
// CTA's loads between them, as ClusterAllToAll's constructor and first exchange do
template <bool SPLIT>
__device__ __forceinline__ void exchange(float* out, const float* in) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ unsigned words[16];
    unsigned ctas, rank;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(ctas));
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    const unsigned b = smem_addr(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
    float loaded = 0.0f;
    if (SPLIT) loaded = in[blockIdx.x * blockDim.x + threadIdx.x];
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
    if (threadIdx.x == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(4 * ctas) : "memory");
    if (threadIdx.x < ctas) {
        const unsigned slot = peer_addr(smem_addr(&words[rank]), threadIdx.x);
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(slot),
                     "r"(rank + 1), "r"(peer_addr(b, threadIdx.x))
                     : "memory");
    }
    unsigned done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(b)
            : "memory");
    } while (!done);
    if (threadIdx.x == 0) {
        unsigned sum = 0;
        for (unsigned i = 0; i < ctas; ++i) sum += words[i];
        out[blockIdx.x] = (float)sum + loaded;
    }
}

extern "C" __global__ void probe_exchange(float* out, const float* in) { exchange<false>(out, in); }
extern "C" __global__ void probe_split(float* out, const float* in) { exchange<true>(out, in); }
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", default="barrier,exchange,split")
    parser.add_argument("--clusters", default="8,16")
    parser.add_argument("--waves", default="1,4")
    parser.add_argument(
        "--threads", type=int, default=512, help="threads a CTA (the cluster tier's forward takes 256-512)"
    )
    parser.add_argument(
        "--smem",
        type=int,
        default=-1,
        help="dynamic shared memory a CTA in bytes (default: most of an SM, one CTA an SM; 0: as many CTAs an "
        "SM as the threads allow, as the cluster tier's launches of many rows run)",
    )
    args = parser.parse_args()

    from cuda.core import ObjectCode

    from fastsoftmax.backends.cuda import launch
    from fastsoftmax.backends.cuda.compiler import compile_cubin
    from fastsoftmax.backends.cuda.launch import Kernel, device_facts

    dev = torch.cuda.current_device()
    torch.cuda.init()
    facts = device_facts(dev)
    cubin = compile_cubin(SOURCE, facts.arch, "cluster_synccheck_probe", use_cache=False)
    code = ObjectCode.from_cubin(cubin, name="cluster_synccheck_probe")
    failures = 0
    for name in args.kernels.split(","):
        for cluster in map(int, args.clusters.split(",")):
            smem = facts.smem_per_block - 2048 if args.smem < 0 else args.smem
            kernel = Kernel(code.get_kernel(f"probe_{name}"), name, dev, 2, args.threads, 1, smem, cluster=cluster)
            kernel.allow_dynamic_smem(smem)
            if cluster > 8:
                kernel.set_attribute("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
            resident = kernel.resident_clusters()
            for waves in map(int, args.waves.split(",")):
                clusters = resident * waves
                out = torch.full((clusters * cluster,), float("nan"), device="cuda")
                zeros = torch.zeros(clusters * cluster * args.threads, device="cuda")  # what split loads
                label = f"{name}: clusters of {cluster}, {clusters} clusters ({resident} resident, {waves} waves)"
                print("launch", label, flush=True)
                try:
                    pushed = launch.enter(dev)
                    try:
                        kernel.launch(clusters * cluster, launch.raw_stream(dev), (out.data_ptr(), zeros.data_ptr()))
                    finally:
                        if pushed:
                            launch.leave()
                    torch.cuda.synchronize()
                    want = 1.0 if name == "barrier" else cluster * (cluster + 1) / 2
                    wrong = int((out != want).sum())
                    print(label, "ok" if wrong == 0 else f"{wrong} wrong", flush=True)
                    failures += wrong > 0
                except Exception as error:  # the sanitizer's stop: report it and end (the context is gone)
                    print(label, "FAILED:", type(error).__name__, str(error).splitlines()[0], flush=True)
                    return 1
    return 1 if failures else 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
