"""The cuDNN peer: argument building and the call sequence on the CPU (against a stand-in library),
and on a GPU its results against float64."""

import ctypes

import pytest
import torch

from fastsoftmax.benchmark import cudnn


@pytest.mark.parametrize(
    "shape, dim, dims, strides",
    [
        ((49152, 1024), -1, (49152, 1024, 1, 1), (1024, 1, 1, 1)),
        ((1 << 24,), 0, (1, 1 << 24, 1, 1), (1 << 24, 1, 1, 1)),
        ((4096, 65536), 0, (1, 4096, 65536, 1), (4096 * 65536, 65536, 1, 1)),
        ((4096, 65536), 1, (4096, 65536, 1, 1), (65536, 1, 1, 1)),
        ((32, 4096, 1024), 1, (32, 4096, 1024, 1), (4096 * 1024, 1024, 1, 1)),
        ((2, 3, 4, 5), -2, (6, 4, 5, 1), (20, 5, 1, 1)),
    ],
)
def test_descriptor_is_the_outer_n_inner_view_in_channel_mode(shape, dim, dims, strides):
    plan = cudnn.plan_call(shape, dim, "float32")
    assert plan.dims == dims and plan.strides == strides
    assert plan.mode == cudnn.CUDNN_SOFTMAX_MODE_CHANNEL == 1
    assert plan.algorithm == cudnn.CUDNN_SOFTMAX_ACCURATE == 1
    assert plan.data_type == cudnn.CUDNN_DATA_FLOAT == 0 and plan.scaling_type is ctypes.c_float


def test_enums_and_scaling_types_follow_cudnn_h():
    assert (cudnn.CUDNN_SOFTMAX_FAST, cudnn.CUDNN_SOFTMAX_ACCURATE, cudnn.CUDNN_SOFTMAX_LOG) == (0, 1, 2)
    assert cudnn.plan_call((4, 8), -1, "float16", "fast").algorithm == 0
    assert cudnn.plan_call((4, 8), -1, "bfloat16", "log").algorithm == 2
    assert cudnn.plan_call((4, 8), -1, "float16").data_type == 2
    assert cudnn.plan_call((4, 8), -1, "bfloat16").data_type == 9
    # alpha and beta are float for float, half and bfloat16 data, double only for double data
    assert cudnn.plan_call((4, 8), -1, "bfloat16").scaling_type is ctypes.c_float
    assert cudnn.plan_call((4, 8), -1, "float64").scaling_type is ctypes.c_double
    with pytest.raises(ValueError):
        cudnn.plan_call((4, 8), -1, "float32", "exact")
    with pytest.raises(cudnn.CudnnUnavailable):
        cudnn.plan_call((4, 8), -1, "int8")
    with pytest.raises(cudnn.CudnnUnavailable, match="32-bit"):
        cudnn.plan_call((1 << 16, 1 << 16), -1, "float16")


class FakeLibrary:
    """Records every call; ``fail`` makes the named function return that status."""

    def __init__(self, fail=None):
        self.calls = []
        self.fail = fail or {}

    def __getattr__(self, name):
        if not name.startswith("cudnn"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name, args))
            if name == "cudnnGetErrorString":
                return b"CUDNN_STATUS_BAD_PARAM"
            if name in ("cudnnCreate", "cudnnCreateTensorDescriptor"):
                args[0]._obj.value = 0x1000 + len(self.calls)
            return self.fail.get(name, 0)

        setattr(self, name, call)
        return call


def test_descriptor_calls_and_errors_against_a_stand_in_library():
    lib = FakeLibrary()
    wrapper = cudnn.Cudnn(lib, "fake")
    plan = cudnn.plan_call((8, 3, 5), 1, "float16")
    descriptor = wrapper.descriptor(plan)
    name, args = lib.calls[-1]
    assert name == "cudnnSetTensor4dDescriptorEx"
    assert args[1:] == (2, 8, 3, 5, 1, 15, 5, 1, 1)
    descriptor.close()
    assert lib.calls[-1][0] == "cudnnDestroyTensorDescriptor"
    handle = wrapper.handle(0)
    assert wrapper.handle(0) is handle and [c[0] for c in lib.calls].count("cudnnCreate") == 1

    failing = FakeLibrary(fail={"cudnnSetTensor4dDescriptorEx": 3})
    with pytest.raises(cudnn.CudnnError, match="CUDNN_STATUS_BAD_PARAM"):
        cudnn.Cudnn(failing, "fake").descriptor(plan)
    # the half-built descriptor is destroyed, not leaked
    assert failing.calls[-1][0] == "cudnnDestroyTensorDescriptor"


