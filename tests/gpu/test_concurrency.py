"""Correct under threads, autograd's thread, side streams, CUDA graphs and several GPUs, for every
backend, through the public API. Every result is checked against float64."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch
from reference import check_backward, check_forward, check_widened_backward

import fastsoftmax
from fastsoftmax import dispatch

pytestmark = pytest.mark.gpu

BACKENDS = ("auto", "cuda", "triton")
#: (shape, dim): rows of 7 to 131072 columns, and non-last dims
PROBLEMS = [
    ((33, 7), -1),
    ((64, 1000), -1),
    ((8, 4096), -1),
    ((4, 32768), -1),
    ((3, 50257), -1),
    ((2, 131072), -1),
    ((1, 70000), -1),
    ((300, 40), 0),
    ((6, 100, 24), 1),
    ((16, 3, 5), 0),
]
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _available(backend: str) -> bool:
    return backend == "auto" or backend in dispatch.available_backends("cuda")


def _input(shape, dtype, device="cuda"):
    return (torch.randn(shape, device=device) * 4).to(dtype)


def _in_threads(worker, count: int = 8) -> list[str]:
    """Run ``worker(index, failures)`` on ``count`` threads at once; the failures they collected
    (every thread's, not only the first)."""
    failures: list[str] = []
    barrier = threading.Barrier(count)

    def start(index):
        barrier.wait()  # all threads call at once, where races show
        worker(index, failures)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


@pytest.mark.parametrize("backend", BACKENDS)
def test_many_threads_mixed_problems(backend):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")

    def worker(index: int, failures: list) -> None:
        generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
        for call in range(30):
            shape, dim = PROBLEMS[int(torch.randint(len(PROBLEMS), (1,), generator=generator))]
            dtype = DTYPES[(index + call) % len(DTYPES)]
            log = bool((index + call) % 2)
            x = _input(shape, dtype)
            try:
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim, backend=backend)
                torch.cuda.current_stream().synchronize()
                check_forward(y, x, dim, log)
            except Exception as error:  # collected, so that every thread's failures are seen
                failures.append(f"thread {index} call {call} {shape} dim {dim} {dtype} log={log}: {error!r}"[:400])

    failures = _in_threads(worker)
    assert not failures, f"{len(failures)} of 240 results wrong:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_running_backward(backend):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")

    def worker(index: int, failures: list) -> None:
        for call in range(10):
            shape, dim = PROBLEMS[(index * 3 + call) % len(PROBLEMS)]
            dtype = DTYPES[call % len(DTYPES)]
            log = bool(call % 2)
            x = _input(shape, dtype).requires_grad_(True)
            try:
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim, backend=backend)
                dy = torch.randn_like(y)
                (dx,) = torch.autograd.grad(y, x, dy)
                check_backward(dx, x, dy, dim, log)
            except Exception as error:
                failures.append(f"thread {index} call {call} {shape} dim {dim} {dtype}: {error!r}"[:400])

    failures = _in_threads(worker)
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_with_a_float32_result(backend):
    """16-bit inputs with a float32 result, by ``dtype=`` or under autocast, forward and backward:
    such calls leave plans of their own behind (the one pass, torch's fused kernel, or the cast),
    which other threads' calls of the same geometry then take."""
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")

    def worker(index: int, failures: list) -> None:
        for call in range(16):
            shape, dim = PROBLEMS[(index + call) % len(PROBLEMS)]
            dtype = (torch.bfloat16, torch.float16)[call % 2]
            log, autocast, needs_grad = bool(call % 3 == 1), bool(call % 4 >= 2), bool(index % 2)
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            x = _input(shape, dtype).requires_grad_(needs_grad)
            try:
                if autocast:
                    with torch.autocast("cuda", dtype=dtype):
                        y = op(x, dim, backend=backend)
                else:
                    y = op(x, dim, dtype=torch.float32, backend=backend)
                assert y.dtype == torch.float32
                check_forward(y, x.detach().float(), dim, log)
                if needs_grad:
                    dy = torch.randn_like(y)
                    (dx,) = torch.autograd.grad(y, x, dy)
                    check_widened_backward(dx, x, dy, dim, log)
            except Exception as error:
                failures.append(
                    f"thread {index} call {call} {shape} dim {dim} {dtype} log={log} autocast={autocast} "
                    f"grad={needs_grad}: {error!r}"[:400]
                )

    failures = _in_threads(worker)
    assert not failures, f"{len(failures)} of 128 results wrong:\n" + "\n".join(failures[:10])


