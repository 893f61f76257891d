"""The implementations a run compares: fastsoftmax (auto and each explicit backend) and its peers.

Every implementation is an :class:`Impl` whose ``make(case)`` returns the callable to check and
time for that case: ``fn(x)`` forward, ``fn(dy, y)`` backward. ``make`` raises
:class:`Refused` when the implementation does not handle the case at all. Quack, Liger, cuDNN and
the Triton tutorial's kernel also decline shapes by raising (an assertion on the row length, a
cuDNN status), so anything they raise is recorded as a refusal; anything fastsoftmax, torch or
torch.compile raises is an error.

Peers (``--peers``): torch (always: the baseline of every speed-up), torch.compile, cudnn (with
cudnn[fast], cuDNN's algorithm that skips the max), triton-tutorial, quack, liger. Seed 003's
unfused torch sequence, ``torch-unfused``, is timed by that figure only.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import site
from collections.abc import Callable
from dataclasses import dataclass, field

from fastsoftmax.benchmark.shapes import ITEMSIZE, Case
from fastsoftmax.dispatch import BACKENDS

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


def parse_backends(text: str | None) -> tuple[str, ...]:
    """``"auto,cuda"`` -> ``("auto", "cuda")``, in the order given; () when empty. Only the names the
    library's ``backend=`` takes: any other is a typo, which the run would otherwise just record as
    "not available on this device"."""
    names = tuple(word.strip() for word in (text or "").split(",") if word.strip())
    for name in names:
        if name not in BACKENDS:
            # a peer here is a mix-up of the two options, not a backend this device lacks
            peer = name.lower() in PEER_ALIASES and name.lower() not in BACKENDS
            hint = " (peers are chosen with --peers)" if peer else ""
            raise ValueError(f"unknown backend {name!r}: use {', '.join(BACKENDS)}{hint}")
    return names


def explicit_backends(requested, device) -> tuple[list[str], dict[str, str]]:
    """The explicit backends to time besides "auto": those requested that can run on ``device``.
    Returns (backends, {backend: why it was left out})."""
    skipped: dict[str, str] = {}
    try:
        import fastsoftmax

        available = list(fastsoftmax.available_backends(device))
    except Exception as exc:  # noqa: BLE001 - the API may be missing or broken; "auto" will then record errors
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


#: Quack holds a row in the shared memory of one cluster of at most 16 CTAs; a longer row than that
#: holds is refused before compiling: its CuTe DSL compile takes minutes (a whole 2^24 row per
#: cluster: 84 s on an H100 host) only for the launch to fail for lack of shared memory.
QUACK_MAX_CLUSTER = 16
QUACK_SMEM_PER_CTA = 227 * 1024


def quack_refusal(case: Case) -> str | None:
    """Why Quack cannot run ``case`` (known before compiling), or None."""
    itemsize = ITEMSIZE[case.dtype]
    n = case.shape[-1]
    if n * itemsize > QUACK_MAX_CLUSTER * QUACK_SMEM_PER_CTA:
        return (
            f"quack holds a row in the shared memory of one cluster of {QUACK_MAX_CLUSTER} CTAs: "
            f"{n} columns of {case.dtype} need {n * itemsize // QUACK_MAX_CLUSTER} bytes a CTA"
        )
    return None


def quack_impl(module) -> Impl:
    forward = getattr(module, "softmax_fwd", None)
    backward = getattr(module, "softmax_bwd", None)

    def make(case: Case):
        _require_2d_last_dim(case, "quack")
        reason = quack_refusal(case)
        if reason:
            raise Refused(reason)
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


def torch_unfused_impl() -> Impl:
    """Seed 003's naive softmax: five separate torch kernels (max, subtract, exp, sum, divide),
    each reading and writing the whole tensor: what "not fused" costs."""

    def make(case: Case):
        import torch

        if case.direction == "backward":
            raise Refused("the unfused sequence is timed forward only")
        dim = case.dim

        def unfused(x):
            shifted = x - torch.amax(x, dim, keepdim=True)
            numerator = torch.exp(shifted)
            return numerator / torch.sum(numerator, dim, keepdim=True)

        return unfused

    return Impl("torch-unfused", "peer", make, note="max, sub, exp, sum, div as five kernels")


CUDNN_ALGORITHMS = {"cudnn": "accurate", "cudnn[fast]": "fast"}


def cudnn_impl(name: str = "cudnn") -> Impl:
    algorithm = CUDNN_ALGORITHMS[name]

    def make(case: Case):
        from fastsoftmax.benchmark import cudnn

        try:
            return cudnn.make_softmax(case.shape, case.dim, case.dtype, algorithm, case.direction)
        except cudnn.CudnnUnavailable as exc:
            raise Refused(str(exc)) from exc

    note = (
        "CUDNN_SOFTMAX_ACCURATE (subtracts the max)"
        if algorithm == "accurate"
        else "CUDNN_SOFTMAX_FAST (no max subtracted: overflows where exp does)"
    )
    return Impl(name, "peer", make, note=note, declines_by_raising=True)


def tutorial_impl() -> Impl:
    def make(case: Case):
        _require_2d_last_dim(case, "the Triton tutorial's kernel")
        if case.direction == "backward":
            raise Refused("the Triton tutorial's kernel is forward only")
        from fastsoftmax.benchmark import tutorial_softmax

        if case.n > tutorial_softmax.MAX_COLS:
            raise Refused(
                f"the Triton tutorial's kernel holds a whole row in registers: at most "
                f"{tutorial_softmax.MAX_COLS} columns"
            )
        return tutorial_softmax.softmax

    return Impl(
        "triton-tutorial", "peer", make, note="whole row padded to the next power of two", declines_by_raising=True
    )


@dataclass
class PeerSet:
    impls: list[Impl] = field(default_factory=list)
    # peer name -> "version x" or why it is missing; saved in the result file
    status: dict[str, str] = field(default_factory=dict)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except Exception:  # noqa: BLE001
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


# --peers spelling -> peer names
PEER_ALIASES = {
    "torch": "torch",
    "compile": "torch.compile",
    "torch.compile": "torch.compile",
    "cudnn": "cudnn",
    "tutorial": "triton-tutorial",
    "triton-tutorial": "triton-tutorial",
    "quack": "quack",
    "liger": "liger",
    "unfused": "torch-unfused",
    "torch-unfused": "torch-unfused",
    "naive": "torch-unfused",
}
OPTIONAL_PEERS = ("torch.compile", "cudnn", "triton-tutorial", "quack", "liger")


def parse_peers(text: str | None) -> tuple[str, ...] | None:
    """``"cudnn,compile"`` -> ``("torch.compile", "cudnn")``; None (every optional peer) when empty."""
    if not text:
        return None
    wanted = set()
    for word in text.split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word in ("all", "none"):
            wanted |= set(OPTIONAL_PEERS) if word == "all" else set()
            continue
        if word not in PEER_ALIASES:
            raise ValueError(f"unknown peer {word!r}: use {', '.join(sorted(set(PEER_ALIASES)))}, all or none")
        wanted.add(PEER_ALIASES[word])
    return tuple(p for p in ("torch",) + OPTIONAL_PEERS + ("torch-unfused",) if p in wanted)


def chosen_peers(peers_text: str | None, compile_flag: bool | None, quick: bool) -> tuple[bool, tuple[str, ...] | None]:
    """(whether torch.compile may be timed, the optional peers by name, None for every one) from
    --peers, --compile/--no-compile (None when neither) and --quick. Compiling is on by default but
    with --quick; --peers naming torch.compile turns it on; an explicit --compile adds torch.compile to
    the peers --peers names (rather than leaving it out for not being among them)."""
    names = parse_peers(peers_text)
    compile_peer = (not quick) if compile_flag is None else compile_flag
    if names is not None and "torch.compile" in names and compile_flag is None:
        compile_peer = True  # asked for by name
    if compile_flag and names is not None and "torch.compile" not in names:
        names = parse_peers(",".join((*names, "torch.compile")))
    return compile_peer, names


def cudnn_status() -> tuple[bool, str]:
    try:
        from fastsoftmax.benchmark import cudnn

        loaded = cudnn.get()
        return True, f"{loaded.version} ({loaded.path})"
    except Exception as exc:  # noqa: BLE001 - CudnnUnavailable, or an OSError from a broken install
        return False, f"not available: {type(exc).__name__}: {exc}"[:300]


def tutorial_status() -> tuple[bool, str]:
    try:
        import triton

        from fastsoftmax.benchmark import tutorial_softmax  # noqa: F401  (compiles nothing yet)

        return True, f"triton {triton.__version__}"
    except Exception as exc:  # noqa: BLE001
        return False, f"not available: {type(exc).__name__}: {exc}"[:300]


def load_peers(optional: bool = True, compile_peer: bool = True, names=None) -> PeerSet:
    """torch.softmax always (the baseline every speed-up is quoted against); the optional peers
    when asked for and importable: ``names`` (peer names as :func:`parse_peers` returns them)
    picks them, None means every one. Import failures are recorded, not raised."""
    peers = PeerSet()
    peers.impls.append(torch_impl())
    import torch

    peers.status["torch"] = torch.__version__
    wanted = set(OPTIONAL_PEERS if names is None else names)
    if not optional:
        wanted = set()
    if compile_peer and "torch.compile" in wanted:
        peers.impls.append(torch_compile_impl())
        peers.status["torch.compile"] = torch.__version__
    else:
        peers.status["torch.compile"] = "off"
    if "torch-unfused" in wanted:
        peers.impls.append(torch_unfused_impl())
        peers.status["torch-unfused"] = torch.__version__
    if not optional:
        for name in OPTIONAL_PEERS[1:]:
            peers.status[name] = "off (--no-peers)"
        return peers
    if "cudnn" in wanted:
        usable, status = cudnn_status()
        peers.status["cudnn"] = status
        if usable:
            peers.impls += [cudnn_impl("cudnn"), cudnn_impl("cudnn[fast]")]
    if "triton-tutorial" in wanted:
        usable, status = tutorial_status()
        peers.status["triton-tutorial"] = status
        if usable:
            peers.impls.append(tutorial_impl())
    if not wanted & {"quack", "liger"}:
        return peers
    site_dir = add_peer_site()
    if site_dir:
        peers.status["peer_site"] = site_dir
    for name, module_name, dist, factory in (
        ("quack", "quack.softmax", "quack-kernels", quack_impl),
        ("liger", "liger_kernel.ops.softmax", "liger-kernel", liger_impl),
    ):
        if name not in wanted:
            peers.status[name] = "off (--peers)"
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install raising anything else
            peers.status[name] = f"not importable: {type(exc).__name__}: {exc}"[:300]
            continue
        peers.impls.append(factory(module))
        peers.status[name] = _version(dist)
    return peers
