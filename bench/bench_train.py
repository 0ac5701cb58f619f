"""Training speed: `perfforge train`'s trainer configuration against trl's default one, in the same run.

One model, one dataset, one LoRA adapter, two trainer configurations; the ratio of their training tokens per second.

The model is a causal LM with random weights (fixed seed), built from a LlamaConfig, never downloaded:
    --size tiny   2 layers, hidden 64, 2 heads, intermediate 128, the test tokenizer's vocabulary (CPU default);
    --size 0.5b   24 layers, hidden 1024, 16 heads (head_dim 64), 4 KV heads, intermediate 2816, vocab 32000
                  (for a GPU machine; the parameter count is printed: 336M with untied embeddings, fewer than
                  the name says, since the vocabulary is small beside Qwen2.5-0.5B's 152k).
Its weights are float32, as a config-built model is. The tokenizer is the tests' byte-level BPE tokenizer with a
ChatML template (tests/inference/tiny_model.py::build_tokenizer). The data are 64 conversational prompt/completion
rows ({"prompt": [{"role": "user", ...}], "completion": [{"role": "assistant", ...}]}) cut from a corpus of C and
CUDA code in this file, of spread lengths: 150-600 prompt and 100-400 completion tokens, drawn per row (the figures
are in the JSON).

Both sides train SFTTrainer with the same peft LoRA config (training.trainer.lora_config of TrainConfig's defaults:
r 8, alpha 16, all-linear), the same batch size, max_length and number of steps:
    A  perfforge  training.trainer.trainer_args(TrainConfig(...), precision_flags(...), speed_choices(...)):
                  precision auto (fp32 and use_cpu on the CPU, bf16 on a GPU), and on a GPU training.speed's
                  choices: padding-free packing, liger-kernel where installed, gradient checkpointing only if the
                  activations would not fit; completion_only_loss, lr 2e-4, ...;
    B  trl        trl.SFTConfig(output_dir, max_steps, per_device_train_batch_size, max_length, report_to="none")
                  and everything else at trl's defaults (bf16 and gradient checkpointing on, padded batches, ...)
                  except the learning rate and logging interval, set to A's (2e-4, 5 steps) so that the two
                  loss curves compare at equal tokens.
Both count tokens with include_num_input_tokens_seen="non_padding" (a counter: it changes no training): real
tokens, so packing's removed padding is not counted as work. (On the packed side the counter is the number of
tokens that are not the pad token, which is also the end-of-turn token here: it undercounts A by one token per
example, against A.) A side whose configuration or training raises is recorded as failed with the exception's
first line (on the CPU, trl's bf16 default refuses to start: STACK.md), and then that line is reported instead of
a ratio.

Throughput is trainer.state.num_input_tokens_seen over the wall time of the timed steps: a callback notes the time
and the counter at the end of each optimiser step (after a CUDA synchronise), and the first --warmup steps are left
out, so dataset preparation, model placement and the first step's one-off costs are not timed. Peak memory is
torch.cuda.max_memory_allocated on a GPU and the process's ru_maxrss on the CPU (the whole process: Python,
torch and the data included). Equal loss: a packed step holds more tokens than a padded one, so the losses are
compared at equal tokens: A's logged loss curve (loss against tokens seen) read at the tokens B had seen at its
last logged loss (`loss_A_at_B_tokens` beside B's own). A checkpoints every 50 steps and B every 500: a run of 50
or more steps times A's checkpoint writes, as `perfforge train` would pay them.

Each run is a fresh subprocess (memory figures are its own), in the order A B A B (--repeats 2).

    OMP_NUM_THREADS=2 .venv/bin/python bench/bench_train.py --size tiny [--steps 20] [--batch-size 4]
        [--max-length 1024] [--repeats 2]
    python3 bench/bench_train.py --size 0.5b          # on a GPU machine (needs trl and datasets installed)

Results are printed as a table and written to bench/results/train_<device>_<size>.json, with the machine's load
average: on a shared 2-core machine any other busy process changes every figure here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Light imports only: training.config and training.trainer import torch, peft and trl inside their functions.
from perfforge.io import write_json  # noqa: E402
from training.config import TrainConfig  # noqa: E402
from training.trainer import lora_config, precision_flags, speed_choices, trainer_args  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
REQUIRED = ("torch", "transformers", "tokenizers", "peft", "accelerate", "trl", "datasets",
            "pytest")  # pytest: tests/inference/tiny_model.py imports tests/profiling/conftest.py
EXAMPLES = 64
PROMPT_TOKENS = (150, 600)  # each row's prompt and completion lengths are drawn uniformly from these ranges
COMPLETION_TOKENS = (100, 400)
SIDES = {"A": "perfforge", "B": "trl default"}
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 2},  # the tokenizer's vocabulary
    "0.5b": {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 24, "num_attention_heads": 16,
             "num_key_value_heads": 4, "vocab_size": 32000},
}

PROMPT_HEAD = "Rewrite this file so that its kernel runs faster on the target hardware, with the same outputs.\n\n"
ANSWER_HEAD = ("Hypothesis: the inner loop walks memory with a large stride; reordering and blocking the loops keeps "
               "the reused data in cache.\nEvidence: cache_miss_bound, D1 miss rate 0.31 on the hot line.\n\n")
CORPUS = [
    """\
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* y = A x for a dense row-major matrix; the original walked A by column. */
void matvec(int n, const float *restrict a, const float *restrict x, float *restrict y) {
    for (int i = 0; i < n; i++) {
        float sum = 0.0f;
        for (int j = 0; j < n; j++) sum += a[(size_t)i * n + j] * x[j];
        y[i] = sum;
    }
}
""",
    """\