def test_forced_tier_stays_in_its_thread():
    """A tier forced in one thread must not change what another thread computes."""
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def forcing():
        with dispatch.forced("triton", "split"):
            inside.set()
            release.wait(30)
            seen["forcing"] = dispatch.current_override()

    thread = threading.Thread(target=forcing)
    thread.start()
    inside.wait(30)
    seen["other"] = dispatch.current_override()
    x = _input((8, 300), torch.float32)
    check_forward(fastsoftmax.softmax(x, -1, backend="cuda"), x, -1)
    release.set()
    thread.join()
    assert seen == {"forcing": ("triton", "split"), "other": None}


FIRST_BACKWARD = textwrap.dedent("""
    import torch, fastsoftmax
    backend = {backend!r}
    # an evaluation step first: a call with no gradient, on the main thread
    with torch.no_grad():
        fastsoftmax.softmax(torch.randn(8, 512, device="cuda"), -1, backend=backend)
    # then the first training step: autograd runs the backward on its own device thread
    x = torch.randn(4096, 3000, device="cuda").to(torch.bfloat16).requires_grad_(True)
    y = fastsoftmax.softmax(x, -1, backend=backend)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    x64, y64, dy64 = x.double(), torch.softmax(x.double(), -1), dy.double()
    ref = y64 * (dy64 - (dy64 * y64).sum(-1, keepdim=True))
    err = (dx.double() - ref).abs().max().item()
    assert err < 2e-2, err
    print("ok", err)
""")


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_backward_after_a_no_grad_call_in_a_fresh_process(backend):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    done = subprocess.run(
        [sys.executable, "-c", FIRST_BACKWARD.format(backend=backend)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_side_stream(backend):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    side = torch.cuda.Stream()
    for shape, dim in PROBLEMS[:6]:
        x = _input(shape, torch.bfloat16)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = fastsoftmax.softmax(x, dim, backend=backend)
            z = fastsoftmax.log_softmax(x, dim, backend=backend)
        side.synchronize()
        check_forward(y, x, dim)
        check_forward(z, x, dim, True)


def _captured(step):
    """``step`` warmed up on a side stream (compiles, plans), as torch.cuda.graph asks, then captured:
    (the graph, what the captured call returned)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        returned = step()
    return graph, returned


def _replayed(graph, inputs: tuple, outputs: tuple, replays: int = 3):
    """Per replay of ``graph``: fresh data copied into its ``inputs`` (returned, to check against),
    its ``outputs`` poisoned first, so that an element a replay does not write shows."""
    for _ in range(replays):
        fresh = tuple(_input(t.shape, t.dtype) for t in inputs)
        for static, data in zip(inputs, fresh):
            static.copy_(data)
        for output in outputs:
            output.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        yield fresh


@pytest.mark.parametrize("backend", BACKENDS)
# (32, 65536, 16) over dim 1: the backward of "auto" and "triton" takes Triton's relay tier, whose
# counters are zeroed by a memset each call (captured, so every replay starts from zero)
@pytest.mark.parametrize(
    "shape,dim", [((64, 1000), -1), ((2, 131072), -1), ((1, 1 << 20), -1), ((300, 40), 0), ((32, 65536, 16), 1)]
)
def test_cuda_graph_capture_and_replay_on_new_data(backend, shape, dim):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    static_x = _input(shape, torch.bfloat16)
    static_dy = torch.randn(shape, device="cuda").to(torch.bfloat16)

    def step():
        y = fastsoftmax.softmax(static_x, dim, backend=backend)
        return y, fastsoftmax.softmax_backward(static_dy, y, dim, backend=backend)

    graph, (static_y, static_dx) = _captured(step)
    for x, dy in _replayed(graph, (static_x, static_dy), (static_y, static_dx)):
        check_forward(static_y, x, dim)
        y64 = torch.softmax(x.double(), dim)
        reference = y64 * (dy.double() - (dy.double() * y64).sum(dim, keepdim=True))
        torch.testing.assert_close(static_dx.double(), reference, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dim", [((64, 1000), -1), ((4, 151936), -1), ((300, 40), 0)])
def test_cuda_graph_capture_writes_a_preallocated_out(backend, shape, dim):
    # serving code captures a graph over outputs it allocated once: out= writes them on every replay
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    static_x = _input(shape, torch.bfloat16)
    static_y = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
    static_z = torch.empty(shape, device="cuda", dtype=torch.bfloat16)

    def step():
        fastsoftmax.softmax(static_x, dim, out=static_y, backend=backend)
        fastsoftmax.log_softmax(static_x, dim, out=static_z, backend=backend)

    graph, _ = _captured(step)
    for (x,) in _replayed(graph, (static_x,), (static_y, static_z)):
        check_forward(static_y, x, dim)
        check_forward(static_z, x, dim, True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dim", [((64, 1000), -1), ((2, 131072), -1), ((300, 40), 0)])
def test_cuda_graph_capture_with_a_float32_result(backend, shape, dim):
    """A 16-bit input's float32 result in a captured graph: ``dtype=`` and autocast (the second call
    of each geometry in the warm-up takes its plan, and the capture takes it too)."""
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    static_x = _input(shape, torch.bfloat16)

    def step():
        y = fastsoftmax.softmax(static_x, dim, dtype=torch.float32, backend=backend)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            z = fastsoftmax.log_softmax(static_x, dim, backend=backend)
        return y, z

    graph, (static_y, static_z) = _captured(step)
    assert static_y.dtype == static_z.dtype == torch.float32
    for (x,) in _replayed(graph, (static_x,), (static_y, static_z)):
        check_forward(static_y, x.float(), dim)
        check_forward(static_z, x.float(), dim, True)


def test_graph_replay_costs_no_host_time_in_fastsoftmax(monkeypatch):
    """Inside a captured graph, a replay runs no fastsoftmax code at all."""
    x = _input((64, 1000), torch.bfloat16)
    fastsoftmax.softmax(x, -1, backend="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = fastsoftmax.softmax(x, -1, backend="cuda")
    calls = []
    from fastsoftmax.backends.cuda import launch

    monkeypatch.setattr(launch, "enter", lambda *a: calls.append(a) or False)
    monkeypatch.setattr(dispatch, "resolve", lambda *a: calls.append(a))
    graph.replay()
    torch.cuda.synchronize()
    assert not calls
    check_forward(y, x, -1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inference_mode(backend):
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    with torch.inference_mode():
        for shape, dim in PROBLEMS[:5]:
            x = _input(shape, torch.float16)
            check_forward(fastsoftmax.softmax(x, dim, backend=backend), x, dim)
            check_forward(fastsoftmax.log_softmax(x, dim, backend=backend), x, dim, True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_on_another_gpu_than_the_current_one(backend):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    torch.cuda.set_device(0)
    for device in ("cuda:1", "cuda:0", "cuda:1"):
        for shape, dim in PROBLEMS[:7]:
            x = _input(shape, torch.bfloat16, device).requires_grad_(True)
            y = fastsoftmax.softmax(x, dim, backend=backend)
            assert y.device == x.device
            dy = torch.randn_like(y)
            (dx,) = torch.autograd.grad(y, x, dy)
            assert dx.device == x.device
            torch.cuda.synchronize(device)
            check_forward(y, x, dim)
            check_backward(dx, x, dy, dim, False)
            out = torch.full_like(y, float("nan"))  # out= on that device: written there
            assert fastsoftmax.log_softmax(x.detach(), dim, out=out, backend=backend) is out
            torch.cuda.synchronize(device)
            check_forward(out, x, dim, True)
            assert torch.cuda.current_device() == 0, "the caller's current device must be left as it was"
    with pytest.raises(RuntimeError, match="expected out tensor on cuda:1"):
        elsewhere = torch.empty(4, 50, dtype=torch.bfloat16, device="cuda:0")
        fastsoftmax.softmax(_input((4, 50), torch.bfloat16, "cuda:1"), -1, out=elsewhere)


def test_other_gpu_uses_that_devices_current_stream():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    torch.cuda.set_device(0)
    side = torch.cuda.Stream(device="cuda:1")
    x = _input((64, 50257), torch.bfloat16, "cuda:1")
    with torch.cuda.stream(side):  # makes side the current stream of cuda:1 only
        torch.cuda._sleep(50_000_000)  # the stream is busy: a launch elsewhere would run first
        y = fastsoftmax.softmax(x, -1, backend="cuda")
    side.synchronize()
    check_forward(y, x, -1)


def test_threads_on_two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")

    def worker(index, failures):
        device = f"cuda:{index % 2}"
        if index % 4 < 2:
            torch.cuda.set_device(index % 2)  # half the threads set their device, half do not
        for call in range(12):
            shape, dim = PROBLEMS[(index + call) % len(PROBLEMS)]
            x = _input(shape, torch.float32, device)
            try:
                y = fastsoftmax.softmax(x, dim, backend="cuda" if call % 2 else "auto")
                torch.cuda.synchronize(device)
                check_forward(y, x, dim)
            except Exception as error:
                failures.append(f"{device} {shape}: {error!r}"[:300])

    failures = _in_threads(worker)
    assert not failures, "\n".join(failures[:10])


BEYOND_2_TO_THE_31 = [((32768, 65537), -1), ((65537, 32768), 0), ((2**31 + 3, 2), -1)]


def _need_memory(backend: str, shape, tensors: int) -> None:
    if not _available(backend):
        pytest.skip(f"backend {backend!r} is not available")
    free, _ = torch.cuda.mem_get_info()
    if free < tensors * shape[0] * shape[1] * 2 + (1 << 30):
        pytest.skip("not enough free GPU memory")


def _picks_across_2_to_the_31(shape, dim: int) -> list[int]:
    """Rows (dim -1) or columns (dim 0) to check against float64, whose reference for the whole tensor
    would take 32 GiB: at both ends and across the 2^31-element boundary."""
    if dim == -1:
        boundary = (2**31) // shape[1]
        picks = sorted({0, 1, boundary - 1, boundary, min(boundary + 1, shape[0] - 1), shape[0] - 1})
        if shape[0] > 2**31:
            picks = sorted({*picks, 2**31 - 1, 2**31, 2**31 + 1})
    else:
        picks = sorted({0, 1, shape[1] // 2, shape[1] - 1})
    return picks


@pytest.mark.parametrize("backend", ("cuda", "triton"))
@pytest.mark.parametrize("shape,dim", BEYOND_2_TO_THE_31)
def test_more_than_2_to_the_31_elements(backend, shape, dim):
    # the last shape: more than 2^31 rows, whose row index itself needs 64 bits
    _need_memory(backend, shape, 4)
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    y = fastsoftmax.softmax(x, dim, backend=backend)
    assert y.numel() > 2**31
    for i in _picks_across_2_to_the_31(shape, dim):
        if dim == -1:
            check_forward(y[i : i + 1], x[i : i + 1], -1)
        else:
            check_forward(y[:, i : i + 1], x[:, i : i + 1], 0)
    del y
    torch.cuda.empty_cache()


@pytest.mark.parametrize("backend", ("cuda", "triton"))
@pytest.mark.parametrize("shape,dim", BEYOND_2_TO_THE_31)
def test_backward_of_more_than_2_to_the_31_elements(backend, shape, dim):
    # the backward's offsets and row indices past 2^31 (log-softmax on the rows past 2^31 rows)
    _need_memory(backend, shape, 5)
    log = shape[0] > 2**31
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    (dx,) = torch.autograd.grad(op(x, dim, backend=backend), x, dy)
    assert dx.numel() > 2**31
    for i in _picks_across_2_to_the_31(shape, dim):
        pick = (slice(i, i + 1),) if dim == -1 else (slice(None), slice(i, i + 1))
        check_backward(dx[pick], x.detach()[pick], dy[pick], dim, log)
    del dx
    torch.cuda.empty_cache()
