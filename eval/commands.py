"""What `perfforge eval` does with its config, and prints."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from eval.config import EvalConfig
from perfforge.executor import ExecutorKind, open_executor
from perfforge.io import write_text

PENDING_FILE = "pending.txt"  # the bundles a --bundle evaluation waits for, one directory per line
LOCK_FILE = ".lock"  # one evaluation at a time per output directory: two would overwrite each other's table


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_eval(config: EvalConfig) -> int:
    from eval.configurations import Endpoints, parse, remembered_patterns, trained_patterns
    from eval.runner import Evaluation
    from eval.suites import collect
    from inference.backends import GATHER_S

    config.validate()
    baselines = None
    if config.baseline_eager is not None and config.baseline_compile is not None:
        from eval.baselines import read_baselines

        baselines = read_baselines(config.baseline_eager, config.baseline_compile)  # a bad file fails before any work
    lock = _lock(config.out)  # noqa: F841 (held until this process exits)
    configurations = parse(config.models)
    trained = remembered_patterns(config.out, trained_patterns(configurations))
    tasks = collect(config.suites, config.out, target=config.target, patterns=config.patterns,
                    instances=config.instances, seed_base=config.seed_base, trained=trained,
                    kernelbench_problems=config.kernelbench_problems)
    names = ["human"] * config.human + [c.name for c in configurations]
    variant_count = len(config.source_variants()) * len(config.candidates)
    log(f"{len(tasks)} task(s); configurations: {', '.join(names)}; {variant_count} variant(s) x "
        f"{len(config.seeds)} seed(s)")
    executor_config = config.executor_config()
    with contextlib.ExitStack() as stack:
        executor = (stack.enter_context(open_executor(executor_config, log))
                    if executor_config.kind is not ExecutorKind.LOCAL else None)
        endpoints = stack.enter_context(Endpoints(configurations, base_model=config.base_model, url=config.url,
                                                  timeout_s=config.request_timeout_s, log_dir=config.out / "serve",
                                                  servers=config.servers, backend=config.backend, log=log,
                                                  gather_s=GATHER_S if config.parallel_runs > 1 else 0.0))
        evaluation = Evaluation(config, tasks, configurations, endpoints, log, executor=executor)
        try:
            progress = evaluation.run()
        except KeyboardInterrupt:
            log(f"interrupted: finished rows are kept in {evaluation.table.path}; run the same command to resume")
            return 130
    rows = evaluation.table.all()
    pending_path = config.out / PENDING_FILE
    if progress.pending:
        write_text(pending_path, "".join(f"{path.relative_to(config.out)}\n" for path in progress.pending))
        relative = " ".join(os.path.relpath(p) for p in progress.pending)
        print(f"{len(progress.pending)} bundle(s) wait for the hardware ({pending_path}, relative to "
              f"{config.out}); run them there from a perfforge checkout:\n    python3 -m profiling.bundle "
              f"{relative}\n(or scripts/eval_gpu.sh {config.out} BUDGET_S OUT_DIR), then copy {config.out} back and "
              "run this command again to go on")
    else:
        pending_path.unlink(missing_ok=True)
    print(f"{progress.added} row(s) added; {len(rows)} in {evaluation.table.path}")
    from eval.kernelbench_export import write_answers, write_eval_results

    # KernelBench's own layout: results for its analysis script, winners as its samples
    for path in [*write_eval_results(config.out, rows), *write_answers(config.out, rows)]:
        print(f"{'kernelbench':>12}: {path}")
    if config.report and rows:
        from eval.report import write_report

        for name, path in write_report(config.out, rows, title=config.title, baselines=baselines).items():
            print(f"{name:>12}: {path}")
    return 0


def pending_bundles(out: Path) -> list[Path]:
    """The bundles the last --bundle pass of the evaluation in `out` left to run."""
    path = out / PENDING_FILE
    return [out / line for line in path.read_text().splitlines() if line] if path.is_file() else []


def _lock(out: Path) -> object:
    """An exclusive lock on OUT, or one error line when another evaluation holds it."""
    import fcntl

    from perfforge.errors import PerfforgeError

    out.mkdir(parents=True, exist_ok=True)
    handle = (out / LOCK_FILE).open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise PerfforgeError(f"another perfforge eval is running on {out}; wait for it or give another --out") from None
    return handle
