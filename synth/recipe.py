"""`perfforge synth recipe`: profile the named kernels of a real repository at a commit's parent and at the commit,
as IntelliPerf profiles whole applications, and write the comparison and the pairs.

The user writes a recipe (TOML): the repository, the commit, the build and benchmark commands, the target and the
kernels. The source repository is never written to: each side is a `git clone --shared` under the output
directory, checked out at its revision, built with the build command, then the benchmark command is profiled
with profiling.application.profile_application (its top kernels). A side whose profiles.json exists is not redone.

    before/src, after/src          the clones (the parent, the commit)
    before/build.log, after/...    what the build command printed
    before/profiles.json, after/   the top kernels' profiles, costliest first
    comparison.json, comparison.md per named kernel: time (or instructions) before and after, top diagnoses
    pairs.parquet                  a PairRecord per named kernel found at both sides, with both profiles
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfforge.errors import ConfigError, PerfforgeError
from perfforge.io import read_json, write_json, write_text
from perfforge.naming import PAIRS_FILE
from perfforge.records import FoundBy, PairRecord, Profile
from synth.config import SynthRecipeConfig

RECIPE_TARGETS = ("cpu", "cuda")
DEFAULT_TOP = 5
DEFAULT_BUILD_TIMEOUT_S = 1800.0
BUILD_LOG_TAIL_CHARS = 1500  # of a failed build's output, in the error: its last errors are the ones that stopped it
RECIPE_FOUND_BY = FoundBy.RECIPE  # a real commit made runnable by a user-given recipe
SIDES = ("before", "after")


@dataclass(frozen=True)
class Recipe:
    repo: Path
    commit: str
    build: str
    benchmark: str
    target: str
    kernels: tuple[str, ...]
    parent: str = ""  # default: the commit's first parent
    top: int = DEFAULT_TOP
    build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S
    category: str = "other"
    name: str = ""


_REQUIRED = ("repo", "commit", "build", "benchmark", "target", "kernels")
_OPTIONAL = ("parent", "top", "build_timeout_s", "category", "name")


def load_recipe(path: Path) -> Recipe:
    """The recipe in `path`; a ConfigError naming the field when it is wrong."""
    if not path.is_file():
        raise ConfigError(f"recipe {path} does not exist")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"recipe {path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise ConfigError(f"recipe {path}: unknown field(s) {', '.join(unknown)}; fields: "
                          f"{', '.join(_REQUIRED + _OPTIONAL)}")
    missing = [key for key in _REQUIRED if not data.get(key)]
    if missing:
        raise ConfigError(f"recipe {path}: missing field(s) {', '.join(missing)} (required: {', '.join(_REQUIRED)})")
    kernels = data["kernels"]
    if isinstance(kernels, str):
        kernels = [kernels]
    if not isinstance(kernels, list) or not all(isinstance(k, str) and k for k in kernels):
        raise ConfigError(f"recipe {path}: kernels must be a list of kernel or function names")
    if data["target"] not in RECIPE_TARGETS:
        raise ConfigError(f"recipe {path}: target must be one of {', '.join(RECIPE_TARGETS)}, got {data['target']!r}")
    repo = Path(str(data["repo"])).expanduser()
    if not repo.is_absolute():
        repo = (path.parent / repo).resolve()
    try:
        return Recipe(repo=repo, commit=str(data["commit"]), build=str(data["build"]),
                      benchmark=str(data["benchmark"]), target=str(data["target"]), kernels=tuple(kernels),
                      parent=str(data.get("parent", "")), top=int(data.get("top", DEFAULT_TOP)),
                      build_timeout_s=float(data.get("build_timeout_s", DEFAULT_BUILD_TIMEOUT_S)),
                      category=str(data.get("category", "other")), name=str(data.get("name", "")) or repo.name)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"recipe {path}: top must be an integer and build_timeout_s a number ({exc})") from None


# ---- git, read-only on the source -----------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, errors="replace")


def resolve_revisions(recipe: Recipe) -> tuple[str, str]:
    """(parent sha, commit sha), or a PerfforgeError naming what git could not find."""
    if not _git(recipe.repo, "rev-parse", "--git-dir").returncode == 0:
        raise PerfforgeError(f"recipe repo {recipe.repo} is not a git repository")
    commit = _git(recipe.repo, "rev-parse", "--verify", "--quiet", f"{recipe.commit}^{{commit}}")
    if commit.returncode != 0:
        raise PerfforgeError(f"unknown commit {recipe.commit!r} in {recipe.repo}")
    parent_rev = recipe.parent or f"{commit.stdout.strip()}^"
    parent = _git(recipe.repo, "rev-parse", "--verify", "--quiet", f"{parent_rev}^{{commit}}")
    if parent.returncode != 0:
        what = f"unknown parent {recipe.parent!r}" if recipe.parent else f"commit {recipe.commit} has no parent"
        raise PerfforgeError(f"{what} in {recipe.repo}; set parent in the recipe")
    return parent.stdout.strip(), commit.stdout.strip()


def checkout(repo: Path, sha: str, dest: Path) -> Path:
    """A clone of `repo` at `sha` in dest, sharing its objects (the source is only read); reused when it is there."""
    if (dest / ".git").is_dir() and _git(dest, "rev-parse", "HEAD").stdout.strip() == sha:
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    cloned = subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(dest)],
                            capture_output=True, text=True)
    if cloned.returncode != 0:
        raise PerfforgeError(f"cannot clone {repo}: {cloned.stderr.strip()}")
    checked = _git(dest, "checkout", "--quiet", "--detach", sha)
    if checked.returncode != 0:
        raise PerfforgeError(f"cannot check out {sha} in {dest}: {checked.stderr.strip()}")
    return dest


# ---- one side -------------------------------------------------------------------------------------------------------


def build_side(recipe: Recipe, source: Path, log_path: Path, side: str) -> None:
    """Run the build command in the clone (the user's own code: network allowed, time-limited)."""
    from profiling import sandbox

    result = sandbox.run(["bash", "-c", recipe.build], cwd=source,
                         limits=sandbox.Limits(timeout_s=recipe.build_timeout_s, memory_bytes=None, network=True,
                                               filesystem=True))
    log = (result.stdout_full or result.stdout) + result.stderr
    write_text(log_path, log)
    if not result.ok:
        tail = " | ".join(line.strip() for line in result.stderr[-BUILD_LOG_TAIL_CHARS:].splitlines() if line.strip())
        raise PerfforgeError(f"the build failed at the {side} side ({result.reason()}): {tail or 'no output'} "
                             f"(log: {log_path})")


def profile_side(recipe: Recipe, sha: str, side_dir: Path, side: str, top: int) -> list[Profile]:
    """Clone, build and profile one side; its profiles.json is reused when a previous run wrote it."""
    from profiling.application import profile_application

    done = side_dir / "profiles.json"
    if done.is_file():
        data = read_json(done)
        if data.get("sha") == sha and data.get("top") == top:
            return [Profile.from_dict(p) for p in data["profiles"]]
    source = checkout(recipe.repo, sha, side_dir / "src")
    build_side(recipe, source, side_dir / "build.log", side)
    try:
        profiles = profile_application(recipe.benchmark, source, target=recipe.target, top=top,
                                       work_dir=side_dir / "profile")
    except PerfforgeError as exc:
        raise PerfforgeError(f"profiling the benchmark at the {side} side failed: {exc}") from None
    write_json(done, {"sha": sha, "top": top, "command": recipe.benchmark,
                      "profiles": [p.to_dict() for p in profiles]})
    return profiles


# ---- comparison and records -----------------------------------------------------------------------------------------


def find_kernel(profiles: list[Profile], name: str) -> Profile | None:
    """The profile of kernel `name`: exact, or the same name without C++ arguments or namespaces."""
    for profile in profiles:
        bare = profile.kernel.split("(", 1)[0]
        if name in (profile.kernel, bare) or bare.endswith(f"::{name}"):
            return profile
    return None


def _cost(profile: Profile) -> tuple[float | None, str]:
    """(cost, unit): a measured time when the profile has one, else the instructions callgrind counted."""
    if profile.timing.median_ms > 0:
        return profile.timing.median_ms, "ms"
    instructions = profile.counter("Ir")
    return (instructions, "instructions") if instructions is not None else (None, "")


def compare_kernel(name: str, before: Profile | None, after: Profile | None, top: int) -> dict[str, Any]:
    row: dict[str, Any] = {"kernel": name, "found_before": before is not None, "found_after": after is not None}
    for side, profile in (("before", before), ("after", after)):
        if profile is None:
            row[f"note_{side}"] = f"not among the top {top} kernels at the {side} side (raise top)"
            continue
        row[f"cost_{side}"], row["unit"] = _cost(profile)
        row[f"top_diagnosis_{side}"] = profile.diagnoses[0].name if profile.diagnoses else ""
        row[f"diagnoses_{side}"] = [(d.name, round(d.severity, 3)) for d in profile.diagnoses]
    if row.get("cost_before") and row.get("cost_after"):
        row["ratio_before_over_after"] = round(row["cost_before"] / row["cost_after"], 4)
    return row


def comparison_table(rows: list[dict[str, Any]]) -> str:
    head = ("| kernel | before | after | before / after | top diagnosis before | top diagnosis after |\n"
            "|---|---:|---:|---:|---|---|\n")
    lines = []
    for row in rows:
        unit = row.get("unit", "")
        cost = {s: f"{row[f'cost_{s}']:.6g} {unit}" if row.get(f"cost_{s}") is not None else "-" for s in SIDES}
        ratio = f"{row['ratio_before_over_after']:.3f}x" if row.get("ratio_before_over_after") else "-"
        lines.append(f"| {row['kernel']} | {cost['before']} | {cost['after']} | {ratio} | "
                     f"{row.get('top_diagnosis_before') or '-'} | {row.get('top_diagnosis_after') or '-'} |")
    return head + "\n".join(lines) + "\n"


@dataclass
class _Commit:
    parent: str
    sha: str
    date: str
    message: str
    licence: str
    sources: dict[str, Path] = field(default_factory=dict)  # side -> clone


def kernel_record(recipe: Recipe, commit: _Commit, name: str, before: Profile, after: Profile) -> PairRecord | None:
    """The PairRecord of one kernel profiled at both sides; None when its source file is not in the repository."""
    from mining.functions import changed_functions, extract_functions, language_of
    from perfforge.records import KernelKind, code_hash

    path = _repo_path(commit.sources["after"], after.source_file)
    language = language_of(path) if path else None
    if path is None or language is None:
        return None
    file_before = _read_at(commit.sources["before"], path)
    file_after = _read_at(commit.sources["after"], path)
    diff = _git(commit.sources["after"], "diff", commit.parent, commit.sha, "--", path).stdout
    change = next((c for c in changed_functions(file_before, file_after, language) if _same(c.name, name)), None)
    if change is not None:
        kind, code_before, code_after = change.kind, change.before.code, change.after.code
    else:  # the kernel's code did not change (its callers or build did): the same function on both sides
        found = {side: next((f for f in extract_functions(text, language) if _same(f.name, name)), None)
                 for side, text in (("before", file_before), ("after", file_after))}
        kind = found["after"].kind if found["after"] else KernelKind.HOST_FUNCTION
        code_before = found["before"].code if found["before"] else ""
        code_after = found["after"].code if found["after"] else ""
    evidence = [f"recipe: user-declared performance commit, benchmark {recipe.benchmark!r} profiled at both sides",
                f"{name}: " + "; ".join(f"{side} top diagnosis {p.diagnoses[0].name if p.diagnoses else 'none'}"
                                        for side, p in (("before", before), ("after", after)))]
    return PairRecord(repo=recipe.name, repo_url=str(recipe.repo), commit=commit.sha, parent=commit.parent,
                      date=commit.date, path=path, licence=commit.licence, found_by=RECIPE_FOUND_BY.value,
                      language=language, target=recipe.target, kernel_name=name, kernel_kind=kind.value,
                      function_before=code_before, function_after=code_after, file_before=file_before,
                      file_after=file_after, diff=diff, code_hash=code_hash(code_before, code_after, language),
                      perf_score=1.0, category=recipe.category, evidence=evidence, message=commit.message,
                      profile_before=before, profile_after=after)


def _same(function_name: str, kernel: str) -> bool:
    return function_name == kernel or function_name.endswith(f"::{kernel}") or function_name.endswith(f".{kernel}")


def _repo_path(clone: Path, source_file: str) -> str | None:
    """The profile's source file relative to the clone (profiles name the file they were built from)."""
    if not source_file:
        return None
    path = Path(source_file)
    path = path if path.is_absolute() else clone / path
    try:
        return path.resolve().relative_to(clone.resolve()).as_posix()
    except ValueError:
        return None


def _read_at(clone: Path, path: str) -> str:
    file = clone / path
    return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else ""


def _commit_info(recipe: Recipe, parent: str, sha: str) -> _Commit:
    from mining.gitlog import StreamFailure, iter_commit_meta
    from mining.licence import licence_of

    git_dir = Path(_git(recipe.repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    failures: list[StreamFailure] = []
    meta = next(iter_commit_meta(git_dir, [sha], failures), None)
    if meta is None:
        reasons = "; ".join(f.reason for f in failures) or "no output from git"
        raise PerfforgeError(f"cannot read commit {sha} in {recipe.repo}: {reasons}")
    return _Commit(parent=parent, sha=sha, date=meta.date, message=meta.message, licence=licence_of(git_dir, sha))


# ---- the command ----------------------------------------------------------------------------------------------------


@dataclass
class RecipeResult:
    comparison: list[dict[str, Any]]
    records: list[PairRecord]
    paths: dict[str, Path]


def run_recipe(config: SynthRecipeConfig) -> RecipeResult:
    """Clone, build and profile both sides, then compare the named kernels and write their records."""
    from synth.records import write_records

    config.validate()
    recipe = load_recipe(config.recipe)
    top = config.top or recipe.top
    parent, sha = resolve_revisions(recipe)
    commit = _commit_info(recipe, parent, sha)
    profiles = {}
    for side, revision in zip(SIDES, (parent, sha), strict=True):
        profiles[side] = profile_side(recipe, revision, config.out / side, side, top)
        commit.sources[side] = config.out / side / "src"
    comparison, records = [], []
    for name in recipe.kernels:
        before, after = find_kernel(profiles["before"], name), find_kernel(profiles["after"], name)
        comparison.append(compare_kernel(name, before, after, top))
        record = kernel_record(recipe, commit, name, before, after) if before and after else None
        if record is not None:
            records.append(record)
    paths = {"comparison": config.out / "comparison.json", "table": config.out / "comparison.md",
             "pairs": config.out / PAIRS_FILE}
    write_json(paths["comparison"], {"repo": str(recipe.repo), "parent": parent, "commit": sha,
                                     "benchmark": recipe.benchmark, "target": recipe.target, "top": top,
                                     "kernels": comparison})
    write_text(paths["table"], comparison_table(comparison))
    write_records(paths["pairs"], records)
    return RecipeResult(comparison=comparison, records=records, paths=paths)

