"""fastsoftmax.distributed under forward-mode AD and torch.func's transforms: refused by name before
any collective (a tangent dropped, or a collective per sample, would be silently wrong)."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import fastsoftmax.distributed as fd

CALLS = {
    "softmax": lambda x: fd.softmax(x, -1),
    "log_softmax": lambda x: fd.log_softmax(x, -1),
    "cross_entropy": lambda x: fd.cross_entropy(x, torch.zeros(x.shape[0], dtype=torch.int64)),
}


@pytest.mark.parametrize("name", CALLS)
def test_forward_ad_is_refused(name):
    x = torch.randn(3, 10)
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match=f"distributed.{name}: forward-mode AD"):
        CALLS[name](fwAD.make_dual(x, torch.randn_like(x)))


@pytest.mark.parametrize("transform", ["vmap", "grad"])
@pytest.mark.parametrize("name", CALLS)
def test_func_transforms_are_refused(name, transform):
    x = torch.randn(2, 3, 10)
    call = CALLS[name]
    with pytest.raises(NotImplementedError, match=f"distributed.{name}: forward-mode AD and torch.func"):
        if transform == "vmap":
            torch.func.vmap(call)(x)
        else:
            torch.func.grad(lambda a: call(a).sum())(x[0])
