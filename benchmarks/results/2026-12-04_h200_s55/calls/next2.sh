#!/usr/bin/env bash
# prepared for the next set (not run): call 3 again (the layouts
# regime's log-softmax backward in bf16 and float32, every class) after this set's three log rules;
# its files land under $OUT/c3
exec bash "$(dirname "$0")/call3.sh"
