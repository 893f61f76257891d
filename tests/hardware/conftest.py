"""Let the hardware tests run where torch is not installed.

``fastsoftmax.hardware`` is NumPy only, but importing it imports the ``fastsoftmax`` package,
whose ``__init__`` loads the torch front end. On a machine without torch (a plain CPU CI job)
that import would fail before any hardware test ran, so in that case the package is registered
as a bare namespace pointing at its directory, and only its NumPy subpackage is ever loaded.
"""

import importlib
import importlib.util
import sys
import types
from pathlib import Path

if importlib.util.find_spec("torch") is None and "fastsoftmax" not in sys.modules:
    package_dir = Path(__file__).resolve().parents[2] / "fastsoftmax"
    namespace = types.ModuleType("fastsoftmax")
    namespace.__path__ = [str(package_dir)]
    sys.modules["fastsoftmax"] = namespace

importlib.import_module("fastsoftmax.hardware")
