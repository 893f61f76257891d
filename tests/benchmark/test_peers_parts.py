"""benchmarks/peers_parts.sh: the peers' two archives, concatenated and split into six parts carried
over several commands, unpack whole whatever the first archive's size, and a missing part is named."""

from __future__ import annotations

import io
import lzma
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "peers_parts.sh"
PARTS = ("aa", "ab", "ac", "ad", "ae", "af")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("xz") is None, reason="needs bash and xz")


def tar_xz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue(), format=lzma.FORMAT_XZ)


def carried_tree(root: Path, blob: bytes) -> Path:
    """A tree holding the script and the blob's six parts, one a .peerN folder."""
    (root / "benchmarks").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "benchmarks" / "peers_parts.sh")
    size = -(-len(blob) // len(PARTS))
    for index, suffix in enumerate(PARTS):
        folder = root / f".peer{index + 1}"
        folder.mkdir()
        (folder / f"ppart.{suffix}").write_bytes(blob[index * size : (index + 1) * size])
    return root


def run(tree: Path, step: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(tree / "benchmarks" / "peers_parts.sh"), step],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


def test_parts_kept_over_two_commands_unpack_both_archives(tmp_path):
    first = {"quack/__init__.py": os.urandom(40_000), "big.so": os.urandom(70_000)}
    second = {"liger_kernel/__init__.py": os.urandom(30_000)}
    tree = carried_tree(tmp_path / "tree", tar_xz(first) + tar_xz(second))
    kept, site = tmp_path / "kept", tmp_path / "site"
    kept.mkdir()
    env = {"PEERS_KEPT": str(kept), "PEERS_SITE": str(site)}
    later = tmp_path / "later"
    later.mkdir()
    for index in (4, 5, 6):  # the first command carries parts 1-3 only
        shutil.move(tree / f".peer{index}", later / f".peer{index}")
    assert run(tree, "keep", env).returncode == 0
    assert sorted(part.name for part in kept.iterdir()) == ["ppart.aa", "ppart.ab", "ppart.ac"]
    for index in (1, 2, 3):  # the last command carries the rest
        shutil.rmtree(tree / f".peer{index}")
        shutil.move(later / f".peer{index + 3}", tree / f".peer{index + 3}")
    unpacked = run(tree, "unpack", env)
    assert unpacked.returncode == 0, unpacked.stderr
    assert unpacked.stdout.strip() == f"export FASTSOFTMAX_PEER_SITE={site}"
    for name, data in {**first, **second}.items():
        assert (site / name).read_bytes() == data
    assert sorted(part.name for part in kept.iterdir()) == [f"ppart.{suffix}" for suffix in PARTS]


def failed_unpack(tmp_path, damage) -> tuple[int, str]:
    """The exit status of unpack on a tree that ``damage`` changed, and what the calling shell reports
    and does when it evals unpack's output (the line must exit it, whatever the folder's name)."""
    tree = carried_tree(tmp_path / "tree", tar_xz({"a": b"x" * 5000}) + tar_xz({"b": b"y" * 5000}))
    damage(tree)
    env = {"PEERS_KEPT": str(tmp_path / "it's & kept"), "PEERS_SITE": str(tmp_path / "site")}
    unpacked = run(tree, "unpack", env)
    evaluated = subprocess.run(
        ["bash", "-c", f'eval "$(bash {tree}/benchmarks/peers_parts.sh unpack)"; echo not reached'],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    assert evaluated.returncode == unpacked.returncode and "not reached" not in evaluated.stdout
    return unpacked.returncode, evaluated.stderr


def test_a_missing_part_is_named(tmp_path):
    status, report = failed_unpack(tmp_path, lambda tree: (tree / ".peer4" / "ppart.ad").unlink())
    assert status == 3
    assert "part ad is missing" in report and "it's & kept" in report


def test_a_damaged_part_fails_the_unpack(tmp_path):
    def damage(tree):
        part = tree / ".peer2" / "ppart.ab"
        part.write_bytes(bytes(len(part.read_bytes())))

    status, report = failed_unpack(tmp_path, damage)
    assert status == 4
    assert "the archives did not unpack" in report
