"""Shared test set-up.

Without a GPU the Triton kernels run in Triton's interpreter on CPU tensors; the interpreter is
chosen when Triton decorates the kernels, so the variable is set here, before fastsoftmax loads.
Every kernel output is poisoned with NaN before the kernel runs, so an element it fails to write
shows up as a mismatch against the float64 reference.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
if "PYTEST_XDIST_WORKER" in os.environ:
    # one intra-op thread a test worker: the workers already fill the cores, and torch's helper
    # threads spinning after each CPU op took time from NVRTC compiles in the other worker
    torch.set_num_threads(1)

import pytest  # noqa: E402

import fastsoftmax._layout  # noqa: E402


@pytest.fixture(autouse=True)
def poison_outputs(monkeypatch):
    def poisoned_empty_like(tensor, **kwargs):
        return torch.empty_like(tensor, **kwargs).fill_(float("nan"))

    monkeypatch.setattr(fastsoftmax._layout, "new_empty_like", poisoned_empty_like)


@pytest.fixture(autouse=True)
def fresh_seed(request):
    # A different seed per test and per run: inputs are fresh random data, never a fixed tensor
    # a kernel could be tuned to. The seed is printed on failure to replay it.
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    request.node.user_properties.append(("seed", seed))
    yield


#: the NVRTC compile units by how long they take (the flat_rows ones 35-57 s on two cores, the
#: staged ones 12-31 s): run first, longest first, so that none is left for the end (the README's
#: command, --dist worksteal, hands an idle worker the other's queued tests)
_COMPILE_ORDER = ("flat_rows", "strided_staged", "cluster", "warp", "block_regs")


def _compile_rank(item) -> int:
    if "test_every_instance_compiles" not in item.nodeid:
        return len(_COMPILE_ORDER) + 1
    return next((i for i, unit in enumerate(_COMPILE_ORDER) if f"[{unit}" in item.nodeid), len(_COMPILE_ORDER))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_compile_rank)  # stable: the rest keeps its order
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_makereport(item, call):
    for name, value in item.user_properties:
        if name == "seed" and call.excinfo is not None:
            item.add_report_section(call.when, "seed", f"torch.manual_seed({value})")


_FAILURE_LOG = os.environ.get("FASTSOFTMAX_TEST_LOG")
# under pytest-xdist the hooks below run in the workers and again in the controller: log once
_LOGGING = bool(_FAILURE_LOG) and "PYTEST_XDIST_WORKER" not in os.environ


def pytest_runtest_logstart(nodeid, location):
    # started and finished tests go to a second file, so that a run cut by its limit names the
    # tests that were still running (a hang) as well as those that never started
    if _LOGGING:
        with open(_FAILURE_LOG + ".progress", "a") as log:
            log.write(f"start {nodeid}\n")


def pytest_runtest_logfinish(nodeid, location):
    if _LOGGING:
        with open(_FAILURE_LOG + ".progress", "a") as log:
            log.write(f"done {nodeid}\n")


def pytest_runtest_logreport(report):
    # On the device a run may be cut by its time limit before pytest prints its summary: each
    # failure, and each slow test, is written out as it happens (FASTSOFTMAX_TEST_LOG=path).
    if not _LOGGING:
        return
    failed = report.failed
    slow = report.when == "call" and report.duration > 5
    if failed or slow:
        with open(_FAILURE_LOG, "a") as log:
            status = f"FAILED ({report.when})" if failed else "slow"
            log.write(f"{status} {report.duration:.1f}s {report.nodeid}\n")
            if failed:
                log.write(str(report.longrepr)[-3000:] + "\n\n")
