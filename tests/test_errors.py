"""Bad input raises the error torch would raise, with a message that names the problem."""

import pytest
import torch
from reference import DEVICE

import fastsoftmax


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.complex64, torch.uint8])
def test_non_float_dtypes_raise_type_error(dtype):
    x = torch.zeros(3, 4, dtype=dtype, device=DEVICE)
    with pytest.raises(TypeError, match=str(dtype)):
        fastsoftmax.softmax(x)
    with pytest.raises(TypeError, match="floating-point"):
        fastsoftmax.log_softmax(x)
    # torch's kernels raise NotImplementedError for these types: so does fastsoftmax (the same error)
    with pytest.raises(NotImplementedError):
        torch.softmax(x, -1)
    for call in (
        lambda: fastsoftmax.softmax(x),
        lambda: fastsoftmax.softmax(x.float(), -1, dtype=dtype),
        lambda: fastsoftmax.softmax_backward(x, x, -1),
    ):
        with pytest.raises(NotImplementedError, match="floating-point"):
            call()


def _nested_and_sparse():
    import warnings

    with warnings.catch_warnings():  # (the prototype and beta stage notices)
        warnings.simplefilter("ignore")
        rows = [torch.randn(2, 5, device=DEVICE), torch.randn(3, 5, device=DEVICE)]
        yield "nested", torch.nested.nested_tensor(rows)
        yield "nested", torch.nested.nested_tensor(rows, layout=torch.jagged)
        yield "sparse_coo", torch.randn(3, 5, device=DEVICE).to_sparse()
        yield "sparse_csr", torch.randn(3, 5, device=DEVICE).to_sparse_csr()


def test_nested_and_sparse_tensors_are_refused_by_name():
    """Tensors without strides (nested, sparse) raise NotImplementedError naming their kind, on the
    first call and after a plain tensor of the same shape left its plans (the fast paths' keys read
    sizes and strides, which these do not have), forward, backward and as out."""
    dense = torch.randn(3, 5, device=DEVICE)
    broadcast = torch.randn(1, 1, device=DEVICE).expand(3, 5)  # strides (0, 0), as a sparse COO tensor's
    for kind, x in _nested_and_sparse():
        calls = {
            "softmax": lambda: fastsoftmax.softmax(x, -1),
            "log_softmax": lambda: fastsoftmax.log_softmax(x, -1),
            "softmax_backward": lambda: fastsoftmax.softmax_backward(x, x, -1),
            "out": lambda: fastsoftmax.softmax(dense, -1, out=x),
        }
        for _ in range(2):
            for name, call in calls.items():
                with pytest.raises(NotImplementedError, match=rf"^fastsoftmax\.\w+(\(\))?: .*{kind}") as raised:
                    call()
                assert "Internal error" not in str(raised.value), (kind, name)
            for plain in (dense, broadcast):  # plans for the plain tensors' geometries
                fastsoftmax.softmax(plain, -1)
                fastsoftmax.softmax_backward(plain, fastsoftmax.softmax(plain, -1), -1)
                fastsoftmax.softmax(plain, -1, out=torch.empty_like(dense))


def test_subclasses_that_do_not_compute_the_ops_are_named():
    """A tensor subclass that computes ops itself but not fastsoftmax's (torch.masked's
    MaskedTensor) raises NotImplementedError naming it, forward, log-softmax, backward (as its
    output or its gradient alone) and through the module, not torch's dispatch error naming only the
    op (still a TypeError, as that was)."""
    import warnings

    with warnings.catch_warnings():  # (the prototype stage notice)
        warnings.simplefilter("ignore")
        from torch.masked import masked_tensor

        x = masked_tensor(torch.randn(3, 5, device=DEVICE), torch.rand(3, 5, device=DEVICE) > 0.3)
        plain = torch.softmax(torch.randn(3, 5, device=DEVICE), -1)
        calls = {
            "softmax": lambda: fastsoftmax.softmax(x, -1),
            "log_softmax": lambda: fastsoftmax.log_softmax(x, 0),
            "softmax_backward": lambda: fastsoftmax.softmax_backward(x, x, -1),
            "softmax_backward ": lambda: fastsoftmax.softmax_backward(x, plain, -1),  # a plain output
            "softmax  ": lambda: fastsoftmax.nn.Softmax(-1)(x),
        }
        for name, call in calls.items():
            for error in (NotImplementedError, TypeError):
                with pytest.raises(error, match=rf"^fastsoftmax\.{name.strip()}: MaskedTensor tensors"):
                    call()