def test_a_planned_call_refuses_any_other_tensor():
    lib = FakeLibrary()
    forward = cudnn.make_softmax((4, 8), -1, "float32", cudnn=cudnn.Cudnn(lib, "fake"))
    with pytest.raises(ValueError, match="planned for"):
        forward(torch.zeros(4, 9))
    with pytest.raises(ValueError, match="planned for"):
        forward(torch.zeros(4, 8, dtype=torch.float16))
    with pytest.raises(cudnn.CudnnUnavailable, match="CUDA tensors"):
        forward(torch.zeros(4, 8))
    assert "cudnnSoftmaxForward" not in [name for name, _ in lib.calls]


def test_a_missing_library_is_one_line_not_a_traceback(tmp_path):
    with pytest.raises(cudnn.CudnnUnavailable, match="no usable libcudnn"):
        cudnn.load_library([str(tmp_path / "libcudnn.so.9")])
    with pytest.raises(cudnn.CudnnUnavailable, match="no libcudnn found"):
        cudnn.load_library([])
    assert isinstance(cudnn.candidate_paths(), list)


def test_the_peer_refuses_rather_than_crashes_without_cudnn(monkeypatch):
    from fastsoftmax.benchmark import peers
    from fastsoftmax.benchmark.shapes import Case

    def unavailable():
        raise cudnn.CudnnUnavailable("no libcudnn found")

    monkeypatch.setattr(cudnn, "get", unavailable)
    with pytest.raises(peers.Refused):
        peers.cudnn_impl().make(Case("bulk", (4, 8), -1, "float32"))
    usable, status = peers.cudnn_status()
    assert not usable and "no libcudnn found" in status


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape, dim", [((64, 1000), -1), ((3, 257, 5), 1), ((4096,), 0)])
def test_against_float64_on_the_gpu(dtype, shape, dim):
    try:
        cudnn.get()
    except cudnn.CudnnUnavailable as exc:
        pytest.skip(str(exc))
    dtype_name = str(dtype).replace("torch.", "")
    tolerance = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    # the fast algorithm subtracts no max, so it gets inputs whose exp stays inside float16's range
    for algorithm, scale in (("accurate", 3.0), ("fast", 1.0)):
        x = (torch.randn(shape, device="cuda") * scale).to(dtype)
        expected = torch.softmax(x.double(), dim)
        try:
            y = cudnn.make_softmax(shape, dim, dtype_name, algorithm)(x)
        except cudnn.CudnnError as exc:
            if dtype == torch.bfloat16 and "NOT_SUPPORTED" in str(exc):
                pytest.skip(f"this cuDNN has no bfloat16 softmax: {exc}")
            raise
        torch.cuda.synchronize()
        assert (y.double() - expected).abs().max().item() <= tolerance * expected.abs().max().item() + 1e-6
    log = cudnn.make_softmax(shape, dim, dtype_name, "log")(x)
    assert (log.double() - torch.log_softmax(x.double(), dim)).abs().max().item() <= tolerance * 20 + 1e-4
    y = torch.softmax(x.float(), dim).to(dtype)
    dy = torch.randn(shape, device="cuda").to(dtype)
    y64, dy64 = y.double(), dy.double()
    expected_dx = y64 * (dy64 - (y64 * dy64).sum(dim, keepdim=True))
    dx = cudnn.make_softmax(shape, dim, dtype_name, "accurate", "backward")(dy, y)
    assert (dx.double() - expected_dx).abs().max().item() <= tolerance * 4 * (expected_dx.abs().max().item() + 1)
