"""GPUs other than the H100 and H200 the package is measured on, without one: what NVRTC can compile
for (``compiler.arch_unsupported_reason``, which makes the CUDA backend unavailable, so that "auto"
takes another), and whether a GPU holds the cluster kernels' widest clusters (``launch.holds_cluster``),
the driver's answers played by a recorder over cuda.bindings' own types; with a GPU, the answer of an
H100 or H200, and the cluster tier run as it runs where clusters hold 8 CTAs at most.

A GPU whose clusters hold fewer CTAs than the kernels launch (8 where the non-portable 16 is not
offered, or groups of fewer SMs) gets the cluster tier in clusters of at most 8 and no tier that
needs 16 (tests/cuda/test_grid_row_plan.py checks its plans), never a launch the driver refuses.
"""

from __future__ import annotations

import pytest
import torch
from inputs import forced_backward, forced_forward, forward_output
from reference import check_backward, check_forward

from fastsoftmax.backends.cuda import compiler, instances, launch

driver = pytest.importorskip("cuda.bindings.driver")


class _Facts:
    arch = "sm_90"
    smem_per_block = 227 * 1024
    cu_device = 0
    context = "context"


class _Driver:
    """cuda.bindings' driver with the calls the probe makes answered from ``answers`` and recorded."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __getattr__(self, name):
        return getattr(driver, name)

    def _result(self, name):
        return getattr(driver.CUresult, self.answers.get(name, "CUDA_SUCCESS"))

    def cuKernelSetAttribute(self, attribute, value, kernel, device):
        name = attribute.name.removeprefix("CU_FUNC_ATTRIBUTE_")
        self.calls.append(("attribute", name, value))
        return (self._result(name),)

    def cuCtxPushCurrent(self, context):
        self.calls.append(("push", context))
        return (driver.CUresult.CUDA_SUCCESS,)

    def cuCtxPopCurrent(self):
        self.calls.append(("pop",))
        return (self._result("pop"), None)

    def cuKernelGetFunction(self, kernel):
        return (self._result("function"), "function")

    def cuOccupancyMaxActiveClusters(self, function, config):
        dims = [(a.value.clusterDim.x, a.value.clusterDim.y) for a in config.attrs]
        self.calls.append(("occupancy", config.gridDimX, config.blockDimX, config.sharedMemBytes, dims))
        return (self._result("occupancy"), self.answers.get("clusters", 0))


@pytest.fixture
def probe(monkeypatch):
    def make(**answers):
        fake = _Driver(answers)
        monkeypatch.setattr(launch, "_driver", lambda: fake)
        monkeypatch.setattr(launch, "_probe_kernel", lambda arch: ((), driver.CUkernel(0)))
        monkeypatch.setattr(compiler, "nvrtc_unavailable_reason", lambda: None)
        monkeypatch.setattr(compiler, "supported_archs", lambda: (75, 80, 90, 100, 120))
        return fake

    return make


def test_a_resident_cluster_of_16_is_held(probe):
    fake = probe(clusters=7)
    assert launch.holds_cluster(_Facts(), 16)
    smem = _Facts.smem_per_block
    assert fake.calls == [
        ("attribute", "MAX_DYNAMIC_SHARED_SIZE_BYTES", smem),
        ("attribute", "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1),
        ("push", "context"),
        ("occupancy", 16, 32, smem, [(16, 1)]),
        ("pop",),
    ]


def test_no_resident_cluster_is_not_held(probe):
    probe(clusters=0)
    assert not launch.holds_cluster(_Facts(), 16)


@pytest.mark.parametrize("refusal", ["CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_SUPPORTED"])
def test_a_refused_non_portable_size_is_not_held(probe, refusal):
    fake = probe(clusters=7, NON_PORTABLE_CLUSTER_SIZE_ALLOWED=refusal)
    assert not launch.holds_cluster(_Facts(), 16)
    assert not [call for call in fake.calls if call[0] == "occupancy"]


def test_a_size_the_query_refuses_is_not_held(probe):
    fake = probe(clusters=7, occupancy="CUDA_ERROR_INVALID_CLUSTER_SIZE")
    assert not launch.holds_cluster(_Facts(), 16)
    assert fake.calls[-1] == ("pop",)


@pytest.mark.parametrize("error", ["CUDA_ERROR_UNKNOWN", "CUDA_ERROR_INVALID_VALUE"])
def test_other_driver_errors_raise(probe, error):
    # an invalid value from the query is a wrong question, not a no: it must not turn clusters off
    fake = probe(clusters=7, occupancy=error)
    with pytest.raises(launch.DriverError, match="cluster occupancy"):
        launch.holds_cluster(_Facts(), 16)
    assert fake.calls[-1] == ("pop",), "the context is popped on the error too"
    probe(MAX_DYNAMIC_SHARED_SIZE_BYTES="CUDA_ERROR_INVALID_VALUE")
    with pytest.raises(launch.DriverError, match="MAX_DYNAMIC_SHARED_SIZE_BYTES"):
        launch.holds_cluster(_Facts(), 16)


def test_a_failed_pop_does_not_hide_the_error_before_it(probe):
    fake = probe(clusters=7, function="CUDA_ERROR_INVALID_HANDLE", pop="CUDA_ERROR_INVALID_CONTEXT")
    with pytest.raises(launch.DriverError, match="cuKernelGetFunction"):
        launch.holds_cluster(_Facts(), 16)
    assert fake.calls[-1] == ("pop",)
    probe(clusters=7, pop="CUDA_ERROR_INVALID_CONTEXT")
    with pytest.raises(launch.DriverError, match="cuCtxPopCurrent"):
        launch.holds_cluster(_Facts(), 16)


def test_portable_sizes_ask_for_no_opt_in(probe):
    fake = probe(clusters=9)
    assert launch.holds_cluster(_Facts(), 8)
    assert ("attribute", "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1) not in fake.calls
    assert ("occupancy", 8, 32, _Facts.smem_per_block, [(8, 1)]) in fake.calls


def test_without_nvrtc_nothing_is_asked(probe, monkeypatch):
    fake = probe(clusters=7)
    monkeypatch.setattr(compiler, "nvrtc_unavailable_reason", lambda: "no NVRTC")
    assert not launch.holds_cluster(_Facts(), 16)
    assert fake.calls == []


def test_on_a_gpu_nvrtc_does_not_target_nothing_is_asked(probe):
    fake = probe(clusters=7)

    class _Newer(_Facts):
        arch = "sm_130"

    assert not launch.holds_cluster(_Newer(), 16)
    assert fake.calls == []


def test_the_probe_kernel_compiles():
    if compiler.nvrtc_unavailable_reason() is not None:
        pytest.skip(compiler.nvrtc_unavailable_reason())
    for arch in [f"sm_{arch}" for arch in (90, 100, 120) if arch in compiler.supported_archs()]:
        cubin = compiler.compile_cubin(launch.CLUSTER_PROBE_SOURCE, arch, "cluster_probe", use_cache=False)
        assert launch.CLUSTER_PROBE_NAME.encode() in cubin


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_hopper_data_centre_gpus_hold_clusters_of_16(backend):
    index = torch.cuda.current_device()
    name = torch.cuda.get_device_name(index)
    facts = launch.device_facts(index)
    if "H100" in name or "H200" in name:
        assert facts.cluster_launch and facts.cluster_ctas == 16 and launch.holds_cluster(facts, 8), name


# ---- what NVRTC compiles for -----------------------------------------------------------------------


def test_an_architecture_nvrtc_does_not_target_is_named(monkeypatch):
    monkeypatch.setattr(compiler, "supported_archs", lambda: (75, 80, 90, 100, 120))
    monkeypatch.setattr(compiler, "versions", lambda: {"nvrtc": "13.5", "cuda_core": "1.2"})
    assert compiler.arch_unsupported_reason(9, 0) is None
    assert compiler.arch_unsupported_reason(12, 0) is None
    for major, minor in ((7, 0), (6, 1), (13, 0)):
        reason = compiler.arch_unsupported_reason(major, minor)
        assert f"not this GPU's sm_{major}{minor}" in reason and "NVRTC 13.5" in reason and "sm_75" in reason


def test_nvrtc_names_the_architectures_it_targets():
    if compiler.nvrtc_unavailable_reason() is not None:
        pytest.skip(compiler.nvrtc_unavailable_reason())
    archs = compiler.supported_archs()
    assert 80 in archs and 90 in archs and archs == tuple(sorted(archs))


@pytest.mark.parametrize("capability", [(7, 0), (9, 0)])
def test_a_gpu_nvrtc_cannot_compile_for_leaves_the_backend_unavailable(monkeypatch, capability):
    # a V100 under an NVRTC of CUDA 13 (which starts at sm_75): "auto" then takes another backend
    # (dispatch._choose_backend), where the first call would have failed to compile
    from fastsoftmax import dispatch
    from fastsoftmax.backends.cuda import backend

    monkeypatch.setattr(compiler, "nvrtc_unavailable_reason", lambda: None)
    monkeypatch.setattr(compiler, "supported_archs", lambda: (75, 80, 90))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: capability)
    monkeypatch.setattr(driver, "cuInit", lambda flags: (driver.CUresult.CUDA_SUCCESS,))
    reason = backend.CudaBackend._find_unavailable_reason(torch.device("cuda", 0))
    if capability == (9, 0):
        assert reason is None
        return
    assert "not this GPU's sm_70" in reason
    monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, kind, index: reason if name == "cuda" else None)
    monkeypatch.setattr(dispatch, "_table_choice", lambda *args, **kwargs: "cuda")
    monkeypatch.setattr(dispatch, "_torch_over_triton", lambda *args: False)
    monkeypatch.setattr(dispatch, "_warned", set())  # (warned once a process)
    with pytest.warns(RuntimeWarning, match="not this GPU's sm_70"):
        chosen = dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 64, 4096, 1, False)
    assert chosen == "triton"


class _EightCTAs:
    """A GPU's facts with its clusters capped at the portable 8 CTAs, as a GPU that holds no more
    reports them (the rest the GPU's own)."""

    cluster_ctas = 8
    cluster_launch = launch.DeviceFacts.cluster_launch  # the real rule, over cluster_ctas

    def __init__(self, facts):
        self._facts = facts

    def __getattr__(self, name):
        return getattr(self._facts, name)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows, n", [(1, 128256), (8, 128256), (64, 50257), (40, 131072), (3, 262144)])
def test_the_cluster_tier_in_clusters_of_8(backend, monkeypatch, dtype, rows, n):
    # run on a GPU that holds clusters of 16, told it holds 8: what a GPU of the portable 8 runs
    from fastsoftmax.backends.cuda import backend as cuda_backend
    from fastsoftmax.backends.cuda import plans

    index = torch.cuda.current_device()
    facts = launch.device_facts(index)
    if facts.cluster_ctas < 8:
        pytest.skip("needs clusters of 8 CTAs or more")
    eight = _EightCTAs(facts)
    monkeypatch.setattr(plans, "device_facts", lambda dev: eight)
    monkeypatch.setattr(cuda_backend, "device_facts", lambda dev: eight)
    made = []

    class _Recorded(launch.Kernel):  # the kernels the plans make, to read their cluster size
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(plans, "Kernel", _Recorded)
    fresh = cuda_backend.CudaBackend()  # plans of its own, made with the facts above
    for backward in (False, True):
        longest = instances.cluster_max_cols(dtype, backward, aligned=True, most=8)
        if n > longest:
            continue
        assert fresh.limits(index).cluster_ctas == 8
        assert fresh.choose_tier(rows, n, 1, dtype, backward, index) == "cluster"
        assert instances.cluster_shape(n, dtype, backward, rows=rows, sm_count=facts.sm_count, most=8).ctas <= 8
        for log in (False, True):
            x = (torch.randn(rows, n, device="cuda") * 3).to(dtype)
            if not backward:
                check_forward(forced_forward(fresh, "cluster", x, log), x, 1, log)
                continue
            dy = torch.randn(rows, n, device="cuda").to(dtype)
            dx = forced_backward(fresh, "cluster", forward_output(x, log), dy, log)
            check_backward(dx, x, dy, 1, log)
    assert made and all(1 < kernel.cluster <= 8 for kernel in made), [kernel.cluster for kernel in made]
