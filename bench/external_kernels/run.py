"""Build the labelled kernels of labels.toml from a user's checkouts, profile them with perfforge's application
mode, and score the diagnoses of each labelled kernel or function against its label.

    .venv/bin/python bench/external_kernels/run.py --checkout perf-ninja=~/src/perf-ninja \\
        --checkout how-to-optimize-gemm=~/src/how-to-optimize-gemm --target cpu
    .venv/bin/python bench/external_kernels/run.py --list --target cuda

Per entry: the recipe's paths are written out of the checkout at the entry's commit (git cat-file: the checkout
itself is not touched) into <work-dir>/<entry>/src, the recipe's prepare and build commands run there, then
profiling.application.profile_application profiles the top kernels (cuda, ncu) or functions (cpu, callgrind) of
the recipe's run command. The profile whose name matches the entry's function (or one of its symbols: the name a
profiler reports after inlining) is scored: top-1 / top-3 hit when the label is the first / among the first three
diagnoses; the lenient figures also accept the entry's secondary labels. An entry whose function is not among the
profiled ones scores as a miss (status not_profiled: application mode would not have shown it to a user).

The results JSON (written atomically after every kernel, so an interrupted run keeps what it finished; --resume
reuses finished entries) holds one row per entry, a summary per target, label and project, and the
leave-one-project-out folds (train and test ids, and the test figures) that later work evaluates with. An entry
whose project has no --checkout is skipped with one line; a failing build or profile is recorded and the run
goes on.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from perfforge.io import read_json, write_json  # noqa: E402

HERE = Path(__file__).resolve().parent
LABELS_FILE = HERE / "labels.toml"
SHIMS_DIR = HERE / "shims"
DRIVERS_DIR = HERE / "drivers"
DEFAULT_OUT = Path("perfforge-out/external_kernels/results.json")
DEFAULT_WORK_DIR = Path("perfforge-out/external_kernels/work")
SCHEMA_VERSION = 1
TARGETS = ("cpu", "cuda")
BUILD_TIMEOUT_S = 900.0  # nvcc on the largest dev/cuda files takes minutes
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
PLACEHOLDER_RE = re.compile(
    r"\{(root|dir|file|stem|bin|version|iterations|defines|shims|drivers|cuda_arch|reldir|recipe_prepare)\}")
EVALUATED = ("ok", "not_profiled")  # statuses that count in the accuracy (a failure or a skip does not)


class CatalogueError(ValueError):
    """labels.toml does not follow its schema (README.md)."""


@dataclass(frozen=True)
class Recipe:
    name: str
    target: str
    export: tuple[str, ...]
    build: str
    run: str
    prepare: str = ""
    top: int = 3


@dataclass(frozen=True)
class Entry:
    id: str
    project: str
    recipe: str
    commit: str
    file: str
    function: str
    version: str
    label: str
    reason: str
    fix_commit: str
    fix_version: str
    symbols: tuple[str, ...] = ()
    secondary: tuple[str, ...] = ()
    prepare: str | None = None  # per-entry overrides of the recipe's commands
    build: str | None = None
    run: str | None = None
    top: int | None = None
    iterations: int = 1  # {iterations}: how often a benchmark harness repeats the kernel in one run
    defines: str = ""  # {defines}: the entry's own compiler switches in its recipe's build (problem sizes, types)

    def names(self) -> tuple[str, ...]:
        """The names the labelled kernel or function may be profiled under."""
        return (self.function, *self.symbols)


@dataclass(frozen=True)
class Catalogue:
    projects: dict[str, dict[str, Any]]
    recipes: dict[str, Recipe]
    vocabulary: dict[str, str]  # labels perfforge has no rule for, and what they mean
    entries: tuple[Entry, ...]

    def target_of(self, entry: Entry) -> str:
        return self.recipes[entry.recipe].target


# ---- the catalogue ---------------------------------------------------------------------------------------------

_ENTRY_FIELDS = {"id", "project", "recipe", "commit", "file", "function", "version", "label", "reason",
                 "fix_commit", "fix_version", "symbols", "secondary", "prepare", "build", "run", "top",
                 "iterations", "defines"}
_RECIPE_FIELDS = {"target", "export", "build", "run", "prepare", "top"}


def load_catalogue(path: Path = LABELS_FILE) -> Catalogue:
    """labels.toml as typed entries; an unknown or missing field is a CatalogueError naming the entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise CatalogueError(f"{path}: schema_version {data.get('schema_version')!r}, this script reads "
                             f"{SCHEMA_VERSION}")
    recipes = {name: _recipe(name, raw) for name, raw in data.get("recipes", {}).items()}
    entries = tuple(_entry(raw) for raw in data.get("kernels", []))
    return Catalogue(projects=dict(data.get("projects", {})), recipes=recipes,
                     vocabulary=dict(data.get("vocabulary", {})), entries=entries)


