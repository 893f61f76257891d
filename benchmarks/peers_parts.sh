#!/usr/bin/env bash
# The peers' archives (Quack and Liger, built by the peer bundle as a.tar.xz then b.tar.xz) are joined and cut
# into six parts (cat a.tar.xz b.tar.xz > all && split -n 6 all ppart.: ppart.aa..ppart.af), each carried in a
# folder .peer1...peer6, and reach the GPU machine in two or more commands on the same machine, as many parts each
# as fit beside the tree (three where it is under about 28 MB, two past it): each but the last keeps the parts it
# has under /tmp, the last copies its own there too and unpacks all six into /tmp/site. PEERS_KEPT and PEERS_SITE
# (absolute paths) name other folders for the parts and the packages.
#
#   bash benchmarks/peers_parts.sh keep                each command but the last: copies the .peerN/ppart.* it has to /tmp
#   eval "$(bash benchmarks/peers_parts.sh unpack)"    the last: unpacks, then exports FASTSOFTMAX_PEER_SITE
#
# unpack prints the export line on success. On failure it prints a line that, under eval, reports the
# reason and exits the calling shell (meant for a script: 3, a part is missing, e.g. /tmp was cleared
# between the commands, so run both again; 4, the archives do not unpack, e.g. a part from another bundle).
set -uo pipefail
cd "$(dirname "$0")/.."
parts=(aa ab ac ad ae af)
site=${PEERS_SITE:-/tmp/site}
kept=${PEERS_KEPT:-/tmp} # where the parts wait between the commands

keep_parts() {
    local part
    mkdir -p "$kept" || return 1
    for part in .peer*/ppart.*; do
        if [[ -e $part ]]; then cp "$part" "$kept/" || return 1; fi
    done
}

fail() { # fail CODE MESSAGE: the line eval runs, then this script's own exit
    printf 'echo %q >&2; exit %d\n' "peers_parts.sh: $2" "$1"
    exit "$1"
}

case "${1:-}" in
keep)
    keep_parts || exit 1
    ls -la "$kept"/ppart.* 2>&1 || true
    ;;
unpack)
    keep_parts || fail 3 "could not copy the parts carried here to $kept"
    files=()
    for k in "${parts[@]}"; do
        [[ -s $kept/ppart.$k ]] || fail 3 "part $k is missing from $kept: run the keep command again first"
        files+=("$kept/ppart.$k")
    done
    mkdir -p "$site"
    # xz reads the two concatenated streams as one; tar's --ignore-zeros reads past the first archive's end
    if ! cat "${files[@]}" | xz -dc | tar --ignore-zeros -xf - -C "$site"; then
        fail 4 "the archives did not unpack"
    fi
    printf 'export FASTSOFTMAX_PEER_SITE=%q\n' "$site"
    ;;
*)
    echo "usage: bash benchmarks/peers_parts.sh keep|unpack" >&2
    exit 2
    ;;
esac
