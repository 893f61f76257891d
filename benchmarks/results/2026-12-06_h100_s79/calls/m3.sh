#!/usr/bin/env bash
# main run, third call (carries the peers' parts 5-6; m1.sh and m2.sh left parts 1-4 in /tmp on the same
# machine; this set's bundle made a first archive of 50192316 bytes): benchmarks/main_run.sh, both parts
PEERS_FIRST_ARCHIVE_BYTES=50192316 bash benchmarks/main_run.sh
