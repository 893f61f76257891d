"""cuDNN's softmax (``cudnnSoftmaxForward`` / ``cudnnSoftmaxBackward``) called through ctypes, as a
peer: the kernel OneFlow's write-up (seed 004) and the CUDA.jl write-up (seed 003) measure against.

torch does not expose cuDNN's softmax, so the library that ships with torch's CUDA wheels is opened
directly. Any problem (no library, no symbol, a failing status) raises :class:`CudnnUnavailable` or
:class:`CudnnError` with one line saying why; the benchmark records it and goes on.

Every softmax is a softmax over the middle axis of a contiguous ``(outer, n, inner)`` view, which is
exactly cuDNN's ``CUDNN_SOFTMAX_MODE_CHANNEL`` over an NCHW tensor of dims ``(outer, n, inner, 1)``:
a row softmax is ``(rows, cols, 1, 1)``, a softmax over dim 0 of a matrix is ``(1, rows, cols, 1)``.
The argument building (:func:`plan_call`) is pure Python so that it is tested without a GPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
from dataclasses import dataclass

# cudnnSoftmaxAlgorithm_t
CUDNN_SOFTMAX_FAST = 0
CUDNN_SOFTMAX_ACCURATE = 1
CUDNN_SOFTMAX_LOG = 2
ALGORITHMS = {"fast": CUDNN_SOFTMAX_FAST, "accurate": CUDNN_SOFTMAX_ACCURATE, "log": CUDNN_SOFTMAX_LOG}
# cudnnSoftmaxMode_t
CUDNN_SOFTMAX_MODE_INSTANCE = 0
CUDNN_SOFTMAX_MODE_CHANNEL = 1
# cudnnDataType_t
CUDNN_DATA_FLOAT = 0
CUDNN_DATA_DOUBLE = 1
CUDNN_DATA_HALF = 2
CUDNN_DATA_BFLOAT16 = 9
DATA_TYPES = {
    "float32": CUDNN_DATA_FLOAT,
    "float64": CUDNN_DATA_DOUBLE,
    "float16": CUDNN_DATA_HALF,
    "bfloat16": CUDNN_DATA_BFLOAT16,
}
CUDNN_STATUS_SUCCESS = 0
# tensor descriptors take C ints
INT_MAX = 2**31 - 1


class CudnnUnavailable(RuntimeError):
    """No usable libcudnn in this process."""


class CudnnError(RuntimeError):
    """A cuDNN call returned a status other than success."""


@dataclass(frozen=True)
class CallPlan:
    """Everything a softmax call passes to cuDNN besides the pointers."""

    dims: tuple[int, int, int, int]  # NCHW
    strides: tuple[int, int, int, int]
    data_type: int
    algorithm: int
    mode: int
    scaling_type: type  # ctypes type of alpha and beta: double for double data, float otherwise


def plan_call(shape, dim: int, dtype_name: str, algorithm: str = "accurate") -> CallPlan:
    """The descriptor of a softmax over ``dim`` of a contiguous tensor of ``shape``."""
    if dtype_name not in DATA_TYPES:
        raise CudnnUnavailable(f"cuDNN softmax has no {dtype_name} here (float32, float16, bfloat16, float64)")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown cuDNN softmax algorithm {algorithm!r}: use {', '.join(ALGORITHMS)}")
    shape = tuple(int(s) for s in shape)
    if not shape:
        shape, dim = (1,), 0
    dim = dim % len(shape)
    outer = 1
    for size in shape[:dim]:
        outer *= size
    inner = 1
    for size in shape[dim + 1 :]:
        inner *= size
    n = shape[dim]
    dims = (outer, n, inner, 1)
    strides = (n * inner, inner, 1, 1)
    if outer * n * inner > INT_MAX:
        raise CudnnUnavailable(f"{outer * n * inner} elements: cuDNN's tensor descriptors count in 32-bit ints")
    scaling = ctypes.c_double if dtype_name == "float64" else ctypes.c_float
    return CallPlan(dims, strides, DATA_TYPES[dtype_name], ALGORITHMS[algorithm], CUDNN_SOFTMAX_MODE_CHANNEL, scaling)


# --- finding the library ----------------------------------------------------------------------


def _loaded_cudnn_paths() -> list[str]:
    """libcudnn files already mapped into this process (torch loads its own when it imports): the
    one to use, since a second, different copy in one process is asking for trouble."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcudnn" in line and "/" in line}
    except OSError:
        return []
    # the front library holds the legacy API; its sub-libraries (libcudnn_ops...) are loaded by it
    return sorted(p for p in paths if os.path.basename(p).startswith("libcudnn.so"))


