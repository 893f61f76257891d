"""Every CUDA kernel and template instance compiles with NVRTC, for sm_80 and sm_90 (and the units
whose code differs by architecture for sm_75, sm_100 and sm_120).

Runs on CPU-only machines: NVRTC needs the CUDA headers, not a GPU. Skips only when NVRTC itself
cannot be imported or loaded. Real compiles, never disk-cache hits, with all instances of a tier,
dtype and direction in one translation unit: for sm_90 as the backend compiles them, for sm_80 in
NVRTC's fast-compile mode where it has one (FULLY_OPTIMISED_ARCH).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import subprocess
import sys
from collections import defaultdict

import pytest
import torch
from benchmark_scripts import load_benchmark_script


def _nvrtc_missing() -> str | None:
    try:
        import cuda.core  # noqa: F401
        from cuda.bindings import nvrtc

        err, _, _ = nvrtc.nvrtcVersion()
        if int(err) != 0:
            return f"nvrtcVersion failed: {err}"
    except Exception as exc:  # ImportError, or libnvrtc not loadable
        return f"NVRTC is not available: {exc}"
    return None


_MISSING = _nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(_MISSING is not None, reason=str(_MISSING))

ARCHS = ("sm_80", "sm_90")


@functools.lru_cache(maxsize=1)
def _groups():
    """(label, instances) translation units covering every instance once."""
    from fastsoftmax.backends.cuda.instances import CXX_TYPES, all_instances

    groups = defaultdict(list)
    for inst in all_instances():
        direction = "bwd" if inst.backward else "fwd"
        family = inst.tier if inst.tier == "warp" else inst.header.removesuffix(".cuh")
        log = ("log" if inst.log else "exp") if inst.tier == "warp" else "both"
        groups[f"{family}-{CXX_TYPES[inst.dtype][1]}-{direction}-{log}"].append(inst)
    return dict(groups)


#: the architecture compiled as the backend compiles (the GPUs the package is measured on); the
#: others with NVRTC's fast-compile mode where this NVRTC has it (``--Ofast-compile=max``: the same
#: front end, code generation and ptxas for that architecture with less optimization, about 3.4x
#: faster: a unit of 204 flat_rows kernels 14.7 s against 50 s), which is what fails to compile there
#: and keeps the run within CI's time
FULLY_OPTIMISED_ARCH = "sm_90"


def _cubin(source: str, arch: str, label: str) -> bytes:
    """CUBIN of ``source`` for ``arch``, compiled for real (no disk cache)."""
    import dataclasses

    from cuda.core import Program

    from fastsoftmax.backends.cuda import compiler

    options = compiler._options(arch, label)
    fast_mode = dataclasses.is_dataclass(options) and "ofast_compile" in {f.name for f in dataclasses.fields(options)}
    if arch != FULLY_OPTIMISED_ARCH and fast_mode:  # (a cuda.core without the option: compiled in full)
        program = Program(source, "c++", dataclasses.replace(options, ofast_compile="max"))
        try:
            return bytes(program.compile("cubin").code)
        except Exception as exc:
            if "Ofast-compile" not in str(exc):  # an NVRTC without the mode: compiled in full below
                raise
        finally:
            program.close()
    return compiler.compile_cubin(source, arch, label, use_cache=False)


def _compile(arch: str, label: str) -> str | None:
    """Compile one translation unit for real (no disk cache); None, or what went wrong."""
    from fastsoftmax.backends.cuda.instances import source_for

    try:
        if label == "ladder":
            from fastsoftmax import ladder

            cubin = _cubin(ladder.source(), arch, "ladder.cu")
            names = ladder.all_kernel_names()
        else:
            insts = _groups()[label]
            cubin = _cubin(source_for(insts), arch, label)
            names = [i.name for i in insts]
    except Exception as exc:
        return str(exc)
    missing = [n for n in names if n.encode() not in cubin]
    return f"kernels missing from the CUBIN: {missing[:5]}" if missing else None


def _labels():
    try:
        return ["ladder", *_groups()]
    except Exception:  # collection must not fail; the tests below will report it
        return ["ladder"]


# One test per (architecture, translation unit): pytest-xdist spreads the compiles over its
# workers, and each unit is compiled exactly once per run.
@needs_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("label", _labels())
def test_every_instance_compiles(arch, label):
    error = _compile(arch, label)
    assert error is None, f"{label} failed to compile for {arch}:\n{error}"


#: other architectures the backend compiles for where it runs (DeviceFacts.arch: the GPU's own), in
#: NVRTC's fast-compile mode: sm_75 takes the plain-copy branches written for GPUs before cp.async,
#: sm_100 and sm_120 the cluster and asynchronous-copy code written for sm_90. The units whose code
#: differs by architecture (common.cuh's copies, the cluster and grid_row headers, and the tiers that
#: stage through them), in one 16-bit type: the rest is compiled for sm_80 and sm_90 above.
OTHER_ARCHS = ("sm_75", "sm_100", "sm_120")
BY_ARCHITECTURE = ("ladder",) + tuple(
    f"{family}-bf16-{direction}-both"
    for family in ("block_regs_tier", "cluster_tier", "grid_row_tier", "strided_staged")
    for direction in ("fwd", "bwd")
)


@needs_nvrtc
@pytest.mark.parametrize("arch", OTHER_ARCHS)
@pytest.mark.parametrize("label", BY_ARCHITECTURE)
def test_architecture_dependent_units_compile_for_other_gpus(arch, label):
    from fastsoftmax.backends.cuda import compiler

    if int(arch.removeprefix("sm_")) not in compiler.supported_archs():
        pytest.skip(f"this NVRTC ({compiler.versions()['nvrtc']}) does not compile for {arch}")
    error = _compile(arch, label)
    assert error is None, f"{label} failed to compile for {arch}:\n{error}"


@needs_nvrtc
def test_sources_avoid_what_older_nvrtc_rejects():
    """The compile test above runs this machine's NVRTC; the GPU machines may have an older one.
    NVRTC 13.0 (torch 2.11's CUDA 13.0 wheels) takes a generic lambda (``[&](auto ...)``) in
    device code for a host function and fails the whole translation unit, where 13.5 compiles it:
    kernels (and the device probes' beside benchmarks/) write a function template instead."""
    import re
    from pathlib import Path

    import fastsoftmax

    kernels = Path(fastsoftmax.__file__).parent / "backends" / "cuda" / "kernels"
    probes = Path(__file__).resolve().parents[2] / "benchmarks"  # the device probes' kernels too
    generic_lambda = re.compile(r"\[[^\]]*\]\s*\([^)]*\bauto\b")
    found = []
    for path in sorted(kernels.glob("*.cu*")) + sorted(probes.glob("*.cuh")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            if generic_lambda.search(code):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "generic lambdas in device code:\n" + "\n".join(found)


def test_instance_space_is_covered():
    from fastsoftmax.backends.cuda.instances import (
        DTYPES,
        WARP_LANES_16BIT,
        WARP_LANES_MAX_COLS,
        WARP_LONG_MAX_COLS,
        WARP_PACK_SIZES,
        WARP_ROWS,
        WARP_TIER_MAX_COLS,
        WINDOW_PACK,
        Instance,
        all_instances,
        warp_shape,
    )

    listed = all_instances()
    everything = set(listed)
    # one kernel a name: two instances of one name in a translation unit do not compile
    assert len({inst.name for inst in listed}) == len(listed), "all_instances() lists a kernel twice"
    for dtype in DTYPES:
        for pack in WARP_PACK_SIZES[dtype]:
            for n in range(1, 1025):
                for sector_groups in (False, True):
                    for backward in (False, True):
                        cols, group, rows = warp_shape(n, pack, dtype.itemsize, sector_groups, backward=backward)
                        assert cols * group >= n
                        # and every count of rows a group a tuning may ask for where the tier holds it
                        shapes = {(cols, group, rows)}
                        for r in WARP_ROWS:
                            with contextlib.suppress(ValueError):  # a count the tier refuses for these rows
                                shapes.add(
                                    warp_shape(n, pack, dtype.itemsize, sector_groups, rows=r, backward=backward)
                                )
                        # and every count of lanes a row a tuning may ask for (16-bit rows in 16-byte packs)
                        for lanes in WARP_LANES_16BIT if dtype.itemsize * pack == 16 and dtype.itemsize == 2 else ():
                            if -(-n // lanes) <= WARP_LANES_MAX_COLS:
                                shapes.add(warp_shape(n, pack, dtype.itemsize, lanes=lanes))
                        for cols, group, rows in shapes:
                            for log in (False, True):
                                inst = Instance("warp", dtype, backward, log, pack, cols, group, rows)
                                assert inst in everything, f"n={n}: {inst.name} is launched but never compiled in CI"
        # window instances hold n + pack - 1 columns (the row and its misalignment)
        wide = WINDOW_PACK[dtype]
        for n in range(1, WARP_TIER_MAX_COLS - wide + 2):
            for backward in (False, True):
                cols, group, rows = warp_shape(n + wide - 1, wide, backward=backward, window=True)
                inst = Instance("warp", dtype, backward, False, wide, cols, group, rows, window=True)
                assert inst in everything, f"n={n}: {inst.name} is launched but never compiled in CI"
        # the 16-bit forward's long rows, in 16-byte packs over a whole warp
        if dtype.itemsize == 2:
            for n in range(WARP_TIER_MAX_COLS + 1, WARP_LONG_MAX_COLS + 1):
                for window in (False, True):  # (a window's span is n + 7 columns: as long a row)
                    cols, group, rows = warp_shape(n, wide, dtype.itemsize, window=window)
                    assert cols * group >= n
                    for log in (False, True):
                        inst = Instance("warp", dtype, False, log, wide, cols, group, rows, window=window)
                        assert inst in everything, f"n={n}: {inst.name} is launched but never compiled in CI"


@needs_nvrtc
def test_block_regs_instance_space_is_covered():
    """Every row length of the block_regs tier, at every pack and target, maps to a compiled
    instance whose threads hold the whole row in at most 1024 threads."""
    from fastsoftmax.backends.cuda.instances import (
        BLOCK_REGS_PACK_SIZES,
        DTYPES,
        WINDOW_PACK,
        Instance,
        all_instances,
        block_regs_max_cols,
        block_regs_max_threads,
        block_regs_shape,
    )

    everything = set(all_instances())
    for dtype in DTYPES:
        for backward in (False, True):
            longest = block_regs_max_cols(dtype, backward)
            for pack in BLOCK_REGS_PACK_SIZES[dtype]:
                for target in (8, 16, 32, 64):
                    for n in [*range(1, 4200, 7), *range(4200, longest, 997), longest]:
                        elems, threads = block_regs_shape(n, dtype, pack, backward, target)
                        assert threads % 32 == 0 and threads * elems >= n, (n, elems, threads)
                        assert threads <= block_regs_max_threads(backward, elems), (n, elems, threads)
                        inst = Instance("block_regs", dtype, backward, False, pack, cols=elems)
                        assert inst in everything, f"n={n}: {inst.name} is launched but never compiled in CI"
                        if pack == WINDOW_PACK[dtype] and n <= longest - pack + 1:
                            elems, threads = block_regs_shape(n + pack - 1, dtype, pack, backward, target)
                            inst = Instance("block_regs", dtype, backward, False, pack, cols=elems, window=True)
                            assert inst in everything, f"n={n}: {inst.name} is launched but never compiled in CI"
                with pytest.raises(ValueError, match="too long"):
                    block_regs_shape(longest + 1, dtype, pack, backward, 16)


@needs_nvrtc
def test_block_regs_register_caps_keep_the_blocks_an_sm():
    """The block_regs instances launched just past an occupancy step carry a register cap that
    ptxas keeps: 16-bit backward at 16 elements a thread, two blocks of the widest window launch
    (rows of 8192 columns held in their window: 544 threads) to an SM; 16-bit forward rows held raw
    in their window at 16 elements a thread, ten 160-thread blocks. The other instances carry none."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import (
        Instance,
        block_regs_max_registers,
        block_regs_shape,
        source_for,
    )

    capped = []
    for dtype in (torch.bfloat16, torch.float16):
        for log in (False, True):
            for window in (False, True):
                capped.append(Instance("block_regs", dtype, True, log, 8, cols=16, window=window))
            capped.append(Instance("block_regs", dtype, False, log, 8, cols=16, window=True, storage="raw"))
    found = compiler.kernel_resources(compiler.compile_cubin(source_for(capped), "sm_90", "caps", use_cache=False))
    for inst in capped:
        cap = block_regs_max_registers(inst.backward, inst.cols, inst.window, inst.dtype, inst.block_storage, 8)
        assert cap and f"__maxnreg__({cap})" in inst.wrapper(), inst.name
        registers = found[inst.name][0]
        assert registers <= cap, (inst.name, registers)
        if inst.backward:
            elems, threads = block_regs_shape(8192 + 7, inst.dtype, 8, True, 16)
            assert (elems, threads) == (16, 544)
            assert 2 * threads * -(-registers // 8) * 8 <= 65536, (inst.name, registers)
        else:
            assert 10 * 160 * -(-registers // 8) * 8 <= 65536, (inst.name, registers)
    for inst in (
        Instance("block_regs", torch.float32, True, False, 4, cols=16),
        Instance("block_regs", torch.bfloat16, False, False, 8, cols=16, window=True, storage="float"),
        Instance("block_regs", torch.bfloat16, True, False, 8, cols=32, window=True),
        Instance("block_regs", torch.bfloat16, True, False, 2, cols=16),  # narrow packs spill under it
    ):
        cap = block_regs_max_registers(inst.backward, inst.cols, inst.window, inst.dtype, inst.block_storage, inst.pack)
        assert cap == 0, inst.name
        assert "__launch_bounds__" in inst.wrapper() and "__maxnreg__" not in inst.wrapper(), inst.name


@needs_nvrtc
def test_kernel_resources_reads_registers_and_stack_frames():
    """kernel_resources reads what ptxas allocated from the CUBIN alone: a launch bound's register
    cap, and a local array indexed at run time as stack frame."""
    from fastsoftmax.backends.cuda import compiler

    body = (
        "{ float a[48]; for (int i = 0; i < 48; ++i) a[i] = x[i * 1024 + threadIdx.x]; float s = 0;"
        " for (int i = 0; i < 48; ++i) for (int j = i; j < 48; j += 5) s += a[i] * a[j]; x[threadIdx.x] = s; }"
    )
    source = "\n".join(
        [
            f'extern "C" __global__ void __launch_bounds__(1024, 2) capped(float* x) {body}',
            f'extern "C" __global__ void uncapped(float* x) {body}',
            'extern "C" __global__ void framed(float* x, int k) { float a[256];'
            " for (int i = 0; i < 256; ++i) a[i] = x[i * 7 + threadIdx.x]; a[k & 255] += 1.0f; float s = 0;"
            " for (int i = 0; i < 256; ++i) s += a[i] * i; x[threadIdx.x] = s; }",
        ]
    )
    found = compiler.kernel_resources(compiler.compile_cubin(source, "sm_90", "resources", use_cache=False))
    assert set(found) == {"capped", "uncapped", "framed"}, found
    assert found["capped"][0] <= 32 < found["uncapped"][0], found  # 64K registers / (1024 x 2 threads)
    assert found["framed"][1] >= 256 * 4, found
    with pytest.raises(ValueError, match="ELF"):
        compiler.kernel_resources(b"not a cubin")


@needs_nvrtc
def test_compile_from_another_kernel_folder(tmp_path):
    """compile_cubin(kernel_dir=...) takes the headers from that folder (an earlier revision's
    kernels/, for side-by-side measurements), and its CUBIN is never cached."""
    from fastsoftmax.backends.cuda import compiler

    (tmp_path / "variant_only.cuh").write_text("#pragma once\nconstexpr int kVariant = 7;\n")
    source = '#include "variant_only.cuh"\nextern "C" __global__ void probe(int* x) { x[0] = kVariant; }\n'
    cubin = compiler.compile_cubin(source, "sm_90", "variant", use_cache=True, kernel_dir=tmp_path)
    assert "probe" in compiler.kernel_resources(cubin)
    assert not (compiler.cache_dir() / f"{compiler.cache_key(source, 'sm_90')}.cubin").exists()
    with pytest.raises(compiler.CudaCompileError, match="variant_only"):
        compiler.compile_cubin(source, "sm_90", "variant", use_cache=False)  # not in this tree's kernels/


@needs_nvrtc
def test_grid_row_phases_marks_the_current_forward():
    """benchmarks/grid_row_phases.py marks grid_row's forward by anchors in its source: each must be
    found once (it refuses otherwise) and the marked kernel and the floor kernel must compile, so that a change to the
    kernel cannot leave the timing script behind unnoticed."""
    import shutil

    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import grid_row_instance, source_for

    phases = load_benchmark_script("grid_row_phases")
    folder = phases.patched_kernel_dir()
    try:
        assert (folder / "grid_row_tier.cuh").read_text().count("FS_MARK") >= len(phases.PHASES) + 1
        source = source_for([grid_row_instance(torch.bfloat16, False, False)])
        cubin = compiler.compile_cubin(source, "sm_90", "phases", use_cache=False, kernel_dir=folder)
        assert "fs_grid_row_softmax_fwd_bf16_p8_c96" in compiler.kernel_resources(cubin)
        for interleaved in (False, True):  # the floor kernel beside it, marked by the same macro
            cubin = compiler.compile_cubin(phases.floor_source(12, interleaved), "sm_90", "fs_floor", use_cache=False)
            assert "fs_floor" in compiler.kernel_resources(cubin)
    finally:
        shutil.rmtree(folder)


@needs_nvrtc
def test_register_report_snapshot_round_trip(tmp_path, monkeypatch, capsys):
    """benchmarks/register_report.py: --save writes every chosen instance's figures, --snapshot
    compares with them, and --changed exits 1 only where an instance's registers or frame differ."""
    report = load_benchmark_script("register_report")
    snapshot = tmp_path / "registers.txt"
    match = "^fs_warp_softmax_fwd_f32_p4_c4_g1_r[12]$"
    monkeypatch.setattr(sys, "argv", ["register_report", "--match", match, "--save", str(snapshot)])
    assert report.main() == 0
    saved = report.load(snapshot)
    assert sorted(saved) == ["fs_warp_softmax_fwd_f32_p4_c4_g1_r1", "fs_warp_softmax_fwd_f32_p4_c4_g1_r2"]
    assert all(regs > 0 and frame >= 0 for regs, frame in saved.values())
    monkeypatch.setattr(sys, "argv", ["register_report", "--match", match, "--snapshot", str(snapshot), "--changed"])
    assert report.main() == 0
    assert "0 of 2 instances differ" in capsys.readouterr().out
    name = "fs_warp_softmax_fwd_f32_p4_c4_g1_r1"
    report.save(snapshot, {**saved, name: (saved[name][0] + 1, saved[name][1])}, "sm_90")
    assert report.main() == 1
    out = capsys.readouterr().out
    assert "1 of 2 instances differ" in out and name in out


def test_copy_kernels_edits_a_copy_and_names_what_it_did_not_find(tmp_path):
    """compiler.copy_kernels: every header of kernels/ in the new folder, each replacement applied
    to every file where it occurs, the tree's own headers untouched, and the texts found nowhere
    returned."""
    from fastsoftmax.backends.cuda import compiler

    original = (compiler.KERNEL_DIR / "common.cuh").read_text()
    unmatched = compiler.copy_kernels(
        tmp_path, [("constexpr int kUnroll = 4;", "constexpr int kUnroll = 2;"), ("no such text", "x")]
    )
    assert unmatched == {"no such text"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in compiler.KERNEL_DIR.iterdir() if p.is_file()
    )
    copied = (tmp_path / "common.cuh").read_text()
    assert "constexpr int kUnroll = 2;" in copied and "constexpr int kUnroll = 4;" not in copied
    assert copied == original.replace("constexpr int kUnroll = 4;", "constexpr int kUnroll = 2;")
    assert (compiler.KERNEL_DIR / "common.cuh").read_text() == original
    assert (tmp_path / "warp_tier.cuh").read_text() == (compiler.KERNEL_DIR / "warp_tier.cuh").read_text()


@needs_nvrtc
def test_kernel_variant_edits_headers_and_wrappers_in_a_copy():
    """compiler.KernelVariant: a header edit reaches the compiled code (a broken text breaks it),
    a wrapper-only edit too (a kernel renamed: the old name is gone from the CUBIN), the tree's own
    headers untouched, a text found nowhere an error naming it, and close removes the copy."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import all_instances, source_for

    inst = next(i for i in all_instances() if i.name == "fs_warp_softmax_fwd_f32_p4_c4_g1_r1")
    header_only = "constexpr int kUnroll = 4;"
    with compiler.KernelVariant([(header_only, "int kUnroll = ;")]) as broken:
        with pytest.raises(compiler.CudaCompileError):
            broken.compile(source_for([inst]), "sm_90", "variant")
    assert header_only in (compiler.KERNEL_DIR / "common.cuh").read_text()
    renamed = inst.name + "_renamed"
    variant = compiler.KernelVariant([(f" {inst.name}(", f" {renamed}(")])
    folder = variant.folder
    cubin = variant.compile(source_for([inst]), "sm_90", "variant")
    assert renamed.encode() in cubin
    variant.close()
    assert not folder.exists()
    with pytest.raises(ValueError, match="no such text"):
        compiler.KernelVariant([("no such text", "x")])


@needs_nvrtc
def test_register_report_replace_edits_the_headers(monkeypatch):
    """benchmarks/register_report.py --replace edits the kernel headers (in a copy), not only the
    units' wrappers: a header-only text broken by it breaks the compile; a text found nowhere is an
    error that names it."""
    from fastsoftmax.backends.cuda import compiler

    report = load_benchmark_script("register_report")
    match = "^fs_warp_softmax_fwd_f32_p4_c4_g1_r1$"
    header_only = "constexpr int kUnroll = 4;"
    assert header_only in (compiler.KERNEL_DIR / "common.cuh").read_text()
    monkeypatch.setattr(
        sys, "argv", ["register_report", "--match", match, "--replace", f"{header_only}|int kUnroll = ;"]
    )
    with pytest.raises(compiler.CudaCompileError):
        report.main()
    assert header_only in (compiler.KERNEL_DIR / "common.cuh").read_text()  # the tree's own headers untouched
    monkeypatch.setattr(sys, "argv", ["register_report", "--match", match, "--replace", "no such text|x"])
    with pytest.raises(SystemExit, match="no such text"):
        report.main()


def test_register_report_sass_tells_an_edit_apart(monkeypatch, capsys):
    """register_report.py --sass: an edit that leaves a kernel's code as it was is shown identical
    (a comment), one that changes it is shown to differ (the base-2 exponent's factor, an immediate
    of the warp tier's code), and the exit status says so under --changed."""
    if _sass_lines().nvdisasm_path() is None:
        pytest.skip("no nvdisasm (the triton extra ships one)")
    report = load_benchmark_script("register_report")
    match = "^fs_warp_softmax_fwd_f32_p4_c4_g1_r1$"
    for edit, same in (
        ("constexpr int kUnroll = 4;|constexpr int kUnroll = 4;  // x", True),
        ("constexpr float kLog2e = 1.4426950408889634f;|constexpr float kLog2e = 1.5f;", False),
    ):
        monkeypatch.setattr(
            sys, "argv", ["register_report", "--match", match, "--replace", edit, "--sass", "--changed"]
        )
        assert report.main() == (0 if same else 1)
        out = capsys.readouterr().out
        assert ("SASS: 1 of 1 instances identical" in out) == same, out


def _sass_lines():
    return load_benchmark_script("sass_lines")


def test_sass_lines_counts_loop_depth_by_source_line():
    """benchmarks/sass_lines.py: instructions carry the line of the last line marker, and an
    instruction's depth is the number of backward branches whose range holds it."""
    sass = """
        //## File "/k/a.cuh", line 3
        /*0000*/ MOV R1, R2 ;
    .L_x_0:
        //## File "/k/a.cuh", line 7
        /*0010*/ IADD3 R1, R1, 1, RZ ;
    .L_x_1:
        /*0020*/ FADD R3, R3, R4 ;
        /*0030*/ @P0 BRA `(.L_x_1) ;
        //## File "/k/b.cuh", line 9
        /*0040*/ @P1 BRA `(.L_x_0) ;
        /*0050*/ @P2 BRA `(.L_x_2) ;
    .L_x_2:
        /*0060*/ EXIT ;
    """.splitlines()
    instructions, depth = _sass_lines().count_lines(sass)
    assert [loc for _, loc in instructions] == [
        "a.cuh:3",
        "a.cuh:7",
        "a.cuh:7",
        "a.cuh:7",
        "b.cuh:9",
        "b.cuh:9",
        "b.cuh:9",
    ]
    assert depth == [0, 1, 2, 2, 1, 0, 0]  # a forward branch opens no loop


@needs_nvrtc
def test_sass_lines_on_a_real_instance(capsys, monkeypatch):
    """The tool end to end where an nvdisasm is at hand: a warp-tier instance compiled with line
    information, every instruction counted once, the kernel's own header among the lines."""
    tool = _sass_lines()
    if tool.nvdisasm_path() is None:
        pytest.skip("no nvdisasm (the triton extra ships one)")
    monkeypatch.setattr(
        sys, "argv", ["sass_lines", "fs_warp_softmax_fwd_f32_p4_c4_g1_r1", "--depth", "9", "--top", "500"]
    )
    assert tool.main() == 0
    out = capsys.readouterr().out.splitlines()
    total = int(out[0].split(": ")[1].split()[0])
    listed = sum(int(line.split()[0]) for line in out[2:])
    assert total > 0 and listed == total
    assert any("warp_tier.cuh:" in line for line in out[2:])


@needs_nvrtc
def test_export_cubins_writes_one_cubin_an_instance(tmp_path):
    """benchmarks/export_cubins.py: each instance compiled alone, as the backend compiles it, into
    DIR/<name>.cubin that holds that kernel, beside the NVRTC version it came from."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import all_instances

    export = load_benchmark_script("export_cubins")
    chosen = [
        i
        for i in all_instances()
        if i.name in ("fs_warp_softmax_fwd_f32_p4_c4_g1_r1", "fs_warp_softmax_fwd_f32_p4_c4_g1_r2")
    ]
    paths = export.export(chosen, "sm_90", tmp_path / "cubins", workers=1)
    assert [p.name for p in paths] == [f"{i.name}.cubin" for i in chosen]
    for inst, cubin in zip(chosen, paths):
        assert list(compiler.kernel_resources(cubin.read_bytes())) == [inst.name]
    assert (tmp_path / "cubins" / "nvrtc.txt").read_text().startswith("sm_90 nvrtc ")


@needs_nvrtc
def test_disk_cache_round_trip(tmp_path, monkeypatch):
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import source_for
    from fastsoftmax.backends.cuda.strided import StridedInstance

    monkeypatch.setenv("FASTSOFTMAX_CACHE_DIR", str(tmp_path))
    src = source_for([StridedInstance(torch.float32, False, False)])
    first = compiler.compile_cubin(src, "sm_90", "cache-test")
    files = list(tmp_path.glob("*.cubin"))
    assert len(files) == 1, "one compile should leave one CUBIN in the cache"
    assert files[0].read_bytes() == first
    assert compiler.compile_cubin(src, "sm_90", "cache-test") == first
    # another architecture is another key
    compiler.compile_cubin(src, "sm_80", "cache-test")
    assert len(list(tmp_path.glob("*.cubin"))) == 2


@needs_nvrtc
def test_compile_error_shows_the_nvrtc_log():
    from fastsoftmax.backends.cuda import compiler

    with pytest.raises(compiler.CudaCompileError) as info:
        compiler.compile_cubin(
            'extern "C" __global__ void broken() { undefined_thing(); }', "sm_90", "broken.cu", use_cache=False
        )
    message = str(info.value)
    assert "broken.cu" in message and "undefined_thing" in message, message


def test_import_without_cuda_core_explains_what_to_install():
    code = (
        "import sys; sys.modules['cuda'] = None\n"
        "import torch\n"
        "from fastsoftmax.backends.cuda import BACKEND\n"
        "print(BACKEND.unavailable_reason(torch.device('cuda', 0)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert out.returncode == 0, out.stderr
    assert "pip install fastsoftmax[cuda]" in out.stdout and "cuda-core" in out.stdout, out.stdout


def test_tier_choice_is_supported():
    from fastsoftmax.backends.cuda import BACKEND

    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for backward in (False, True):
            for n in (1, 7, 1000, 1024, 1025, 4096, 32768, 50257, 131072, 1 << 24):
                tier = BACKEND.choose_tier(64, n, 1, dtype, backward)
                assert BACKEND.supports(tier, 64, n, 1, dtype, backward), (tier, n, dtype, backward)
                assert not BACKEND.supports("strided", 64, n, 1, dtype, backward)
            assert BACKEND.choose_tier(8, 100, 3, dtype, backward) == "strided"
            # past 1024 columns: the 16-bit forward's long rows only (rows on 16-byte boundaries, up to 3072)
            long_rows = dtype != torch.float32 and not backward
            assert BACKEND.supports("warp", 8, 2000, 1, dtype, backward) == long_rows
            assert not BACKEND.supports("warp", 8, 3080, 1, dtype, backward)
    assert BACKEND.choose_tier(8, 1024, 1, torch.float32, False) == "warp"
    assert BACKEND.choose_tier(8, 1025, 1, torch.float32, False) == "block_regs"
    # forward rows past 9216 on 16-byte boundaries: the cluster tier, which block_regs holds too
    assert BACKEND.choose_tier(4096, 32768, 1, torch.bfloat16, False) == "cluster"
    assert BACKEND.choose_tier(4096, 9216, 1, torch.bfloat16, False) == "block_regs"
    assert BACKEND.choose_tier(4096, 32767, 1, torch.bfloat16, False) == "block_regs"
    assert BACKEND.choose_tier(4096, 16384, 1, torch.bfloat16, True) == "block_regs"
    assert BACKEND.choose_tier(4096, 32768, 1, torch.bfloat16, True) == "cluster"
    assert BACKEND.choose_tier(4096, 16384, 1, torch.float32, True) == "block_regs"
    # 16-bit rows on 16-byte boundaries: the forward on the warp tier to its 1024 columns, the
    # backward on block_regs from 512
    assert BACKEND.choose_tier(8, 1024, 1, torch.bfloat16, False) == "warp"
    assert BACKEND.choose_tier(8, 1032, 1, torch.bfloat16, False) == "block_regs"
    assert BACKEND.choose_tier(8, 512, 1, torch.bfloat16, True) == "block_regs"
    assert BACKEND.choose_tier(8, 511, 1, torch.bfloat16, True) == "warp"
    assert BACKEND.choose_tier(4096, 32769, 1, torch.bfloat16, False) == "cluster"
    assert BACKEND.choose_tier(1, 128256, 1, torch.bfloat16, False) == "cluster"
    assert BACKEND.choose_tier(4096, 131072, 1, torch.bfloat16, False) == "cluster"
    # past what a cluster holds in registers at full speed: held across cluster_stream's registers and
    # shared memory with many rows, the two-read tiers with few (and without clusters)
    assert BACKEND.choose_tier(4096, 1 << 20, 1, torch.bfloat16, False) == "cluster_stream"
    assert BACKEND.choose_tier(1, 1 << 20, 1, torch.bfloat16, False) == "split_row"


def test_unavailable_on_cpu_tensors():
    from fastsoftmax.backends.cuda import BACKEND

    assert "CUDA tensors" in BACKEND.unavailable_reason(torch.device("cpu"))


@needs_nvrtc
def test_compile_command_fills_the_cache(tmp_path, monkeypatch, capsys):
    """``fastsoftmax compile`` puts every instance's CUBIN where the backend looks for it."""
    from fastsoftmax import cli
    from fastsoftmax.backends.cuda import compiler, instances
    from fastsoftmax.backends.cuda.instances import source_for
    from fastsoftmax.distributed import _peer

    chosen = [i for i in instances.all_instances() if i.tier == "warp"][:2]
    chosen += [i for i in instances.all_instances() if i.tier == "block_regs" and i.name.endswith("_staged")][:1]
    peer = _peer.all_kernels()[:1]  # collective="peer" compiles the same way
    monkeypatch.setattr(instances, "all_instances", lambda: chosen)
    monkeypatch.setattr(_peer, "all_kernels", lambda: peer)
    monkeypatch.setenv("FASTSOFTMAX_CACHE_DIR", str(tmp_path))
    assert cli.main(["compile", "--arch", "sm_90", "--jobs", "1"]) == 0
    assert "compiled 4 of 4 kernel instances for sm_90" in capsys.readouterr().out
    for inst in chosen:
        path = compiler.cache_dir() / f"{compiler.cache_key(source_for([inst]), 'sm_90')}.cubin"
        assert inst.name.encode() in path.read_bytes()
    for kernel in peer:
        path = compiler.cache_dir() / f"{compiler.cache_key(_peer.source([kernel]), 'sm_90')}.cubin"
        assert _peer.kernel_name(*kernel).encode() in path.read_bytes()
    # --match: only the instances whose names it finds; none found is an error that names the pattern
    assert cli.main(["compile", "--arch", "sm_90", "--jobs", "1", "--match", "^peer_rows_"]) == 0
    assert "compiled 1 of 1 kernel instances for sm_90" in capsys.readouterr().out
    assert cli.main(["compile", "--arch", "sm_90", "--jobs", "1", "--match", "^no_such_kernel"]) == 1
    assert "no kernel instance's name matches '^no_such_kernel'" in capsys.readouterr().err
    # bad arguments: one line each, before any compile
    assert cli.main(["compile", "--arch", "banana"]) == 2
    assert "--arch takes names such as sm_80" in capsys.readouterr().err
    assert cli.main(["compile", "--arch", "sm_90", "--match", "["]) == 2
    assert "is not a regular expression" in capsys.readouterr().err
    assert cli.main(["compile", "--arch", "sm_90", "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err
    # an architecture NVRTC does not know: said once, from the first instance, not once an instance
    assert cli.main(["compile", "--arch", "sm_99", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "the first instance failed for sm_99, not compiling the rest" in out and out.count("NVRTC failed") == 1


def test_cluster_shapes_cover_their_rows():
    """Every row up to the cluster tier's longest fits its launch at any alignment: the CTAs'
    slices cover the row, each CTA's threads hold every slot of its slice (K x threads), shared
    memory stays within sm_90's opt-in limit and is none for aligned rows, the threads stay within
    the instance's launch bound, and the instance exists in the compiled set."""
    from fastsoftmax.backends.cuda.instances import (
        CLUSTER_MAX_DYNAMIC_SMEM,
        DTYPES,
        Instance,
        all_instances,
        cluster_chunk,
        cluster_max_cols,
        cluster_max_threads,
        cluster_shape,
        cluster_slots,
    )

    everything = set(all_instances())
    for dtype in DTYPES:
        for backward in (False, True):
            longest = cluster_max_cols(dtype, backward)
            for n in [1, 7, 4096, 16384, 32769, 50257, 65536, 128256, 151936, 262144, 1 << 19, 1 << 20, longest]:
                if n > longest:
                    continue
                for rows, aligned, high_bandwidth in itertools.product((1, 8, 4096), (False, True), (False, True)):
                    shape = cluster_shape(
                        n, dtype, backward, rows=rows, sm_count=132, aligned=aligned, high_bandwidth=high_bandwidth
                    )
                    packs = shape.held // shape.pack
                    assert shape.ctas * cluster_chunk(n, dtype, shape.ctas) >= n
                    assert packs * shape.threads >= cluster_slots(n, dtype, shape.ctas, aligned)
                    assert shape.smem_bytes <= CLUSTER_MAX_DYNAMIC_SMEM
                    assert (shape.smem_bytes == 0) == aligned
                    assert 128 <= shape.threads <= cluster_max_threads(backward, packs)
                    assert shape.threads % 32 == 0
                    assert shape.non_portable == (shape.ctas > 8)
                    inst = Instance("cluster", dtype, backward, True, shape.pack, cols=shape.held)
                    assert inst in everything, inst.name
            with pytest.raises(ValueError, match="too long"):
                cluster_shape(longest + 1, dtype, backward)
    # 16-bit: 16K elements (32 KiB) per CTA before the cluster doubles; float32 16K forward, 8K backward
    assert cluster_shape(16384, torch.bfloat16, False).ctas == 2  # never 1: see cluster_shape
    assert cluster_shape(32768, torch.bfloat16, False).ctas == 2
    assert cluster_shape(65536, torch.bfloat16, False, aligned=True).ctas == 4
    # on a GPU of much DRAM bandwidth an SM the 16-bit backward takes 8 CTAs where its row gives 4
    # and a CTA's share passes three quarters of the 32 KiB (CLUSTER_16BIT_BACKWARD_EIGHT_AFTER_BYTES):
    # rows of 49153-65536, aligned or not; elsewhere (an H100) the 4
    for dtype in (torch.bfloat16, torch.float16):
        for n, ctas in ((32769, 4), (40000, 4), (49152, 4), (49153, 8), (50257, 8), (50264, 8), (65536, 8)):
            assert cluster_shape(n, dtype, True, aligned=True, high_bandwidth=True).ctas == ctas, (dtype, n)
            wide = cluster_shape(n, dtype, True, rows=2670, sm_count=132, aligned=True, high_bandwidth=True)
            assert wide.ctas == ctas, (dtype, n)
            assert cluster_shape(n, dtype, True, rows=2670, sm_count=132, aligned=True).ctas == 4, (dtype, n)
            assert cluster_shape(n, dtype, False, aligned=True, high_bandwidth=True).ctas == 4, (dtype, n)
    assert cluster_shape(50257, torch.bfloat16, True, rows=8, sm_count=132, aligned=True).ctas == 16
    # the 16-bit backward off 16-byte boundaries takes twice the cluster from 4 CTAs on (its edge
    # slots would add a warp a CTA: CLUSTER_MISALIGNED_BACKWARD_DOUBLES_FROM), not from 2, and neither
    # float32 nor the forward
    assert cluster_shape(65535, torch.bfloat16, True).ctas == 8
    assert cluster_shape(131071, torch.float16, True).ctas == 16
    assert cluster_shape(131071, torch.float16, True, aligned=True).ctas == 8
    assert cluster_shape(16383, torch.bfloat16, True).ctas == 2
    assert cluster_shape(65535, torch.float32, True).ctas == 8
    assert cluster_shape(65535, torch.bfloat16, False).ctas == 4
    assert cluster_shape(65536, torch.float32, False).ctas == 8
    assert cluster_shape(65536, torch.float32, True).ctas == 8
    assert cluster_shape(131072, torch.bfloat16, False).ctas == 8
    assert cluster_shape(262144, torch.bfloat16, True).ctas == 16
    assert cluster_shape(128256, torch.bfloat16, False, rows=1, sm_count=132).ctas == 16
    # a forced shape that cannot hold the row names what was forced, not a length the tier's own holds
    with pytest.raises(ValueError, match="do not fit .* with CTAs 1, threads 128, packs 2 forced"):
        cluster_shape(100000, torch.bfloat16, False, ctas=1, threads=128, packs=2)
    with pytest.raises(ValueError, match="do not fit the cluster tier's backward with CTAs 8 forced"):
        cluster_shape(151936, torch.float32, True, ctas=8)


def test_cluster_whole_packs_fit_the_aligned_shape_and_follow_the_rule():
    """Rows cut into their whole packs, the ends apart (cluster_tier.cuh, InteriorSlice), hold at most
    an aligned row's slots a CTA whatever their offset, so the aligned launch shape serves them; the
    instance of that form exists for every shape. The rule (plans.cluster_whole_packs) takes it for
    the 16-bit backward of any row off 16-byte boundaries, and elsewhere only where the boundary cut
    launches a larger shape, as measured (bf16 forward 1024 x 131071: 288 threads against 256)."""
    from fastsoftmax.backends.cuda.instances import (
        DTYPES,
        Instance,
        all_instances,
        cluster_pack,
        cluster_shape,
        cluster_slots,
    )
    from fastsoftmax.backends.cuda.plans import cluster_whole_packs

    everything = set(all_instances())
    for dtype in DTYPES:
        pack = cluster_pack(dtype)
        for backward in (False, True):
            for n in (5, 1000, 16383, 50257, 65535, 131071, 262143):
                for ctas in (2, 4, 8, 16):
                    for shift in range(pack):
                        head = min(n, (pack - shift) % pack)
                        packs = (n - head) // pack
                        assert -(-packs // ctas) <= cluster_slots(n, dtype, ctas, True)
                        assert head + packs * pack <= n and n - head - packs * pack < pack
            for rows in (8, 4096):
                shape = cluster_shape(131071, dtype, backward, rows=rows, sm_count=132, aligned=True)
                assert (
                    Instance("cluster", dtype, backward, False, shape.pack, cols=shape.held, storage="alike")
                    in everything
                )

    def takes(n, dtype, backward, rows=2670, on_boundaries=False):
        def at(aligned):
            try:
                return cluster_shape(n, dtype, backward, rows=rows, sm_count=132, aligned=aligned, high_bandwidth=True)
            except ValueError:
                return None

        return cluster_whole_packs(backward, dtype.itemsize, on_boundaries, at(False), at(True))

    assert takes(50257, torch.bfloat16, True) and takes(50257, torch.float16, True)
    assert not takes(50264, torch.bfloat16, True, on_boundaries=True)
    assert takes(131071, torch.bfloat16, False, rows=1024) and takes(131071, torch.float32, True, rows=1024)
    assert not takes(50257, torch.bfloat16, False) and not takes(50257, torch.float32, True)
    assert not takes(151937, torch.bfloat16, False, rows=32)  # a decode launch: both cuts alike
    assert takes(524287, torch.float32, False, rows=256)  # past what the boundary cut holds


def test_cluster_column_shapes_cover_their_runs():
    """The column kernels' launches (runs of n x inner interleaved columns, 16-byte aligned): chunks
    of a multiple of inner elements that cover the run, threads holding every slot, no shared
    memory, the instance compiled; and where strided_staged takes them."""
    from fastsoftmax.backends.cuda import strided
    from fastsoftmax.backends.cuda.instances import (
        DTYPES,
        Instance,
        all_instances,
        cluster_chunk,
        cluster_max_cols,
        cluster_shape,
        cluster_slots,
    )
    from fastsoftmax.backends.cuda.tiers import DEFAULT_TUNING

    everything = set(all_instances())
    for dtype in DTYPES:
        for backward in (False, True):
            longest = cluster_max_cols(dtype, backward, aligned=True, columns=2)
            for inner in (2, 4, 8, 16, 32):
                for run in (inner * 3, 4096, 32768 + inner, 131072, longest - longest % inner):
                    shape = cluster_shape(run, dtype, backward, rows=64, sm_count=132, aligned=True, columns=inner)
                    chunk = cluster_chunk(run, dtype, shape.ctas, inner)
                    assert chunk % inner == 0 and chunk % shape.pack == 0 and shape.ctas * chunk >= run
                    assert shape.held // shape.pack * shape.threads >= cluster_slots(
                        run, dtype, shape.ctas, True, inner
                    )
                    assert shape.smem_bytes == 0 and shape.threads % 32 == 0
                    inst = Instance("cluster", dtype, backward, False, shape.pack, cols=shape.held, columns=True)
                    assert inst in everything, inst.name
            with pytest.raises(ValueError, match="16-byte"):
                cluster_shape(4096, dtype, backward, aligned=False, columns=8)
    dense = lambda outer, n, inner: ((n * inner, inner, 1),) * 2  # noqa: E731
    # the runs must be contiguous, start on 16-byte boundaries and have a power-of-two inner
    assert strided.columns_fit(8, 4096, 8, torch.float32, False, dense(8, 4096, 8)) is None
    assert "power of two" in strided.columns_fit(8, 4096, 12, torch.float32, False, dense(8, 4096, 12))
    assert "contiguous" in strided.columns_fit(8, 4096, 8, torch.float32, False, ((4096 * 16, 16, 1),) * 2)
    assert "16-byte" in strided.columns_fit(8, 4099, 2, torch.bfloat16, False, dense(8, 4099, 2))
    assert "longer" in strided.columns_fit(1, 1 << 19, 2, torch.float32, True, dense(1, 1 << 19, 2))
    # measured: every run from 32K elements, forward and backward, any type
    takes = lambda n, inner: strided.takes_columns(n, inner, DEFAULT_TUNING)  # noqa: E731
    assert takes(4096, 8) and takes(65536, 8) and not takes(1024, 8)


def test_short_row_storage_is_raw_unless_tuned():
    """16-bit forward block_regs rows of 8-32 elements a thread: raw on every GPU, float32 (or staged)
    when tuned; both are compiled; float32 rows and the backward keep their one storage; an unknown
    one is refused."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import (
        SHORT_ROW_STORAGE_16BIT,
        Instance,
        all_instances,
        block_regs_storage,
    )

    assert SHORT_ROW_STORAGE_16BIT == "raw"
    names = {inst.name for inst in all_instances()}
    for elems in (8, 16, 32):
        for short in ("float", "raw", "staged"):
            assert block_regs_storage(torch.bfloat16, False, elems, "staged", short) == short
            assert block_regs_storage(torch.float32, False, elems, "staged", short) == "float"
            assert block_regs_storage(torch.bfloat16, True, elems, "staged", short) == "raw"
        for short in ("float", "raw"):
            for window, pack in ((False, 8), (True, 8), (False, 2)):
                inst = Instance(
                    "block_regs", torch.float16, False, True, pack, cols=elems, storage=short, window=window
                )
                assert inst.name in names
    assert block_regs_storage(torch.bfloat16, False, 64, "raw", "float") == "raw"
    with pytest.raises(ValueError, match="short_row_storage_16bit"):
        tiers.Tuning(short_row_storage_16bit="registers")
    with pytest.raises(ValueError, match="short-row storage"):
        block_regs_storage(torch.bfloat16, False, 32, "staged", "registers")


def test_tunings_nest():
    """An inner ``tuned`` keeps the enclosing one's values it does not set, and each restores what
    was there before on leaving."""
    from fastsoftmax.backends.cuda import tiers

    assert tiers.current_tuning() == tiers.DEFAULT_TUNING
    with tiers.tuned(short_row_storage_16bit="raw", block_regs_elems=16):
        with tiers.tuned(block_regs_elems=32):
            inner = tiers.current_tuning()
            assert (inner.short_row_storage_16bit, inner.block_regs_elems) == ("raw", 32)
        outer = tiers.current_tuning()
        assert (outer.short_row_storage_16bit, outer.block_regs_elems) == ("raw", 16)
    assert tiers.current_tuning() == tiers.DEFAULT_TUNING


def test_long_row_storage_is_a_tuning_value():
    """block_regs' storage of long 16-bit rows is chosen per call (tiers.Tuning), and both choices
    are compiled; an unknown one is refused."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import Instance, all_instances, block_regs_storage

    assert tiers.DEFAULT_TUNING.long_row_storage == "staged"
    assert tiers.Tuning(long_row_storage_16bit="raw").long_row_storage == "raw"
    with pytest.raises(ValueError, match="long_row_storage_16bit"):
        tiers.Tuning(long_row_storage_16bit="registers")
    names = {inst.name for inst in all_instances()}
    for storage in ("staged", "raw"):
        assert block_regs_storage(torch.bfloat16, False, 64, storage) == storage
        inst = Instance("block_regs", torch.bfloat16, False, False, 8, cols=64, storage=storage)
        assert inst.name in names
    # the long rows' choice leaves fewer elements a thread, and float32, alone
    assert block_regs_storage(torch.bfloat16, False, 32, "raw", "float") == "float"
    assert block_regs_storage(torch.float32, False, 64, "raw") == "float"


def test_cluster_grid():
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.instances import (
        CLUSTER_FEW_LONG_ROWS,
        cluster_grid,
        cluster_max_cols,
        cluster_preferred_max_cols,
    )

    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for backward in (False, True):
            assert cluster_preferred_max_cols(dtype, backward) <= cluster_max_cols(dtype, backward)
    assert cluster_preferred_max_cols(torch.bfloat16, False) == 1 << 19
    for dtype in (torch.float32, torch.bfloat16):
        for backward in (False, True):
            longest = cluster_max_cols(dtype, backward)
            streamed = not backward
            preferred = cluster_preferred_max_cols(dtype, backward)
            assert cluster_preferred_max_cols(dtype, backward, 32) == (preferred if streamed else longest)
            # the backward chosen up to its longest row with many rows (but forward rows past 2^19
            # in 16 bits and 2^18 in float32, which cluster_stream holds faster)
            h100 = tiers.H100_LIMITS
            many = tiers.choose_tier(64, longest, 1, dtype, backward, h100)
            assert many == ("cluster_stream" if streamed else "cluster")
            if streamed:
                assert tiers.choose_tier(64, preferred, 1, dtype, backward, h100) == "cluster"
                assert tiers.choose_tier(64, preferred + 1, 1, dtype, backward, h100) == "cluster_stream"
            # past it cluster_stream, but for the backward's rows grid_row holds in teams (up to 256 rows)
            assert tiers.choose_tier(512, longest + 1, 1, dtype, backward, h100) == "cluster_stream"
            assert tiers.choose_tier(64, longest + 1, 1, dtype, backward, h100) == (
                "grid_row" if backward else "cluster_stream"
            )
            # fewer rows on 16-byte boundaries take it too (CLUSTER_FEW_LONG_ROWS, as measured): the
            # backward of any number, the float32 forward of 2-7 rows, the 16-bit forward of 4-7
            first, last = (1, 31) if backward else (2, 7) if dtype == torch.float32 else (4, 7)
            assert CLUSTER_FEW_LONG_ROWS[(backward, dtype.itemsize)] == (first, last)
            on_boundaries = cluster_max_cols(dtype, backward, aligned=True)
            assert on_boundaries * dtype.itemsize % 16 == 0
            for rows in (1, 2, 3, 4, 7, 8, 16, 31):
                held = first <= rows <= last
                assert cluster_preferred_max_cols(dtype, backward, rows, True) == (on_boundaries if held else preferred)
                assert cluster_preferred_max_cols(dtype, backward, rows, False) == preferred  # off them: as before
                for n in (on_boundaries, longest - 1):  # on 16-byte boundaries, and an odd length
                    teams = tiers.grid_row_in_teams(rows, n, dtype, backward, h100)
                    chosen = tiers.choose_tier(rows, n, 1, dtype, backward, h100)
                    if held and n == on_boundaries:
                        assert chosen == "cluster", (rows, n, dtype, backward)
                    elif rows < tiers.CLUSTER_STREAM_MIN_ROWS:
                        assert chosen == ("grid_row" if teams else "split_row"), (rows, n, dtype, backward, chosen)

    for backward in (False, True):
        assert cluster_grid(1024, 45, backward) == 1024
        assert cluster_grid(8, 0, backward) == 8


def _ptx(label: str, insts) -> str:
    """NVRTC's PTX for sm_90 of one translation unit (through cuda.bindings: no driver needed)."""
    from cuda.bindings import nvrtc

    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import source_for

    include = [str(compiler.KERNEL_DIR), *compiler.cuda_include_dirs()]
    options = [b"-arch=sm_90", b"-std=c++17", *(f"-I{path}".encode() for path in include)]
    err, program = nvrtc.nvrtcCreateProgram(source_for(insts).encode(), label.encode(), 0, [], [])
    assert int(err) == 0, err
    try:
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        assert int(err) == 0, log.decode(errors="replace")
        _, size = nvrtc.nvrtcGetPTXSize(program)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(program, ptx)
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return ptx.rstrip(b"\0 ").decode()


@needs_nvrtc
@pytest.mark.parametrize("tier", ["cluster", "split_row", "grid_row", "strided"])
def test_packs_are_stored_by_one_instruction(tier):
    """A 16-byte pack goes to device memory as one st.global.v4, never as four 4-byte stores at
    +0, +4, +8 and +12 of one address: NVVM split the aggregate copy of a uint4 that way in the
    cluster, grid_row, split_row and strided tiers (four memory requests a pack, each touching 16
    sectors of a warp's 512 bytes). Those tiers store through store_pack_global; the warp and block
    tiers keep store_pack, whose PTX pieces ptxas merges back into STG.E.128 there."""
    import re

    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import all_instances

    if not compiler.cuda_include_dirs():
        pytest.skip("no CUDA include folder to hand NVRTC by path")
    insts = [
        i
        for i in all_instances()
        if i.tier == tier
        and not i.backward
        and i.dtype in (torch.bfloat16, torch.float32)
        and i.pack * i.dtype.itemsize == 16
    ]
    assert insts, f"no 16-byte forward instances of {tier}"
    ptx = _ptx(tier, insts)
    assert re.search(r"st\.global\.v4\.(b32|u32|f32)", ptx), f"{tier}: no 16-byte store in the PTX"
    # four 4-byte stores on consecutive lines at [r], [r+4], [r+8], [r+12]: one pack split up
    stores = [re.match(r"\s*st\.global\.(?:b32|u32|f32)\s+\[(%rd\d+)(\+\d+)?\]", line) for line in ptx.splitlines()]
    split = [
        first.group(1)
        for i, first in enumerate(stores[:-3])
        if first
        and first.group(2) is None
        and all(
            stores[i + k] and stores[i + k].group(1) == first.group(1) and stores[i + k].group(2) == f"+{4 * k}"
            for k in (1, 2, 3)
        )
    ]
    assert not split, f"{tier}: packs stored as 4-byte pieces at {split[:3]}"


@needs_nvrtc
def test_first_import_from_many_threads_at_once():
    """A fresh process whose first backend calls come from several threads at once: cuda.core is
    imported once, under the compiler's lock, and every thread gets the same answer (imported by
    many threads together, its package once handed a thread a half-initialised submodule)."""
    import subprocess
    import sys

    program = """
import threading
from fastsoftmax.backends.cuda import compiler
barrier = threading.Barrier(8)
answers, errors = [], []
def call():
    barrier.wait()
    try:
        answers.append(compiler.nvrtc_unavailable_reason())
        from cuda.core import Device, Program  # noqa: F401
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=call) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert not errors and answers == [None] * 8, (errors, answers)
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


@needs_nvrtc
def test_strided_warp_full_rows_match_the_host():
    """strided_warp's forward kernels take a lane's first rows as inside the axis without a test
    (strided_warp.cuh's forward_full_rows); the host refuses forced rows the axis does not outgrow by
    the same count (strided.warp_full_rows). The two are written twice and checked here against each
    other, by static assertions NVRTC compiles."""
    from fastsoftmax.backends.cuda import strided

    checks = [
        f'static_assert(fastsoftmax::forward_full_rows<{rows}>() == {strided.warp_full_rows(rows)}, "rows {rows}");'
        for rows in strided.WARP_COLUMNS_ROWS[False]
    ]
    source = (
        '#include "strided_warp.cuh"\n' + "\n".join(checks) + '\nextern "C" __global__ void fs_full_rows_check() {}\n'
    )
    _cubin(source, FULLY_OPTIMISED_ARCH, "strided_warp_full_rows")
    wrong = source.replace(f"== {strided.warp_full_rows(16)},", f"== {strided.warp_full_rows(16) + 1},")
    with pytest.raises(Exception, match="rows 16"):
        _cubin(wrong, FULLY_OPTIMISED_ARCH, "strided_warp_full_rows_wrong")


@needs_nvrtc
def test_strided_merge_constants_match_the_host(monkeypatch):
    """strided_merge's shared memory holds kMergeMaxThreads slots and the host sizes its blocks by
    strided.STRIDED_MERGE_MAX_THREADS (and its slices by STRIDED_MERGE_UNROLL): the kernel's wrapper
    asserts the two agree, and fails to compile where they do not."""
    from fastsoftmax.backends.cuda import strided
    from fastsoftmax.backends.cuda.instances import source_for

    instance = strided.StridedMergeInstance(backward=False)
    _cubin(source_for([instance]), FULLY_OPTIMISED_ARCH, "strided_merge_constants")
    monkeypatch.setattr(strided, "STRIDED_MERGE_MAX_THREADS", 2048)
    with pytest.raises(Exception, match="STRIDED_MERGE"):
        _cubin(source_for([instance]), FULLY_OPTIMISED_ARCH, "strided_merge_constants_wrong")
