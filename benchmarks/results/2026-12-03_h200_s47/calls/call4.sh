#!/usr/bin/env bash
# call 4 (carries .peerA2, right after call 3 while the machine is warm): the second piece of the peers' first archive
set -u
[[ -f /tmp/apart.aa && -f /tmp/narrow_main.json ]] || { echo "cold: call 3's files are gone"; exit 3; }
cat /tmp/apart.aa .peerA2/apart.ab .peerA2/apart.ac > /tmp/a.tar.xz && mkdir -p /tmp/site && tar xJf /tmp/a.tar.xz -C /tmp/site && echo "peers A unpacked"
