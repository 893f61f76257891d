#!/usr/bin/env bash
# call 7 (prepared): initcheck over strided_staged's parts on the kernels since the streamed chunks' change
# (memcheck, racecheck and synccheck ran clean over them in calls 1, 3 and 4; part 11 under initcheck in the
# seventy-fourth set), each part a dtype a process, sixteen at once, none started after 480 s
T=strided_staged@0,strided_staged@1,strided_staged@2,strided_staged@3,strided_staged@4,strided_staged@5
T=$T,strided_staged@6,strided_staged@7,strided_staged@8,strided_staged@9,strided_staged@10
T=$T,strided_window,strided_stepped,strided_folded
SANITIZE_TIERS=$T SANITIZE_TOOLS=initcheck SANITIZE_DTYPE_TOOLS=initcheck SANITIZE_JOBS=16 SANITIZE_DEADLINE=480 \
  bash benchmarks/device_run.sh compile,sanitize
