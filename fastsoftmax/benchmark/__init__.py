"""Benchmarks of fastsoftmax against its peers, following BENCHMARK.md.

Entry point: ``fastsoftmax bench [main|ladder|table]`` (see ``cli.py``). The modules are small
on purpose: ``shapes`` (what is measured and the goals), ``checks`` (float64 reference),
``peers`` (the implementations compared), ``runner`` (one shape at a time, every failure recorded),
``results`` (the JSON file), ``report`` (printed lines and summary), ``plot``, ``table`` (the
dispatcher's cost table), ``demo`` (the no-GPU path) and ``readme_table``.
"""
