#!/bin/sh
# Run the bundles a `perfforge eval --bundle` pass left (EVAL_DIR/pending.txt) on the machine with the hardware,
# within a time budget, and pack every bundle's results.json into OUT_DIR/results.tgz for the trip back:
#     scripts/eval_gpu.sh EVAL_DIR BUDGET_S OUT_DIR        (from the root of a perfforge checkout)
# Back home: tar xzf results.tgz -C EVAL_DIR, then rerun the same perfforge eval command.
set -eu
eval_dir=$1
budget_s=$2
out_dir=$3
root=$(pwd)
bundles=$(sed "s|^|$eval_dir/|" "$eval_dir/pending.txt")
# shellcheck disable=SC2086 (one argument per bundle directory; the paths hold no spaces)
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" python3 -m profiling.bundle --budget-s "$budget_s" $bundles || true
cd "$eval_dir"
find . -name results.json -path '*bundle*' | tar czf "$out_dir/results.tgz" -T -
echo "packed $(tar tzf "$out_dir/results.tgz" | wc -l) results.json into $out_dir/results.tgz"