/* C = A * B, blocked so that a tile of B stays in the L1 cache while a row of A streams through it. */
void matmul_blocked(int n, const float *a, const float *b, float *c) {
    const int bs = 64;
    memset(c, 0, (size_t)n * n * sizeof(float));
    for (int kk = 0; kk < n; kk += bs)
        for (int jj = 0; jj < n; jj += bs)
            for (int i = 0; i < n; i++)
                for (int k = kk; k < kk + bs && k < n; k++) {
                    const float aik = a[(size_t)i * n + k];
                    for (int j = jj; j < jj + bs && j < n; j++) c[(size_t)i * n + j] += aik * b[(size_t)k * n + j];
                }
}
""",
    """\
__global__ void reduce_sum(const float *__restrict__ x, float *__restrict__ out, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v += x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    tile[threadIdx.x] = v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (threadIdx.x < stride) tile[threadIdx.x] += tile[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        v = tile[threadIdx.x] + tile[threadIdx.x + 32];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}
""",
    """\
typedef struct {
    size_t count;
    size_t capacity;
    double *values;
} vec_t;

int vec_push(vec_t *v, double value) {
    if (v->count == v->capacity) {
        size_t capacity = v->capacity ? v->capacity * 2 : 16;
        double *values = (double *)realloc(v->values, capacity * sizeof(double));
        if (values == NULL) return -1;
        v->values = values;
        v->capacity = capacity;
    }
    v->values[v->count++] = value;
    return 0;
}

double vec_dot(const vec_t *a, const vec_t *b) {
    double sum = 0.0;
    size_t n = a->count < b->count ? a->count : b->count;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++) sum += a->values[i] * b->values[i];
    return sum;
}
""",
    """\
/* 5-point stencil, one sweep; rows are split among the threads. */
void stencil(int rows, int cols, const double *restrict in, double *restrict out) {
#pragma omp parallel for schedule(static)
    for (int i = 1; i < rows - 1; i++)
        for (int j = 1; j < cols - 1; j++) {
            const size_t c = (size_t)i * cols + j;
            out[c] = 0.25 * (in[c - 1] + in[c + 1] + in[c - cols] + in[c + cols]) - in[c];
        }
}
""",
    """\
