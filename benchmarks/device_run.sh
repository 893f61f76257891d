#!/usr/bin/env bash
# Everything the GPU machine is for, in one call: device facts, the GPU test suite, and the
# benchmarks. Results land under $OUT (the device tool brings that folder back).
#
#   bash benchmarks/device_run.sh [STEPS]      STEPS: comma list of compile,hostprobe,tierprobe,
#                                               clusterprobe,profile,tests,sanitize,distributed,quick,
#                                               main,ladder,table,nvrtc,tritonprobe,relayprobe
#                                               (default: compile,tests,main,ladder)
#
# compile fills the kernel cache first (every instance, all CPUs), so that the tests and benchmarks
# time and check kernels rather than wait on NVRTC; hostprobe and tierprobe run benchmarks/*_probe.py.
# clusterprobe runs benchmarks/cluster_size_probe.py with CLUSTER_PROBE_ARGS. profile runs Nsight
# Compute over benchmarks/ncu_target.py once per entry of PROFILE_TARGETS (';'-separated entries
# "SKIP COUNT ARGS": kernels to skip and to profile, then ncu_target.py's arguments), each report in
# $OUT/ncu_<k>.txt; NCU_SECTIONS (space-separated section names) replaces the default sections,
# NCU_KERNEL the kernel-name pattern (default regex:fs_; e.g. regex:(?i)softmax for Quack's), and
# NCU_ARGS adds arguments to ncu (e.g. "--page source --print-source sass --csv" for per-instruction counts).
# sanitize runs benchmarks/sanitize.py (every CUDA tier and the ladder) under compute-sanitizer's
# memcheck, racecheck, initcheck and synccheck (SANITIZE_TOOLS: fewer; SANITIZE_TIERS: the tiers, TIER@K
# for one part of a tier, see sanitize.py; with "peer": benchmarks/sanitize_peer.py; SANITIZE_SPLIT_TOOLS,
# e.g. "racecheck": those tools run each problem and dtype in a process of its own, sanitize.py --list-parts;
# SANITIZE_DTYPE_TOOLS: each tier a dtype at a time; SANITIZE_DEADLINE: seconds after which none starts).
# nvrtc times kernels another NVRTC compiled (NVRTC_CUBINS: a folder benchmarks/export_cubins.py wrote, e.g.
# pip's NVRTC on the development machine) against this machine's own compilation, alternated in one process
# (benchmarks/grid_row_probe.py --baseline-cubins), on the staged, column and cluster tiers (NVRTC_STRIDED_SHAPES,
# NVRTC_ROW_SHAPES override the shapes).
# relayprobe runs benchmarks/relay_probe.py: the backward of the shapes behind the relay tier's rule (and one outside
# it), auto as planned against the CUDA backend and torch.compile, alternated in one process; RELAY_PROBE_CASES
# replaces the shapes, RELAY_PROBE_ARGS adds or overrides arguments (e.g. "--directions forward,backward --chunks
# 8192,16384 --lags 1,2,4 --programs 2,4" for a sweep of its tunables).
# tritonprobe runs benchmarks/triton_tile_probe.py: both backends as planned and torch.compile, alternated in one
# process, on the shapes behind dispatch.py's float32 rules for Triton's tiles (rows at several 16-byte phases,
# and on 16-byte boundaries over wide inner sizes); TRITON_PROBE_CASES replaces the shapes, TRITON_PROBE_ARGS adds
# or overrides arguments (e.g. "--blocks 16,32,64,128 --warps 4,8,16" for a sweep of tile shapes, "--layouts
# tile,nlast").
# TEST_TIMEOUT (seconds, default 420) bounds the test step, so that a hang still returns results;
# TEST_PATHS (default: tests) narrows it, e.g. to the tests that touch the GPU, and TEST_WORKERS (default: one a CPU) sets
# the test processes (fewer where large cases of many workers would not fit the GPU's memory together). BENCH_ARGS adds
# arguments to the main benchmark, e.g. "--regimes bulk,huge --time-limit 480" (a run that stops at
# its limit is continued in the next call with "--resume <its JSON>").
# Everything is written to a work folder and packed into $OUT/run.tar.gz at the end (the device
# tool brings few files back), with the logs' last lines in $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "device_run.sh: no CUDA GPU here; it is the GPU machine's run (on this machine: the README's test command)" >&2
    exit 2
