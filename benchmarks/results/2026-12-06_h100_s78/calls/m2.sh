#!/usr/bin/env bash
# main run, second call (carries the peers' parts 3-4, kept in /tmp for m3.sh)
bash benchmarks/peers_parts.sh keep 2>&1 | tail -2
