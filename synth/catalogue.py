"""`perfforge synth patterns`: generate catalogue instances, check each through the pipeline, keep the ones that
pass, and write them as dataset records with the per-pattern figures.

Layout of the output directory:

    tasks/<pattern>/s<seed>/   the generated task (runnable with perfforge validate / profile)
    checks/<task>.json         the pipeline's judgement of the instance (written when its check ends)
    pairs.parquet              the kept instances as PairRecords (found_by synthetic:pattern)
    stats.json, catalogue.md   per pattern: generated, duplicates, kept, diagnosis accuracy, speedups

Resumable: an instance whose check file exists is not checked again, so an interrupted run continues where it
stopped; a crash inside one instance's check is recorded as that instance's reason and the run goes on.
"""

from __future__ import annotations

import hashlib
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.executor import Failure, WorkerTally, open_executor
from perfforge.io import read_json, write_json, write_text
from perfforge.naming import STATS_FILE
from perfforge.targets import target_spec
from synth.check import InstanceCheck, check_task, prebuild, speedup_range
from synth.config import SynthPatternsConfig
from synth.instance import Instance, task_dir, write_task
from synth.patterns import Pattern, generate, patterns


@dataclass
class CatalogueResult:
    checks: list[InstanceCheck]
    stats: dict[str, Any]
    paths: dict[str, Path] = field(default_factory=dict)
    interrupted: bool = False


def check_path(out: Path, instance_name: str, pattern_id: str) -> Path:
    return out / "checks" / f"{pattern_id.replace('/', '__')}__{instance_name}.json"


def instance_digest(instance: Instance) -> str:
    """Identity of an instance's code and shapes, blind to its name and seed (two seeds can draw the same
    choices; the second is a duplicate, not a new task)."""
    parts = [instance.slow, instance.fast, instance.harness, repr(instance.configs), repr(instance.outputs)]
    payload = "\0".join(parts)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def check_instance_dir(directory: Path, work_dir: Path, timing: bool) -> dict[str, Any]:
    """Check the task in `directory` (one process's job); the judgement as a dict, or the error it ended with."""
    from perfforge.task import load_task

    task = load_task(directory)
    try:
        return check_task(task, work_dir, timing=timing).to_dict()
    except Exception as exc:  # noqa: BLE001 (one instance's failure must not end the run; its reason is kept)
        return _failed_check(directory, f"check crashed: {type(exc).__name__}: {exc}", traceback.format_exc(limit=5))


def _failed_check(directory: Path, reason: str, detail: str = "") -> dict[str, Any]:
    from perfforge.task import load_task

    task = load_task(directory)
    failed = InstanceCheck(task=task.name, pattern=task.pattern or "", seed=task.pattern_seed or 0,
                           target=task.target, bottleneck=task.bottleneck or "", reason=reason)
    failed.verdict_reason = detail
    return failed.to_dict()


def run_catalogue(config: SynthPatternsConfig, *, on_check: Callable[[InstanceCheck], None] | None = None,
                  records: bool = True) -> CatalogueResult:
    """Generate, check and keep; then stats, the Markdown table and (with `records`) pairs.parquet."""
    config.validate()
    chosen = patterns(config.target, config.patterns)
    if not chosen:
        raise PerfforgeError(f"no patterns for target {config.target!r} and ids {config.patterns or 'any'}")
    todo, done = _materialise(config, chosen)
    if not config.check:
        todo = []
    interrupted = False
    try:
        for check in _run_checks(config, todo):
            done.append(check)
            if on_check:
                on_check(check)
    except KeyboardInterrupt:
        interrupted = True
    result = CatalogueResult(checks=done, stats=catalogue_stats(done, chosen), interrupted=interrupted)
    result.paths["stats"] = config.out / STATS_FILE
    write_json(result.paths["stats"], result.stats)
    result.paths["table"] = config.out / "catalogue.md"
    write_text(result.paths["table"], catalogue_table(result.stats))
    if records and not interrupted:
        from synth.records import write_pair_records

        result.paths["pairs"] = write_pair_records(config.out, [c for c in done if c.kept])
    return result


