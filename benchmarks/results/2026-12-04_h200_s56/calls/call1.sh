#!/usr/bin/env bash
# call 1: the fifty-fifth set's prepared next.sh as it stood (its files land under $OUT/x1, kept here as c1/)
exec bash "$(dirname "$0")/../../2026-12-04_h200_s55/calls/next.sh"