def test_non_tensor_raises_type_error():
    with pytest.raises(TypeError, match="torch.Tensor"):
        fastsoftmax.softmax([1.0, 2.0])


def test_bad_dtype_argument():
    with pytest.raises(TypeError, match="dtype"):
        fastsoftmax.softmax(torch.randn(3, device=DEVICE), dtype=torch.int32)


@pytest.mark.parametrize("shape,dim", [((3, 4), 2), ((3, 4), -3), ((5,), 1), ((), 1)])
def test_dim_out_of_range_raises_index_error(shape, dim):
    x = torch.randn(shape, device=DEVICE)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fastsoftmax.softmax(x, dim)
    with pytest.raises(IndexError):
        torch.softmax(x, dim)  # torch agrees that this is an IndexError


def test_unknown_backend_raises_value_error():
    with pytest.raises(ValueError, match="unknown backend 'cudnn'"):
        fastsoftmax.softmax(torch.randn(3, 4, device=DEVICE), backend="cudnn")
    for module in (fastsoftmax.nn.Softmax, fastsoftmax.nn.LogSoftmax):  # at construction
        with pytest.raises(ValueError, match="unknown backend 'cudnn'"):
            module(1, backend="cudnn")


def test_triton_on_cpu_without_interpreter_says_why(monkeypatch):
    from fastsoftmax import dispatch
    from fastsoftmax.backends import triton as triton_backend

    monkeypatch.setattr(triton_backend, "INTERPRETED", False)
    dispatch.clear_caches()
    try:
        with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
            fastsoftmax.softmax(torch.randn(3, 4), backend="triton")
        # "auto" on the CPU quietly uses torch's CPU kernel instead
        x = torch.randn(3, 4)
        torch.testing.assert_close(fastsoftmax.softmax(x), torch.softmax(x, -1), rtol=0, atol=0)
    finally:
        dispatch.clear_caches()


def test_missing_triton_says_what_to_install(monkeypatch):
    from fastsoftmax import dispatch
    from fastsoftmax.backends import triton as triton_backend

    monkeypatch.setattr(triton_backend, "_IMPORT_ERROR", ImportError("No module named 'triton'"))
    dispatch.clear_caches()
    try:
        with pytest.raises(RuntimeError, match="pip install triton"):
            fastsoftmax.softmax(torch.randn(3, 4, device=DEVICE), backend="triton")
    finally:
        dispatch.clear_caches()


def test_forced_tier_that_cannot_hold_the_row():
    with fastsoftmax.dispatch.forced("triton", "tile"):
        with pytest.raises(ValueError, match="cannot compute"):
            fastsoftmax.softmax(torch.randn(1, 70000, device=DEVICE))


def test_backward_shape_mismatch():
    y = torch.rand(3, 4, device=DEVICE)
    for error in (ValueError, RuntimeError):  # RuntimeError: torch's backward raises it
        with pytest.raises(error, match="shape"):
            fastsoftmax.softmax_backward(torch.rand(3, 5, device=DEVICE), y)
    with pytest.raises(RuntimeError):
        torch._softmax_backward_data(torch.rand(3, 5, device=DEVICE), y, 1, y.dtype)


def test_backward_dtype_mismatch():
    y = torch.rand(3, 4, device=DEVICE)
    dy = torch.rand(3, 4, device=DEVICE, dtype=torch.float64)
    for error in (TypeError, RuntimeError):
        with pytest.raises(error, match="share dtype and device"):
            fastsoftmax.softmax_backward(dy, y)
    with pytest.raises(RuntimeError):
        torch._softmax_backward_data(dy, y, 1, y.dtype)


@pytest.mark.parametrize("backend", ["auto", "triton"])
def test_input_is_never_modified(backend):
    x = torch.randn(6, 129, device=DEVICE) * 3
    before = x.clone()
    fastsoftmax.softmax(x, 0, backend=backend)
    fastsoftmax.log_softmax(x, 1, backend=backend)
    assert torch.equal(x, before)