__global__ void transpose_tiled(const float *__restrict__ src, float *__restrict__ dst, int rows, int cols) {
    __shared__ float tile[32][33];  /* one column of padding: no shared-memory bank conflicts */
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8)
        if (x < cols && y + k < rows) tile[threadIdx.y + k][threadIdx.x] = src[(size_t)(y + k) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int k = 0; k < 32; k += 8)
        if (x < rows && y + k < cols) dst[(size_t)(y + k) * rows + x] = tile[threadIdx.x][threadIdx.y + k];
}
""",
]


# --------------------------------------------------------------------------------------------------- the worker


def build_rows(tokenizer: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """EXAMPLES prompt/completion rows cut from CORPUS at different offsets, of spread lengths (each row draws its
    prompt and completion lengths uniformly from PROMPT_TOKENS and COMPLETION_TOKENS, seeded by its index: real
    pairs vary, and padding is what packing removes), and their measured token lengths."""
    corpus = "\n".join(CORPUS)
    single = tokenizer(corpus, add_special_tokens=False, verbose=False)["input_ids"]
    need = PROMPT_TOKENS[1] + COMPLETION_TOKENS[1] + len(single)
    ids = tokenizer("\n".join([corpus] * (need // len(single) + 2)), add_special_tokens=False,
                    verbose=False)["input_ids"]
    head_p = len(tokenizer(PROMPT_HEAD, add_special_tokens=False)["input_ids"])
    head_c = len(tokenizer(ANSWER_HEAD + "```c\n\n```", add_special_tokens=False)["input_ids"])
    rows = []
    for index in range(EXAMPLES):
        draw = random.Random(index)
        n_prompt = draw.randint(*PROMPT_TOKENS) - head_p - 8  # 8, 4: the chat template's own tokens
        n_completion = draw.randint(*COMPLETION_TOKENS) - head_c - 4
        start = (index * 131) % len(single)
        prompt = tokenizer.decode(ids[start:start + n_prompt])
        completion = tokenizer.decode(ids[start + n_prompt:start + n_prompt + n_completion])
        rows.append({"prompt": [{"role": "user", "content": PROMPT_HEAD + prompt}],
                     "completion": [{"role": "assistant", "content": f"{ANSWER_HEAD}```c\n{completion}\n```"}]})
    prompt_lengths, total_lengths = [], []
    for row in rows:
        prompt_lengths.append(len(tokenizer.apply_chat_template(row["prompt"], tokenize=True,
                                                                add_generation_prompt=True, return_dict=False)))
        total_lengths.append(len(tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True,
                                                               return_dict=False)))
    stats = {"examples": len(rows), "prompt_tokens_mean": round(statistics.mean(prompt_lengths), 1),
             "completion_tokens_mean": round(statistics.mean(t - p for t, p in zip(total_lengths, prompt_lengths,
                                                                                    strict=True)), 1),
             "total_tokens_mean": round(statistics.mean(total_lengths), 1),
             "total_tokens_min": min(total_lengths), "total_tokens_max": max(total_lengths)}
    return rows, stats


def build_model(size: str, tokenizer: Any, max_length: int) -> Any:
    from tests.inference.tiny_model import random_chat_model

    return random_chat_model(tokenizer, SIZES[size], max_positions=max(2048, max_length))


def step_timer(warmup: int, cuda: bool) -> Any:
    """A callback noting (time, tokens seen) at the end of each optimiser step; the timed window starts after
    `warmup` steps. The token counter is updated before on_step_end, so its difference counts the timed steps."""
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[tuple[int, float, int]] = []
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003, ANN201 (trainer's API)
            if cuda:
                torch.cuda.synchronize()
            self.marks.append((state.global_step, time.perf_counter(), state.num_input_tokens_seen))

        def window(self) -> dict[str, Any]:
            points = [(0, self._start, 0), *self.marks]  # the train start, then each step's end
            if len(points) <= warmup + 1:
                raise RuntimeError(f"only {len(self.marks)} steps ran; nothing after the {warmup} warm-up steps")
            (_, t0, n0), (_, t1, n1) = points[warmup], points[-1]
            step_seconds = [b[1] - a[1] for a, b in zip(points[warmup:], points[warmup + 1:], strict=False)]
            return {"timed_steps": len(points) - 1 - warmup, "timed_tokens": n1 - n0,
                    "timed_seconds": round(t1 - t0, 4),
                    "tokens_per_s": round((n1 - n0) / (t1 - t0), 1) if t1 > t0 else None,
                    "median_step_s": round(statistics.median(step_seconds), 4),
                    "first_step_s": round(points[1][1] - points[0][1], 4)}

        def since_warmup(self) -> dict[int, float]:
            """Seconds from the end of the warm-up to the end of each later step."""
            points = [(0, self._start, 0), *self.marks]
            t0 = points[warmup][1]
            return {step: round(t - t0, 4) for step, t, _ in points[warmup:]}

        def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003, ANN201
            self._start = time.perf_counter()

    return StepTimer()


def config_summary(targs: Any) -> dict[str, Any]:
    names = ("bf16", "fp16", "use_cpu", "gradient_checkpointing", "completion_only_loss", "packing", "padding_free",
             "learning_rate", "lr_scheduler_type", "warmup_steps", "optim", "logging_steps", "save_steps",
             "save_total_limit", "seed", "max_length", "per_device_train_batch_size", "gradient_accumulation_steps",
             "dataloader_num_workers", "torch_compile", "tf32", "pad_to_multiple_of", "use_liger_kernel")
    out = {}
    for name in names:
        value = getattr(targs, name, None)
        out[name] = value if value is None or isinstance(value, bool | int | float | str) else str(value)
    return out


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def run_side(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """One training run in this process (a worker); the record it returns always has 'ok' and, if not ok, 'error'."""
    import torch

    cuda = torch.cuda.is_available()
    record: dict[str, Any] = {"side": side, "name": SIDES[side], "repeat": args.repeat, "ok": False,
                              "environment": environment(),
                              "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    stage = "setup"
    try:
        import datasets
        from trl import SFTConfig, SFTTrainer

        from tests.inference.tiny_model import build_tokenizer

        datasets.disable_progress_bars()
        tokenizer = build_tokenizer()
        rows, record["data"] = build_rows(tokenizer)
        dataset = datasets.Dataset.from_list(rows)
        model = build_model(args.size, tokenizer, args.max_length)
        record["parameters"] = sum(p.numel() for p in model.parameters())
        steps = args.warmup + args.steps
        out = Path(args.workdir) / f"{side}{args.repeat}"
        stage = "config"
        if side == "A":
            ours = TrainConfig(data=[Path("x")], out=out, max_steps=steps, batch_size=args.batch_size,
                               max_length=args.max_length)
            choices = speed_choices(ours, model)
            record["speed"] = choices.as_dict()
            targs = trainer_args(ours, precision_flags(ours), choices)
        else:  # trl's defaults, but our learning rate and logging: the losses then compare at equal tokens
            targs = SFTConfig(output_dir=str(out / "checkpoints"), max_steps=steps,
                              per_device_train_batch_size=args.batch_size, max_length=args.max_length,
                              learning_rate=TrainConfig.learning_rate, logging_steps=TrainConfig.logging_steps,
                              report_to="none", include_num_input_tokens_seen="non_padding")
        record["config"] = config_summary(targs)
        timer = step_timer(args.warmup, cuda)
        stage = "trainer"
        trainer = SFTTrainer(model=model, args=targs, train_dataset=dataset, processing_class=tokenizer,
                             peft_config=lora_config(TrainConfig(data=[Path("x")])), callbacks=[timer])
        record["trainable_parameters"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
        record["model_dtype"] = str(next(trainer.model.parameters()).dtype).removeprefix("torch.")
        stage = "train"
        started = time.perf_counter()
        result = trainer.train()
        record["train_seconds"] = round(time.perf_counter() - started, 3)
        record.update(timer.window())
        losses = [(e["step"], e["loss"]) for e in trainer.state.log_history if "loss" in e]
        record["loss_curve"] = [(e["step"], e.get("num_input_tokens_seen"), e["loss"])
                                for e in trainer.state.log_history if "loss" in e]
        record["step_seconds_since_warmup"] = timer.since_warmup()
        record["final_loss"] = losses[-1][1] if losses else None
        record["final_loss_step"] = losses[-1][0] if losses else None
        record["train_loss_mean"] = round(result.training_loss, 4)
        record["steps"] = trainer.state.global_step
        record["tokens_seen"] = trainer.state.num_input_tokens_seen
        record["ok"] = True
    except Exception as exc:  # noqa: BLE001 (a failed side is a result, recorded with its first line)
        record["error"] = first_line(exc)
        record["failed_at"] = stage
    if cuda:
        record["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        record["peak_memory_kind"] = "torch.cuda.max_memory_allocated"
    else:
        record["peak_memory_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        record["peak_memory_kind"] = "ru_maxrss (whole process)"
    record["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return record


def environment() -> dict[str, Any]:
    """The device and versions, as a worker sees them (the parent never initialises CUDA)."""
    import torch

    cuda = torch.cuda.is_available()
    versions = {}
    for name in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
        try:
            versions[name] = __import__(name).__version__
        except Exception as exc:  # noqa: BLE001
            versions[name] = first_line(exc)
    return {"device": "cuda" if cuda else "cpu",
            "device_name": torch.cuda.get_device_name() if cuda else f"{platform.processor() or platform.machine()}",
            "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "versions": versions}


# --------------------------------------------------------------------------------------------------- the parent


def launch(side: str, repeat: int, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """A run in a fresh subprocess; its record, or a failed record carrying the last line it printed."""
    result = workdir / f"result_{side}{repeat}.json"
    log = workdir / f"log_{side}{repeat}.txt"
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", side, "--repeat", str(repeat),
               "--result", str(result), "--workdir", str(workdir), "--size", args.size, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
               "--max-length", str(args.max_length)]
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT, check=False).returncode
    if result.is_file():
        record = json.loads(result.read_text())
    else:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        record = {"side": side, "name": SIDES[side], "repeat": repeat, "ok": False, "failed_at": "process",
                  "error": f"worker exited with {code}: {lines[-1] if lines else 'no output'}"}
    record["process_seconds"] = round(time.perf_counter() - started, 2)
    if not record["ok"] and args.verbose:
        print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
    return record


def fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        ok = [r for r in mine if r["ok"]]
        summary[side] = {"name": SIDES[side], "runs": len(mine), "ok": len(ok),
                         "tokens_per_s": [r["tokens_per_s"] for r in ok],
                         "tokens_per_s_median": statistics.median([r["tokens_per_s"] for r in ok]) if ok else None,
                         "peak_memory_bytes_max": max((r["peak_memory_bytes"] for r in ok), default=None),
                         "errors": sorted({r["error"] for r in mine if not r["ok"]})}
    pairs = [(a, b) for a, b in zip([r for r in runs if r["side"] == "A"], [r for r in runs if r["side"] == "B"],
                                     strict=False)]
    ratios = [round(a["tokens_per_s"] / b["tokens_per_s"], 3) for a, b in pairs
              if a["ok"] and b["ok"] and b["tokens_per_s"]]
    summary["ratio_A_over_B"] = ratios
    summary["loss_at_equal_tokens"] = [loss_at_equal_tokens(a, b) for a, b in pairs if a["ok"] and b["ok"]]
    a_med, b_med = summary["A"]["tokens_per_s_median"], summary["B"]["tokens_per_s_median"]
    summary["ratio_A_over_B_of_medians"] = round(a_med / b_med, 3) if a_med and b_med else None
    if summary["ratio_A_over_B_of_medians"] is None:
        failed = [s for s in SIDES if summary[s]["errors"] and not summary[s]["ok"]]
        summary["no_ratio_because"] = "; ".join(f"{s} ({SIDES[s]}) failed: {summary[s]['errors'][0]}"
                                                for s in failed) or "no successful pair"
    return summary


def loss_at_equal_tokens(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Equal loss, read two ways from the logged loss curves (each point the mean loss of the steps since the last):
    A's loss at the tokens B had seen at its last point, and the time each side took from the end of its warm-up
    to reach B's last loss (A's step where its curve first gets there; None where it never does). The ratio of
    those times is the speed-up at equal loss."""
    curve_a, curve_b = a.get("loss_curve") or [], b.get("loss_curve") or []
    times_a = {int(k): v for k, v in (a.get("step_seconds_since_warmup") or {}).items()}
    times_b = {int(k): v for k, v in (b.get("step_seconds_since_warmup") or {}).items()}
    if not curve_a or not curve_b:
        return {"tokens": None, "loss_B": None, "loss_A_at_B_tokens": None}
    step_b, tokens, loss_b = curve_b[-1]
    loss_a = None
    for (_, t0, l0), (_, t1, l1) in zip(curve_a, curve_a[1:], strict=False):
        if t0 is not None and t1 is not None and t0 <= tokens <= t1:
            loss_a = l0 + (l1 - l0) * (tokens - t0) / (t1 - t0) if t1 > t0 else l1
            break
    step_a = next((step for step, _, loss in curve_a if loss <= loss_b and step in times_a), None)
    seconds_a = times_a.get(step_a) if step_a is not None else None
    seconds_b = times_b.get(step_b)
    return {"tokens": tokens, "loss_B": loss_b, "loss_A_at_B_tokens": None if loss_a is None else round(loss_a, 4),
            "B_seconds_to_its_last_loss": seconds_b, "A_step_reaching_it": step_a,
            "A_seconds_to_reach_it": seconds_a,
            "speedup_at_equal_loss": round(seconds_b / seconds_a, 3) if seconds_a and seconds_b else None}