def _recipe(name: str, raw: dict[str, Any]) -> Recipe:
    _check_fields(f"recipe {name}", raw, _RECIPE_FIELDS, {"target", "export", "build", "run"})
    return Recipe(name=name, target=raw["target"], export=tuple(raw["export"]), build=raw["build"], run=raw["run"],
                  prepare=raw.get("prepare", ""), top=int(raw.get("top", 3)))


def _entry(raw: dict[str, Any]) -> Entry:
    required = _ENTRY_FIELDS - {"symbols", "secondary", "prepare", "build", "run", "top", "iterations", "defines"}
    _check_fields(f"kernel {raw.get('id', '?')}", raw, _ENTRY_FIELDS, required)
    values = dict(raw)
    values["symbols"] = tuple(raw.get("symbols", ()))
    values["secondary"] = tuple(raw.get("secondary", ()))
    return Entry(**values)


def _check_fields(where: str, raw: dict[str, Any], allowed: set[str], required: set[str]) -> None:
    unknown, missing = set(raw) - allowed, required - set(raw)
    if unknown or missing:
        raise CatalogueError(f"labels.toml {where}: unknown fields {sorted(unknown)}, missing {sorted(missing)}")


def catalogue_problems(catalogue: Catalogue, rule_names: Iterable[str]) -> list[str]:
    """What is wrong with the catalogue's contents (an empty list when nothing is): labels that are neither a
    registered diagnosis nor declared missing, vocabulary entries that shadow a rule, unknown projects and
    recipes, commits that are not full shas, duplicate ids."""
    rules = set(rule_names)
    problems = [f"vocabulary label {name!r} is a registered diagnosis: it is not missing"
                for name in catalogue.vocabulary if name in rules]
    problems += [f"recipe {r.name}: target {r.target!r} is not one of {TARGETS}"
                 for r in catalogue.recipes.values() if r.target not in TARGETS]
    seen: set[str] = set()
    for entry in catalogue.entries:
        problems += [f"{entry.id}: {p}" for p in _entry_problems(entry, catalogue, rules)]
        if entry.id in seen:
            problems.append(f"{entry.id}: duplicate id")
        seen.add(entry.id)
    return problems


def _entry_problems(entry: Entry, catalogue: Catalogue, rules: set[str]) -> list[str]:
    known = rules | set(catalogue.vocabulary)
    problems = [f"label {name!r} is neither a diagnosis nor in [vocabulary]"
                for name in (entry.label, *entry.secondary) if name not in known]
    if entry.project not in catalogue.projects:
        problems.append(f"project {entry.project!r} is not in [projects]")
    if entry.recipe not in catalogue.recipes:
        problems.append(f"recipe {entry.recipe!r} is not in [recipes]")
    problems += [f"{name} {sha!r} is not a 40-digit hex sha" for name, sha in
                 (("commit", entry.commit), ("fix_commit", entry.fix_commit)) if not SHA_RE.match(sha)]
    if not entry.reason.strip():
        problems.append("reason is empty")
    return problems


def select(catalogue: Catalogue, *, targets: Sequence[str] = (), projects: Sequence[str] = (),
           ids: Sequence[str] = ()) -> list[Entry]:
    """The entries of the given targets, projects and ids (each filter left empty: all)."""
    return [e for e in catalogue.entries if (not targets or catalogue.target_of(e) in targets)
            and (not projects or e.project in projects) and (not ids or any(i in e.id for i in ids))]


# ---- building and profiling one entry ----------------------------------------------------------------------------

@dataclass
class Context:
    """What every entry's run shares."""

    catalogue: Catalogue
    checkouts: dict[str, Path]
    work_dir: Path
    cuda_arch: str = "native"
    top: int | None = None  # overrides the recipes' and entries' top
    worktree: bool = False  # take files from the checkout's working tree instead of the entry's commit


