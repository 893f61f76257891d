"""Run-time compilation of the CUDA C++ kernels with NVRTC (through cuda.core), cached on disk.

Kernels are compiled to CUBIN for the exact architecture of the device, never to PTX: PTX from a
newer NVRTC may use an ISA version that an older driver cannot JIT-compile, while a CUBIN needs no
driver-side compilation at all.

The disk cache is keyed by everything that can change the binary: the translation unit, the text
of every header in ``kernels/``, the architecture, the compile options, the CUDA include folders,
and the NVRTC and cuda-core versions. Set ``FASTSOFTMAX_CACHE_DIR`` to move it (default
``~/.cache/fastsoftmax/cuda``, or under ``$XDG_CACHE_HOME``).
"""

from __future__ import annotations

import functools
import glob
import hashlib
import io
import json
import os
import struct
import sys
import tempfile
import threading
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
#: bump when the meaning of a cached file changes
CACHE_FORMAT = 1
COMPILE_OPTIONS = {"std": "c++17"}
INSTALL_HINT = "backend='cuda' needs cuda-core, cuda-bindings and nvidia-cuda-nvrtc: pip install fastsoftmax[cuda]"


class CudaCompileError(RuntimeError):
    """NVRTC rejected a kernel; the message carries the NVRTC log."""


