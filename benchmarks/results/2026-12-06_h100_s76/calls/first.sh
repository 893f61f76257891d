#!/usr/bin/env bash
# this set's first call: the initcheck over strided_staged's parts (the previous set's calls/call7.sh, the
# sanitizer gap it left); the one-team forwards (its calls/call5.sh) follow in the next call on the same
# H100, since the rule they decide is an H100 one
bash benchmarks/results/2026-12-06_h100_s75/calls/call7.sh
