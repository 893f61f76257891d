"""The implementations a run compares: fastsoftmax (auto and each explicit backend) and its peers.

Every implementation is an :class:`Impl` whose ``make(case)`` returns the callable to check and
time for that case: ``fn(x)`` forward, ``fn(dy, y)`` backward. ``make`` raises
:class:`Refused` when the implementation does not handle the case at all. Quack and Liger also
decline shapes by raising (an assertion on the row length, say), so anything they raise is
recorded as a refusal; anything fastsoftmax, torch or torch.compile raises is an error.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import site
from dataclasses import dataclass, field
from typing import Callable

from fastsoftmax.benchmark.shapes import Case

PEER_SITE_ENV = "FASTSOFTMAX_PEER_SITE"
FASTSOFTMAX = "fastsoftmax"


class Refused(Exception):
    """The implementation does not handle this case (a documented limit, not a bug)."""


@dataclass
class Impl:
    name: str
    kind: str  # "fastsoftmax" or "peer"
    make: Callable[[Case], Callable]
    note: str = ""
    # True for peers whose way of declining a shape is to raise from the call itself
    declines_by_raising: bool = False

    @property
    def is_fastsoftmax(self) -> bool:
        return self.kind == "fastsoftmax"


def fastsoftmax_label(backend: str) -> str:
    return FASTSOFTMAX if backend == "auto" else f"{FASTSOFTMAX}[{backend}]"


# --- fastsoftmax ------------------------------------------------------------------------------

def fastsoftmax_impl(backend: str) -> Impl:
    def make(case: Case):
        import fastsoftmax

        dim = case.dim
        if case.direction == "backward":
            backward = fastsoftmax.softmax_backward
            return lambda dy, y: backward(dy, y, dim, backend=backend)
        forward = fastsoftmax.softmax
        return lambda x: forward(x, dim, backend=backend)

    return Impl(fastsoftmax_label(backend), "fastsoftmax", make)


def explicit_backends(requested, device) -> tuple[list[str], dict[str, str]]:
    """The explicit backends to time besides "auto": those requested that can run on ``device``.
    Returns (backends, {backend: why it was left out})."""
    skipped: dict[str, str] = {}
    try:
        import fastsoftmax

        available = list(fastsoftmax.available_backends(device))
    except Exception as exc:  # the API may be missing or broken; "auto" will then record errors
        return [], {"*": f"available_backends() failed: {type(exc).__name__}: {exc}"}
    chosen = []
    for backend in requested:
        if backend == "auto":
            continue
        if backend in available:
            chosen.append(backend)
        else:
            skipped[backend] = f"not available on this device (available: {', '.join(available)})"
    return chosen, skipped


def fastsoftmax_impls(requested=("auto", "triton", "cuda"), device="cuda") -> tuple[list[Impl], dict[str, str]]:
    explicit, skipped = explicit_backends(requested, device)
    impls = [fastsoftmax_impl("auto")] if "auto" in requested else []
    impls += [fastsoftmax_impl(b) for b in explicit]
    return impls, skipped


# --- peers ------------------------------------------------------------------------------------

def torch_impl() -> Impl:
    def make(case: Case):
        import torch

        dim = case.dim
        if case.direction == "backward":
            return lambda dy, y: torch._softmax_backward_data(dy, y, dim, y.dtype)
        return lambda x: torch.softmax(x, dim)

    return Impl("torch", "peer", make)


def torch_compile_impl() -> Impl:
    def make(case: Case):
        import torch

        # A fresh compile for every case: one compiled function reused across many shapes would
        # hit dynamo's recompile limit and silently fall back to eager.
        torch._dynamo.reset()
        dim = case.dim
        if case.direction == "backward":
            def backward(dy, y):
                return torch._softmax_backward_data(dy, y, dim, y.dtype)
            return torch.compile(backward, dynamic=False)

        def forward(x):
            return torch.softmax(x, dim)
        return torch.compile(forward, dynamic=False)

    return Impl("torch.compile", "peer", make, note="compiled per shape (dynamic=False)")


def _require_2d_last_dim(case: Case, who: str) -> None:
    if len(case.shape) != 2 or not case.is_last_dim:
        raise Refused(f"{who} computes softmax over the last dim of a 2-D tensor only")


def quack_impl(module) -> Impl:
    forward = getattr(module, "softmax_fwd", None)
    backward = getattr(module, "softmax_bwd", None)

    def make(case: Case):
        _require_2d_last_dim(case, "quack")
        if case.direction == "backward":
            if backward is None:
                raise Refused("this quack version has no softmax_bwd")
            return lambda dy, y: backward(dy, y)
        if forward is None:
            raise Refused("this quack version has no softmax_fwd")
        return lambda x: forward(x)

    return Impl("quack", "peer", make, declines_by_raising=True)


def liger_impl(module) -> Impl:
    function = getattr(module, "LigerSoftmaxFunction", None)
    backward = getattr(module, "_softmax_backward", None)

    def make(case: Case):
        if not case.is_last_dim:
            raise Refused("liger computes softmax over the last dim only")
        if case.direction == "backward":
            if backward is None:
                raise Refused("this liger version has no _softmax_backward")
            from liger_kernel.ops.utils import calculate_settings

            # Liger's own forward picks these launch settings and hands them to its backward.
            max_fused = getattr(module, "MAX_FUSED_SIZE", 65536)
            block, warps = calculate_settings(min(case.n, max_fused))
            multi_block = case.n > max_fused
            return lambda dy, y: backward(dy, y, block, warps, multi_block)
        if function is None:
            raise Refused("this liger version has no LigerSoftmaxFunction")
        return lambda x: function.apply(x)

    return Impl("liger", "peer", make, declines_by_raising=True)


@dataclass
class PeerSet:
    impls: list[Impl] = field(default_factory=list)
    # peer name -> "version x" or why it is missing; saved in the result file
    status: dict[str, str] = field(default_factory=dict)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except Exception:
        return "unknown"


def add_peer_site() -> str | None:
    """Add the directory named by FASTSOFTMAX_PEER_SITE (a bundle of optional peers) to sys.path.
    addsitedir, not sys.path.insert, so that the bundle's .pth files run (the cutlass DSL needs
    its own)."""
    path = os.environ.get(PEER_SITE_ENV)
    if path and os.path.isdir(path):
        site.addsitedir(path)
        return path
    return None


def load_peers(optional: bool = True, compile_peer: bool = True) -> PeerSet:
    """torch.softmax always (the baseline every speed-up is quoted against); torch.compile,
    Quack and Liger when asked for and importable. Import failures are recorded, not raised."""
    peers = PeerSet()
    peers.impls.append(torch_impl())
    import torch

    peers.status["torch"] = torch.__version__
    if compile_peer:
        peers.impls.append(torch_compile_impl())
        peers.status["torch.compile"] = torch.__version__
    else:
        peers.status["torch.compile"] = "off"
    if not optional:
        peers.status["quack"] = peers.status["liger"] = "off (--no-peers)"
        return peers
    site_dir = add_peer_site()
    if site_dir:
        peers.status["peer_site"] = site_dir
    for name, module_name, dist, factory in (
        ("quack", "quack.softmax", "quack-kernels", quack_impl),
        ("liger", "liger_kernel.ops.softmax", "liger-kernel", liger_impl),
    ):
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # ImportError, or a broken install raising anything else
            peers.status[name] = f"not importable: {type(exc).__name__}: {exc}"[:300]
            continue
        peers.impls.append(factory(module))
        peers.status[name] = _version(dist)
    return peers
