"""Optimisation-loop speed on this machine: how fast candidates come from a served model, and how fast they are judged.

(a) Generation. `inference.serve.Server` starts vLLM's OpenAI server on the model (default: the embedded
    SmolLM2-135M-Instruct), and the loop's prompt for the example task examples/tasks/cpu/matmul_loop_order (its
    code, no profile: perfforge.prompt.build_messages) is answered K times two ways: one request with n=K (what
    `perfforge optimize` sends: the server batches the K samples) and K requests with n=1, one after the other,
    with seeds S, S+1, ..., S+K-1. vLLM seeds the i-th sample of an n-sample request with S+i, so both sides draw
    the same K samples and generate the same tokens: only the batching differs. Same max_tokens, temperature 0.8.
    Throughput is the completion tokens the server reports (usage.completion_tokens) over the wall time of the K
    candidates; the ratio is batched/sequential.
    Each side runs twice, interleaved (A B A B) after one untimed warm-up request, and both runs are reported.
(b) Judging. `profiling.judge.judge_candidates` (profiling.validate: build, check against the original on
    random inputs, time with trials) judges four candidate files for the same task: the task's own kernel.c
    (no_change), a loop interchange to i-k-j (improved), a file that does not compile (build_failed) and one
    that computes the wrong product (incorrect). Each is timed alone; candidates per minute are given overall and
    per status (a failed build costs a compile, a correct candidate the full timing protocol).

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_optimize.py [--model default] [--candidates 8] [--max-tokens 256]

Results are printed as a table and written to bench/results/optimize.json. The machine's load average is
recorded beside them: on 2 cores, any other busy process changes every figure here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.config import ServeConfig  # noqa: E402
from inference.serve import Server  # noqa: E402
from perfforge import prompt  # noqa: E402
from perfforge.io import write_json  # noqa: E402
from perfforge.task import Task, load_task  # noqa: E402
from profiling.judge import judge_candidates  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "examples" / "tasks" / "cpu" / "matmul_loop_order"
RESULTS = ROOT / "bench" / "results" / "optimize.json"
TEMPERATURE = 0.8
REQUEST_TIMEOUT_S = 1800.0

INTERCHANGED_C = """\
/* C = A * B in i-k-j order: the inner loop walks a row of B and a row of C. */
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) c[i * n + j] = 0.0f;
        for (int k = 0; k < n; k++) {
            const float aik = a[i * n + k];
            for (int j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
        }
    }
}
"""
BUILD_FAILURE_C = """\
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            c[i * n + j] = sum_of(a, b, i, j, n)   /* undeclared, and no semicolon */
}
"""
WRONG_OUTPUT_C = """\
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int k = 0; k + 1 < n; k++) sum += a[i * n + k] * b[k * n + j];  /* drops the last term */
            c[i * n + j] = sum;
        }
    }
}
"""


@dataclass
class GenerationRun:
    side: str  # "batched" (one request, n=K) or "sequential" (K requests, n=1)
    run: int
    candidates: int
    seconds: float
    completion_tokens: int
    prompt_tokens: int  # of one request
    finished_by_length: int  # candidates cut by max_tokens

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def chat(url: str, model: str, messages: list[dict[str, str]], *, n: int, max_tokens: int,
         seed: int) -> dict[str, Any]:
    """One chat completion request; the server's JSON answer (usage holds the exact token counts)."""
    body = {"model": model, "messages": messages, "n": n, "max_tokens": max_tokens, "temperature": TEMPERATURE,
            "seed": seed}
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as reply:
        return json.loads(reply.read().decode())


def task_messages(task: Task) -> list[dict[str, str]]:
    code = prompt.CodeUnderTest(target=task.target, language=task.language, file_name=task.source,
                                kernel=task.kernel, code=task.source_path.read_text(encoding="utf-8"))
    return prompt.build_messages(code, None)


def run_side(side: str, run: int, url: str, model: str, messages: list[dict[str, str]], k: int, max_tokens: int,
             ) -> GenerationRun:
    seed = 1000 * run
    started = time.perf_counter()
    if side == "batched":
        answers = [chat(url, model, messages, n=k, max_tokens=max_tokens, seed=seed)]
    else:
        answers = [chat(url, model, messages, n=1, max_tokens=max_tokens, seed=seed + i) for i in range(k)]
    seconds = time.perf_counter() - started
    choices = [c for a in answers for c in a["choices"]]
    if len(choices) != k:
        raise RuntimeError(f"{side}: asked for {k} candidates, got {len(choices)}")
    return GenerationRun(side=side, run=run, candidates=k, seconds=seconds,
                         completion_tokens=sum(int(a["usage"]["completion_tokens"]) for a in answers),
                         prompt_tokens=int(answers[0]["usage"]["prompt_tokens"]),
                         finished_by_length=sum(c.get("finish_reason") == "length" for c in choices))


