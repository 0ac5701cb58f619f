"""Portable bundles: candidates generated on one machine, judged on another (a GPU machine) with one command.

`perfforge optimize TASK --bundle` writes each round's work as a directory and stops:

    bundle.json        what to do: profile the original and/or judge these candidates
    task/              a copy of the task directory
    candidates/<name>/<file>
    README.txt         the command to run

On the machine with the GPU, from a perfforge checkout or installation (it needs only profiling/ and the core,
no model stack, no datasets):

    python3 -m profiling.bundle BUNDLE_DIR

writes BUNDLE_DIR/results.json (the original's profile, each candidate's verdict and, when improved, profile),
updated after every candidate, so an interrupted run resumes. Copy the directory back and run the same
`perfforge optimize` command again: it reads the results and goes on with the next round.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.io import read_json, write_json, write_text
from perfforge.records import Profile
from perfforge.task import Task, load_task
from profiling.judge import Judgement

BUNDLE_FORMAT = 1
MANIFEST = "bundle.json"
RESULTS = "results.json"
RUN_COMMAND = "python3 -m profiling.bundle"


def write_bundle(directory: Path, task: Task, candidates: list[tuple[str, Path]], *, profile_original: bool,
                 profile_improved: bool, time_configs: bool = False) -> None:
    """The bundle for this work (rewritten from scratch; a bundle is written once per round)."""
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(task.root, directory / "task", ignore=_not_copied(directory))
    names = {}
    for name, path in candidates:
        names[name] = f"candidates/{name}/{path.name}"
        (directory / names[name]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, directory / names[name])
    write_text(directory / "README.txt",
               "Run on the machine that has the task's hardware, from a perfforge checkout or installation:\n\n"
               f"    {RUN_COMMAND} PATH/TO/{directory.name}\n\nthen copy this directory back to where it was "
               "written and run the same perfforge optimize command again.\n")
    write_json(directory / MANIFEST, {"format": BUNDLE_FORMAT, "task": "task", "candidates": names,
                                      "profile_original": profile_original, "profile_improved": profile_improved,
                                      "time_configs": time_configs})


def _not_copied(bundle: Path):  # noqa: ANN202 (a copytree ignore callable)
    """Build products, and the directory holding the bundle itself when --out lies inside the task (running
    perfforge optimize from within the task directory), which the copy would otherwise copy into itself."""
    bundle = bundle.resolve()
    junk = shutil.ignore_patterns("__pycache__", "*.o", "bin")

    def ignore(parent: str, names: list[str]) -> set[str]:
        inside = {n for n in names if bundle.is_relative_to((Path(parent) / n).resolve())}
        return set(junk(parent, names)) | inside

    return ignore


def read_results(directory: Path, candidates: list[str], profile_original: bool) -> dict[str, Any] | None:
    """The bundle's results when they cover everything asked for; None while it has not been run (fully)."""
    path = directory / RESULTS
    if not path.is_file():
        return None
    results = read_json(path)
    if profile_original and results.get("original_profile") is None:
        return None
    if any(name not in results.get("candidates", {}) for name in candidates):
        return None
    return results


class BundleJudge:
    """The loop's judge with --bundle: hands the work to a bundle, and reads its results once they exist."""

    def __init__(self, profile_improved: bool, *, time_configs: bool = False) -> None:
        self.profile_improved, self.time_configs = profile_improved, time_configs

    def __call__(self, task: Task, candidates: list[tuple[str, Path]], directory: Path, profile_original: bool,
                 on_judged: Callable[[str, Judgement], None] | None = None,
                 ) -> tuple[dict[str, Judgement], Profile | None] | None:
        """The bundle's results once they exist (they arrive all at once: on_judged is not called)."""
        results = read_results(directory, [name for name, _ in candidates], profile_original)
        if results is None:
            if not (directory / MANIFEST).is_file():
                write_bundle(directory, task, candidates, profile_original=profile_original,
                             profile_improved=self.profile_improved, time_configs=self.time_configs)
            return None
        judgements = {name: Judgement.from_dict(r) for name, r in results["candidates"].items()}
        original = results.get("original_profile")
        return judgements, Profile.from_dict(original) if original else None


def run_bundle(directory: Path) -> Path:
    """Do the bundle's work here; results.json is rewritten after each piece, and finished pieces are skipped."""
    from profiling.judge import judge_candidates, profile_original

    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise PerfforgeError(f"{directory} is not a bundle (no {MANIFEST}); give the directory perfforge optimize "
                             "--bundle wrote")
    manifest = read_json(manifest_path)
    if manifest.get("format") != BUNDLE_FORMAT:
        raise PerfforgeError(f"{directory} has bundle format {manifest.get('format')}, this perfforge reads "
                             f"{BUNDLE_FORMAT}; update the checkout on this machine")
    task = load_task(directory / manifest["task"])
    results_path = directory / RESULTS
    results = read_json(results_path) if results_path.is_file() else {"original_profile": None, "candidates": {}}
    work = directory / "work"
    started = time.monotonic()
    if manifest["profile_original"] and results["original_profile"] is None:
        print(f"profiling the original of {task.name} ...", flush=True)
        results["original_profile"] = profile_original(task, work).to_dict()
        write_json(results_path, results)
    for name, relative in manifest["candidates"].items():
        if name in results["candidates"]:
            continue
        judged = judge_candidates(task, [(name, directory / relative)], work,
                                  profile_improved=manifest["profile_improved"],
                                  time_configs=manifest.get("time_configs", False))
        results["candidates"].update({name: j.to_dict() for name, j in judged.items()})
        write_json(results_path, results)
    shutil.rmtree(work, ignore_errors=True)
    print(f"bundle done in {time.monotonic() - started:.0f} s: {results_path}")
    return results_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=RUN_COMMAND, description="Run perfforge bundles here (perfforge optimize "
                                                                   "--bundle, perfforge eval --bundle).")
    parser.add_argument("bundles", type=Path, nargs="+", help="bundle directories (each holds bundle.json)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="start no further bundle after this many seconds (a machine lent for a fixed time); "
                             "run the command again for the rest")
    args = parser.parse_args(argv)
    started = time.monotonic()
    failed = 0
    for index, bundle in enumerate(args.bundles, start=1):
        if args.budget_s is not None and time.monotonic() - started > args.budget_s:
            print(f"time budget spent: {len(args.bundles) - index + 1} bundle(s) left for the next run", flush=True)
            break
        print(f"[{index}/{len(args.bundles)}] {bundle}", flush=True)
        try:
            run_bundle(bundle.resolve())
        except PerfforgeError as exc:  # one broken bundle must not cost the others their run
            print(f"{RUN_COMMAND}: error: {bundle}: {exc}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
