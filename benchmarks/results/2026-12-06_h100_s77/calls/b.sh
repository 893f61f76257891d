#!/usr/bin/env bash
# main run, second call (carries .peer4, .peer5 and .peer6, right after a.sh, which left the first three parts
# in /tmp on the same machine)
bash benchmarks/main_run.sh
