# Sourced at the top of a GPU machine call script: `source benchmarks/call_prelude.sh NAME` makes
# $OUT/NAME the folder R for the call's files, writes the device's name and driver there, and packs the
# folder into $OUT/NAME.tar.gz when the script exits (the device tool brings few files back).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/$1
mkdir -p "$R"
# shellcheck disable=SC2064  # the names are fixed now, not at exit
trap "tar czf '$OUT/$1.tar.gz' -C '$OUT' '$1' && rm -rf '$R'" EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/device.txt"
# `row_shapes N...`: rows of each length N of 2^26 elements, as the probes' --shapes take them (OUTERxN,...)
row_shapes() {
  local shapes=() n
  for n in "$@"; do shapes+=("$(( (1 << 26) / n ))x$n"); done
  (IFS=,; echo "${shapes[*]}")
}
