"""What the `perfforge synth` commands and `perfforge import kernelbench` do with their configs, and print."""

from __future__ import annotations

import sys

from perfforge.errors import ConfigError
from synth.check import InstanceCheck
from synth.config import (
    BaselineKernelbenchConfig,
    ImportKernelbenchConfig,
    SynthCommitsConfig,
    SynthListConfig,
    SynthPatternsConfig,
    SynthRecipeConfig,
)


def run_synth_list(config: SynthListConfig) -> int:
    from synth.patterns import patterns

    for p in patterns(config.target):
        print(f"{p.id:<36} {p.bottleneck:<30} {p.summary}")
    return 0


def run_synth_patterns(config: SynthPatternsConfig) -> int:
    from synth.catalogue import run_catalogue

    def report(check: InstanceCheck) -> None:
        outcome = "kept" if check.kept else f"dropped: {check.reason}"
        speed = f" {check.speedup:.2f}x" if check.speedup else ""
        top = f" top diagnosis {check.top_diagnosis}" if check.diagnoses else ""
        print(f"{check.pattern} s{check.seed}:{speed}{top} {outcome}", file=sys.stderr)

    result = run_catalogue(config, on_check=report)
    if result.interrupted:
        print(f"interrupted: finished checks are kept in {config.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    total = result.stats["total"]
    print(f"{total['generated']} instances generated ({total['duplicates']} duplicate seeds skipped), "
          f"{total['kept']} kept; planted bottleneck top diagnosis in {total['top_diagnosis_correct']} of "
          f"{total['profiled']} profiled")
    print(result.paths["table"].read_text(encoding="utf-8"), end="")
    for name, path in result.paths.items():
        print(f"{name:>8}: {path}")
    return 0


def run_synth_commits(config: SynthCommitsConfig) -> int:
    from synth.from_commits import PairResult, run_commits

    def report(result: PairResult) -> None:
        check = result.check
        speed = f" {check.speedup:.2f}x" if result.kept and check and check.speedup else ""
        outcome = "kept" if result.kept else f"{result.outcome}: {result.reason}"
        print(f"{result.id}: {len(result.attempts)} attempt(s){speed} {outcome}", file=sys.stderr)

    result = run_commits(config, on_result=report)
    if result.interrupted:
        print(f"interrupted: finished pairs are kept in {config.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    stats = result.stats
    print(f"{stats['selected']} performance pairs chosen, {stats['judged']} judged, {stats['kept']} kept; "
          f"outcomes: " + ", ".join(f"{k} {v}" for k, v in stats["outcomes"].items()))
    for name, path in result.paths.items():
        print(f"{name:>8}: {path}")
    return 0


def run_synth_recipe(config: SynthRecipeConfig) -> int:
    from synth.recipe import run_recipe

    result = run_recipe(config)
    print(result.paths["table"].read_text(encoding="utf-8"), end="")
    missing = [row["kernel"] for row in result.comparison if not (row["found_before"] and row["found_after"])]
    if missing:
        print(f"not found at both sides (raise --top): {', '.join(missing)}", file=sys.stderr)
    print(f"{len(result.records)} records")
    for name, path in result.paths.items():
        print(f"{name:>10}: {path}")
    return 0


def run_import_kernelbench(config: ImportKernelbenchConfig) -> int:
    from synth.kernelbench import find_problems, import_problems

    assert config.checkout is not None  # validate() said so
    problems = find_problems(config.checkout, config.level, config.problems)
    if not problems:
        raise ConfigError(f"{config.checkout}: no problem files (N_Name.py) in level(s) "
                          f"{', '.join(map(str, config.level))}" + (" with those numbers" if config.problems else ""))
    result = import_problems(problems, config.out, log=lambda line: print(line, file=sys.stderr))
    print(f"imported {len(result.written)} of {len(problems)} problems into {config.out}"
          + (f"; {len(result.skipped)} skipped (reasons above)" if result.skipped else ""))
    return 0


def run_baseline_kernelbench(config: BaselineKernelbenchConfig) -> int:
    from perfforge.task import find_tasks
    from synth.kernelbench_baseline import measure, read_baseline, write_baseline

    assert config.tasks is not None  # validate() said so
    task_dirs = [task.root for task in find_tasks(config.tasks) if task.target == "torch"]
    if not task_dirs:
        raise ConfigError(f"{config.tasks}: no torch tasks; import them with `perfforge import kernelbench`")
    done = read_baseline(config.out) if config.resume else {}
    result = measure(task_dirs, mode=config.mode, trials=config.trials, warmup=config.warmup, jobs=config.jobs,
                     done=done, on_result=lambda partial: write_baseline(config.out, partial),
                     log=lambda line: print(line, file=sys.stderr))
    write_baseline(config.out, result)
    measured = sum(len(level) for level in result.timings.values())
    print(f"{config.mode} baseline of {measured} of {len(task_dirs)} problems: {config.out}"
          + (f"; {len(result.failed)} failed (reasons above)" if result.failed else ""))
    return 0