def _materialise(config: SynthPatternsConfig, chosen: list[Pattern]
                 ) -> tuple[list[tuple[Path, Path]], list[InstanceCheck]]:
    """Write every planned instance's task; (task dir, check path) pairs still to check, and the checks already
    done (earlier runs, duplicates, generation failures)."""
    todo: list[tuple[Path, Path]] = []
    done: list[InstanceCheck] = []
    seen: dict[str, str] = {}
    for chosen_pattern in chosen:
        for seed in range(config.seed, config.seed + config.instances):
            try:
                instance = generate(chosen_pattern.id, seed)
            except Exception as exc:  # noqa: BLE001 (a generator bug drops its instance, not the run)
                done.append(InstanceCheck(task=f"{chosen_pattern.name}_s{seed}", pattern=chosen_pattern.id, seed=seed,
                                          target=chosen_pattern.target, bottleneck=chosen_pattern.bottleneck,
                                          reason=f"generation failed: {type(exc).__name__}: {exc}"))
                continue
            path = check_path(config.out, instance.name, instance.pattern)
            digest = instance_digest(instance)
            if digest in seen:
                done.append(InstanceCheck(task=instance.name, pattern=instance.pattern, seed=seed,
                                          target=instance.target, bottleneck=instance.bottleneck,
                                          reason=f"duplicate of {seen[digest]}"))
                continue
            seen[digest] = instance.name
            directory = write_task(instance, task_dir(config.out, instance.pattern, seed))
            if path.is_file():
                done.append(InstanceCheck.from_dict(read_json(path)))
            else:
                todo.append((directory, path))
    return todo, done


def prebuild_instance_dir(directory: Path, work_dir: Path) -> str:
    """Build one task's versions ahead of its check (one thread's job); the build failure's reason, or ""."""
    from perfforge.task import load_task

    return prebuild(load_task(directory), work_dir)


def _prebuild(config: SynthPatternsConfig, todo: list[tuple[Path, Path]]) -> None:
    """Compile every task to check in `build_jobs` threads first: builds take most of a GPU task's check, and
    unlike the checks' timings they may overlap. A failure is not an error here: the check reports it."""
    if config.build_jobs <= 1 or len(todo) <= 1:
        return
    work = config.out / "work"
    with ThreadPoolExecutor(max_workers=config.build_jobs) as pool:
        list(pool.map(lambda item: prebuild_instance_dir(item[0], work / item[1].stem), todo))


@dataclass(frozen=True)
class CheckItem:
    """One instance to check, self-contained for a worker of a cluster: the task directory's files travel with it
    (a worker without the driver's disk checks a copy), and the result comes back to the driver, which writes it."""

    directory: Path
    files: dict[str, bytes]
    work_dir: Path
    timing: bool

    @classmethod
    def of(cls, directory: Path, work_dir: Path, timing: bool) -> CheckItem:
        return cls(directory, {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}, work_dir,
                   timing)


def check_item(item: CheckItem) -> dict[str, Any]:
    """check_instance_dir on the task's directory where this worker sees it, else on a copy of its files."""
    if item.directory.is_dir():
        return check_instance_dir(item.directory, item.work_dir, item.timing)
    with tempfile.TemporaryDirectory(prefix="perfforge-check-") as scratch:
        copy = Path(scratch) / item.directory.name
        copy.mkdir()
        for name, data in item.files.items():
            (copy / name).write_bytes(data)
        return check_instance_dir(copy, Path(scratch) / "work", item.timing)


def _run_checks(config: SynthPatternsConfig, todo: list[tuple[Path, Path]]) -> Iterable[InstanceCheck]:
    """Each instance's check on the executor --executor names, recorded here as it comes back. GPU instances ask
    for a GPU worker; timed CPU instances for the CPU_TIMING worker (one per machine: timings must not overlap)."""
    work = config.out / "work"
    _prebuild(config, todo)
    gpu = target_spec(config.target).gpu if config.target != "all" else any(
        target_spec(t).gpu for t in ("cuda", "triton"))
    items = [CheckItem.of(directory, work / path.stem, config.timing) for directory, path in todo]
    with _progress_bar(len(todo), config.progress) as bar, open_executor(config.executor_config()) as executor:
        tally = WorkerTally(executor.workers)
        for done in executor.map_unordered(check_item, items, gpu=gpu, cpu_timing=config.timing and not gpu):
            directory, path = todo[done.index]
            tally.add(done)
            bar.set_postfix_str(tally.line(), refresh=False)
            if isinstance(done.result, Failure):  # the worker was lost for good, or the check could not start
                yield _record(_failed_check(directory, f"check failed on the executor: {done.result.error}"),
                              path, bar)
                continue
            yield _record(done.result, path, bar)


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, n: int) -> None:
        pass

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        pass


