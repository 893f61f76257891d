#!/usr/bin/env bash
# call 5 (carries .peerA3, right after call 4): the last piece of the first archive, the first of the second
set -u
[[ -f /tmp/apart.aa && -f /tmp/apart.ab ]] || { echo "cold: calls 3-4's files are gone"; exit 3; }
cat /tmp/apart.aa /tmp/apart.ab .peerA3/apart.ac > /tmp/a.tar.xz && mkdir -p /tmp/site && tar xJf /tmp/a.tar.xz -C /tmp/site && echo "peers A unpacked"
cp .peerA3/bpart.aa /tmp/ && echo "kept"
