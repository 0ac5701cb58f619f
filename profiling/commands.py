"""What `perfforge validate`, `perfforge profile` and `perfforge diagnose` do with their configs, and print."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.io import read_json, write_json
from perfforge.naming import PROFILE_FILE, VERDICT_FILE
from perfforge.records import Profile
from perfforge.task import MANIFEST, load_task
from profiling.config import DiagnoseConfig, ProfileConfig, ValidateConfig
from profiling.diagnoses import attach_diagnoses


def run_validate(config: ValidateConfig) -> int:
    from profiling.validate import validate

    task = load_task(config.task)
    candidate = config.candidate or task.reference_path
    if candidate is None:
        raise PerfforgeError(f"task {task.name} has no reference; give the file to judge with --candidate FILE")
    verdict = validate(task, candidate, config.out / "work", timing=config.timing)
    path = config.out / VERDICT_FILE
    write_json(path, verdict.to_dict())
    print(verdict.headline())
    print(f"verdict: {path}")
    return 0 if verdict.correct else 1


def run_profile(config: ProfileConfig) -> int:
    if config.command is not None:
        from profiling.application import profile_application

        profiles = profile_application(config.command, config.workdir, target=config.target, top=config.top,
                                       work_dir=config.out / "work")
        for index, profile in enumerate(profiles):
            path = config.out / f"profile-{index}-{_safe(profile.kernel)}.json"
            write_json(path, profile.to_dict())
            _print_profile(profile, config.sources, config.token_budget)
            print(f"profile: {path}")
        return 0
    from profiling.profile import profile_task

    task = load_task(config.task)
    profile = profile_task(task, config.out / "work", version=config.candidate, config_name=config.config_name)
    path = config.out / PROFILE_FILE
    write_json(path, profile.to_dict())
    _print_profile(profile, config.sources, config.token_budget)
    print(f"profile: {path}")
    return 0


def run_diagnose(config: DiagnoseConfig) -> int:
    profile = _load_or_make_profile(config.path, config.out)
    attach_diagnoses(profile)
    if config.json:
        print(json.dumps([asdict(d) for d in profile.diagnoses], indent=2))
        return 0
    _print_profile(profile, config.sources, config.token_budget)
    return 0


def _load_or_make_profile(path: Path, out: Path) -> Profile:
    if path.is_file() and path.suffix == ".json":
        try:
            return Profile.from_dict(read_json(path))
        except (ValueError, TypeError, KeyError) as exc:
            raise PerfforgeError(f"{path} is not a profile written by perfforge profile: {exc}") from None
    if (path / MANIFEST).is_file():
        from profiling.profile import profile_task

        profile = profile_task(load_task(path), out / "work")
        write_json(out / PROFILE_FILE, profile.to_dict())
        return profile
    raise PerfforgeError(f"{path} is neither a task directory (with {MANIFEST}) nor a profile.json")


def _print_profile(profile: Profile, sources: list[str], token_budget: int) -> None:
    from perfforge.summary import summarize

    timing = profile.timing
    measured = (f"median {timing.median_ms:.4g} ms [p10 {timing.p10_ms:.4g}, p90 {timing.p90_ms:.4g}] over "
                f"{timing.trials} trials" if timing.trials else timing.method)
    print(f"{profile.kernel} ({profile.target}) on {profile.machine}: {measured}")
    if not profile.diagnoses:
        print("no bottleneck crossed its threshold")
    for rank, diagnosis in enumerate(profile.diagnoses, 1):
        print(f"{rank}. {diagnosis.name} (severity {diagnosis.severity:.2f})")
        for line in diagnosis.evidence:
            print(f"     {line}")
        if diagnosis.hint:
            print(f"     fix: {diagnosis.hint}")
    print("--- prompt summary ---")
    print(summarize(profile, sources=sources, token_budget=token_budget))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60] or "kernel"
