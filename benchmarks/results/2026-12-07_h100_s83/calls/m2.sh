#!/usr/bin/env bash
# main run, second call (carries the peers' parts 4-6; m1.sh left parts 1-3 in /tmp on the same machine;
# the bundle's first archive is 50192316 bytes): benchmarks/main_run.sh, both parts
PEERS_FIRST_ARCHIVE_BYTES=50192316 bash benchmarks/main_run.sh
