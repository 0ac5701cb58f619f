#!/usr/bin/env bash
# Proves that `perfforge train` runs data-parallel on several GPUs through `accelerate launch` (docs/training.md,
# "Multi-GPU"), on a lent 2-GPU machine (kind nvidia-h200-x2), from the repository root, in one `run` call:
#
#     scripts/train_multi_gpu.sh OUT_DIR [PAIRS_PARQUET]          (PAIRS_PARQUET: data/train-pairs.parquet)
#
# e.g. run(kind=nvidia-h200-x2, carry=[".wheels"], command="scripts/train_multi_gpu.sh $OUT")
# (carry data/ too when it is git-ignored there, as it is when data/ is listed in .git/info/exclude).
#
# What it does, in about 3-5 minutes:
#   1. installs the carried wheels (.wheels/, made by scripts/carry_wheels.sh: trl, datasets, the HF stack) into
#      /tmp/site, first on PYTHONPATH; the image's torch (CUDA) is the one used;
#   2. builds a random Llama (12 layers, hidden 768, 12 heads, 4 KV heads, intermediate 2048, the tests' byte-level
#      BPE tokenizer: about 85M parameters) into WORK/model with save_pretrained; nothing is downloaded;
#   3. trains, one after the other, with the same flags (--max-steps 20 --batch-size 4 --max-length 1024
#      --eval-fraction 0 --logging-steps 5 --save-steps 10):
#        ddp      accelerate launch --num_processes 2 --multi_gpu --mixed_precision bf16 -m perfforge.cli train ...
#                 into WORK/ddp
#        single   the same with --num_processes 1 into WORK/single
#        resume   ddp again into WORK/ddp with --max-steps 30: must resume from checkpoint-20 and stop at 30;
#      nvidia-smi is sampled (every 0.5 s) during each run, so the summary says which GPUs held memory;
#      TRANSFORMERS_VERBOSITY=info makes rank 0 print the trainer's "Total train batch size (w. parallel,
#      distributed & accumulation)", which is batch size x processes;
#   4. writes to OUT_DIR: ddp.json, single.json, ddp_resumed.json (each run's metrics.json), <run>.log (the last
#      200 lines), key_lines.txt (the lines that matter, from the whole logs), gpu_<run>.csv (the samples),
#      env.txt (versions, GPUs), summary.json, and prints the summary (steps, tokens/s, train seconds, losses,
#      processes, GPUs used, resume). A failed run does not stop the others; the exit status is 1 if any run
#      failed or the resume did not reach its step count.
#
# Environment (defaults for the GPU machine; the others exist for a CPU dry run):
#   MGPU_WORK (/tmp/mgpu)  MGPU_NPROC (2)  MGPU_STEPS (20)  MGPU_RESUME_STEPS (30)  MGPU_RUN_TIMEOUT (150 s a run)
#   MGPU_RUNS ("ddp single resume": the runs to make, in that order)   MGPU_LAYERS (12)  MGPU_HIDDEN (768)
#   MGPU_TINY=1    a 2-layer, hidden-64 model (the tests' tiny model's shape)
#   MGPU_CPU=1     accelerate launch --cpu --mixed_precision no (no nvidia-smi sampling)
#   MGPU_NO_WHEELS=1  use the Python environment as it is (no wheel install, no /tmp/site)
#   PYTHON (python3)
# A CPU dry run of the plumbing (one 2-step run, tiny model, this checkout's venv):
#   OMP_NUM_THREADS=1 MGPU_NO_WHEELS=1 PYTHON=.venv/bin/python MGPU_TINY=1 MGPU_CPU=1 MGPU_NPROC=1 MGPU_STEPS=2 \
#       MGPU_RUNS=ddp MGPU_WORK=/tmp/mgpu-cpu scripts/train_multi_gpu.sh /tmp/mgpu-cpu-out PAIRS_PARQUET
set -uo pipefail

