"""The Triton kernels compile for a GPU target in every configuration the backend plans, on any machine.

Without a GPU the other tests run the kernels in Triton's interpreter, which executes their Python and
accepts code Triton's compiler rejects; here the compiler itself (front end to ptxas, no driver) takes
each kernel, in a process of its own where the kernels are not interpreted."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")


KINDS = ["tile", "online", "realigned_held", "realigned_walked", "realigned_held_two_pieces", "split", "relay"]


@pytest.mark.parametrize("kind", KINDS)
def test_triton_kernels_compile_for_sm_90(kind, tmp_path):
    # a cache of its own: every configuration is compiled, none taken from an earlier run
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "fastsoftmax.backends.triton.compile_check", "--arch", "90", "--kinds", kind],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "compiled" in done.stdout and " of " in done.stdout


def test_every_launched_kernel_is_compiled():
    # the kernels the backend launches are the kernels module's softmax_* functions: each one is in
    # compile_check's list, so a new kernel cannot miss the compiler
    from fastsoftmax.backends.triton import compile_check, kernels

    launched = {name for name in dir(kernels) if name.startswith("softmax_")}
    checked = {name for names in compile_check.KERNELS.values() for name in names}
    assert launched == checked
