#!/usr/bin/env bash
# Triton alone against torch.softmax in one process: where the CUDA backend cannot run ("pip install
# fastsoftmax[triton]" without the cuda extra), "auto" falls back to Triton, whose times in the dispatch
# table ran 1.2-2.1 times torch.softmax's in the eighty-first set's main run on rows whose length is no
# multiple of 16 (bf16 1342177 x 100 forward 587.1 against 283.7 us, 1056832 x 127 396.4 against 234.2,
# 2670 x 50257 401.9 against 263.7, 16777216 x 8 420.5 against 355.6) and on decode rows (1 x 128256 57.2
# against 37.8): two runs, so timed here together, with MoE router widths (60, 72, 160) beside them.
# Then Triton's tier flat_rows (dense short rows read as one 16-byte-aligned run a program and regrouped
# on chip; chosen only where forced until measured) against its tile kernels at both offset widths, torch
# and the CUDA backend, alternated in one process; then the Triton kernels under memcheck with every tier
# forced (sanitize_triton.py --tiers: flat_rows on rows of 100 among them). About 470 s.
source benchmarks/call_prelude.sh a4
bench() { timeout 70 python3 -m fastsoftmax bench --no-peers --no-compile --backends triton,cuda --out $R "$@"; }
bench --shapes 16777216x8,2236962x60,1864135x72,1342177x100,1056832x127,838860x160,134217x1000,2670x50257 \
  --dtypes bf16,fp32 --directions forward,backward > $R/rows.log 2>&1; echo "rows exit $? at $SECONDS s"
bench --shapes 1x128256,8x128256,32x151936 --dtypes bf16,fp32 --directions forward,backward > $R/decode.log 2>&1
echo "decode exit $? at $SECONDS s"
python3 - "$R" <<'PY'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    times = {}
    for row in json.load(open(path))["rows"]:
        if row.get("status") == "ok":
            times.setdefault(row["case"], {})[row["impl"]] = row["gpu_us"]
    for case, t in times.items():
        print(case, " ".join(f"{impl} {us:.1f}" for impl, us in sorted(t.items())))
PY
gzip -9n $R/*.json $R/*.csv 2>/dev/null
R2=""; for n in 8 60 65 72 100 127 160; do R2="$R2,$((67108864 / n))x$n"; done
timeout 220 python3 benchmarks/triton_offsets_probe.py --rounds 2 --variants flat_rows,triton32,triton64,torch,cuda \
  --shapes ${R2#,} > $R/flat_rows.txt 2>&1
echo "flat_rows rc $? at $SECONDS s"; cut -c1-160 $R/flat_rows.txt
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --tiers > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|flat_rows" $R/memcheck.txt | head -20