def bench_generation(args: argparse.Namespace, task: Task, log_dir: Path) -> dict[str, Any]:
    config = ServeConfig(model=args.model, port=free_port(), max_model_len=args.max_model_len, dtype="auto",
                         kv_cache_gib=args.kv_cache_gib)
    messages = task_messages(task)
    server = Server(config, log_dir / "vllm.log")
    print(f"starting vLLM for {server.model_dir} as {server.name!r} ...", flush=True)
    started = time.perf_counter()
    with server:
        startup_s = time.perf_counter() - started
        print(f"server ready in {startup_s:.1f} s; warm-up request ...", flush=True)
        chat(server.url, server.name, messages, n=1, max_tokens=8, seed=1)
        runs = []
        for run in (1, 2):
            for side in ("batched", "sequential"):
                result = run_side(side, run, server.url, server.name, messages, args.candidates, args.max_tokens)
                print(f"  {side:<10} run {run}: {result.completion_tokens:>5} tokens in {result.seconds:7.1f} s = "
                      f"{result.tokens_per_s:6.1f} tok/s ({result.finished_by_length}/{result.candidates} cut by "
                      "max_tokens)", flush=True)
                runs.append(result)
    by_run = {(r.side, r.run): r for r in runs}
    ratios = [by_run["batched", run].tokens_per_s / by_run["sequential", run].tokens_per_s for run in (1, 2)]
    return {"model": server.name, "model_dir": str(server.model_dir), "server_startup_s": round(startup_s, 1),
            "prompt_tokens": runs[0].prompt_tokens, "candidates": args.candidates, "max_tokens": args.max_tokens,
            "temperature": TEMPERATURE,
            "runs": [{**asdict(r), "seconds": round(r.seconds, 3), "tokens_per_s": round(r.tokens_per_s, 2)}
                     for r in runs],
            "ratio_batched_over_sequential": [round(x, 2) for x in ratios]}


def bench_judging(task: Task, work: Path) -> dict[str, Any]:
    files = {"original": task.source_path.read_text(encoding="utf-8"), "interchange_ikj": INTERCHANGED_C,
             "build_failure": BUILD_FAILURE_C, "wrong_output": WRONG_OUTPUT_C}
    rows = []
    for name, text in files.items():
        path = work / "candidates" / name / task.source_path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        started = time.perf_counter()
        verdict = judge_candidates(task, [(name, path)], work / "judge", profile_improved=False,
                                   log=lambda line: print(f"  {line}", flush=True))[name]["verdict"]
        seconds = time.perf_counter() - started
        rows.append({"candidate": name, "status": verdict["status"], "seconds": round(seconds, 3),
                     "speedup": verdict.get("speedup")})
    total = sum(r["seconds"] for r in rows)
    per_status: dict[str, dict[str, float]] = {}
    for row in rows:
        entry = per_status.setdefault(row["status"], {"candidates": 0, "seconds": 0.0})
        entry["candidates"] += 1
        entry["seconds"] += row["seconds"]
    for entry in per_status.values():
        entry["candidates_per_minute"] = round(60.0 * entry["candidates"] / entry["seconds"], 1)
        entry["seconds"] = round(entry["seconds"], 3)
    return {"candidates": rows, "total_seconds": round(total, 3),
            "candidates_per_minute": round(60.0 * len(rows) / total, 1), "per_status": per_status}


def print_tables(generation: dict[str, Any] | None, judging: dict[str, Any]) -> None:
    if generation is not None:
        print(f"\n(a) generation: {generation['model']}, K={generation['candidates']} candidates, max_tokens "
              f"{generation['max_tokens']}, prompt {generation['prompt_tokens']} tokens, temperature "
              f"{generation['temperature']}")
        print(f"{'side':<11} {'run':>3} {'tokens':>7} {'seconds':>8} {'tok/s':>7} {'cand./min':>9}")
        for r in generation["runs"]:
            print(f"{r['side']:<11} {r['run']:>3} {r['completion_tokens']:>7} {r['seconds']:>8.1f} "
                  f"{r['tokens_per_s']:>7.1f} {60 * r['candidates'] / r['seconds']:>9.1f}")
        print("batched/sequential tok/s: " + ", ".join(f"{x:.2f}x" for x in generation["ratio_batched_over_sequential"])
              + " (run 1, run 2)")
    print(f"\n(b) judging {TASK_DIR.relative_to(ROOT)} (profile_improved=False)")
    print(f"{'candidate':<16} {'status':<13} {'seconds':>8} {'speedup':>8}")
    for r in judging["candidates"]:
        speed = f"{r['speedup']:.2f}x" if r["speedup"] is not None else ""
        print(f"{r['candidate']:<16} {r['status']:<13} {r['seconds']:>8.2f} {speed:>8}")
    print(f"overall: {judging['candidates_per_minute']:.1f} candidates/min ({len(judging['candidates'])} in "
          f"{judging['total_seconds']:.1f} s); per status: " + ", ".join(
              f"{status} {entry['candidates_per_minute']:.1f}/min" for status, entry in judging["per_status"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="a local model directory, or 'default' (SmolLM2-135M)")
    parser.add_argument("--candidates", type=int, default=8, help="K: candidates per round")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--kv-cache-gib", type=int, default=1)
    parser.add_argument("--threads-bind", default=None,
                        help="VLLM_CPU_OMP_THREADS_BIND for the server (e.g. nobind where another server holds the "
                             "core vLLM picks); default: vLLM's own binding, as perfforge serve runs")
    parser.add_argument("--skip-generation", action="store_true", help="only (b): no server")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    task = load_task(TASK_DIR)
    if args.threads_bind:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = args.threads_bind  # the server's environment is this one's
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as tmp:
        generation = None if args.skip_generation else bench_generation(args, task, Path(tmp))
        print("judging candidates ...", flush=True)
        judging = bench_judging(task, Path(tmp))
    print_tables(generation, judging)
    write_json(args.out, {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
                          "load_average_before": [round(x, 2) for x in load_before],
                          "load_average_after": [round(x, 2) for x in os.getloadavg()],
                          "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
                          "vllm_threads_bind": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto"),
                          "generation": generation, "judging": judging, "task": str(TASK_DIR.relative_to(ROOT))})
    print(f"\nresults: {args.out}")


if __name__ == "__main__":
    main()
