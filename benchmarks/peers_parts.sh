#!/usr/bin/env bash
# The peers' archives (Quack and Liger, built by the peer bundle as a.tar.xz then b.tar.xz, concatenated and
# split into 12.26 MB parts ppart.aa..ppart.af, each carried in a folder .peer1...peer6) reach the GPU machine
# over two calls: the first carries three parts and keeps them under /tmp, the second carries the other three
# and unpacks all six into /tmp/site. The machine keeps /tmp while warm (about 30 s between calls).
#
#   bash benchmarks/peers_parts.sh keep                call 1: copies whatever .peerN/ppart.* came into /tmp
#   eval "$(bash benchmarks/peers_parts.sh unpack)"    call 2: unpacks, then exports FASTSOFTMAX_PEER_SITE
#
# unpack exits 3 when a part is missing (the machine went cold between the calls: redo both) and 4 when the
# archives do not unpack; it prints the export line only on success.
set -uo pipefail
cd "$(dirname "$0")/.."
parts=(aa ab ac ad ae af)
first_archive_bytes=${PEERS_FIRST_ARCHIVE_BYTES:-50188824}  # a.tar.xz's size: the rest of the concatenation is b.tar.xz
site=${PEERS_SITE:-/tmp/site}
case "${1:-}" in
keep)
    for p in .peer*/ppart.*; do [[ -e $p ]] && cp "$p" /tmp/; done
    ls -la /tmp/ppart.* 2>&1
    ;;
unpack)
    for p in .peer*/ppart.*; do [[ -e $p ]] && cp "$p" /tmp/; done
    for k in "${parts[@]}"; do
        [[ -s /tmp/ppart.$k ]] || { echo "echo 'peers: part $k is missing (cold machine?)' >&2; exit 3"; exit 3; }
    done
    mkdir -p $site
    blob=/tmp/peers.blob
    cat "${parts[@]/#//tmp/ppart.}" > $blob
    if ! { head -c $first_archive_bytes $blob | tar xJf - -C $site && tail -c +$((first_archive_bytes + 1)) $blob \
        | tar xJf - -C $site; }; then
        echo "echo 'peers: the archives did not unpack' >&2; exit 4"
        exit 4
    fi
    rm -f $blob
    echo "export FASTSOFTMAX_PEER_SITE=$site"
    ;;
*)
    echo "usage: bash benchmarks/peers_parts.sh keep|unpack" >&2
    exit 2
    ;;
esac
