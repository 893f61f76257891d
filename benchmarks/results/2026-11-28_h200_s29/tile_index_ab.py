# A/B in one process on the H200 (scratch copies of the kernels as named in the results README); kept for the record
"""A/B in one process: the Triton tile kernels with 64-bit offsets (as shipped), 32-bit offsets, and
32-bit offsets over an inner-major 2-D tile (as Inductor lays its persistent reductions out), against
torch.compile, on strided problems whose rows sit at several 16-byte phases."""
import sys, math, torch, triton, triton.language as tl
from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton import kernels as K
from fastsoftmax.benchmark.layouts import copy_gbps
from fastsoftmax.benchmark.timing import median_ms

NEG_INF = K.NEG_INF

@triton.jit
def off32(pid, OUTER, N, INNER, BLOCK_O: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    inner_blocks = tl.cdiv(INNER, BLOCK_I)
    o = (pid // inner_blocks) * BLOCK_O + tl.arange(0, BLOCK_O)
    i = (pid % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    n = tl.arange(0, BLOCK_N)
    mask = (o < OUTER)[:, None, None] & (n < N)[None, :, None] & (i < INNER)[None, None, :]
    return o[:, None, None], n[None, :, None], i[None, None, :], mask

@triton.jit
def bwd32(y_ptr, dy_ptr, dx_ptr, OUTER, N, INNER, ys_o, ys_n, dys_o, dys_n, dxs_o, dxs_n,
          BLOCK_O: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    o, n, i, mask = off32(tl.program_id(0), OUTER, N, INNER, BLOCK_O, BLOCK_N, BLOCK_I)
    y = tl.load(y_ptr + (o * ys_o + n * ys_n + i), mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + (o * dys_o + n * dys_n + i), mask=mask, other=0.0).to(tl.float32)
    p = y * dy
    total = tl.sum(p, axis=1, keep_dims=True)
    dx = tl.fma(-y, total, p)
    tl.store(dx_ptr + (o * dxs_o + n * dxs_n + i), dx.to(dx_ptr.dtype.element_ty), mask=mask)

@triton.jit
def bwd32x(y_ptr, dy_ptr, dx_ptr, XNUMEL, N, INNER, ys_o, ys_n, dys_o, dys_n, dxs_o, dxs_n,
           BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    # columns of (outer, inner) flattened, inner-major tile [BLOCK_I, BLOCK_N]
    x = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)[:, None]
    n = tl.arange(0, BLOCK_N)[None, :]
    mask = (x < XNUMEL) & (n < N)
    o = x // INNER
    i = x - o * INNER
    y = tl.load(y_ptr + (o * ys_o + n * ys_n + i), mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + (o * dys_o + n * dys_n + i), mask=mask, other=0.0).to(tl.float32)
    p = y * dy
    total = tl.sum(p, axis=1)[:, None]
    dx = tl.fma(-y, total, p)
    tl.store(dx_ptr + (o * dxs_o + n * dxs_n + i), dx.to(dx_ptr.dtype.element_ty), mask=mask)

@triton.jit
def fwd32(x_ptr, y_ptr, OUTER, N, INNER, xs_o, xs_n, ys_o, ys_n,
          BLOCK_O: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    o, n, i, mask = off32(tl.program_id(0), OUTER, N, INNER, BLOCK_O, BLOCK_N, BLOCK_I)
    x = tl.load(x_ptr + (o * xs_o + n * xs_n + i), mask=mask, other=NEG_INF).to(tl.float32)
    m = tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x - K._safe_max(m))
    s = tl.sum(e, axis=1, keep_dims=True)
    tl.store(y_ptr + (o * ys_o + n * ys_n + i), (e * (1.0 / s)).to(y_ptr.dtype.element_ty), mask=mask)

@triton.jit
def fwd32x(x_ptr, y_ptr, XNUMEL, N, INNER, xs_o, xs_n, ys_o, ys_n, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    xx = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)[:, None]
    n = tl.arange(0, BLOCK_N)[None, :]
    mask = (xx < XNUMEL) & (n < N)
    o = xx // INNER
    i = xx - o * INNER
    x = tl.load(x_ptr + (o * xs_o + n * xs_n + i), mask=mask, other=NEG_INF).to(tl.float32)
    m = tl.max(x, axis=1)[:, None]
    e = tl.exp(x - K._safe_max(m))
    s = tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + (o * ys_o + n * ys_n + i), (e * (1.0 / s)).to(y_ptr.dtype.element_ty), mask=mask)

def main():
    cases = [((16, 21, 513, 513), 1, (torch.bfloat16, torch.float32)), ((8, 150, 127, 127), 1, (torch.bfloat16,))]
    for shape, dim, dtypes in cases:
        configs = [(128, 4), (128, 8), (256, 8)] if shape[dim] <= 32 else [(16, 4), (16, 8), (32, 8), (32, 16)]
        for dtype in dtypes:
            copy = copy_gbps(dtype)
            x = (torch.randn(shape, device="cuda") * 3).to(dtype)
            y = torch.softmax(x.float(), dim).to(dtype)
            dy = torch.randn(shape, device="cuda").to(dtype)
            outer, N, inner = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
            BN = tb._pow2(N)
            for backward in (False, True):
                if BN > 64 and backward is False and BN * 64 > 32768: pass
                size = x.numel() * x.element_size() * (3 if backward else 2)
                if backward:
                    ref = torch._softmax_backward_data(dy.double(), y.double(), dim, torch.float64)
                else:
                    ref = torch.softmax(x.double(), dim)
                out = torch.empty_like(x)
                xv, yv, dyv, ov = (t.view(outer, N, inner) for t in (x, y, dy, out))
                variants = {}
                if backward:
                    variants["backend=triton"] = lambda: torch.ops.fastsoftmax  # placeholder replaced below
                    import fastsoftmax
                    variants["backend=triton"] = lambda: fastsoftmax.softmax_backward(dy, y, dim, backend="triton")
                else:
                    import fastsoftmax
                    variants["backend=triton"] = lambda: fastsoftmax.softmax(x, dim, backend="triton")
                for bi, w in configs:
                    if BN * bi // (32 * w) > (32 if backward else 64) or BN * bi // (32 * w) < 8:
                        continue
                    g3 = (outer * triton.cdiv(inner, bi),)
                    gx = (triton.cdiv(outer * inner, bi),)
                    if backward:
                        def v64(bi=bi, w=w, g=g3):
                            K.softmax_bwd_tile[g](yv, dyv, ov, outer, N, inner, *yv.stride(), *dyv.stride(), ov.stride(0), ov.stride(1), LOG=False, BLOCK_O=1, BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                        def v32(bi=bi, w=w, g=g3):
                            bwd32[g](yv, dyv, ov, outer, N, inner, yv.stride(0), yv.stride(1), dyv.stride(0), dyv.stride(1), ov.stride(0), ov.stride(1), BLOCK_O=1, BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                        def v32x(bi=bi, w=w, g=gx):
                            bwd32x[g](yv, dyv, ov, outer * inner, N, inner, yv.stride(0), yv.stride(1), dyv.stride(0), dyv.stride(1), ov.stride(0), ov.stride(1), BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                    else:
                        def v64(bi=bi, w=w, g=g3):
                            K.softmax_fwd_tile[g](xv, ov, outer, N, inner, *xv.stride(), ov.stride(0), ov.stride(1), LOG=False, BLOCK_O=1, BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                        def v32(bi=bi, w=w, g=g3):
                            fwd32[g](xv, ov, outer, N, inner, xv.stride(0), xv.stride(1), ov.stride(0), ov.stride(1), BLOCK_O=1, BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                        def v32x(bi=bi, w=w, g=gx):
                            fwd32x[g](xv, ov, outer * inner, N, inner, xv.stride(0), xv.stride(1), ov.stride(0), ov.stride(1), BLOCK_N=BN, BLOCK_I=bi, num_warps=w)
                            return ov
                    variants[f"i64 {bi}/{w}"] = v64
                    variants[f"i32 {bi}/{w}"] = v32
                    variants[f"i32x {bi}/{w}"] = v32x
                eager = (lambda: torch._softmax_backward_data(dy, y, dim, dtype)) if backward else (lambda: torch.softmax(x, dim))
                variants["torch.compile"] = torch.compile(eager, dynamic=False)
                tag = f"{shape} d{dim} {str(dtype)[6:]} {'bwd' if backward else 'fwd'}"
                ok = {}
                for name, fn in variants.items():
                    out.fill_(float("nan"))
                    got = fn()
                    torch.cuda.synchronize()
                    err = (got.reshape(ref.shape).double() - ref).abs().max().item()
                    ok[name] = err <= 2e-2
                    if not ok[name]:
                        print(f"{tag} {name}: WRONG {err}", flush=True)
                times = {name: [] for name in variants if ok[name]}
                for _ in range(3):  # alternated rounds
                    for name in times:
                        times[name].append(median_ms(variants[name]))
                line = "  ".join(f"{name} {size / min(t) / 1e6 / copy:.3f}" for name, t in times.items())
                print(f"{tag}: {line}", flush=True)
            torch._dynamo.reset()

main()