@dataclass
class Commands:
    prepare: str
    build: str
    run: str
    top: int
    values: dict[str, str] = field(default_factory=dict)


def commands_for(entry: Entry, recipe: Recipe, src: Path, bin_path: Path, cuda_arch: str) -> Commands:
    """The entry's prepare, build and run commands with the placeholders filled in."""
    file = src / entry.file
    values = {"root": str(src), "dir": str(file.parent), "file": str(file), "stem": file.stem, "bin": str(bin_path),
              "version": entry.version, "iterations": str(entry.iterations), "defines": entry.defines,
              "shims": str(SHIMS_DIR), "drivers": str(DRIVERS_DIR), "cuda_arch": cuda_arch,
              "reldir": str(Path(entry.file).parent)}
    # an entry's own prepare may run its recipe's first ({recipe_prepare}) and add a step, instead of copying it
    values["recipe_prepare"] = fill(recipe.prepare, values)
    pick = {name: getattr(entry, name) if getattr(entry, name) is not None else getattr(recipe, name)
            for name in ("prepare", "build", "run")}
    return Commands(prepare=fill(pick["prepare"], values), build=fill(pick["build"], values),
                    run=fill(pick["run"], values), top=entry.top or recipe.top, values=values)


def fill(template: str, values: dict[str, str]) -> str:
    """Replace the known {placeholders} only: shell braces (sed's \\{, ${VAR}) pass through untouched."""
    return PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


def export_paths(entry: Entry, recipe: Recipe) -> list[str]:
    return [fill(path, {"reldir": str(Path(entry.file).parent)}) for path in recipe.export]