def print_table(runs: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    header = (f"{'side':<14}{'rep':>4}{'steps':>7}{'tokens':>9}{'seconds':>9}{'tok/s':>10}{'step s':>9}"
              f"{'peak mem':>11}{'loss':>8}  settings")
    print("\n" + header + "\n" + "-" * len(header))
    for r in runs:
        label = f"{r['side']} {r['name']}"
        if not r["ok"]:
            print(f"{label:<14}{r['repeat']:>4}  FAILED at {r.get('failed_at')}: {r['error']}")
            continue
        c = r["config"]
        precision = "bf16" if c["bf16"] else "fp16" if c["fp16"] else "fp32"
        settings = (f"{precision}, ckpt {'on' if c['gradient_checkpointing'] else 'off'}, "
                    f"packing {'on' if c['packing'] else 'off'}, liger {'on' if c.get('use_liger_kernel') else 'off'}, "
                    f"lr {c['learning_rate']:g}")
        loss = f"{r['final_loss']:.3f}" if r["final_loss"] is not None else "-"
        print(f"{label:<14}{r['repeat']:>4}{r['timed_steps']:>7}{r['timed_tokens']:>9}{r['timed_seconds']:>9.2f}"
              f"{r['tokens_per_s']:>10.0f}{r['median_step_s']:>9.3f}{fmt_bytes(r['peak_memory_bytes']):>11}"
              f"{loss:>8}  {settings}")
    print()
    for side in SIDES:
        s = summary[side]
        median = f"{s['tokens_per_s_median']:.0f} tok/s (median)" if s["tokens_per_s_median"] else "no successful run"
        print(f"{side} {s['name']:<12} {s['ok']}/{s['runs']} ok, {median}"
              + (f"; failed: {s['errors'][0]}" if s["errors"] else ""))
    if summary["ratio_A_over_B"]:
        print(f"ratio A/B (tokens per second): per pair {summary['ratio_A_over_B']}, "
              f"of medians {summary['ratio_A_over_B_of_medians']}")
        for pair in summary["loss_at_equal_tokens"]:
            print(f"B's last loss {pair['loss_B']:.4f} at {pair['tokens']} tokens, "
                  f"{pair['B_seconds_to_its_last_loss']} s after warm-up; A's loss at those tokens "
                  f"{pair['loss_A_at_B_tokens']}; A reached B's loss at step "
                  f"{pair['A_step_reaching_it']}, {pair['A_seconds_to_reach_it']} s: "
                  f"speed-up at equal loss {pair['speedup_at_equal_loss']}")
    else:
        print(f"ratio A/B: none; {summary.get('no_ratio_because')}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny", help="model shape (tiny: CPU; 0.5b: GPU)")
    parser.add_argument("--steps", type=int, default=20, help="timed optimiser steps per run (after the warm-up)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of each run")
    parser.add_argument("--batch-size", type=int, default=4, help="examples per step (both sides)")
    parser.add_argument("--max-length", type=int, default=1024, help="tokens per example (both sides)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per side, interleaved A B A B")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON path (default bench/results/train_<device>_<size>.json)")
    parser.add_argument("--verbose", action="store_true", help="print a failed worker's log")
    parser.add_argument("--worker", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "batch_size", "max_length", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    return args


def main(argv: list[str] | None = None) -> None:
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(f"bench_train: missing Python packages: {', '.join(missing)} (install their wheels first)")
    args = parse_args(argv)
    if args.worker:
        write_json(args.result, run_side(args.worker, args))
        return
    print(f"size {args.size}, batch {args.batch_size}, max_length {args.max_length}, {args.warmup} + {args.steps} "
          f"steps, {args.repeats} repeats, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '')}", flush=True)
    load_before = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        for repeat in range(1, args.repeats + 1):
            for side in SIDES:
                record = launch(side, repeat, args, Path(tmp))
                runs.append(record)
                if len(runs) == 1 and "environment" in record:
                    env = record["environment"]
                    print(f"{env['device_name']} ({env['device']}), torch threads {env['torch_threads']}, "
                          f"{env['versions']}", flush=True)
                if len(runs) == 1 and "parameters" in record:
                    print(f"model: {record['parameters']:,} parameters, {record.get('trainable_parameters', 0):,} "
                          f"trainable (LoRA); data: {record['data']}", flush=True)
                status = f"{record['tokens_per_s']:.0f} tok/s" if record["ok"] else f"failed: {record['error']}"
                print(f"  run {repeat} {side} ({SIDES[side]}): {status} [{record['process_seconds']:.0f} s]",
                      flush=True)
    summary = summarise(runs)
    print_table(runs, summary)
    first = next((r for r in runs if "parameters" in r), {})
    env = next((r["environment"] for r in runs if "environment" in r), {"device": "unknown"})
    out = args.out or RESULTS_DIR / f"train_{env['device']}_{args.size}.json"
    write_json(out, {"what": "training tokens per second, perfforge trainer_args (A) vs trl SFTConfig defaults (B)",
                     "environment": env, "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
                     "load_average_before": [round(x, 2) for x in load_before],
                     "load_average_after": [round(x, 2) for x in os.getloadavg()],
                     "settings": {"size": args.size, "shape": SIZES[args.size], "steps": args.steps,
                                  "warmup": args.warmup, "batch_size": args.batch_size,
                                  "max_length": args.max_length, "repeats": args.repeats, "order": "A B A B"},
                     "parameters": first.get("parameters"), "trainable_parameters": first.get("trainable_parameters"),
                     "data": first.get("data"), "summary": summary, "runs": runs})
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main()
