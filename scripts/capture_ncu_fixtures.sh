#!/usr/bin/env bash
# Captures tests/fixtures/ncu from the CUDA example tasks (examples/tasks/cuda/*) on a machine with an NVIDIA
# Hopper GPU, nvcc and ncu on the PATH, and python3 (3.11+, numpy) for the checks and the table.
#
# For every task, its slow version (kernel.cu) and its known-good fast version (fast.cu):
#   1. build the harness with the task's flags (-O3 -lineinfo -arch=sm_90);
#   2. check mode on both configurations, and the fast outputs compared with the slow ones (task tolerances);
#   3. time mode on the default configuration (3 warm-ups, 20 timed calls, L2 flushed before each);
#   4. ncu profile mode on the default configuration: --set full over the launches in the NVTX range pf_profile
#      (at most 2, of the task's kernel), clocks untouched; the raw page and the CUDA source page exported as CSV;
#   5. for tasks whose slow version launches many kernels (rownorm_launches), ncu in application mode
#      (gpu__time_duration.sum only) over one timed call, exported as CSV.
# The raw pages are exported with only the metrics profiling/ reads (profiling.cuda.metrics.RAW_METRICS, through
# ncu's own --metrics filter); the source pages keep their CUDA-line rows and drop the SASS rows
# (profiling.cuda.source_csv.cuda_rows_only), except one page kept whole. Last, the device's copy bandwidth is
# measured (profiling/cuda/copy_bandwidth.cu). The ncu command lines come from profiling.cuda.ncu, the module the
# pipeline uses.
#
# Usage: scripts/capture_ncu_fixtures.sh [DEST]      (DEST defaults to tests/fixtures/ncu)
# Env:   WORK (build/ncu-capture), PYTHON (python3), FULL_RAW=1 also exports the full raw pages into WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-tests/fixtures/ncu}
WORK=${WORK:-build/ncu-capture}
PY=${PYTHON:-python3}
TASKS=examples/tasks/cuda
LAUNCH_HEAVY="rownorm_launches"
FULL_SOURCE_PAGE="sum_atomic.slow"  # one source page kept whole (SASS rows too), to test the parser on it
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$DEST" "$WORK"

# key=value arguments of a task's configuration ("" = the default one), and its kernel name.
task_field() {
    "$PY" - "$1" "$2" <<'EOF'
import sys, tomllib
task = tomllib.load(open(sys.argv[1] + "/task.toml", "rb"))
if sys.argv[2] == "kernel":
    print(task["kernel"])
else:
    configs = task["configs"]
    wanted = sys.argv[2]
    chosen = next((c for c in configs if c["name"] == wanted), None) if wanted != "default" else \
        next((c for c in configs if c.get("default")), configs[-1])
    print(" ".join(f"{k}={v}" for k, v in chosen["params"].items()))
EOF
}

ncu_cmd() { "$PY" -m profiling.cuda.ncu "$@"; }
METRICS=$("$PY" -m profiling.cuda.metrics)

echo "== build"
for dir in "$TASKS"/*/; do
    t=$(basename "$dir")
    nvcc -O3 -lineinfo -arch=sm_90 -I profiling/runtime "$dir/harness.cu" "$dir/kernel.cu" -o "$WORK/$t.slow" &
    nvcc -O3 -lineinfo -arch=sm_90 -I profiling/runtime "$dir/harness.cu" "$dir/fast.cu" -o "$WORK/$t.fast" &
done
wait
nvcc -O3 -arch=sm_90 profiling/cuda/copy_bandwidth.cu -o "$WORK/copy_bandwidth"

echo "== check and time"
for dir in "$TASKS"/*/; do
    t=$(basename "$dir")
    for cfg in small default; do
        args=$(task_field "$dir" "$cfg")
        for v in slow fast; do
            out="$WORK/$t.$v.$cfg.check"; rm -rf "$out"; mkdir -p "$out"
            # shellcheck disable=SC2086
            "$WORK/$t.$v" check --seed 1 --out "$out" --calls 2 $args || echo "!! check failed: $t.$v $cfg"
        done
        if "$PY" - "$dir" "$WORK/$t.slow.$cfg.check" "$WORK/$t.fast.$cfg.check" <<'EOF'
