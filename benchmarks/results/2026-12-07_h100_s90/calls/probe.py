"""The cluster probe's answers on this GPU: the facts' cluster_launch and cluster_ctas, launch.holds_cluster at
each size, and the time the first facts take (the probe compiles its kernel on a cold cache)."""

import time

from fastsoftmax.backends.cuda import launch

start = time.time()
facts = launch.device_facts(0)
print(
    "facts in",
    round(time.time() - start, 3),
    "s; cluster_launch",
    facts.cluster_launch,
    "cluster_ctas",
    facts.cluster_ctas,
    {ctas: launch.holds_cluster(facts, ctas) for ctas in (2, 4, 8, 16)},
)
