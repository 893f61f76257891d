"""fastsoftmax: softmax and log-softmax for PyTorch at the memory-bandwidth floor.

import fastsoftmax
y = fastsoftmax.softmax(x, dim=-1)            # any shape, any dim, fp32/fp16/bf16
y = fastsoftmax.log_softmax(x, dim=0, backend="triton")
layer = fastsoftmax.nn.Softmax(dim=-1)
"""

from . import dispatch, nn
from .dispatch import available_backends
from .functional import log_softmax, softmax, softmax_backward

__version__ = "0.1.0"

__all__ = ["softmax", "log_softmax", "softmax_backward", "available_backends", "nn", "dispatch", "__version__"]


def __getattr__(name):
    # The CUDA ladder and the hardware model load on first use: they pull in NVRTC and NumPy code
    # that the softmax path itself never needs.
    if name in ("ladder", "hardware"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
