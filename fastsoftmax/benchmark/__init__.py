"""Benchmarks of fastsoftmax against its peers, following the protocol of benchmarks/README.md.

Entry points: ``fastsoftmax bench [main|ladder|table|seeds|sweep]`` (see ``cli.py``) and
``fastsoftmax report`` (``page.py``). The modules are small on purpose: ``shapes`` (what is
measured and the goals), ``checks`` (float64 reference), ``peers`` (the implementations compared,
with ``cudnn`` and ``tutorial_softmax``), ``runner`` (one shape at a time, every failure recorded),
``results`` (the JSON and CSV files), ``report`` (printed lines and summary), ``figures`` and
``plot``, ``seeds`` (the write-ups' figures), ``page`` (the report page), ``table`` (the
dispatcher's cost table), ``demo`` (the no-GPU path) and ``readme_table``.
"""
