"""The Triton backend's direct launch path (fastsoftmax/backends/triton/launch.py), on this machine
with a stand-in for a Triton kernel and its compiled form: what reaches Triton's launcher on a
repeated call, and when a call goes back through Triton to compile. (On a GPU every Triton test
runs this path with real kernels.)"""

from __future__ import annotations

import importlib
import threading

import pytest
import torch

launch_module = importlib.import_module("fastsoftmax.backends.triton.launch")
knobs = pytest.importorskip("triton.knobs")  # (Triton 3.4 and later, as the direct path)

STREAM = 1234


class FakeCompiled:
    function, packed_metadata = "function handle", ("warps", "ctas", "shared")

    def __init__(self, runs):
        self.runs = runs

    def run(self, *args):
        self.runs.append(args)

    def launch_metadata(self, grid, stream, *args):
        return ("metadata", grid, stream, args)


class FakeKernel:
    """As a JITFunction: ``kernel[grid](*args, **config)`` compiles (here: records) and returns the
    compiled kernel, which the later launches run."""

    def __init__(self, arg_names):
        self.arg_names = arg_names
        self.compiles, self.runs = [], []

    def __getitem__(self, grid):
        def first_call(*args, **config):
            self.compiles.append((grid, args, config))
            return FakeCompiled(self.runs)

        return first_call


@pytest.fixture
def direct(monkeypatch):
    """The direct path, as on a GPU: a current device of 0 and its stream; fresh caches."""
    if not launch_module._DIRECT:
        pytest.skip("the installed Triton's JITFunction.run has no direct launch to follow")
    monkeypatch.setattr(launch_module, "_current_device", lambda: 0)
    monkeypatch.setattr(launch_module, "_current_stream", lambda device_index: STREAM)
    monkeypatch.setattr(launch_module, "_compiled", {})
    monkeypatch.setattr(launch_module, "_scalar_specs", {})


CONFIG = (("BLOCK", 64), ("LOG", True), ("num_warps", 4))
NAMES = ["x_ptr", "y_ptr", "n", "stride", "BLOCK", "LOG"]


def _go(kernel, tensors, scalars, config=CONFIG):
    launch_module.launch(kernel, 7, tensors, scalars, config, 0, False)


def test_a_repeated_launch_hands_the_launcher_integer_pointers_and_no_hooks(direct):
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(64), torch.empty(64)
    _go(kernel, (x, y), (64, 1))
    assert len(kernel.compiles) == 1 and not kernel.runs
    grid, args, config = kernel.compiles[0]
    assert grid == (7,) and args[:2] == (x, y) and args[2:] == (64, 1) and config == dict(CONFIG)
    x2, y2 = torch.randn(64), torch.empty(64)  # new tensors, the same specialisation
    _go(kernel, (x2, y2), (64, 1))
    assert len(kernel.compiles) == 1, "a launch of a specialisation already compiled went back to Triton"
    (run,) = kernel.runs
    pointers = (x2.data_ptr(), y2.data_ptr())  # handed as integers
    head = (7, 1, 1, STREAM, FakeCompiled.function, FakeCompiled.packed_metadata, None, None, None)
    assert run == head + pointers + (64, 1, 64, True)  # no metadata or hooks; the constexprs last


def test_what_triton_specialises_on_starts_a_new_compile(direct):
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(72), torch.empty(72)
    _go(kernel, (x, y), (64, 1))
    _go(kernel, (x[1:65], y), (64, 1))  # x 4 bytes past its 16-byte boundary
    _go(kernel, (x.double(), y), (64, 1))  # another dtype
    _go(kernel, (x, y), (64, 16))  # a stride divisible by 16
    _go(kernel, (x, y), (1 << 31, 1))  # past int32
    _go(kernel, (x, y), (64, 1), CONFIG[:1] + (("LOG", False),) + CONFIG[2:])  # another constexpr
    assert len(kernel.compiles) == 6 and not kernel.runs
    _go(kernel, (x[4:68], y), (80, 1))  # as the first call: 16 bytes on, 64 and 80 both divisible by 16
    assert len(kernel.compiles) == 6 and len(kernel.runs) == 1


@pytest.mark.parametrize("other", [1.0, True])
def test_equal_scalars_of_other_types_are_told_apart(direct, other):
    """1, 1.0 and True are equal and hash alike, but Triton compiles each differently."""
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(8), torch.empty(8)
    _go(kernel, (x, y), (8, 1))
    _go(kernel, (x, y), (8, other))
    assert len(kernel.compiles) == 2 and type(kernel.compiles[1][1][3]) is type(other)


def test_registered_hooks_get_the_launch_and_its_metadata(direct):
    if launch_module._HookChain is None:
        pytest.skip("this Triton's launch hooks are not chains")
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(8), torch.empty(8)
    _go(kernel, (x, y), (8, 1))
    enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    seen = []
    enter.add(seen.append)
    try:
        _go(kernel, (x, y), (8, 1))
    finally:
        enter.remove(seen.append)
    run = kernel.runs[-1]
    # the exit chain, empty, is not handed on; the metadata is built from the tensors themselves (as
    # Triton builds it: a kernel's own launch_metadata function may read them), not their pointers
    metadata = run[6]
    assert metadata[:3] == ("metadata", (7, 1, 1), STREAM) and metadata[3][2:] == (8, 1, 64, True)
    assert metadata[3][0] is x and metadata[3][1] is y and run[7] is enter and run[8] is None
    leave.add(seen.append)
    try:
        _go(kernel, (x, y), (8, 1))
    finally:
        leave.remove(seen.append)
    assert kernel.runs[-1][6][0] == "metadata" and kernel.runs[-1][7:9] == (None, leave)
    _go(kernel, (x, y), (8, 1))
    assert kernel.runs[-1][6:9] == (None, None, None), "an emptied chain still reached the launcher"


def test_a_tensor_among_the_scalars_is_refused(direct):
    kernel = FakeKernel(NAMES)
    x = torch.randn(8)
    with pytest.raises(TypeError, match="of type Tensor is not supported"):
        _go(kernel, (x,), (x, 1))
    assert not kernel.compiles


def test_scalar_specialisations_kept_are_bounded(direct, monkeypatch):
    monkeypatch.setattr(launch_module, "_SCALAR_SPECS_KEPT", 16)
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(8), torch.empty(8)
    for n in range(40):
        _go(kernel, (x, y), (n + 2, 3))
        assert len(launch_module._scalar_specs) <= 16
    # n + 2 over 2..41: 1 is never seen, so the specialisations are (n % 16 == 0) x (int32): two
    assert len(kernel.compiles) == 2 and len(kernel.runs) == 38


def test_threads_share_first_calls_and_later_ones(direct):
    kernel = FakeKernel(NAMES)
    x, y = torch.randn(64), torch.empty(64)
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        for _ in range(50):
            _go(kernel, (x, y), (64, 1))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(kernel.compiles) == 1 and len(kernel.runs) == 8 * 50 - 1