def cache_dir() -> Path:
    explicit = os.environ.get("FASTSOFTMAX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastsoftmax" / "cuda"


# ---- CUDA headers -----------------------------------------------------------------------------


def _candidate_include_dirs() -> list[str]:
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        root = os.environ.get(var)
        if root:
            dirs.append(os.path.join(root, "include"))
    dirs.append("/usr/local/cuda/include")
    # newest toolkit first: /usr/local/cuda-13.0 before /usr/local/cuda-12.4
    versioned = glob.glob("/usr/local/cuda-*/include")
    versioned.sort(
        key=lambda p: [int(t) if t.isdigit() else 0 for t in p.split("cuda-")[-1].split("/")[0].split(".")],
        reverse=True,
    )
    dirs += versioned
    # pip wheels: nvidia/cuda_runtime/include (CUDA 12), nvidia/cu13/include (CUDA 13), ...
    for entry in sys.path:
        dirs += sorted(glob.glob(os.path.join(entry, "nvidia", "*", "include")))
    return dirs


@functools.lru_cache(maxsize=None)
def cuda_include_dirs() -> tuple[str, ...]:
    """Folders that give NVRTC cuda_fp16.h and cuda_bf16.h (and their cccl subfolders): the
    first folder that has both headers, plus any folder that provides the CCCL headers."""
    found: list[str] = []
    for d in _candidate_include_dirs():
        if os.path.isfile(os.path.join(d, "cuda_fp16.h")) and os.path.isfile(os.path.join(d, "cuda_bf16.h")):
            found.append(os.path.realpath(d))
            cccl = os.path.join(d, "cccl")
            if os.path.isdir(cccl):
                found.append(os.path.realpath(cccl))
            break
    for d in _candidate_include_dirs():  # pip's nvidia-cuda-cccl ships cuda/std/... on its own
        real = os.path.realpath(d)
        if real not in found and os.path.isdir(os.path.join(d, "cuda", "std")):
            found.append(real)
    return tuple(found)


# ---- NVRTC ------------------------------------------------------------------------------------


#: the first import of cuda.core and cuda.bindings, one thread at a time: imported by several
#: threads at once (the first calls of a serving process), cuda.core's package handed one of them
#: its submodule half-initialised ("cannot import name 'Device' from 'cuda.core.cu13'")
_IMPORT_LOCK = threading.Lock()


@functools.lru_cache(maxsize=None)
def nvrtc_unavailable_reason() -> str | None:
    """None when NVRTC can compile here; otherwise what to install. The first import of cuda.core
    and cuda.bindings in the process happens here, under a lock (every backend call asks this
    first)."""
    try:
        with _IMPORT_LOCK:
            import cuda.core  # noqa: F401
            from cuda.bindings import driver, nvrtc  # noqa: F401
    except ImportError:
        return INSTALL_HINT
    try:
        err, _, _ = nvrtc.nvrtcVersion()
        if int(err) != 0:
            raise RuntimeError(err)
    except Exception as exc:  # libnvrtc missing or unloadable
        return f"{INSTALL_HINT} (NVRTC could not be loaded: {exc})"
    if not cuda_include_dirs() and not _bundled_headers_supported():
        return (
            "backend='cuda' needs the CUDA headers (cuda_fp16.h, cuda_bf16.h) for NVRTC: install the "
            "CUDA toolkit and set CUDA_HOME, or pip install nvidia-cuda-runtime nvidia-cuda-cccl"
        )
    return None


def _bundled_headers_supported() -> bool:
    try:
        from cuda.core import ProgramOptions
    except ImportError:
        return False
    return "use_bundled_headers" in getattr(ProgramOptions, "__dataclass_fields__", {})


@functools.lru_cache(maxsize=None)
def versions() -> dict:
    from cuda.bindings import nvrtc

    try:
        import cuda.core as core

        core_version = getattr(core, "__version__", "?")
    except ImportError:
        core_version = "?"
    _, major, minor = nvrtc.nvrtcVersion()
    return {"nvrtc": f"{major}.{minor}", "cuda_core": core_version}


@functools.lru_cache(maxsize=None)
def supported_archs() -> tuple[int, ...]:
    """The architectures this NVRTC compiles for, as compute capabilities x 10 (75, 80, ... 120)."""
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    if int(err) != 0:
        raise CudaCompileError(f"nvrtcGetSupportedArchs failed: {err}")
    return tuple(sorted(int(arch) for arch in archs))


def arch_unsupported_reason(major: int, minor: int) -> str | None:
    """None when this NVRTC compiles for a GPU of compute capability major.minor; otherwise why not:
    NVRTC drops old architectures (CUDA 13's starts at sm_75) and knows none newer than its release."""
    archs = supported_archs()
    if major * 10 + minor in archs:
        return None
    return (
        f"backend='cuda' compiles its kernels with NVRTC {versions()['nvrtc']}, which targets "
        f"{', '.join(f'sm_{arch}' for arch in archs)}, not this GPU's sm_{major}{minor}: it needs an NVRTC "
        "(with the cuda-bindings of its CUDA release) that does"
    )


def versions_line() -> str:
    """``versions()`` as one line ("nvrtc 13.0 cuda_core 1.2.0"), for the files that record it."""
    return " ".join(f"{key} {value}" for key, value in versions().items())


@functools.lru_cache(maxsize=None)
def _headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(KERNEL_DIR.glob("*.cuh")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _options(arch: str, label: str = "fastsoftmax", kernel_dir: Path | None = None):
    from cuda.core import ProgramOptions

    include = [str(kernel_dir or KERNEL_DIR), *cuda_include_dirs()]
    # the name only labels NVRTC's messages; a path separator in it would change include lookup
    kwargs = dict(COMPILE_OPTIONS, arch=arch, include_path=include, name=label.replace("/", "_"))
    if not cuda_include_dirs() and _bundled_headers_supported():
        kwargs["use_bundled_headers"] = True
    return ProgramOptions(**kwargs)


def cache_key(source: str, arch: str) -> str:
    payload = {
        "format": CACHE_FORMAT,
        "source": source,
        "headers": _headers_digest(),
        "arch": arch,
        "options": COMPILE_OPTIONS,
        "include": list(cuda_include_dirs()),
        **versions(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def copy_kernels(into: Path, replacements=(), folder: Path | None = None) -> set:
    """Copies the kernel headers of ``folder`` (this tree's kernels/ by default) into ``into`` with
    each (old, new) of ``replacements`` applied to every file: an edited variant of the kernels, for
    ``compile_cubin(..., kernel_dir=into)`` (the benchmarks' A/B probes and register report compile
    such variants). Returns the OLD texts that occur in no header."""
    into.mkdir(parents=True, exist_ok=True)
    unmatched = {old for old, _ in replacements}
    for path in sorted((folder or KERNEL_DIR).iterdir()):
        if not path.is_file():
            continue
        text = path.read_text()
        for old, new in replacements:
            if old in text:
                unmatched.discard(old)
                text = text.replace(old, new)
        (into / path.name).write_text(text)
    return unmatched


class KernelVariant:
    """The kernels of ``folder`` (this tree's kernels/ by default) with each (old, new) of
    ``replacements`` applied to the headers, in a copy (copy_kernels), and to every unit's source,
    the wrappers: what the benchmarks' A/B probes and register report compile to measure a kernel
    edit beside the kernels as they are. An OLD found in no header and in no instance's wrapper is
    an error (ValueError): a mistyped edit would otherwise measure the kernels unedited. ``close``
    (or leaving a ``with`` block) removes the copy."""

    def __init__(self, replacements=(), folder: Path | None = None):
        self.replacements = tuple(replacements)
        self.folder = folder
        self._copy = None
        if not self.replacements:
            return
        self._copy = tempfile.TemporaryDirectory(prefix="fastsoftmax-variant-")
        self.folder = Path(self._copy.name)
        unmatched = copy_kernels(self.folder, self.replacements, folder)
        if unmatched:
            from .instances import all_instances

            wrappers = [inst.wrapper() for inst in all_instances()]
            for old, _ in self.replacements:
                if old in unmatched and not any(old in wrapper for wrapper in wrappers):
                    self.close()
                    raise ValueError(f"{old!r} occurs in neither the kernels' headers nor their wrappers")

    def compile(self, source: str, arch: str, label: str) -> bytes:
        """CUBIN of ``source`` (edited) against the variant's headers, never cached on disk."""
        for old, new in self.replacements:
            source = source.replace(old, new)
        return compile_cubin(source, arch, label, use_cache=False, kernel_dir=self.folder)

    def close(self) -> None:
        if self._copy is not None:
            self._copy.cleanup()
            self._copy = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def compile_cubin(source: str, arch: str, label: str, use_cache: bool = True, kernel_dir: Path | None = None) -> bytes:
    """CUBIN bytes of ``source`` for ``arch`` (e.g. "sm_90"), from the disk cache when possible.
    ``kernel_dir``: the headers from another folder (a copy of kernels/ from another revision, for
    measuring kernel variants side by side), never cached. Raises CudaCompileError with NVRTC's log
    if compilation fails."""
    reason = nvrtc_unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    use_cache = use_cache and kernel_dir is None
    path = cache_dir() / f"{cache_key(source, arch)}.cubin"
    if use_cache:
        try:
            return path.read_bytes()
        except OSError:
            pass
    from cuda.core import Program

    log = io.StringIO()
    try:
        program = Program(source, "c++", _options(arch, label, kernel_dir))
        try:
            code = bytes(program.compile("cubin", logs=log).code)
        finally:
            program.close()
    except Exception as exc:
        raise CudaCompileError(
            f"NVRTC failed to compile {label} for {arch}:\n{exc}\n{log.getvalue()}".rstrip()
        ) from exc
    if use_cache:
        _write_atomically(path, code)
    return code


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs a recompile


#: .nv.info attributes (EIATTR_*) that kernel_resources reads: registers a thread, and the stack
#: frame a thread (local arrays, and spill space where a register cap forces it)
_EIATTR_REGCOUNT = 0x2F
_EIATTR_FRAME_SIZE = 0x11
_EIFMT_SVAL = 0x04  # a (symbol index, value) pair follows


def kernel_resources(cubin: bytes) -> dict[str, tuple[int, int]]:
    """{kernel name: (registers, stack frame bytes)} read from a CUBIN's ELF (its .nv.info
    sections), without a GPU: what ptxas allocated for each function, for comparing kernel variants
    before timing them (a frame under a register cap is usually spill space)."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF CUBIN")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # (name offset, type, flags, address, offset, size, link, info, alignment, entry size)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def string(table, offset: int) -> str:
        start = table[4] + offset
        return cubin[start : cubin.index(b"\0", start)].decode()

    names = {string(sections[shstrndx], s[0]): s for s in sections}
    symtab, strtab = names[".symtab"], names[".strtab"]
    symbols = [string(strtab, struct.unpack_from("<I", cubin, symtab[4] + 24 * i)[0]) for i in range(symtab[5] // 24)]
    found: dict[str, dict[int, int]] = {}
    for name, section in names.items():
        if not name.startswith(".nv.info"):
            continue
        data = cubin[section[4] : section[4] + section[5]]
        at = 0
        while at + 4 <= len(data):
            fmt, attr, size = data[at], data[at + 1], struct.unpack_from("<H", data, at + 2)[0]
            if fmt != _EIFMT_SVAL:  # no payload
                at += 4
                continue
            if size == 8 and attr in (_EIATTR_REGCOUNT, _EIATTR_FRAME_SIZE):
                symbol, value = struct.unpack_from("<II", data, at + 4)
                found.setdefault(symbols[symbol], {})[attr] = value
            at += 4 + size
    return {
        name: (attrs[_EIATTR_REGCOUNT], attrs.get(_EIATTR_FRAME_SIZE, 0))
        for name, attrs in found.items()
        if _EIATTR_REGCOUNT in attrs
    }
