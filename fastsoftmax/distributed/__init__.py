"""Vocabulary-parallel softmax, log-softmax and cross-entropy over ``torch.distributed``.

The softmax dim is split over the ranks of a process group; each rank passes its shard and gets
its shard of the result. Only per-row float32 statistics cross the interconnect (8 bytes per row
per rank forward). See ``fastsoftmax/distributed/README.md``.
"""

from .functional import COLLECTIVES, DEFAULT_COLLECTIVE, cross_entropy, log_softmax, softmax

__all__ = ["COLLECTIVES", "DEFAULT_COLLECTIVE", "cross_entropy", "log_softmax", "softmax"]