def export_tree(checkout: Path, commit: str, paths: Sequence[str], dest: Path, *, worktree: bool = False) -> list[str]:
    """Write `paths` of the checkout at `commit` under dest (the checkout is only read). Returns the files that
    could not be read (a blob the clone lacks, as partial or LFS-pruned clones do), which are left out."""
    if worktree:
        for path in paths:
            source, target = checkout / path, dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
        return []
    _git(checkout, "cat-file", "-e", f"{commit}^{{commit}}",
         error=f"commit {commit} is not in {checkout} (a shallow clone? `git -C {checkout} fetch --unshallow`, "
               "or pass --worktree to use the files as they are)")
    listing = _git(checkout, "ls-tree", "-r", "-z", commit, "--", *paths)
    missing = []
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        sha = meta.split()[2]
        blob = subprocess.run(["git", "-C", str(checkout), "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
    return missing


def _git(checkout: Path, *args: str, error: str = "") -> str:
    proc = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StageError("export", error or proc.stderr.strip())
    return proc.stdout


class StageError(RuntimeError):
    """A stage of one entry failed: its name and what went wrong."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def run_shell(stage: str, command: str, cwd: Path, log: Path) -> None:
    """Run a recipe's shell command in cwd, its output appended to log; a failure is a StageError."""
    if not command.strip():
        return
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {command}\n")
        out.flush()
        try:
            proc = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise StageError(stage, f"timed out after {BUILD_TIMEOUT_S:.0f} s (log: {log})") from None
        except OSError as error:  # the directory is missing: the entry's file is not where labels.toml says
            raise StageError(stage, f"{error} (is `file` right for this commit?)") from error
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise StageError(stage, f"exit status {proc.returncode} (log: {log}): " + " | ".join(tail))


def run_entry(entry: Entry, ctx: Context) -> dict[str, Any]:
    """Export, prepare, build and profile one entry; a failure is recorded in the row, never raised."""
    row = base_row(entry, ctx.catalogue)
    started = time.monotonic()
    try:
        row.update(_profile_entry(entry, ctx))
    except StageError as error:
        row.update(status="failed", stage=error.stage, error=str(error))
    except Exception as error:  # noqa: BLE001 - one kernel's failure must not stop the others
        row.update(status="failed", stage="profile", error=f"{type(error).__name__}: {error}")
    row["seconds"] = round(time.monotonic() - started, 1)
    return score(row)


def _profile_entry(entry: Entry, ctx: Context) -> dict[str, Any]:
    from profiling.application import profile_application  # on use: --list and the tests need no profiler

    recipe = ctx.catalogue.recipes[entry.recipe]
    base = ctx.work_dir / safe_name(entry.id)
    if base.exists():
        shutil.rmtree(base)
    src, log = base / "src", base / "build.log"
    src.mkdir(parents=True)
    missing = export_tree(ctx.checkouts[entry.project], entry.commit, export_paths(entry, recipe), src,
                          worktree=ctx.worktree)
    cmds = commands_for(entry, recipe, src, base / "bin" / "prog", ctx.cuda_arch)
    (base / "bin").mkdir()
    workdir = Path(cmds.values["dir"])
    run_shell("prepare", cmds.prepare, workdir, log)
    run_shell("build", cmds.build, workdir, log)
    try:
        profiles = profile_application(cmds.run, workdir, target=recipe.target, top=ctx.top or cmds.top,
                                       work_dir=base / "profile")
    except Exception as error:  # noqa: BLE001 - recorded with the stage that failed
        raise StageError("profile", f"{type(error).__name__}: {error}") from error
    write_json(base / "profiles.json", [p.to_dict() for p in profiles])
    return profile_row(entry, _named(profiles), command=cmds.run, missing_files=missing)


def _named(profiles: Sequence[Any]) -> list[tuple[str, list[tuple[str, float]]]]:
    return [(p.kernel, [(d.name, d.severity) for d in p.diagnoses]) for p in profiles]


def profile_row(entry: Entry, profiled: list[tuple[str, list[tuple[str, float]]]], *, command: str = "",
                missing_files: Sequence[str] = ()) -> dict[str, Any]:
    """The row's profile fields from (kernel name, [(diagnosis, severity)]) per profiled kernel, costliest first:
    the diagnoses of the first kernel matching the entry's names."""
    position = next((i for i, (kernel, _) in enumerate(profiled) if matches(kernel, entry.names())), None)
    row: dict[str, Any] = {
        "command": command, "missing_files": list(missing_files),
        "profiled": [{"kernel": kernel, "diagnoses": [name for name, _ in diagnoses]}
                     for kernel, diagnoses in profiled]}
    if position is None:
        row.update(status="not_profiled", diagnoses=[], profiled_kernel=None, position=None)
    else:
        kernel, diagnoses = profiled[position]
        row.update(status="ok", profiled_kernel=kernel, position=position,
                   diagnoses=[{"name": name, "severity": severity} for name, severity in diagnoses])
    return row


def matches(profiled_name: str, names: Iterable[str]) -> bool:
    """Whether a profiled kernel or function is one of the names, compared by base name (no return type,
    parameters or template arguments): equal, or equal once the namespace or class is dropped from one side
    (callgrind reports `Life::simulateNext`, ncu `simulateNext`; a label may name either)."""
    profiled = base_name(profiled_name)
    return any(profiled in (name, _last(name)) or _last(profiled) == name for name in map(base_name, names))


def _last(qualified: str) -> str:
    return qualified.rsplit("::", 1)[-1]


def base_name(name: str) -> str:
    """`void ns::kern<64, 8>(float *, int)` -> `ns::kern`; `power(std::array<...> const&, unsigned int)` -> `power`."""
    text = name.strip()
    depth, cut = 0, len(text)
    for index, char in enumerate(text):  # the parameter list: the first '(' outside template brackets
        depth += char == "<"
        depth -= char == ">"
        if char == "(" and depth == 0:
            cut = index
            break
    text = re.sub(r"<[^<>]*>", "", text[:cut])
    while "<" in text:
        text = re.sub(r"<[^<>]*>", "", text)
    return text.split()[-1] if text.split() else text


def safe_name(entry_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", entry_id)


def base_row(entry: Entry, catalogue: Catalogue) -> dict[str, Any]:
    return {"id": entry.id, "project": entry.project, "target": catalogue.target_of(entry), "commit": entry.commit,
            "file": entry.file, "function": entry.function, "version": entry.version, "label": entry.label,
            "secondary": list(entry.secondary), "in_vocabulary": entry.label not in catalogue.vocabulary}


# ---- scoring (pure) -------------------------------------------------------------------------------------------

def score(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its hits: top-1 / top-3 (the label first / among the first three diagnoses), and lenient
    versions accepting the secondary labels too. Rows that were not evaluated (failed, skipped) get no hits."""
    names = [d["name"] for d in row.get("diagnoses", [])]
    accepted = {row["label"], *row.get("secondary", [])}
    evaluated = row.get("status") in EVALUATED
    row.update(first=names[0] if names else None,
               top1=evaluated and names[:1] == [row["label"]], top3=evaluated and row["label"] in names[:3],
               top1_lenient=evaluated and bool(names) and names[0] in accepted,
               top3_lenient=evaluated and bool(accepted & set(names[:3])))
    return row


def group_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and rates of hits among the evaluated rows, with the ids missed at top-3."""
    evaluated = [r for r in rows if r.get("status") in EVALUATED]
    n = len(evaluated)
    figures: dict[str, Any] = {"kernels": n, "not_evaluated": len(rows) - n}
    for key in ("top1", "top3", "top1_lenient", "top3_lenient"):
        hits = sum(bool(r[key]) for r in evaluated)
        figures[key] = hits
        figures[f"{key}_rate"] = round(hits / n, 4) if n else None
    figures["missed_top3"] = [r["id"] for r in evaluated if not r["top3"]]
    return figures


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Figures overall, for in-vocabulary labels only, and per target, label and project; status counts; the
    leave-one-project-out folds."""
    statuses: dict[str, int] = defaultdict(int)
    for row in rows:
        statuses[row.get("status", "?")] += 1
    summary = {"overall": group_figures(rows),
               "in_vocabulary": group_figures([r for r in rows if r["in_vocabulary"]]),
               "by_target": _grouped(rows, "target"), "by_label": _grouped(rows, "label"),
               "by_project": _grouped(rows, "project"), "statuses": dict(sorted(statuses.items())),
               "leave_one_project_out": lopo_folds(rows)}
    return summary


def _grouped(rows: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row)
    return {name: group_figures(members) for name, members in sorted(groups.items())}


def lopo_folds(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One fold per project: its evaluated entries are the test set, every other project's the training set.
    The rules have no training; the folds are listed for learned diagnosers, with the rules' test figures."""
    evaluated = [r for r in rows if r.get("status") in EVALUATED]
    folds = []
    for project in sorted({r["project"] for r in rows}):
        test = [r for r in evaluated if r["project"] == project]
        train = [r["id"] for r in evaluated if r["project"] != project]
        folds.append({"held_out": project, "train": train, "test": [r["id"] for r in test],
                      "test_figures": group_figures(test)})
    return folds


# ---- the command line -----------------------------------------------------------------------------------------

def parse_checkouts(values: Sequence[str], projects: Iterable[str]) -> dict[str, Path]:
    known, checkouts = set(projects), {}
    for value in values:
        project, sep, path = value.partition("=")
        if not sep or not path:
            raise SystemExit(f"--checkout {value!r}: write PROJECT=PATH")
        if project not in known:
            raise SystemExit(f"--checkout {value!r}: unknown project {project!r} (labels.toml has "
                             f"{', '.join(sorted(known))})")
        checkouts[project] = Path(path).expanduser().resolve()
    return checkouts


def list_entries(entries: Sequence[Entry], ctx: Context) -> None:
    """Print what a run would build and profile (nothing is exported or run)."""
    for entry in entries:
        recipe = ctx.catalogue.recipes[entry.recipe]
        checkout = ctx.checkouts.get(entry.project)
        root = Path("<work>") / safe_name(entry.id) / "src"
        cmds = commands_for(entry, recipe, root, root.parent / "bin" / "prog", ctx.cuda_arch)
        print(f"{entry.id} [{recipe.target}] label={entry.label} function={entry.function} "
              f"commit={entry.commit[:12]} checkout={checkout or 'MISSING'}")
        print(f"  export: {', '.join(export_paths(entry, recipe))}")
        for name in ("prepare", "build"):
            if getattr(cmds, name):
                print(f"  {name}: (in {cmds.values['dir']}) {getattr(cmds, name)}")
        print(f"  profile: perfforge profile --target {recipe.target} --top {ctx.top or cmds.top} "
              f"--command {shlex.quote(cmds.run)}")


def run_all(entries: Sequence[Entry], ctx: Context, out: Path, command: str, resume: bool) -> dict[str, Any]:
    previous = _finished(out, entries) if resume else {}
    rows: list[dict[str, Any]] = []
    for index, entry in enumerate(entries, 1):
        tag = f"[{index}/{len(entries)}] {entry.id}"
        if entry.id in previous:
            rows.append(previous[entry.id])
            print(f"{tag}: kept from {out}", flush=True)
        elif entry.project not in ctx.checkouts:
            rows.append(score({**base_row(entry, ctx.catalogue), "status": "skipped",
                               "error": f"no --checkout {entry.project}=PATH"}))
            print(f"{tag}: skipped, no --checkout {entry.project}=PATH", flush=True)
        else:
            print(f"{tag}: building and profiling ...", flush=True)
            rows.append(run_entry(entry, ctx))
            print(f"{tag}: {describe(rows[-1])}", flush=True)
        write_results(out, rows, command)
    return write_results(out, rows, command)


def _finished(out: Path, entries: Sequence[Entry]) -> dict[str, dict[str, Any]]:
    if not out.is_file():
        return {}
    commits = {e.id: e.commit for e in entries}
    return {row["id"]: row for row in read_json(out).get("results", [])
            if row.get("status") in EVALUATED and commits.get(row["id"]) == row.get("commit")}


def describe(row: dict[str, Any]) -> str:
    if row["status"] == "failed":
        return f"FAILED at {row['stage']}: {row['error']}"
    if row["status"] == "not_profiled":
        kernels = ", ".join(p["kernel"] for p in row["profiled"])
        return f"not among the profiled ({kernels}); label {row['label']}: miss ({row['seconds']} s)"
    return (f"first {row['first'] or 'no diagnosis'} of {[d['name'] for d in row['diagnoses']]}; label "
            f"{row['label']}: {_hit(row)} ({row['seconds']} s)")


def _hit(row: dict[str, Any]) -> str:
    return "top-1 hit" if row["top1"] else "top-3 hit" if row["top3"] else "miss"


def write_results(out: Path, rows: list[dict[str, Any]], command: str) -> dict[str, Any]:
    from profiling.machine import describe_machine

    data = {"schema_version": SCHEMA_VERSION, "labels": str(LABELS_FILE), "command": command,
            "machine": describe_machine(), "results": rows, "summary": summarise(rows)}
    write_json(out, data)  # atomic: written beside, then renamed into place
    return data


def print_summary(summary: dict[str, Any]) -> None:
    def line(name: str, f: dict[str, Any]) -> str:
        if not f["kernels"]:
            return f"{name}: no evaluated kernel"
        return (f"{name}: {f['kernels']} kernels, top-1 {f['top1']} ({f['top1_rate']:.0%}), top-3 {f['top3']} "
                f"({f['top3_rate']:.0%}); with secondary labels top-1 {f['top1_lenient']}, top-3 "
                f"{f['top3_lenient']}")

    print(line("overall", summary["overall"]))
    print(line("labels in perfforge's vocabulary", summary["in_vocabulary"]))
    for target, figures in summary["by_target"].items():
        print(line(f"target {target}", figures))
    print(f"statuses: {summary['statuses']}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", action="append", default=[], metavar="PROJECT=PATH",
                        help="a git checkout of a labelled project (repeat per project)")
    parser.add_argument("--target", action="append", choices=TARGETS, default=[],
                        help="only entries of this target (repeatable; default: all)")
    parser.add_argument("--project", action="append", default=[], help="only this project (repeatable)")
    parser.add_argument("--id", action="append", default=[], help="only entries whose id contains this")
    parser.add_argument("--list", action="store_true", help="print what would be built and profiled, then stop")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default: {DEFAULT_OUT})")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR,
                        help=f"exports, builds and profiles (default: {DEFAULT_WORK_DIR})")
    parser.add_argument("--top", type=int, help="profile this many kernels/functions per entry (default: the "
                        "recipe's or entry's top)")
    parser.add_argument("--cuda-arch", default="native", help="nvcc -arch for CUDA recipes (default: native)")
    parser.add_argument("--worktree", action="store_true",
                        help="use the checkouts' files as they are instead of each entry's commit")
    parser.add_argument("--resume", action="store_true", help="keep the finished entries of an existing --out")
    parser.add_argument("--cv", choices=("project",),
                        help="profile nothing: cross-validate one target's thresholds (--target, default cpu) "
                        "leave-one-project-out over the finished --out results and the profiles their --work-dir "
                        "keeps (cv.py); writes <out>.cv.json")
    parser.add_argument("--catalogue-seeds", type=int, default=0, metavar="N",
                        help="with --cv: also score the synth catalogue's CPU patterns, seeds 1..N (profiled once "
                        "under <work-dir>/catalogue, no timing; seed 0 of cpu/loop_order is too slow under callgrind, "
                        "tests/synth/test_patterns_cpu.py) under each fold's thresholds")
    parser.add_argument("--labels", type=Path, default=LABELS_FILE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.top is not None and args.top < 1:
        parser.error("--top must be at least 1")
    if args.catalogue_seeds and not args.cv:
        parser.error("--catalogue-seeds goes with --cv project")
    if args.cv and len(args.target) > 1:
        parser.error("--cv tunes one target's thresholds: --target cpu (the default) or --target cuda")
    if args.catalogue_seeds and args.target == ["cuda"]:
        parser.error("--catalogue-seeds profiles CPU instances; the CUDA catalogue is the H100 fixture")
    return args


def run_cv(args: argparse.Namespace) -> int:
    """--cv project: the leave-one-project-out figures of one target's entries of a finished run (cv.py); the CPU
    unless --target says cuda."""
    from bench.external_kernels import cv  # a namespace package under the repository root (on sys.path above)
    from profiling.diagnoses import diagnose, thresholds_for

    target = args.target[0] if args.target else "cpu"
    out, work_dir = args.out.resolve(), args.work_dir.resolve()
    if not out.is_file():
        raise SystemExit(f"--cv reads a finished run: {out} does not exist (run without --cv first, same --out)")
    results = read_json(out)
    results["results"] = [r for r in results["results"] if r.get("target") == target]
    items, missing = cv.loaded_entries(results, work_dir, lambda entry_id: work_dir / safe_name(entry_id))
    projects = {r["id"]: r["project"] for r in results["results"]}
    catalogue = (cv.catalogue_profiles(range(1, args.catalogue_seeds + 1), work_dir / "catalogue") if target == "cpu"
                 else cv.fixture_catalogue())
    report = cv.leave_one_project_out(items, {i: projects[i] for i in missing}, thresholds_for(target), diagnose,
                                      catalogue, cv.GRIDS[target])
    labels = {r["id"]: r["label"] for r in results["results"]}
    report["by_label"] = cv.accuracy_by_label(items, [labels[i] for i in missing], thresholds_for(target), diagnose)
    report.update(results=str(out), work_dir=str(work_dir), not_loaded=missing, catalogue_seeds=args.catalogue_seeds)
    report["target"] = target
    cv_out = out.with_suffix(".cv.json")
    write_json(cv_out, report)
    for fold in report["folds"]:
        print(f"held out {fold['held_out']}: {fold['kernels']} kernels, top-1 {fold['top1']}, top-3 {fold['top3']} "
              f"(file thresholds: {fold['top1_file_thresholds']}, {fold['top3_file_thresholds']}); chosen on "
              f"{fold['train_kernels']} others: {fold['chosen']}")
    total = report["summary"]
    print(f"held-out total: {total['kernels']} kernels, top-1 {total['top1']}, top-3 {total['top3']}")
    print(f"per label, under the file's thresholds:\n{cv.label_table(report['by_label'], target)}")
    if catalogue:
        print(f"catalogue: {total['catalogue_kernels']} instances, file thresholds top-1 "
              f"{total['catalogue_top1_file_thresholds']}, top-3 {total['catalogue_top3_file_thresholds']}")
    print(f"cross-validation: {cv_out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cv:
        return run_cv(args)
    catalogue = load_catalogue(args.labels)
    from profiling.diagnoses import RULES

    problems = catalogue_problems(catalogue, RULES.names())
    if problems:
        raise SystemExit("labels.toml:\n  " + "\n  ".join(problems))
    entries = select(catalogue, targets=args.target, projects=args.project, ids=args.id)
    ctx = Context(catalogue=catalogue, checkouts=parse_checkouts(args.checkout, catalogue.projects),
                  work_dir=args.work_dir.resolve(), cuda_arch=args.cuda_arch, top=args.top, worktree=args.worktree)
    if args.list:
        list_entries(entries, ctx)
        return 0
    command = shlex.join([Path(sys.executable).name, *sys.argv]) if argv is None else shlex.join(argv)
    data = run_all(entries, ctx, args.out.resolve(), command, args.resume)
    print_summary(data["summary"])
    print(f"results: {args.out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
