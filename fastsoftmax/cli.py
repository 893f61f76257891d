"""The ``fastsoftmax`` command line: ``bench``, ``report``, ``compile``, ``hw-report``."""

from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module exposing ``add_arguments(parser)`` and ``run(args) -> int``
COMMANDS = {
    "bench": ("fastsoftmax.benchmark.cli", "benchmark fastsoftmax against its peers on the GPU"),
    "report": ("fastsoftmax.benchmark.page", "turn recorded benchmark results into one HTML and Markdown page"),
    "compile": ("fastsoftmax.backends.cuda.precompile", "compile every CUDA kernel instance into the disk cache"),
    "hw-report": ("fastsoftmax.hardware.report", "accuracy report of the fixed-point base-2 softmax model"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastsoftmax", description="Fast softmax for PyTorch on NVIDIA GPUs.")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
