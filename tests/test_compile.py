"""torch.compile(fullgraph=True) traces through the custom ops, forward and backward."""

import torch
from reference import DEVICE, check_forward

import fastsoftmax


def test_fullgraph_forward_and_backward():
    def model(x):
        return fastsoftmax.softmax(x * 2.0, -1) + fastsoftmax.log_softmax(x, 0).exp()

    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    x = (torch.randn(6, 40, device=DEVICE) * 3).requires_grad_(True)
    out = compiled(x)
    torch.testing.assert_close(out, model(x.detach()), rtol=1e-6, atol=1e-6)
    dy = torch.randn_like(out)
    (dx,) = torch.autograd.grad(out, x, dy)
    x_ref = x.detach().double().requires_grad_(True)
    ref = torch.softmax(x_ref * 2.0, -1) + torch.log_softmax(x_ref, 0).exp()
    (dx_ref,) = torch.autograd.grad(ref, x_ref, dy.double())
    torch.testing.assert_close(dx.double(), dx_ref, rtol=1e-4, atol=1e-5)


def test_custom_ops_pass_torch_library_checks():
    x = torch.randn(5, 17, device=DEVICE, requires_grad=True)
    torch.library.opcheck(torch.ops.fastsoftmax.softmax_forward, (x, 1, False, "auto"))
    y = fastsoftmax.softmax(x.detach(), 1)
    torch.library.opcheck(torch.ops.fastsoftmax.softmax_backward, (torch.randn_like(y), y, 1, False, "auto"))


def test_dynamic_shapes_compile_once():
    # a serving loop's changing batch and lengths: one graph with symbolic sizes, its backward traced
    # by AOTAutograd too, correct at each
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")

    def model(t, dim):
        return fastsoftmax.softmax(t * 2.0, dim) + fastsoftmax.log_softmax(t, dim)

    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend=counter)
    for shape in [(4, 16, 3), (7, 33, 5), (2, 9, 8)]:
        x = (torch.randn(shape, device=DEVICE) * 3).requires_grad_(True)
        out = compiled(x, 1)
        x_ref = x.detach().double().requires_grad_(True)
        ref = torch.softmax(x_ref * 2.0, 1) + torch.log_softmax(x_ref, 1)
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)
        dy = torch.randn_like(out)
        (dx,) = torch.autograd.grad(out, x, dy)
        (dx_ref,) = torch.autograd.grad(ref, x_ref, dy.double())
        torch.testing.assert_close(dx.double(), dx_ref, rtol=1e-4, atol=1e-5)
    assert counter.frame_count == 1, f"{counter.frame_count} graphs for three shapes"


def test_compiled_module_matches_reference():
    layer = torch.compile(fastsoftmax.nn.Softmax(dim=1), fullgraph=True, backend="aot_eager")
    x = torch.randn(3, 20, 7, device=DEVICE) * 3
    check_forward(layer(x), x, 1)


def test_fullgraph_with_a_float32_result_of_a_16bit_input():
    # dtype=torch.float32 on a bfloat16 input, and the same under autocast (CUDA: float32 result)
    x = (torch.randn(6, 40, device=DEVICE) * 3).to(torch.bfloat16)
    compiled = torch.compile(
        lambda t: fastsoftmax.log_softmax(t, -1, torch.float32), fullgraph=True, backend="aot_eager"
    )
    y = compiled(x)
    assert y.dtype == torch.float32
    check_forward(y, x.float(), -1, True)
    device_type = torch.device(DEVICE).type
    with torch.autocast(device_type, dtype=torch.bfloat16):
        z = torch.compile(lambda t: fastsoftmax.softmax(t, -1), fullgraph=True, backend="aot_eager")(x)
    if device_type == "cuda":
        assert z.dtype == torch.float32
        check_forward(z, x.float(), -1)
    else:  # CPU autocast keeps softmax in 16 bits, as torch's does
        assert z.dtype == torch.bfloat16
        check_forward(z, x, -1)


def test_export_records_the_ops():
    # strict (Dynamo) and non-strict (the model run on fake tensors) export both keep the op
    class Model(torch.nn.Module):
        def forward(self, x):
            return fastsoftmax.log_softmax(x * 2, 1, torch.float32) + fastsoftmax.nn.Softmax(0)(x).float()

    x = (torch.randn(4, 6, device=DEVICE) * 3).to(torch.bfloat16)
    for strict in (True, False):
        program = torch.export.export(Model(), (x,), strict=strict)
        ops = [str(node.target) for node in program.graph.nodes if node.op == "call_function"]
        assert ops.count("fastsoftmax.softmax_forward.default") == 2, ops
        torch.testing.assert_close(program.module()(x), Model()(x), rtol=0, atol=0)
