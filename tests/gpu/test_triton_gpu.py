"""The Triton tiers at real sizes on the GPU: each tier on the shapes it is chosen for, its
boundaries, odd lengths, both layouts, forward and backward, and torch.compile with Inductor."""

import pytest
import torch
from reference import check_backward, check_forward

import fastsoftmax
from fastsoftmax.backends.triton import BACKEND, _choose_tier

pytestmark = pytest.mark.gpu

DTYPES = [torch.float32, torch.float16, torch.bfloat16]

# (shape, dim): chosen so that "auto" reaches every tier, and the edges between tiers
FORWARD_SHAPES = [
    ((4096, 64), -1),  # tile, many rows per program
    ((2048, 1000), -1),  # tile, not a power of two
    ((1024, 1025), -1),  # just past a power of two: row
    ((512, 3000), -1),
    ((128, 32768), -1),  # the longest row kept in registers
    ((300, 32769), -1),  # online
    ((512, 50257), -1),  # online, a vocabulary
    ((1, 128256), -1),  # split, decode
    ((8, 151936), -1),  # split
    ((1, (1 << 24) + 7), -1),  # split, a huge odd row
    ((4096, 512), 0),  # strided tile
    ((32, 1024, 256), 1),  # strided
    ((8192, 520), 0),  # strided online / split
    ((64, 2000, 33), 1),  # strided, odd inner
    ((1 << 20, 16), 0),  # strided split, long reduced axis
]


def _x(shape, dtype):
    return (torch.randn(shape, device="cuda") * 3).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", FORWARD_SHAPES, ids=[f"{s}-dim{d}" for s, d in FORWARD_SHAPES])
def test_forward_real_sizes(shape, dim, dtype):
    x = _x(shape, dtype)
    check_forward(fastsoftmax.softmax(x, dim, backend="triton"), x, dim)
    check_forward(fastsoftmax.log_softmax(x, dim, backend="triton"), x, dim, True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", FORWARD_SHAPES[:12], ids=[f"{s}-dim{d}" for s, d in FORWARD_SHAPES[:12]])
def test_backward_real_sizes(shape, dim, dtype):
    x = _x(shape, dtype).requires_grad_(True)
    dy = torch.randn(shape, device="cuda").to(dtype)
    for log in (False, True):
        y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim, backend="triton")
        (dx,) = torch.autograd.grad(y, x, dy)
        check_backward(dx, x, dy, dim, log)


def test_auto_reaches_every_tier():
    seen = set()
    for shape, dim in FORWARD_SHAPES:
        n = shape[dim]
        inner = 1
        for size in shape[dim % len(shape) + 1 :]:
            inner *= size
        outer = torch.Size(shape).numel() // (n * inner)
        seen.add(_choose_tier(outer, n, inner, 2, False, torch.cuda.get_device_properties(0).multi_processor_count))
    # relay takes backwards only: the long axis of a narrow inner size
    seen.add(_choose_tier(64, 65536, 16, 2, True, torch.cuda.get_device_properties(0).multi_processor_count))
    assert seen == set(BACKEND.tiers)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_auto_gives_short_16_bit_axes_forward_to_the_wide_tiles(dtype):
    # dispatch._half_short_axis_to_triton over this GPU's own table: the forward over an axis of 48 on
    # 47 MB goes to Triton's wide tiles whatever the table says; forward and backward right through "auto"
    x = _x((480, 48, 1024), dtype)
    assert fastsoftmax.dispatch._choose_backend("auto", "cuda", x.device.index, dtype, 480, 48, 1024, False) == "triton"
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        check_forward(op(x, 1), x, 1, log)
        leaf, dy = x.detach().requires_grad_(), torch.randn(x.shape, device="cuda").to(dtype)
        (dx,) = torch.autograd.grad(op(leaf, 1), leaf, dy)
        check_backward(dx, x, dy, 1, log)


def test_the_gpus_class_of_dram_bandwidth_an_sm_as_both_backends_read_it():
    # the Triton backend reads the memory clock and bus width through Triton's driver, the CUDA
    # backend through the CUDA driver: one answer (an H100 no, an H200 yes), and the forward's tile
    # of 21 classes planned from it (TWO_PIECE_FORWARD_MAX_TAIL_LOW_BANDWIDTH)
    from fastsoftmax.backends.cuda.launch import device_facts
    from fastsoftmax.backends.triton import _high_bandwidth, _plan_for

    index = torch.cuda.current_device()
    high = _high_bandwidth(index)
    assert high == device_facts(index).high_bandwidth_per_sm
    x = _x((2, 21, 513 * 5), torch.bfloat16)[..., 1:]  # scalar loads: a pointer off 16 bytes
    config = dict(_plan_for((x, torch.empty_like(x)), "tile", False, False)[0]["configs"][0])
    assert (config["BLOCK_N"], config["BLOCK_N2"]) == ((16, 8) if high else (32, 0))
    check_forward(fastsoftmax.softmax(x, 1, backend="triton"), x, 1)


@pytest.mark.parametrize("tier", BACKEND.tiers)
def test_forced_tiers_on_a_mid_size_problem(tier):
    for dtype in DTYPES:
        x = _x((96, 4099), dtype)
        with fastsoftmax.dispatch.forced("triton", tier):
            check_forward(fastsoftmax.softmax(x, -1), x, -1)
            check_forward(fastsoftmax.softmax(x, 0), x, 0)


def test_torch_compile_inductor_fullgraph():
    class Attention(torch.nn.Module):
        def forward(self, q, k):
            scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
            return fastsoftmax.softmax(scores, -1).sum(-1) + fastsoftmax.log_softmax(scores, 1).mean(-1)

    model = Attention()
    compiled = torch.compile(model, fullgraph=True)
    q = torch.randn(4, 128, 64, device="cuda", requires_grad=True)
    k = torch.randn(4, 128, 64, device="cuda")
    out = compiled(q, k)
    torch.testing.assert_close(out, model(q, k), rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_tile_tier_past_2_to_the_31_elements():
    # a view whose second outer index lies 2^31 elements past the first: the tile kernels take 64-bit
    # offsets there (32-bit ones elsewhere); forward and backward, every element checked
    from fastsoftmax.backends import triton as tb

    outer_stride, n, inner = 1 << 31, 21, 128
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * 2 * (outer_stride + n * inner) + (1 << 30):
        pytest.skip("not enough free GPU memory")

    def wide_view():
        base = torch.zeros(outer_stride + n * inner, dtype=torch.bfloat16, device="cuda")
        view = base.as_strided((2, n, inner), (outer_stride, inner, 1))
        return view.copy_((torch.randn(2, n, inner, device="cuda") * 3).to(torch.bfloat16))

    x, dy = wide_view(), wide_view()
    assert tb._wide_offsets(2, n, inner, x.stride()) and _choose_tier(2, n, inner, 2, False, 132) == "tile"
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        y = op(x, 1, backend="triton")
        check_forward(y, x, 1, log)
        check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log, backend="triton"), x, dy, 1, log)
    del x, dy, y
    torch.cuda.empty_cache()