fi
FINAL=${OUT:-/tmp/fastsoftmax-out}
OUT=$(mktemp -d /tmp/fastsoftmax-run.XXXX)
mkdir -p "$FINAL"
pack() {
    tar czf "$FINAL/run.tar.gz" -C "$OUT" . && ls "$OUT" > "$FINAL/files.txt"
    rm -rf "$OUT"
}
trap pack EXIT
steps=",${1:-compile,tests,main,ladder},"
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/device.txt"
python3 - <<'PY' | tee -a "$OUT/device.txt"
import importlib, torch
for name in ("torch", "triton", "cuda.core", "cuda.bindings", "numpy"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:
        print(name, "unavailable:", error)
print("device", torch.cuda.get_device_name(), "SMs", torch.cuda.get_device_properties(0).multi_processor_count)
PY

if [[ $steps == *,compile,* ]]; then
    python3 -m fastsoftmax compile 2>&1 | tail -n 20 | tee "$OUT/compile.log" || status=1
fi
if [[ $steps == *,hostprobe,* ]]; then
    python3 benchmarks/host_probe.py --out "$OUT/host_probe.txt" 2>&1 | tail -n 40 || status=1
fi
if [[ $steps == *,tierprobe,* ]]; then
    python3 benchmarks/cuda_probe.py --quick --out "$OUT/cuda_probe.txt" 2>&1 | tail -n 60 || status=1
fi
if [[ $steps == *,clusterprobe,* ]]; then
    # shellcheck disable=SC2086
    python3 benchmarks/cluster_size_probe.py --out "$OUT" ${CLUSTER_PROBE_ARGS:-} 2>&1 | tail -n 60 || status=1
fi
if [[ $steps == *,profile,* ]]; then
    k=0
    sections=()
    for section in ${NCU_SECTIONS:-SpeedOfLight Occupancy LaunchStats MemoryWorkloadAnalysis WarpStateStats SchedulerStats}; do
        sections+=(--section "$section")
    done
    IFS=';' read -ra targets <<< "${PROFILE_TARGETS:-}"
    for target in "${targets[@]}"; do
        read -r skip count args <<< "$target"
        k=$((k + 1))
        # shellcheck disable=SC2086
        { echo "== ncu_target.py $args (kernels $skip skipped, $count profiled)"
          timeout 300 ncu --kernel-name "${NCU_KERNEL:-regex:fs_}" --launch-skip "$skip" --launch-count "$count" \
              "${sections[@]}" ${NCU_ARGS:-} python3 benchmarks/ncu_target.py $args
        } > "$OUT/ncu_$k.txt" 2>&1 || status=1
        grep -E "^  [a-z_]|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Block Limit|Theoretical Occ" "$OUT/ncu_$k.txt" | head -n 40
    done
fi
if [[ $steps == *,tests,* ]]; then
    # shellcheck disable=SC2086
    FASTSOFTMAX_TEST_LOG="$OUT/tests_failures_and_slow.txt" timeout "${TEST_TIMEOUT:-420}" python3 -m pytest ${TEST_PATHS:-tests} -n "${TEST_WORKERS:-$(nproc)}" --dist worksteal -q -p no:cacheprovider \
        -p no:benchmark --durations=30 -rfE --junitxml="$OUT/tests.xml" -W ignore::RuntimeWarning 2>&1 | tee "$OUT/tests.log" | tail -n 60 || status=1
    # tests started but never finished (a run cut by TEST_TIMEOUT): the hang, if there is one
    progress="$OUT/tests_failures_and_slow.txt.progress"
    if [[ -f $progress ]]; then
        { echo "unfinished when the test step ended:"
          awk '$1 == "start" { run[$2] = 1 } $1 == "done" { delete run[$2] } END { for (t in run) print "  " t }' "$progress"
        } | tee -a "$OUT/tests_failures_and_slow.txt"
    fi
fi
if [[ $steps == *,sanitize,* ]]; then
    # one process per tool and tier, 12 at a time (racecheck alone takes minutes over all tiers);
    # each tool's reports are then joined into one file
    tiers=${SANITIZE_TIERS:-$(python3 -c 'from fastsoftmax.backends.cuda import TIERS; print(",".join(TIERS) + ",strided_window,ladder,peer")')}
    tools=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
    # SANITIZE_SPLIT_TOOLS: these tools take each problem and dtype of each tier's parts in a process of
    # its own (sanitize.py --list-parts), so that a slow tool (racecheck) completes within its time;
    # SANITIZE_DTYPE_TOOLS: these take each tier (or TIER@K) a dtype at a time, three processes where
    # the split would start one a problem (strided_staged's parts under racecheck: minutes each whole,
    # within SANITIZE_TIMEOUT a dtype at a time). SANITIZE_DEADLINE (seconds from this step's start):
    # no process starts past it, and each is cut at it (its exit 124, its report saying so)
    export SANITIZE_DEADLINE_AT=$(( $(date +%s) + ${SANITIZE_DEADLINE:-86400} ))
    for tool in $tools; do
        if [[ " ${SANITIZE_SPLIT_TOOLS:-} " == *" $tool "* ]]; then
            python3 benchmarks/sanitize.py --tiers "${tiers//,peer/}" --list-parts | sed "s/^/$tool /"
            [[ ,$tiers, == *,peer,* ]] && echo "$tool peer - -"
        elif [[ " ${SANITIZE_DTYPE_TOOLS:-} " == *" $tool "* ]]; then
            for tier in ${tiers//,/ }; do
                case $tier in
                    peer|ladder) echo "$tool $tier - -" ;;  # no dtypes to split
                    *) for dtype in float32 float16 bfloat16; do echo "$tool $tier - $dtype"; done ;;
                esac
            done
        else
            for tier in ${tiers//,/ }; do echo "$tool $tier - -"; done
        fi
    done | xargs -P "${SANITIZE_JOBS:-12}" -L 1 bash -c '
        # "peer": the exchange kernels of fastsoftmax.distributed, two processes on one GPU
        sanitizer="compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no"
        args=(--tiers "$1")
        [[ $2 == - ]] || args+=(--shapes "$2")
        [[ $3 == - ]] || args+=(--dtypes "$3")
        tier=${1%@*}
        part=$(echo "$1_$2_$3" | tr -c "A-Za-z0-9_@.\n-" "+")
        report="'"$OUT"'/sanitizer_$0_$tier.part_$part"
        limit=${SANITIZE_TIMEOUT:-300}
        left=$(( SANITIZE_DEADLINE_AT - $(date +%s) ))
        (( left < limit )) && limit=$left
        if (( limit < 10 )); then
            echo "not started: past SANITIZE_DEADLINE" > "$report.txt"
            echo 124 > "$report.exit"
            exit 0
        fi
        if [[ $1 == peer ]]; then
            timeout "$limit" python3 benchmarks/sanitize_peer.py --sanitizer "$sanitizer" > "$report.txt" 2>&1
        else
            timeout "$limit" $sanitizer python3 benchmarks/sanitize.py "${args[@]}" > "$report.txt" 2>&1
        fi
        echo $? > "$report.exit"'
    # each tier's parts joined into one report and one exit code (the largest)
    for tool in $tools; do
        for tier in ${tiers//,/ }; do
            base=${tier%@*}
            code=0
            : > "$OUT/sanitizer_${tool}_$tier.txt"
            for exit_file in "$OUT/sanitizer_${tool}_$base.part_"*.exit; do
                [[ -e $exit_file ]] || continue
                [[ $tier == *@* && $exit_file != *"part_${tier}_"* ]] && continue
                part_code=$(cat "$exit_file")
                (( part_code > code )) && code=$part_code
                # the part's name and exit, so that a part cut by SANITIZE_TIMEOUT (124) is told by name
                part_name=${exit_file##*.part_}
                echo "-- part ${part_name%.exit}: exit $part_code" >> "$OUT/sanitizer_${tool}_$tier.txt"
                cat "${exit_file%.exit}.txt" >> "$OUT/sanitizer_${tool}_$tier.txt"
                rm -f "$exit_file" "${exit_file%.exit}.txt"
            done
            echo $code > "$OUT/sanitizer_${tool}_$tier.exit"
        done
    done
    for tool in $tools; do
        for tier in ${tiers//,/ }; do
            code=$(cat "$OUT/sanitizer_${tool}_$tier.exit")
            { echo "== compute-sanitizer --tool $tool, tier $tier: exit $code"; cat "$OUT/sanitizer_${tool}_$tier.txt"; } >> "$OUT/sanitizer_$tool.txt"
            echo "compute-sanitizer --tool $tool $tier: exit $code; $(grep -cE 'ERROR SUMMARY: 0 errors|hazards displayed \(0 errors, 0 warnings\)' "$OUT/sanitizer_${tool}_$tier.txt") clean summaries" \
                | tee -a "$OUT/sanitizer_summary.txt"
            [[ $code == 0 ]] || { status=1; tail -n 12 "$OUT/sanitizer_${tool}_$tier.txt"; }
            rm -f "$OUT/sanitizer_${tool}_$tier.txt" "$OUT/sanitizer_${tool}_$tier.exit"
        done
    done
fi
if [[ $steps == *,distributed,* ]]; then
    # fastsoftmax.distributed over NCCL on every GPU of the machine (two or more): its GPU tests
    # (DIST_TEST_K: a pytest -k expression), then benchmarks/distributed_bench.py (DIST_BENCH_ARGS,
    # e.g. --quick; DIST_BENCH_TIMEOUT=0 skips it). NVLink multicast stays
    # off on the shared machines.
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    # shellcheck disable=SC2086
    timeout "${DIST_TEST_TIMEOUT:-300}" python3 -m pytest tests/distributed/test_distributed_nccl.py -q -s \
        -p no:cacheprovider -rfE --durations=10 ${DIST_TEST_K:+-k "$DIST_TEST_K"} 2>&1 | tee "$OUT/distributed_tests.log" | tail -n 80 || status=1
    # shellcheck disable=SC2086
    [[ ${DIST_BENCH_TIMEOUT:-400} == 0 ]] || timeout "${DIST_BENCH_TIMEOUT:-400}" torchrun --nproc-per-node "$(nvidia-smi -L | wc -l)" \
        benchmarks/distributed_bench.py --out "$OUT" ${DIST_BENCH_ARGS:-} 2>&1 | tee "$OUT/distributed_bench.log" | tail -n 200 || status=1
fi
if [[ $steps == *,nvrtc,* ]]; then
    cubins=${NVRTC_CUBINS:?nvrtc: set NVRTC_CUBINS to a folder of benchmarks/export_cubins.py}
    python3 benchmarks/grid_row_probe.py --baseline-cubins "other=$cubins" --tiers strided_staged,other/strided_staged \
        --shapes "${NVRTC_STRIDED_SHAPES:-128x1024x1024,32x4096x1024,8x150x16384,4096x64x512,1024x16384x4,128x65536x8}" \
        --dtypes bf16,f32 --directions fwd,bwd --out "$OUT/nvrtc_strided" 2>&1 | tail -n 30 || status=1
    python3 benchmarks/grid_row_probe.py --baseline-cubins "other=$cubins" --tiers cluster,other/cluster \
        --shapes "${NVRTC_ROW_SHAPES:-1046x128256,32x151936,8x128256,512x262144}" \
        --dtypes bf16,f32 --directions fwd,bwd --out "$OUT/nvrtc_cluster" 2>&1 | tail -n 20 || status=1
fi
if [[ $steps == *,tritonprobe,* ]]; then
    # shellcheck disable=SC2086
    python3 benchmarks/triton_tile_probe.py --layouts tile --blocks 32 --warps 8 --rounds 3 \
        --cases "${TRITON_PROBE_CASES:-16,21,513,513:1;8,150,127,127:1;64,512,1023:1;16,1000,63,63:1;8,2000,33,33:1;8,150,128,128:1;16,21,512,512:1;128,1024,1024:1;32,512,1024:1;64,256,2048:1}" \
        --dtypes bfloat16,float32 ${TRITON_PROBE_ARGS:-} 2>&1 | grep -v -i warn > "$OUT/triton_tile_probe.txt" || status=1
    tail -n 30 "$OUT/triton_tile_probe.txt"
fi
if [[ $steps == *,relayprobe,* ]]; then
    # shellcheck disable=SC2086
    python3 benchmarks/relay_probe.py --directions backward --chunks "" --rounds 3 \
        --cases "${RELAY_PROBE_CASES:-64,65536,16:1;128,65536,8:1;16,1048576,2:1;128,16384,32:1;32,65536,16:1;256,4096,32:1}" \
        --dtypes bfloat16,float32 ${RELAY_PROBE_ARGS:-} 2>&1 | grep -v -i "warn\|online softmax\|split the\|important use\|^softmax\.$\|^$" \
        > "$OUT/relay_probe.txt" || status=1
    tail -n 30 "$OUT/relay_probe.txt"
fi
if [[ $steps == *,quick,* ]]; then
    python3 -m fastsoftmax bench --quick --out "$OUT" 2>&1 | tee "$OUT/bench-quick.log" | tail -n 80 || status=1
fi
if [[ $steps == *,main,* ]]; then
    # shellcheck disable=SC2086
    python3 -m fastsoftmax bench --no-compile --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -n 120 || status=1
fi
if [[ $steps == *,ladder,* ]]; then
    python3 -m fastsoftmax bench ladder --out "$OUT" 2>&1 | tail -n 40 || status=1
fi
if [[ $steps == *,table,* ]]; then
    python3 -m fastsoftmax bench table --out "$OUT" --table-out "$OUT/dispatch_table.json" 2>&1 | tail -n 20 || status=1
fi
cp "$OUT/device.txt" "$FINAL/summary.txt" 2>/dev/null
cp "$OUT/tests_failures_and_slow.txt" "$FINAL/" 2>/dev/null
for log in "$OUT"/*.log "$OUT"/*summary.txt "$OUT"/*probe*.txt "$OUT"/ncu_*.txt; do
    [[ -f $log ]] && { echo "== $(basename "$log")"; tail -n 40 "$log"; } >> "$FINAL/summary.txt"
done
exit $status
