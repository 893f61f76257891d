"""The softmax kernel ladder: seven float32 CUDA kernels, from naive to the online normaliser.

Each step is one kernel in ``fastsoftmax/backends/cuda/kernels/ladder.cu``, with a header saying
what changed from the step before and why it is faster:

    1 naive            one thread per element, each recomputing its row's max and sum
    2 shared_tree      one block per row, tree reductions in shared memory
    3 coalesced        block-strided loops: a warp reads consecutive addresses
    4 warp_shuffle     reductions in registers (shuffles), then across warps
    5 float4           128-bit loads and stores
    6 unrolled         block size and unroll factor fixed at compile time, searched
    7 online           max and sum in one pass, merged with the rescaling rule

    import fastsoftmax.ladder as ladder
    y = ladder.softmax(x, step=4)            # x: float32 CUDA tensor, softmax over the last dim

The ladder is for learning and comparison (``fastsoftmax bench ladder`` times every step); the
production kernels are the "cuda" backend's tiers.
"""

from __future__ import annotations

from pathlib import Path

import torch

STEPS = {
    1: "naive",
    2: "shared_tree",
    3: "coalesced",
    4: "warp_shuffle",
    5: "float4",
    6: "unrolled",
    7: "online",
}
#: the (block size, unroll factor) space of steps 6 and 7; every pair is compiled
SEARCH_BLOCKS = (128, 256, 512, 1024)
SEARCH_UNROLLS = (1, 2, 4, 8)
#: block size of steps 2-5 (any power of two up to 1024 works)
DEFAULT_BLOCK = 256
#: steps 6 and 7 without an explicit choice; `fastsoftmax bench ladder` reports the best pair on
#: the device at hand
DEFAULT_BLOCK_UNROLL = (512, 4)
#: threads per block of step 1, which runs one thread per element
NAIVE_BLOCK = 256

SOURCE_PATH = Path(__file__).resolve().parent / "backends" / "cuda" / "kernels" / "ladder.cu"


def kernel_name(step: int, block: int | None = None, unroll: int | None = None) -> str:
    if step not in STEPS:
        raise ValueError(f"the ladder has steps {sorted(STEPS)}, not {step!r}")
    if step in (6, 7):
        block, unroll = _block_unroll(block, unroll)
        return f"ladder_{step}_b{block}_u{unroll}"
    return f"ladder_{step}_{STEPS[step]}"


def _block_unroll(block, unroll) -> tuple[int, int]:
    block = DEFAULT_BLOCK_UNROLL[0] if block is None else block
    unroll = DEFAULT_BLOCK_UNROLL[1] if unroll is None else unroll
    if block not in SEARCH_BLOCKS or unroll not in SEARCH_UNROLLS:
        raise ValueError(
            f"steps 6 and 7 are compiled for blocks {SEARCH_BLOCKS} and unroll factors "
            f"{SEARCH_UNROLLS}, not ({block}, {unroll})"
        )
    return block, unroll


def all_kernel_names() -> list[str]:
    names = [kernel_name(s) for s in range(1, 6)]
    names += [f"ladder_{s}_b{b}_u{u}" for s in (6, 7) for u in SEARCH_UNROLLS for b in SEARCH_BLOCKS]
    return names


def source() -> str:
    return SOURCE_PATH.read_text()


_modules: dict = {}


def _kernel(device_index: int, name: str):
    from .backends.cuda import compiler
    from .backends.cuda.launch import device_facts

    module = _modules.get(device_index)
    if module is None:
        from cuda.core import ObjectCode

        cubin = compiler.compile_cubin(source(), device_facts(device_index).arch, "ladder.cu")
        module = _modules.setdefault(device_index, ObjectCode.from_cubin(cubin, name="ladder"))
    return module.get_kernel(name)


_kernels: dict = {}


def softmax(
    x: torch.Tensor,
    step: int = 7,
    *,
    block: int | None = None,
    unroll: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Softmax over the last dim of a float32 CUDA tensor with ladder step ``step`` (1-7).
    ``block`` sets the threads per block (steps 2-7; a power of two, and for steps 6-7 one of
    SEARCH_BLOCKS); ``unroll`` the unroll factor of steps 6-7."""
    if x.dtype != torch.float32 or not x.is_cuda:
        raise TypeError("the ladder kernels take float32 CUDA tensors")
    if x.numel() == 0:
        return torch.empty_like(x) if out is None else out
    from .backends.cuda import launch as cuda_launch

    n = x.shape[-1]
    src = x.contiguous()
    rows = src.numel() // n
    y = torch.empty_like(src) if out is None else out
    if not y.is_contiguous() or y.shape != src.shape or y.dtype != torch.float32:
        raise ValueError("out must be a contiguous float32 tensor of the input's shape")
    if (y.data_ptr() - src.data_ptr()) % 16:
        # steps 5-7 split each row at the same 16-byte boundaries in x and y
        raise ValueError("out must have the same 16-byte alignment as the input")
    dev = src.get_device()
    if step in (6, 7):
        block, _ = _block_unroll(block, unroll)
    elif step == 1:
        block = NAIVE_BLOCK
    else:
        block = DEFAULT_BLOCK if block is None else block
        if block & (block - 1) or not 32 <= block <= 1024:
            raise ValueError(f"steps 2-5 need a power-of-two block of 32..1024 threads, not {block}")
    name = kernel_name(step, block, unroll)
    key = (dev, name, block)
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _kernels.setdefault(key, cuda_launch.Kernel(_kernel(dev, name), name, dev, 4, block))
    grid = -(-rows * n // NAIVE_BLOCK) if step == 1 else rows
    with cuda_launch.on_device(dev):
        kernel.launch(grid, cuda_launch.raw_stream(dev), (src.data_ptr(), y.data_ptr(), rows, n))
    return y
