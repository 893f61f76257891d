"""Run a function on several ranks of a process group, each rank in its own spawned process.

Children inherit this process's environment (TRITON_INTERPRET included, so CPU ranks run the
Triton kernels in the interpreter) and its sys.path (so they can import the test modules).
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import pathlib
import tempfile
import traceback

import torch.multiprocessing as mp

#: Long enough for the interpreter on a loaded 2-core machine; short enough that a rank stuck in
#: a collective fails the test instead of hanging it.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=120)


def _entry(rank: int, world: int, backend: str, store_path: str, body, args: tuple) -> None:
    import torch
    import torch.distributed as dist

    if backend == "gloo+cuda:0":
        # every rank on the same GPU (collective="peer" maps the others' memory through CUDA IPC,
        # which works between processes on one device); gloo, which allows that, for the setup
        backend = "gloo"
        faulthandler.dump_traceback_later(60, repeat=True)
        torch.cuda.set_device(0)
        device = torch.device("cuda", 0)
    elif backend == "nccl":
        # A rank stuck on the GPU prints where it stands every minute (seen with -s).
        faulthandler.dump_traceback_later(60, repeat=True)
        # NVLink multicast (NVLS) stays off on the shared GPU machines.
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    # A file store needs no port, so parallel test workers cannot collide on one.
    dist.init_process_group(
        backend, init_method=f"file://{store_path}", rank=rank, world_size=world, timeout=COLLECTIVE_TIMEOUT
    )
    try:
        body(rank, world, device, *args)
        dist.barrier()
    except BaseException:
        # Kept for the parent: the rank that fails first is not always the one spawn reports
        # (the others then fail with a closed connection).
        pathlib.Path(f"{store_path}.rank{rank}.error").write_text(traceback.format_exc())
        raise
    finally:
        dist.destroy_process_group()


def run_ranks(world: int, body, *args, backend: str = "gloo") -> None:
    """Call ``body(rank, world, device, *args)`` on ``world`` ranks and re-raise the first rank's
    exception. ``body`` must be a module-level function: it is pickled into the children."""
    with tempfile.TemporaryDirectory() as directory:
        store_path = os.path.join(directory, "store")
        try:
            mp.spawn(_entry, args=(world, backend, store_path, body, args), nprocs=world, join=True)
        except mp.ProcessRaisedException:
            reports = sorted(pathlib.Path(directory).glob("store.rank*.error"))
            raise AssertionError("\n".join(f"--- {path.name}\n{path.read_text()}" for path in reports)) from None
