"""The repeated-call path of the CUDA backend (``CudaBackend.prepare``), without a GPU: the driver
side is replaced by recorders, so what is checked is which plan each call reaches and that the
context is entered and left as it must be."""

import pytest
import torch

from fastsoftmax.backends.cuda import backend as cuda_backend
from fastsoftmax.backends.cuda import launch, plans, tiers


@pytest.fixture
def prepared(monkeypatch):
    built, launched, entered = [], [], []
    current = {"device": 0}
    backend = cuda_backend.CudaBackend()

    def plan(key):
        built.append(key)
        return lambda pointers, stream, key=key: launched.append((key, pointers, stream))

    def enter(device):
        entered.append(device)
        return device != current["device"]

    monkeypatch.setattr(backend, "plan", plan)
    monkeypatch.setattr(launch, "_torch_device", lambda: current["device"])
    monkeypatch.setattr(cuda_backend, "raw_stream", lambda device: 1000 + device)
    monkeypatch.setattr(cuda_backend, "enter", enter)
    monkeypatch.setattr(cuda_backend, "leave", lambda: entered.append("leave"))
    monkeypatch.setattr(launch._thread, "context_ready", True, raising=False)
    return backend, built, launched, entered, current


def test_forward_plans_by_log_and_alignment(prepared):
    backend, built, launched, entered, _ = prepared
    run = backend.prepare("block_regs", (4, 1024, 1), [(1024, 1024, 1)] * 2, torch.bfloat16, 0, False)
    x, y = torch.empty(4, 1024, dtype=torch.bfloat16), torch.empty(4, 1024, dtype=torch.bfloat16)
    run(x, y, False)
    run(x, y, False)
    run(x, y, True)
    assert len(built) == 2, "a geometry, direction and alignment seen before must not be planned again"
    assert [key[6] for key in built] == [False, True]
    assert all(key[8] == (x.data_ptr() | y.data_ptr() | 2048) & 15 for key in built)
    assert [entry[1] for entry in launched] == [(x.data_ptr(), y.data_ptr())] * 3
    assert all(entry[2] == 1000 for entry in launched)
    # an output one element in: another alignment, and the pointers' offsets within 16 bytes differ
    # (plans.PHASES_DIFFER), another plan
    y_odd = torch.empty(4 * 1024 + 1, dtype=torch.bfloat16)[1:].view(4, 1024)
    run(x, y_odd, False)
    low = (x.data_ptr() | y_odd.data_ptr() | 2048) & 15
    assert len(built) == 3 and built[-1][8] == low | plans.PHASES_DIFFER
    # both one element in: the same low bits, offsets alike, another plan; repeated, none
    x_odd = torch.empty(4 * 1024 + 1, dtype=torch.bfloat16)[1:].view(4, 1024)
    run(x_odd, y_odd, False)
    run(x_odd, y_odd, False)
    assert len(built) == 4 and built[-1][8] == low
    run(x, y_odd, False)
    assert len(built) == 4
    # only the calls that met a new plan took the general path (enter); the repeated ones did not
    assert entered == [0, 0, 0, 0]


def test_backward_takes_three_tensors(prepared):
    backend, built, launched, _, _ = prepared
    run = backend.prepare("warp", (8, 100, 1), [(100, 100, 1)] * 3, torch.float32, 0, True)
    y, dy, dx = (torch.empty(8, 100) for _ in range(3))
    run(y, dy, dx, True)
    run(y, dy, dx, True)
    assert len(built) == 1 and built[0][7] is True
    assert [entry[1] for entry in launched] == [(y.data_ptr(), dy.data_ptr(), dx.data_ptr())] * 2
    # dy or dx alone at another offset within 16 bytes: plans of their own, with PHASES_DIFFER
    for odd in (1, 2):
        tensors = [y, dy, dx]
        tensors[odd] = torch.empty(8 * 100 + 1)[1:].view(8, 100)
        run(*tensors, True)
        run(*tensors, True)
        assert built[-1][8] == ((y.data_ptr() | tensors[odd].data_ptr() | 400) & 15) | plans.PHASES_DIFFER
    assert len(built) == 2  # the same key both times: dy's and dx's offsets differ alike from y's


def test_tuning_reaches_the_plan_key(prepared):
    backend, built, _, _, _ = prepared
    run = backend.prepare("block_regs", (4, 1024, 1), [(1024, 1024, 1)] * 2, torch.float32, 0, False)
    x, y = torch.empty(4, 1024), torch.empty(4, 1024)
    run(x, y, False)
    with tiers.tuned(block_regs_elems=8):
        run(x, y, False)
        run(x, y, False)
    run(x, y, False)
    assert [key[10] for key in built] == [tiers.DEFAULT_TUNING, tiers.Tuning(block_regs_elems=8)]


def test_another_device_than_the_current_one_is_entered_and_left(prepared):
    backend, built, launched, entered, current = prepared
    run = backend.prepare("block_regs", (4, 1024, 1), [(1024, 1024, 1)] * 2, torch.float32, 1, False)
    x, y = torch.empty(4, 1024), torch.empty(4, 1024)
    current["device"] = 0
    run(x, y, False)
    run(x, y, False)
    assert entered == [1, "leave", 1, "leave"], "a tensor of cuda:1 is launched with cuda:1's context pushed"
    assert all(key[9] == 1 for key in built) and all(entry[2] == 1001 for entry in launched)
