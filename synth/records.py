"""Kept synthetic tasks as dataset records: the same PairRecord schema as mined pairs, with both profiles, the
verified speedup and the pattern id (found_by synthetic:pattern).

One record per function the fix changed (as mining pairs functions); a fix that only adds or removes functions
(one fused kernel replacing three) gives one record whose functions are the whole files.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from perfforge.io import write_parquet
from perfforge.naming import PAIRS_FILE
from perfforge.records import FoundBy, KernelKind, PairRecord, as_row, code_hash
from synth.check import InstanceCheck
from synth.instance import task_dir

MINING_LANGUAGE = {"c": "c", "cpp": "cpp", "cuda": "cuda", "python": "python"}  # task language -> mining's

SYNTH_REPO = "perfforge-synth"  # the records' repo field for catalogue instances
SYNTH_LICENCE = "Apache-2.0"  # generated code is perfforge's own, under the project's licence


def task_pair_records(task_root: Path, check: InstanceCheck, *, repo: str, repo_url: str, commit: str = "",
                      parent: str = "", date: str = "", licence: str, found_by: FoundBy, category: str,
                      message: str, evidence: list[str]) -> list[PairRecord]:
    """The records of one checked task (its editable source before, its reference after)."""
    from mining.functions import changed_functions
    from perfforge.task import load_task

    task = load_task(task_root)
    language = MINING_LANGUAGE[task.language]
    before = task.source_path.read_text(encoding="utf-8")
    after = task.reference_path.read_text(encoding="utf-8") if task.reference_path else before
    diff = "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{task.source}", f"b/{task.source}"))
    changes = [(c.name, c.kind, c.before.code, c.after.code) for c in changed_functions(before, after, language)]
    if not changes:
        changes = [(task.kernel, KernelKind.HOST_FUNCTION, before, after)]
    profiles = {"profile_before": check.slow_profile(), "profile_after": check.fast_profile()}
    return [PairRecord(repo=repo, repo_url=repo_url, commit=commit, parent=parent, date=date, path=task.source,
                       licence=licence, found_by=found_by.value, language=language,
                       target=task.target,
                       kernel_name=name, kernel_kind=kind.value, function_before=code_before,
                       function_after=code_after, file_before=before, file_after=after, diff=diff,
                       code_hash=code_hash(code_before, code_after, language), perf_score=1.0, category=category,
                       evidence=evidence, message=message, verified_speedup=check.speedup,
                       pattern=check.pattern, **profiles)
            for name, kind, code_before, code_after in changes]


def write_pair_records(out: Path, kept: list[InstanceCheck]) -> Path:
    """pairs.parquet of the kept catalogue instances."""
    from synth.patterns import patterns

    records = []
    for check in sorted(kept, key=lambda c: (c.pattern, c.seed)):
        (chosen,) = patterns(ids=[check.pattern])
        root = task_dir(out, check.pattern, check.seed)
        evidence = [f"planted bottleneck {check.bottleneck}; diagnoses of the slow version: "
                    + ", ".join(f"{n} ({s:.2f})" for n, s in check.diagnoses),
                    f"verified speedup {check.speedup:.3f}x" if check.speedup else "correctness verified, not timed"]
        records += task_pair_records(root, check, repo=SYNTH_REPO, repo_url=str(root.resolve()),
                                     commit=f"{check.pattern}@{check.seed}", licence=SYNTH_LICENCE,
                                     found_by=FoundBy.SYNTHETIC_PATTERN, category=chosen.category,
                                     message=chosen.summary, evidence=evidence)
    return write_records(out / PAIRS_FILE, records)


def write_records(path: Path, records: list[PairRecord]) -> Path:
    """pairs.parquet of `records`, the first of each code hash only (two tasks can reproduce the same change)."""
    from perfforge.records import PAIR_FEATURES

    rows, seen = [], set()
    for record in records:
        if record.code_hash not in seen:
            seen.add(record.code_hash)
            rows.append(as_row(record))
    write_parquet(path, rows, PAIR_FEATURES)
    return path

