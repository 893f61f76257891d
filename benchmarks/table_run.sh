#!/usr/bin/env bash
# The dispatch table measured again on the GPU machine, into a copy: `bash benchmarks/table_run.sh TABLE GRID_S
# UNTIL_S` measures the grid into TABLE (a copy of this GPU's table: its points off the grid are kept) within
# GRID_S seconds, then times its main points again, nearest ties first, until UNTIL_S seconds after the
# script's start; logs grid.log and retime.log beside TABLE.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
table=$1 folder=$(dirname "$1")
timeout "$2" python3 -m fastsoftmax bench table --table-out "$table" > "$folder/grid.log" 2>&1
echo "grid exit $? at $SECONDS s: $(tail -n 1 "$folder/grid.log")"
left=$(( $3 - SECONDS ))
(( left > 30 )) && timeout $(( left + 20 )) python3 -m fastsoftmax bench table --retime-main --table-out "$table" \
  --time-limit $left > "$folder/retime.log" 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 "$folder/retime.log")"
