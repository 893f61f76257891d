#!/usr/bin/env bash
# call 1 (carries .peer1: the first of four parts of the peers' archives, kept in /tmp for call 4's
# main run): the 16-bit short-axis rule (dispatch._half_short_axis_to_triton) checked on shapes it was not fitted on: "auto"
# (as the rule picks) against each backend forced, forward, alternated in one process, each output
# against float64 first; then the Triton kernels on sanitize_triton.py's default problems (channel
# heads of 21, 40 and 150 over inner sizes of 143-256: the wide tiles at 64 elements a thread, which
# --tiers' problems do not reach) under memcheck, then racecheck, until DEADLINE; beside them, the
# GPU tests of the Triton backend.
set -u
DEADLINE=${DEADLINE:-240}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name --format=csv > $R/device.txt
timeout 90 env PYTHONPATH=$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 python3 -c "
import statistics, torch, fastsoftmax
from peer_probe import gpu_and_host_us
from probe_report import Report
r = Report(); copy = r.gpu_header()
cases = [((512, 48, 1024), torch.bfloat16), ((256, 64, 2048), torch.float16), ((128, 40, 4096), torch.bfloat16),
         ((2048, 32, 256), torch.bfloat16), ((512, 32, 1024), torch.float16), ((32, 56, 16384), torch.bfloat16),
         ((512, 64, 2048), torch.bfloat16), ((1024, 48, 2048), torch.float16)]
for shape, dtype in cases:
    x = (torch.randn(shape, device='cuda') * 4).to(dtype)
    ref = torch.softmax(x.double(), 1)
    runs = {name: (lambda b=backend: fastsoftmax.softmax(x, 1, backend=b)) for name, backend in
            (('auto', 'auto'), ('triton', 'triton'), ('cuda', 'cuda'))}
    for name, run in runs.items():
        assert float((run().double() - ref).abs().max()) < 1e-2, (shape, name)
    times = {name: [] for name in runs}
    for _ in range(3):
        for name, run in runs.items():
            times[name].append(gpu_and_host_us(run, 20, spin=20_000_000)[0])
    r.say(f'{shape} {str(dtype)[6:]} forward ' + ' | '.join(
        f'{name} {statistics.median(t):7.1f} us {x.numel() * 4 / (statistics.median(t) * 1e-6) / copy:5.3f}' for name, t in times.items()))
    r.write('$R/short_axes_rule.txt')
" > $R/log.txt 2>&1; echo "rc $?"; tail -n 10 $R/log.txt | cut -c1-200
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 150 python3 -m pytest -q --tb=short -n 6 tests/gpu/test_triton_gpu.py \
  > $R/gpu_tests.txt 2>&1 &
for tool in memcheck racecheck; do
  (( SECONDS > DEADLINE - 20 )) && { echo "$tool skipped"; continue; }
  timeout $(( DEADLINE - SECONDS )) compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py > $R/san_default_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_default_$tool.txt | tail -n 2
done
wait
echo "tests: $(tail -n 1 $R/gpu_tests.txt)"
ls -la /tmp/ppart.aa > $R/kept.txt 2>&1