def candidate_paths() -> list[str]:
    """Where libcudnn may be, most trusted first: already loaded, the nvidia wheels beside torch
    (CUDA 12 and CUDA 13 wheel layouts), torch's own lib dir, then the system's search path."""
    found = list(_loaded_cudnn_paths())
    roots = []
    try:
        import nvidia.cudnn  # type: ignore

        roots += [os.path.join(p, "lib") for p in getattr(nvidia.cudnn, "__path__", [])]
    except Exception:  # noqa: BLE001, S110
        pass
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            roots += glob.glob(os.path.join(entry, "nvidia", "cudnn", "lib"))
            roots += glob.glob(os.path.join(entry, "nvidia", "cu*", "lib"))
    try:
        import torch

        roots.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
    except Exception:  # noqa: BLE001, S110
        pass
    for root in roots:
        found += sorted(glob.glob(os.path.join(root, "libcudnn.so*")), reverse=True)
    system = ctypes.util.find_library("cudnn")
    if system:
        found.append(system)
    unique = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


_REQUIRED = (
    "cudnnCreate",
    "cudnnSetStream",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptorEx",
    "cudnnDestroyTensorDescriptor",
    "cudnnSoftmaxForward",
    "cudnnSoftmaxBackward",
    "cudnnGetErrorString",
)


def _declare(lib) -> None:
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.cudnnGetErrorString.restype = ctypes.c_char_p
    lib.cudnnGetErrorString.argtypes = [i]
    lib.cudnnCreate.argtypes = [ctypes.POINTER(vp)]
    lib.cudnnSetStream.argtypes = [vp, vp]
    lib.cudnnCreateTensorDescriptor.argtypes = [ctypes.POINTER(vp)]
    lib.cudnnDestroyTensorDescriptor.argtypes = [vp]
    lib.cudnnSetTensor4dDescriptorEx.argtypes = [vp, i] + [i] * 8
    lib.cudnnSoftmaxForward.argtypes = [vp, i, i, vp, vp, vp, vp, vp, vp]
    lib.cudnnSoftmaxBackward.argtypes = [vp, i, i, vp, vp, vp, vp, vp, vp, vp, vp]
    for name in _REQUIRED[:-1]:
        getattr(lib, name).restype = i
    if hasattr(lib, "cudnnGetVersion"):
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        lib.cudnnGetVersion.argtypes = []


class _Symbols:
    """The API looked up in the front library first, then in its sub-libraries: cuDNN 9's
    libcudnn.so is a shim meant to export everything, but an install that ships only the
    sub-libraries, or a shim that forwards lazily, still works this way."""

    def __init__(self, libraries):
        self._libraries = libraries

    def __getattr__(self, name):
        for library in self._libraries:
            if hasattr(library, name):
                function = getattr(library, name)
                setattr(self, name, function)
                return function
        raise AttributeError(name)


def _sub_libraries(path: str) -> list:
    found = []
    for pattern in ("libcudnn_ops.so*", "libcudnn_graph.so*"):
        for candidate in sorted(glob.glob(os.path.join(os.path.dirname(path), pattern)), reverse=True)[:1]:
            try:
                found.append(ctypes.CDLL(candidate))
            except OSError:
                continue
    return found


def load_library(paths=None):
    """The first candidate that opens and has the softmax API; CudnnUnavailable saying what was tried."""
    tried = []
    for path in candidate_paths() if paths is None else paths:
        try:
            lib = _Symbols([ctypes.CDLL(path), *_sub_libraries(path)])
        except OSError as exc:
            tried.append(f"{path}: {exc}")
            continue
        missing = [name for name in _REQUIRED if not hasattr(lib, name)]
        if missing:
            tried.append(f"{path}: lacks {missing[0]}")
            continue
        _declare(lib)
        return lib, path
    if not tried:
        raise CudnnUnavailable("no libcudnn found (pip install nvidia-cudnn-cu12 or -cu13, or a CUDA build of torch)")
    raise CudnnUnavailable("no usable libcudnn: " + "; ".join(tried)[:300])


# --- the calls --------------------------------------------------------------------------------