import pathlib, sys, tomllib
import numpy as np
task = tomllib.load(open(sys.argv[1] + "/task.toml", "rb"))
defaults = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}
for spec in task["outputs"]:
    rtol, atol = defaults[spec["dtype"]]
    rtol, atol = spec.get("rtol", rtol), spec.get("atol", atol)
    for call in (0, 1):
        slow = np.load(pathlib.Path(sys.argv[2]) / f"{spec['name']}.{call}.npy")
        fast = np.load(pathlib.Path(sys.argv[3]) / f"{spec['name']}.{call}.npy")
        ok = bool(np.isfinite(slow).all()) and np.allclose(fast, slow, rtol=rtol, atol=atol)
        excess = np.abs(fast.astype(np.float64) - slow) - (atol + rtol * np.abs(slow))
        worst = float(np.max(excess))
        print(f"  {task['name']} {spec['name']}.{call}: {'ok' if ok else 'MISMATCH'} (worst |d| - tol: {worst:.3g})")
        if not ok:
            sys.exit(1)
EOF
        then :; else echo "!! fast and slow outputs differ: $t $cfg"; fi
    done
    args=$(task_field "$dir" default)
    for v in slow fast; do
        out="$WORK/$t.$v.time"; mkdir -p "$out"
        # shellcheck disable=SC2086
        if "$WORK/$t.$v" time --seed 1 --out "$out" --warmup 3 --trials 20 $args; then
            cp "$out/timing.json" "$DEST/$t.$v.timing.json"
        else echo "!! time failed: $t.$v"; fi
    done
done

echo "== ncu"
for dir in "$TASKS"/*/; do
    t=$(basename "$dir")
    args=$(task_field "$dir" default)
    kernel=$(task_field "$dir" kernel)
    for v in slow fast; do
        prof="$WORK/$t.$v.prof"; mkdir -p "$prof"
        # shellcheck disable=SC2086
        rep="$WORK/$t.$v.report"
        eval "$(ncu_cmd profile --report "$rep" --kernel-regex "^$kernel" --launch-count 2 -- \
            "$WORK/$t.$v" profile --seed 1 --out "$prof" $args)" > "$WORK/$t.$v.ncu.log" || echo "!! ncu failed: $t.$v"
        eval "$(ncu_cmd raw --report "$rep.ncu-rep" --metrics "$METRICS")" > "$DEST/$t.$v.raw.csv"
        eval "$(ncu_cmd source --report "$rep.ncu-rep")" > "$WORK/$t.$v.source.full.csv"
        "$PY" -m profiling.cuda.source_csv --cuda-rows-only "$WORK/$t.$v.source.full.csv" > "$DEST/$t.$v.source.csv"
        if [[ "$t.$v" == "$FULL_SOURCE_PAGE" ]]; then cp "$WORK/$t.$v.source.full.csv" "$DEST/$t.$v.source.full.csv"; fi
        if [[ " $LAUNCH_HEAVY " == *" $t "* ]]; then
            # shellcheck disable=SC2086
            eval "$(ncu_cmd application --report "$WORK/$t.$v.app" -- \
                "$WORK/$t.$v" time --seed 1 --out "$prof" --warmup 0 --trials 1 --no-flush $args)" \
                > "$WORK/$t.$v.app.log" || echo "!! ncu (application mode) failed: $t.$v"
            eval "$(ncu_cmd raw --report "$WORK/$t.$v.app.ncu-rep" --metrics gpu__time_duration.sum)" \
                > "$DEST/$t.$v.launches.csv"
        fi
        if [[ "${FULL_RAW:-0}" == 1 ]]; then
            eval "$(ncu_cmd raw --report "$rep.ncu-rep")" > "$WORK/$t.$v.raw.full.csv"
        fi
    done
done

echo "== device"
{
    echo "{"
    echo "  \"copy\": $("$WORK/copy_bandwidth" --mib 2048 --trials 20),"
    echo "  \"ncu_version\": \"$(ncu --version | tail -1)\","
    echo "  \"nvcc_version\": \"$(nvcc --version | tail -1)\","
    echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem \
        --format=csv,noheader)\""
    echo "}"
} > "$DEST/device.json"
cat "$DEST/device.json"

echo "== timings (median ms of 20 calls, L2 flushed)"
"$PY" - "$DEST" <<'EOF'
import json, pathlib, statistics, sys
dest = pathlib.Path(sys.argv[1])
print(f"{'task':28s} {'slow ms':>10s} {'fast ms':>10s} {'speedup':>8s}")
for slow in sorted(dest.glob("*.slow.timing.json")):
    task = slow.name.split(".")[0]
    s = statistics.median(json.loads(slow.read_text())["times_ms"])
    f = statistics.median(json.loads((dest / f"{task}.fast.timing.json").read_text())["times_ms"])
    print(f"{task:28s} {s:10.4f} {f:10.4f} {s / f:8.2f}")
EOF