def _progress_bar(total: int, shown: bool) -> Any:
    """tqdm's bar, or nothing (the GPU machine's image has no tqdm; scripts/synth_gpu.py runs without one)."""
    if not shown or not total:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="instance", desc="synth")


def _record(data: dict[str, Any], path: Path, bar: Any) -> InstanceCheck:
    write_json(path, data)
    bar.update(1)
    return InstanceCheck.from_dict(data)


def catalogue_stats(checks: list[InstanceCheck], chosen: list[Pattern]) -> dict[str, Any]:
    """Per pattern and per target: instances generated, duplicates, kept, why the others were dropped, how often
    the planted bottleneck was the top diagnosis (over instances that were profiled), and the speedups."""
    by_pattern: dict[str, dict[str, Any]] = {}
    for chosen_pattern in chosen:
        mine = [c for c in checks if c.pattern == chosen_pattern.id]
        if not mine:  # --no-check, and none of its instances was checked elsewhere
            continue
        by_pattern[chosen_pattern.id] = {"target": chosen_pattern.target, "bottleneck": chosen_pattern.bottleneck,
                                         **_summary(mine)}
    by_target = {target: _summary([c for c in checks if c.target == target])
                 for target in sorted({c.target for c in checks})}
    return {"patterns": by_pattern, "targets": by_target, "total": _summary(checks)}


def _summary(checks: list[InstanceCheck]) -> dict[str, Any]:
    duplicates = [c for c in checks if c.reason.startswith("duplicate of")]
    generated = [c for c in checks if c not in duplicates]
    profiled = [c for c in generated if c.diagnoses or c.profile_slow]
    kept = [c for c in generated if c.kept]
    top = Counter(c.top_diagnosis or "none" for c in profiled)
    return {
        "generated": len(generated), "duplicates": len(duplicates), "kept": len(kept),
        "kept_share": round(len(kept) / len(generated), 4) if generated else None,
        "profiled": len(profiled), "top_diagnosis_correct": sum(c.top_correct for c in profiled),
        "diagnosis_accuracy": round(sum(c.top_correct for c in profiled) / len(profiled), 4) if profiled else None,
        "top_diagnoses": dict(top.most_common()),
        **speedup_range([c.speedup for c in kept if c.speedup]),
        "dropped": dict(Counter(_reason_kind(c.reason) for c in generated if not c.kept).most_common()),
    }


def _reason_kind(reason: str) -> str:
    """The reason's kind, for counting: the text before its first colon."""
    return reason.split(":", 1)[0] if reason else "unknown"


def catalogue_table(stats: dict[str, Any]) -> str:
    """Markdown: one row per pattern, then one per target."""
    head = ("| pattern | planted bottleneck | generated | kept | top diagnosis correct | speedup min / median / max "
            "| dropped |\n|---|---|---:|---:|---:|---|---|\n")
    rows = [_row(pattern_id, s["bottleneck"], s) for pattern_id, s in stats["patterns"].items()]
    rows += [_row(f"**{target}**", "", s) for target, s in stats["targets"].items()]
    return head + "\n".join(rows) + "\n"


def _row(name: str, bottleneck: str, s: dict[str, Any]) -> str:
    accuracy = (f"{s['top_diagnosis_correct']}/{s['profiled']}" if s["profiled"] else "-")
    speedups = " / ".join(f"{s[k]:.2f}x" if s[k] else "-" for k in ("speedup_min", "speedup_median", "speedup_max"))
    dropped = ", ".join(f"{k} ({v})" for k, v in s["dropped"].items()) or "-"
    if s["duplicates"]:
        dropped += f"; {s['duplicates']} duplicate seeds"
    return f"| {name} | {bottleneck} | {s['generated']} | {s['kept']} | {accuracy} | {speedups} | {dropped} |"
