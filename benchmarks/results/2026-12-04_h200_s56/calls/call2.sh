#!/usr/bin/env bash
# call 2: the fifty-fifth set's prepared next3.sh as it stood (its files land under $OUT/x3, kept here as c2/)
exec bash "$(dirname "$0")/../../2026-12-04_h200_s55/calls/next3.sh"
