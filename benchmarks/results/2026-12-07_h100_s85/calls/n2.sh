#!/usr/bin/env bash
# Prepared for the next set. Main run, second part (with the peers' archive parts 4-6; n1.sh left parts
# 1-3 in /tmp; the bundle's first archive is 50192316 bytes): benchmarks/main_run.sh, both parts, through
# "auto" with Quack and Liger, then the non-last dims with torch.compile; the README's tables and report
PEERS_FIRST_ARCHIVE_BYTES=50192316 bash benchmarks/main_run.sh