class Cudnn:
    """One loaded library and one handle per device."""

    def __init__(self, lib, path: str = ""):
        self.lib = lib
        self.path = path
        self._handles: dict[int, ctypes.c_void_p] = {}

    def check(self, status: int, what: str) -> None:
        if status != CUDNN_STATUS_SUCCESS:
            text = self.lib.cudnnGetErrorString(status)
            text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
            raise CudnnError(f"{what}: {text} (status {status})")

    @property
    def version(self) -> str:
        if not hasattr(self.lib, "cudnnGetVersion"):
            return "unknown"
        raw = int(self.lib.cudnnGetVersion())
        # cuDNN 9 encodes major * 10000 + minor * 100 + patch; cuDNN 8, major * 1000 + minor * 100 + patch
        major, rest = (raw // 10000, raw % 10000) if raw >= 90000 else (raw // 1000, raw % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"

    def handle(self, device_index: int) -> ctypes.c_void_p:
        if device_index not in self._handles:
            handle = ctypes.c_void_p()
            self.check(self.lib.cudnnCreate(ctypes.byref(handle)), "cudnnCreate")
            self._handles[device_index] = handle
        return self._handles[device_index]

    def descriptor(self, plan: CallPlan) -> TensorDescriptor:
        return TensorDescriptor(self, plan)


class TensorDescriptor:
    """A 4-d NCHW descriptor, destroyed when garbage collected."""

    def __init__(self, cudnn: Cudnn, plan: CallPlan):
        self._cudnn = cudnn
        self.value = ctypes.c_void_p()
        cudnn.check(cudnn.lib.cudnnCreateTensorDescriptor(ctypes.byref(self.value)), "cudnnCreateTensorDescriptor")
        try:
            cudnn.check(
                cudnn.lib.cudnnSetTensor4dDescriptorEx(self.value, plan.data_type, *plan.dims, *plan.strides),
                f"cudnnSetTensor4dDescriptorEx dims {plan.dims} strides {plan.strides}",
            )
        except CudnnError:
            self.close()
            raise

    def close(self) -> None:
        if self.value:
            self._cudnn.lib.cudnnDestroyTensorDescriptor(self.value)
            self.value = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: the library may already be gone
            pass


_LOADED: Cudnn | None = None


def get() -> Cudnn:
    """The process-wide wrapper, loaded on first use."""
    global _LOADED
    if _LOADED is None:
        lib, path = load_library()
        _LOADED = Cudnn(lib, path)
    return _LOADED


def make_softmax(
    shape,
    dim: int,
    dtype_name: str,
    algorithm: str = "accurate",
    direction: str = "forward",
    cudnn: Cudnn | None = None,
):
    """A callable for one problem: ``fn(x) -> y`` forward, ``fn(dy, y) -> dx`` backward. The
    descriptor is built once here, so a call costs what cuDNN's does plus a few ctypes calls."""
    import torch

    cudnn = cudnn or get()
    plan = plan_call(shape, dim, dtype_name, algorithm)
    descriptor = cudnn.descriptor(plan)
    alpha, beta = plan.scaling_type(1.0), plan.scaling_type(0.0)
    alpha_p = ctypes.cast(ctypes.byref(alpha), ctypes.c_void_p)
    beta_p = ctypes.cast(ctypes.byref(beta), ctypes.c_void_p)
    lib = cudnn.lib
    expected_shape, expected_dtype = tuple(int(s) for s in shape), getattr(torch, dtype_name)

    def bind(tensor):
        # the descriptor fixes the extent cuDNN reads and writes: any other tensor would be overrun
        if tuple(tensor.shape) != expected_shape or tensor.dtype != expected_dtype:
            raise ValueError(
                f"this call was planned for {expected_dtype} {expected_shape}, not {tensor.dtype} {tuple(tensor.shape)}"
            )
        if tensor.device.type != "cuda":
            raise CudnnUnavailable("cuDNN runs on CUDA tensors only")
        index = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()
        if index not in cudnn._handles:
            with torch.cuda.device(index):  # a handle belongs to the device current at its creation
                cudnn.handle(index)
        handle = cudnn.handle(index)
        cudnn.check(
            lib.cudnnSetStream(handle, ctypes.c_void_p(torch.cuda.current_stream(tensor.device).cuda_stream)),
            "cudnnSetStream",
        )
        return handle

    def forward(x):
        x = x.contiguous()
        y = torch.empty_like(x)
        handle = bind(x)
        cudnn.check(
            lib.cudnnSoftmaxForward(
                handle,
                plan.algorithm,
                plan.mode,
                alpha_p,
                descriptor.value,
                ctypes.c_void_p(x.data_ptr()),
                beta_p,
                descriptor.value,
                ctypes.c_void_p(y.data_ptr()),
            ),
            "cudnnSoftmaxForward",
        )
        return y

    def backward(dy, y):
        dy, y = dy.contiguous(), y.contiguous()
        dx = torch.empty_like(y)
        bind(dy)
        handle = bind(y)
        cudnn.check(
            lib.cudnnSoftmaxBackward(
                handle,
                plan.algorithm,
                plan.mode,
                alpha_p,
                descriptor.value,
                ctypes.c_void_p(y.data_ptr()),
                descriptor.value,
                ctypes.c_void_p(dy.data_ptr()),
                beta_p,
                descriptor.value,
                ctypes.c_void_p(dx.data_ptr()),
            ),
            "cudnnSoftmaxBackward",
        )
        return dx

    call = backward if direction == "backward" else forward
    # cuDNN reads alpha, beta and the descriptor at every call: the callable owns them
    call.keep_alive = (descriptor, alpha, beta)
    return call
