#!/usr/bin/env bash
# call 5 (carries .peerA3, right after call 4): the peers' archive's third part and the second's first
set -u
mkdir -p $OUT/c5
[[ -f /tmp/apart.ab ]] || echo "cold: call 4's file is gone" > $OUT/c5/cold.txt
cp .peerA3/apart.ac .peerA3/bpart.aa /tmp/
ls -la /tmp/apart.a* /tmp/bpart.a* > $OUT/c5/kept.txt 2>&1
cat $OUT/c5/kept.txt