die() { echo "train_multi_gpu: $*" >&2; exit 2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/train_multi_gpu.sh OUT_DIR [PAIRS_PARQUET] (from the repository root)"
OUT_DIR=$1
DATA=${2:-data/train-pairs.parquet}
ROOT=$(pwd)
[ -f "$ROOT/perfforge/cli.py" ] && [ -f "$ROOT/training/trainer.py" ] || die "run it from the repository root"
[ -e "$DATA" ] || die "no training data at $DATA (carry a pairs.parquet there, or give its path as the 2nd argument)"
DATA=$(cd "$(dirname "$DATA")" && pwd)/$(basename "$DATA")
mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

WORK=${MGPU_WORK:-/tmp/mgpu}
PYTHON=${PYTHON:-python3}
NPROC=${MGPU_NPROC:-2}
STEPS=${MGPU_STEPS:-20}
RESUME_STEPS=${MGPU_RESUME_STEPS:-30}
RUNS=${MGPU_RUNS:-ddp single resume}
RUN_TIMEOUT=${MGPU_RUN_TIMEOUT:-150}
CPU=${MGPU_CPU:-0}
TINY=${MGPU_TINY:-0}

# Nothing is downloaded; NVLink multicast stays off (device README, KINDS.md), also in the launched processes.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export HF_HOME="$WORK/hf-home" HF_DATASETS_DISABLE_PROGRESS_BARS=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

started_all=$(date +%s)
mkdir -p "$WORK"
rm -rf "$WORK/ddp" "$WORK/single" "$WORK"/*.log "$WORK/runs.tsv" "$WORK"/gpu_*.csv
rm -f "$OUT_DIR"/ddp.json "$OUT_DIR"/single.json "$OUT_DIR"/ddp_resumed.json

# ------------------------------------------------------------------------------------------- 1. the wheels
if [ "${MGPU_NO_WHEELS:-0}" = 1 ]; then
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
else
    compgen -G ".wheels/*.whl" >/dev/null || die "no wheels in .wheels/: run scripts/carry_wheels.sh here, and name .wheels in the run's carry"
    echo "== installing $(ls .wheels/*.whl | wc -l) carried wheels into /tmp/site"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .wheels/*.whl || die "pip install of .wheels/*.whl failed"
    export PYTHONPATH="/tmp/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

"$PYTHON" - >"$OUT_DIR/env.txt" 2>&1 <<'EOF'
import importlib, platform
for name in ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {module.__version__} ({module.__file__})")
    except Exception as exc:  # noqa: BLE001
        print(f"{name}: {type(exc).__name__}: {exc}")
import torch
print(f"python {platform.python_version()}; cuda available {torch.cuda.is_available()}, "
      f"devices {torch.cuda.device_count()}: {[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}")
EOF
cat "$OUT_DIR/env.txt"
if [ "$CPU" != 1 ]; then
    gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
    [ "$gpus" -ge "$NPROC" ] || die "$gpus CUDA devices visible, $NPROC processes asked for (MGPU_NPROC)"
fi

# ------------------------------------------------------------------------------------------- 2. the model
echo "== building the random model in $WORK/model"
MGPU_TINY=$TINY MGPU_LAYERS=${MGPU_LAYERS:-12} MGPU_HIDDEN=${MGPU_HIDDEN:-768} "$PYTHON" - "$WORK/model" <<'EOF' || die "building the model failed"
import os, shutil, sys, time
from pathlib import Path

from tests.inference.tiny_model import TINY_SHAPE, build_tokenizer, random_chat_model, save_chat_model

started = time.perf_counter()
target = Path(sys.argv[1])
tokenizer = build_tokenizer()
if os.environ.get("MGPU_TINY") == "1":
    shape = TINY_SHAPE
else:
    hidden, layers = int(os.environ["MGPU_HIDDEN"]), int(os.environ["MGPU_LAYERS"])
    heads = max(1, hidden // 64)
    shape = dict(hidden_size=hidden, intermediate_size=(hidden * 8 // 3 + 255) // 256 * 256,
                 num_hidden_layers=layers, num_attention_heads=heads,
                 num_key_value_heads=4 if heads % 4 == 0 else heads)
model = random_chat_model(tokenizer, shape)
shutil.rmtree(target, ignore_errors=True)
save_chat_model(model, tokenizer, target)
print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters, {shape}, vocab {len(tokenizer)}; "
      f"saved in {time.perf_counter() - started:.1f} s")
EOF

# ------------------------------------------------------------------------------------------- 3. the runs
sampler_pid=
start_sampler() {  # $1: run name; nvidia-smi every 0.5 s in the background, into WORK/gpu_<run>.csv
    sampler_pid=
    [ "$CPU" = 1 ] && return 0
    command -v nvidia-smi >/dev/null || return 0
    nvidia-smi --query-gpu=timestamp,index,name,memory.used,utilization.gpu --format=csv,noheader,nounits \
        -lms 500 >"$WORK/gpu_$1.csv" 2>/dev/null &
    sampler_pid=$!
}
stop_sampler() {
    if [ -n "$sampler_pid" ]; then
        kill "$sampler_pid" 2>/dev/null
        wait "$sampler_pid" 2>/dev/null
        sampler_pid=
    fi
}
trap stop_sampler EXIT

run_train() {  # $1 name, $2 processes, $3 max steps, $4 out directory
    local name=$1 nproc=$2 steps=$3 out=$4 rc t0 t1 ms wall adapter=no
    local launch=(--num_processes "$nproc" --num_machines 1 --dynamo_backend no)
    if [ "$CPU" = 1 ]; then
        launch+=(--cpu --mixed_precision no)
    else
        [ "$nproc" -gt 1 ] && launch+=(--multi_gpu)
        launch+=(--mixed_precision bf16)
    fi
    local train=(train "$DATA" --base-model "$WORK/model" --out "$out" --max-steps "$steps" --batch-size 4
                 --max-length 1024 --eval-fraction 0 --logging-steps 5 --save-steps 10)
    echo "== $name: accelerate launch ${launch[*]} -m perfforge.cli ${train[*]}"
    start_sampler "$name"
    rm -rf "$out/adapter"  # so that the resume run's adapter/ is its own
    t0=$(date +%s%N)
    TRANSFORMERS_VERBOSITY=info timeout --kill-after=15 "$RUN_TIMEOUT" \
        "$PYTHON" -m accelerate.commands.launch "${launch[@]}" -m perfforge.cli "${train[@]}" \
        >"$WORK/$name.log" 2>&1
    rc=$?
    t1=$(date +%s%N)
    stop_sampler
    ms=$(( (t1 - t0) / 1000000 ))
    wall=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
    [ -f "$out/adapter/adapter_config.json" ] && adapter=yes
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$nproc" "$rc" "$wall" "$adapter" >>"$WORK/runs.tsv"
    echo "   exit $rc after $wall s, adapter written: $adapter; last lines:"
    tr '\r' '\n' <"$WORK/$name.log" | grep -v -E 'it/s\]|s/it\]|^\s*$' | tail -n 4 | sed 's/^/   | /'
    ls -d "$out"/checkpoints/checkpoint-* "$out"/adapter "$out"/*.incomplete 2>/dev/null | sed 's/^/   > /'
    return 0
}

keep() {  # $1 source metrics.json, $2 name in OUT_DIR
    if [ -f "$1" ]; then cp "$1" "$OUT_DIR/$2"; else echo "   (no $1: $2 not written)"; fi
}

for run in $RUNS; do
    case $run in
        ddp)    run_train ddp "$NPROC" "$STEPS" "$WORK/ddp"; keep "$WORK/ddp/metrics.json" ddp.json ;;
        single) run_train single 1 "$STEPS" "$WORK/single"; keep "$WORK/single/metrics.json" single.json ;;
        resume) # metrics.json of the first ddp run is already copied; a stale one must not pass for the resumed one
                rm -f "$WORK/ddp/metrics.json"
                run_train resume "$NPROC" "$RESUME_STEPS" "$WORK/ddp"
                keep "$WORK/ddp/metrics.json" ddp_resumed.json ;;
        *) die "unknown run $run in MGPU_RUNS (ddp, single, resume)" ;;
    esac
done

# ------------------------------------------------------------------------------------------- 4. the results
: >"$OUT_DIR/key_lines.txt"
for run in $RUNS; do
    log=$WORK/$run.log
    [ -f "$log" ] || continue
    tr '\r' '\n' <"$log" | grep -v -E 'it/s\]|s/it\]|^\s*$' | tail -n 200 >"$OUT_DIR/$run.log"
    {
        echo "=== $run"
        tr '\r' '\n' <"$log" | grep -n -E "Total train batch size|Num examples|Number of trainable|Instantaneous batch|\
Total optimization steps|Continuing training from|resuming from|already trained|training and [0-9]+ eval|steps in [0-9.]+ s|\
'loss'|Traceback|Error|error:|rank[0-9]|Rank [0-9]|ChildFailedError|exitcode|Signal|nccl|NCCL|destroy_process_group" \
            | grep -v -E "^[0-9]+:\s*$" | cut -c1-400 | head -n 80
    } >>"$OUT_DIR/key_lines.txt"
done
cp "$WORK/runs.tsv" "$OUT_DIR/runs.tsv" 2>/dev/null
cp "$WORK"/gpu_*.csv "$OUT_DIR/" 2>/dev/null

MGPU_STEPS=$STEPS MGPU_RESUME_STEPS=$RESUME_STEPS MGPU_NPROC=$NPROC MGPU_WALL=$(( $(date +%s) - started_all )) \
    "$PYTHON" - "$OUT_DIR" "$WORK" <<'EOF'
import csv, json, os, re, sys
from pathlib import Path

out, work = Path(sys.argv[1]), Path(sys.argv[2])
steps, resume_steps, nproc = (int(os.environ[k]) for k in ("MGPU_STEPS", "MGPU_RESUME_STEPS", "MGPU_NPROC"))
runs = {}
for line in (work / "runs.tsv").read_text().splitlines() if (work / "runs.tsv").is_file() else []:
    name, procs, rc, wall, adapter = line.split("\t")
    runs[name] = {"processes": int(procs), "exit": int(rc), "wall_s": float(wall), "adapter_written": adapter == "yes"}
files = {"ddp": "ddp.json", "single": "single.json", "resume": "ddp_resumed.json"}
ok = True
for name, run in runs.items():
    metrics_path = out / files[name]
    m = json.loads(metrics_path.read_text()) if metrics_path.is_file() else {}
    log = (work / f"{name}.log").read_text(errors="replace") if (work / f"{name}.log").is_file() else ""
    batch = re.findall(r"Total train batch size \(w\. parallel, distributed & accumulation\) = ([\d,]+)", log)
    resumed = re.findall(r"resuming from (\S+)", log)
    prior = int(re.search(r"checkpoint-(\d+)", resumed[-1]).group(1)) if resumed else 0
    session_steps = (m.get("steps") or 0) - prior
    sps, secs = m.get("train_samples_per_second"), m.get("train_seconds")
    run.update({
        "metrics_file": metrics_path.name if m else None, "steps": m.get("steps"),
        "train_seconds": secs, "train_tokens": m.get("train_tokens"),
        "tokens_per_s": m.get("train_tokens_per_second"), "train_loss": m.get("train_loss"),
        "losses": m.get("losses"), "first_logged_loss": m.get("first_logged_loss"),
        "last_logged_loss": m.get("last_logged_loss"),
        "total_train_batch_size_logged": int(batch[-1].replace(",", "")) if batch else None,
        # trainer's samples/s x our wall of trainer.train() / steps of this session: about batch x processes
        "global_batch_estimate": round(sps * secs / session_steps, 1) if sps and secs and session_steps > 0 else None,
        "resumed_from": resumed[-1] if resumed else None,
        "tracebacks": log.count("Traceback (most recent call last)"),
    })
    gpu_csv = work / f"gpu_{name}.csv"
    if gpu_csv.is_file():
        peak, util = {}, {}
        for row in csv.reader(gpu_csv.read_text().splitlines()):
            if len(row) < 5:
                continue
            try:
                index, mem, u = int(row[1]), float(row[3]), float(row[4])
            except ValueError:
                continue
            peak[index], util[index] = max(peak.get(index, 0), mem), max(util.get(index, 0), u)
        run["gpu_peak_memory_mib"] = peak
        run["gpu_peak_utilisation_pct"] = util
        run["gpus_used"] = sorted(i for i in peak if peak[i] > 1024)  # > 1 GiB held during the run
    expected = resume_steps if name == "resume" else steps
    run["ok"] = (run["exit"] == 0 and run["steps"] == expected and run["adapter_written"]
                 and (name != "resume" or prior == steps))
    ok &= run["ok"]

print("\n== summary")
print(f"{'run':<8}{'procs':>6}{'exit':>5}{'wall s':>8}{'steps':>6}{'train s':>9}{'tokens':>9}{'tok/s':>9}"
      f"{'batch':>6}{'loss first -> last':>22}  GPUs used (peak MiB)")
for name, r in runs.items():
    losses = (f"{r['first_logged_loss']:.3f} -> {r['last_logged_loss']:.3f}"
              if r.get("first_logged_loss") is not None and r.get("last_logged_loss") is not None else "-")
    gpus = ", ".join(f"{i} ({r['gpu_peak_memory_mib'][i]:.0f})" for i in r.get("gpus_used", [])) or "-"
    fmt = lambda v, f: format(v, f) if v is not None else "-"  # noqa: E731
    print(f"{name:<8}{r['processes']:>6}{r['exit']:>5}{r['wall_s']:>8.1f}{fmt(r['steps'], 'd'):>6}"
          f"{fmt(r['train_seconds'], '.1f'):>9}{fmt(r['train_tokens'], 'd'):>9}{fmt(r['tokens_per_s'], '.0f'):>9}"
          f"{fmt(r['total_train_batch_size_logged'], 'd'):>6}{losses:>22}  {gpus}")
for name, r in runs.items():
    notes = []
    if r.get("losses"):
        notes.append(f"losses {[round(x, 3) for x in r['losses']]}")
    if r.get("resumed_from"):
        notes.append(f"resumed from {r['resumed_from']}")
    notes.append(f"adapter {'written' if r['adapter_written'] else 'MISSING'}")
    if r["tracebacks"]:
        notes.append(f"{r['tracebacks']} traceback(s) in the log")
    if r.get("global_batch_estimate") is not None:
        notes.append(f"global batch ~{r['global_batch_estimate']}")
    notes.append("OK" if r["ok"] else "NOT OK")
    print(f"  {name}: " + "; ".join(notes))
d, s = runs.get("ddp", {}), runs.get("single", {})
if d.get("tokens_per_s") and s.get("tokens_per_s"):
    print(f"ddp / single: tokens/s x{d['tokens_per_s'] / s['tokens_per_s']:.2f}, "
          f"train seconds x{d['train_seconds'] / s['train_seconds']:.2f} (ddp does {nproc}x the examples per step)")
if "resume" in runs:
    r = runs["resume"]
    print(f"resume: from {r.get('resumed_from') or 'NO CHECKPOINT'} to step {r.get('steps')} (expected {steps} -> "
          f"{resume_steps}): {'OK' if r['ok'] else 'NOT OK'}")
print(f"total wall {os.environ['MGPU_WALL']} s; files in {out}")
(out / "summary.json").write_text(json.dumps({"runs": runs, "ok": ok, "wall_s": int(os.environ["MGPU_WALL"])},
                                             indent=2, sort_keys=True) + "\n")
sys.exit(0 if ok and runs else 1)
EOF
