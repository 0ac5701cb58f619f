"""What `perfforge optimize` and `perfforge serve` do with their configs, and print."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from inference.config import OptimizeConfig, ServeConfig
from perfforge.errors import PerfforgeError
from perfforge.executor import ExecutorConfig, ExecutorKind, open_executor
from perfforge.io import read_json, write_json
from perfforge.records import Profile
from perfforge.task import Task, find_tasks, load_task

RUN_FILE = "run.json"  # which task an output directory belongs to (a resume must not mix two tasks' attempts)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_optimize(config: OptimizeConfig) -> int:
    from inference.backends import make_backend
    from inference.run import run_loop
    from profiling.bundle import RUN_COMMAND, BundleJudge
    from profiling.judge import LocalJudge

    task = load_task(config.task) if config.task is not None else select_task(config)
    _claim_out_dir(config.out, task)
    if config.apply:
        from inference.apply import repository_of

        repository_of(task)  # fail now, not after every round has run
    stack = contextlib.ExitStack()
    executor_config = ExecutorConfig.of(config.executor, config.jobs, config.cluster)
    if config.bundle:
        judge = BundleJudge(config.profile_candidates)
    elif executor_config.kind is ExecutorKind.DASK:
        from profiling.executor_judge import ExecutorJudge

        judge = ExecutorJudge(stack.enter_context(open_executor(executor_config, log)),
                              profile_improved=config.profile_candidates, log=log)
    else:
        judge = LocalJudge(config.out / "work", profile_improved=config.profile_candidates, log=log)

    def backend():  # noqa: ANN202 (made only when a round has to be asked)
        if config.url is None:  # an engine in this process: tens of seconds before the model line
            log(f"loading {config.model} into this process ...")
        made = make_backend(config.backend, config.model, url=config.url, api_key=config.api_key,
                            timeout_s=config.request_timeout_s, verbose=config.verbose)
        log(f"model: {made.describe()}")
        return made

    try:
        with stack:
            run = run_loop(task, config, backend, judge, log)
    except KeyboardInterrupt:
        log(f"interrupted: finished attempts are kept in {config.out}; run the same command again to resume")
        return 130
    if run.pending_bundle is not None:
        print(f"bundle written: {run.pending_bundle}\nrun it where the hardware is, with perfforge installed or "
              f"from a perfforge checkout:\n    {RUN_COMMAND} {run.pending_bundle}\nthen copy the directory back and "
              "run this command again to go on")
        return 0
    print(run.headline())
    if config.apply and run.state.best is not None:
        _apply(run.state)
    for name, path in run.paths.items():
        print(f"{name:>12}: {path}")
    return 0


def _apply(state) -> None:  # noqa: ANN001 (a LoopState; imported lazily with the loop)
    from inference.apply import apply_to_branch
    from inference.report import headline

    best = state.best
    message = (f"perfforge: optimise {state.task.kernel} ({best.speedup:.2f}x)\n\n{headline(state)}\n\n"
               f"Hypothesis: {best.hypothesis or '(none stated)'}\nVerdict: {best.reason.splitlines()[0]}\n")
    root, branch = apply_to_branch(state.task, best.code, message=message, branch=state.config.branch)
    print(f"applied: branch {branch} in {root}")


def _claim_out_dir(out: Path, task: Task) -> None:
    path = out / RUN_FILE
    if path.is_file():
        owner = read_json(path).get("task_root", "")
        if owner != str(task.root):
            raise PerfforgeError(f"{out} holds a run of the task at {owner}; give another --out for {task.root}")
        return
    write_json(path, {"task": task.name, "task_root": str(task.root)})


def select_task(config: OptimizeConfig) -> Task:
    """Application mode (as IntelliPerf does): profile the command, rank its kernels by time, and take the first
    with a targeted bottleneck (--formula, or any diagnosis) that has a task in --tasks."""
    from profiling.application import profile_application

    tasks = _tasks_by_kernel(config.tasks)
    profiles = profile_application(config.command, config.workdir, target=config.target, top=config.top,
                                   work_dir=config.out / "application")
    for rank, profile in enumerate(profiles, start=1):
        names = [d.name for d in profile.diagnoses]
        targeted = config.formula in names if config.formula else bool(names)
        task = _task_for(profile, tasks)
        cost = f"{profile.timing.median_ms:.4g} ms" if profile.timing.trials else profile.timing.method
        log(f"kernel {rank}: {profile.kernel} ({cost}): diagnoses "
            f"{', '.join(names) or 'none'}; {'task ' + task.name if task else 'no task'}")
        if targeted and task is not None:
            log(f"optimising {profile.kernel} with task {task.root}")
            return task
    wanted = f"diagnosed with {config.formula}" if config.formula else "with a diagnosed bottleneck"
    raise PerfforgeError(f"none of the {len(profiles)} costliest kernels is {wanted} and has a task in "
                         f"{config.tasks}; write a task for the kernel (docs/tasks.md) or change --formula")


def _tasks_by_kernel(directory: Path | None) -> dict[str, Task]:
    if directory is None:
        raise PerfforgeError("--command needs --tasks: a directory of task directories (docs/tasks.md)")
    return {task.kernel: task for task in find_tasks(directory)}


def _task_for(profile: Profile, tasks: dict[str, Task]) -> Task | None:
    """The task whose kernel the profiled kernel is (a CUDA name may carry its parameter list)."""
    name = profile.kernel
    return tasks.get(name) or next((t for k, t in tasks.items() if name.startswith(k + "(")), None)


def run_serve(config: ServeConfig) -> int:
    from inference.serve import run_serve as serve

    return serve(config)
