"""The "cuda" backend: softmax kernels in CUDA C++ (``kernels/``), compiled at run time by NVRTC
through cuda.core, cached on disk, and launched on PyTorch's current stream.

Importing this package needs neither cuda.core nor a GPU; ``BACKEND.unavailable_reason(device)``
says what is missing.
"""

from .backend import BACKEND, TIERS, CudaBackend
from .compiler import CudaCompileError

__all__ = ["BACKEND", "TIERS", "CudaBackend", "CudaCompileError"]
