"""Relay kernels on small problems, for compute-sanitizer: forward and backward, softmax and log,
pseudo-columns and plain columns, rows, several grid sizes."""
import torch
import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends import triton as tb

torch.manual_seed(0)
worst = 0.0
for shape, dim in (((16, 65536, 4), 1), ((8, 3000, 12), 1), ((4, 200000), 1), ((20000, 3), 0)):
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(shape, device="cuda") * 3).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        for log in (False, True):
            with dispatch.forced("triton", "relay"):
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
                dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
            ref = (torch.log_softmax if log else torch.softmax)(x.double(), dim)
            worst = max(worst, (y.double() - ref).abs().nan_to_num(0).max().item())
torch.cuda.synchronize()
print("relay sanitize run done; worst forward error", worst)
