#!/usr/bin/env bash
# call 4 (carries .peerA2, right after call 3 while the machine is warm): the second piece of the peers' first archive
set -u
[[ -f /tmp/apart.aa ]] || { echo "cold: call 3's files are gone"; exit 3; }
cp .peerA2/apart.ab /tmp/ && echo "kept"
