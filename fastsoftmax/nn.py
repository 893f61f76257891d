"""Module wrappers: drop-in replacements for torch.nn.Softmax and torch.nn.LogSoftmax."""

import warnings
from typing import Optional

import torch

from . import dispatch, functional


def _chosen_dim(name: str, dim: Optional[int], rank: int) -> int:
    """``dim``, or torch.nn.Softmax's choice when none was given (deprecated in torch, kept for
    drop-in use): 0 for tensors of 0, 1 or 3 dims, else 1, with torch's warning. Written in
    TorchScript's subset of Python, for scripted modules too."""
    if dim is None:
        warnings.warn(
            "Implicit dimension choice for " + name + " has been deprecated. "
            "Change the call to include dim=X as an argument.",
            stacklevel=4,
        )
        if rank == 0 or rank == 1 or rank == 3:
            return 0
        return 1
    return dim


class Softmax(torch.nn.Module):
    """``torch.nn.Softmax`` computed by fastsoftmax; ``dim=None`` picks the dim as torch does. Under
    ``torch.jit.script`` the module calls the op ``fastsoftmax::softmax_forward`` (the scripted module
    runs where fastsoftmax is imported)."""

    __constants__ = ["_log", "_name"]
    _name = "softmax"
    _log = False
    dim: Optional[int]
    backend: str

    def __init__(self, dim: Optional[int] = None, backend: str = "auto"):
        super().__init__()
        dispatch.check_backend_name(backend)  # at construction, not at the first call
        self.dim = dim
        self.backend = backend

    @torch.jit.unused
    def _eager(self, input: torch.Tensor) -> torch.Tensor:
        op = functional.log_softmax if self._log else functional.softmax
        dim = self.dim if self.dim is not None else _chosen_dim(self._name, None, input.dim())
        return op(input, dim, backend=self.backend)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():
            dim = _chosen_dim(self._name, self.dim, input.dim())
            return torch.ops.fastsoftmax.softmax_forward(input, dim, self._log, self.backend)
        return self._eager(input)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, backend={self.backend!r}"


class LogSoftmax(Softmax):
    """``torch.nn.LogSoftmax`` computed by fastsoftmax."""

    _name = "log_softmax"
    _log = True
