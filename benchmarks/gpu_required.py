"""The probes in this folder time or check kernels on a CUDA GPU: without one, they say so in a
line rather than end in torch's traceback."""

import pathlib
import sys


def require_gpu() -> None:
    """Exit in one line without a GPU; ``--help`` goes on to the probe's own parser, which answers
    it (the probes call this before parsing their arguments)."""
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        return
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(f"{pathlib.Path(sys.argv[0]).name}: needs a CUDA GPU (torch sees none)")
