"""Scaling with the Dask executor (perfforge/executor.py), side by side in one run.

    # verdicts on a machine with two GPUs: one GPU worker against two, the same items (issue 23's eval target)
    python3 bench/bench_scale.py verdicts examples/tasks/cuda/*
    # mining: a local Dask cluster of N workers against one process, the same repositories
    python3 bench/bench_scale.py mining --repo /work/.mirror/karpathy+llm.c/repo --repo ... --workers 2 4

`verdicts` judges each task's reference (its known-good fast version) once per layout through
profiling.executor_judge.judge_item, the item `perfforge eval --executor dask` fans out; it prints the wall time
of each layout, their ratio and whether every status agrees. `mining` runs `perfforge mine` on the repositories
with one local process and with each worker count, prints the ratios and whether the datasets are identical; an
untimed one-process run first reads the repositories into the page cache, so the first timed layout is not the only
one to pay for a cold disk. Each Dask layout's time includes starting and stopping its local cluster (about 1.4 s on
the 2-core VM), as a user's `perfforge mine --executor dask` pays it. Results go to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfforge.executor import ExecutorConfig, ExecutorKind, open_executor  # noqa: E402


def verdicts(task_dirs: list[str]) -> dict:
    from perfforge.task import load_task
    from profiling.executor_judge import JudgeItem, judge_item

    items = []
    for directory in task_dirs:
        task = load_task(Path(directory))
        files = {p.name: p.read_bytes() for p in sorted(task.root.iterdir()) if p.is_file()}
        items.append(JudgeItem(task.root.name, files, task.name, task.reference_path.read_bytes(), False, False))

    def run(gpus: str) -> tuple[float, dict]:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus  # the local cluster starts one GPU worker per listed GPU
        with open_executor(ExecutorConfig(kind=ExecutorKind.DASK, jobs=1), print) as executor:
            started, results = time.monotonic(), {}
            for done in executor.map_unordered(judge_item, items, gpu=True):
                verdict = done.result["judgement"]["verdict"] if isinstance(done.result, dict) else {
                    "status": f"failed: {done.result}"}
                results[items[done.index].name] = (verdict["status"], verdict.get("speedup"), done.worker)
                print(f"  {items[done.index].name}: {verdict['status']} on {done.worker} at "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            return time.monotonic() - started, results

    two_s, two = run("0,1")
    one_s, one = run("0")
    return {"items": len(items), "one_gpu_s": round(one_s, 1), "two_gpus_s": round(two_s, 1),
            "ratio": round(one_s / two_s, 3), "same_statuses": {k: v[0] for k, v in one.items()} ==
            {k: v[0] for k, v in two.items()}, "one": one, "two": two}


def mining(repos: list[str], workers: list[int]) -> dict:
    import pyarrow.parquet as pq

    from mining.config import MineConfig
    from mining.pipeline import mine

    def run(executor: str, jobs: int, out: Path) -> float:
        started = time.monotonic()
        mine(MineConfig(sources=repos, out=out, jobs=jobs, executor=executor, progress=False))
        return time.monotonic() - started

    def rows(out: Path) -> list:
        return sorted(map(repr, pq.read_table(out / "pairs.parquet").to_pylist()))

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        run("local", 1, base / "warm-up")  # untimed: the repositories into the page cache, for every layout alike
        one_s = run("local", 1, base / "one")
        result: dict = {"repos": repos, "one_process_s": round(one_s, 1), "workers": {}}
        for count in workers:
            seconds = run("dask", count, base / f"dask{count}")
            result["workers"][count] = {"seconds": round(seconds, 1), "ratio": round(one_s / seconds, 3),
                                        "identical": rows(base / f"dask{count}") == rows(base / "one")}
            print(f"  {count} worker(s): {seconds:.1f} s, {one_s / seconds:.2f}x one process", flush=True)
    result["cpus"] = os.cpu_count()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    v = sub.add_parser("verdicts")
    v.add_argument("tasks", nargs="+")
    m = sub.add_parser("mining")
    m.add_argument("--repo", action="append", required=True)
    m.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "bench_scale.json")
    args = parser.parse_args()
    result = verdicts(args.tasks) if args.what == "verdicts" else mining(args.repo, args.workers)
    args.out.write_text(json.dumps(result, indent=1))
    print("SUMMARY", {k: v for k, v in result.items() if k not in ("one", "two")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
