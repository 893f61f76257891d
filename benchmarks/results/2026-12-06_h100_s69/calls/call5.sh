#!/usr/bin/env bash
# call 5 (right after call 4, on its machine, as one command line): the forward's tiles kernel by
# kernel, "auto" (one piece on this GPU) against the H200's rule (any tail up to half the first piece)
# beside torch.compile; racecheck over the cluster backward at its new size
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/c5; timeout 70 python3 benchmarks/kernel_breakdown.py --directions forward --cases "(16,21,513,513) d1;(16,33,257,257) d1" --tunings "triton.TWO_PIECE_FORWARD_MAX_TAIL_LOW_BANDWIDTH=0.5" > $OUT/c5/two_pieces_rule.txt 2>&1; echo "pieces rc $?"; grep "a call" $OUT/c5/two_pieces_rule.txt | cut -c1-160; timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 --report-api-errors no python3 benchmarks/sanitize.py --tiers cluster@0 --shapes 12x65536,9x50257 --dtypes float16,bfloat16 > $OUT/c5/sanitizer_racecheck.txt 2>&1; echo "racecheck rc $?"; tail -n 2 $OUT/c5/sanitizer_racecheck.txt
