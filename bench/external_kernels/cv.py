"""Leave-one-project-out cross-validation of the diagnosis thresholds, CPU or CUDA (issue 20: thresholds chosen on
kernels other than the ones they are reported on).

Input: a finished `run.py` results JSON and its work directory, where each entry left `profiles.json` (every
profiled function's Profile, hot-line metrics and static facts included). Diagnoses are pure functions of a profile
and the thresholds (profiling.diagnoses.diagnose), so each stored profile is diagnosed again under every candidate
setting of a small grid of ranking thresholds (GRID), without profiling anything again.

Per held-out project: the setting with the most top-1 hits (then top-3 hits, then the fewest changes from
thresholds/<target>.toml) on the *other* projects' entries is chosen, and the held-out project's entries are scored
under it. The catalogue is scored under every fold's chosen setting and under the file's own values; it is never
used to choose: for the CPU, synth/patterns' CPU instances profiled by `--catalogue-seeds`; for CUDA, the slow
versions of the GPU patterns' H100 profiles kept in tests/fixtures/synth_h100/profiles.json.

    .venv/bin/python bench/external_kernels/run.py --cv project --out RESULTS.json --work-dir WORK \\
        [--catalogue-seeds 5] [--target cuda]
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from perfforge.io import read_json, write_json
from perfforge.records import Profile

# The thresholds searched, each with the values tried (the file's own value is always among them). They are the
# ones that decide the ranking between rules on the external set's misses: which lines count as hot, how much
# vectorising is assumed to save, how much a linear scan saves, how efficient threads are, and the two unmeasured
# costs of the dependence rules that rank against others on the same kernels (a memory accumulator's saving
# against cache misses and vectorising, a call's cost against its branches), and how many cycles of latency a step
# make an arithmetic chain a dependency_chain (a carry, a floating-point reduction, a shift-xor generator), and the
# share of a histogram's updates assumed to repeat a recent index (store_forwarding_dependency: not measured).
GRID: dict[str, tuple[float, ...]] = {
    "min_line_share": (0.02, 0.05, 0.1),
    "vector_speedup": (1.5, 2.0, 4.0),
    "line_d1_miss_rate": (5.0, 10.0, 20.0),
    "parallel_efficiency": (0.5, 0.8),
    "accumulator_saving": (0.25, 0.5, 0.75),
    "call_overhead_cycles": (5.0, 10.0, 20.0),
    "min_chain_latency_cycles": (3.0, 4.0, 6.0),
    "update_repeat_share": (0.1, 0.25, 0.5),
}
# CUDA: the thresholds that decide which rule fires or ranks first on the external set's misses: how narrow a
# warp's loads must be to count as scalar (1 byte per lane is one sector a request, bf16 two, fp32 four), how much
# sector waste is uncoalesced, the occupancy and latency regimes, how many re-reads are redundant, and when L1 is
# the bound; how much of the warps' time at block barriers names barrier_stalls (and idle_threads), and how much
# waiting on global loads weighs re-reads that no unit is busy with (redundant_global_loads).
CUDA_GRID: dict[str, tuple[float, ...]] = {
    "load_sectors_per_request": (1.5, 2.0, 4.0),
    "uncoalesced_sector_share": (0.1, 0.25, 0.5),
    "achieved_occupancy_pct": (12.5, 25.0),
    "latency_bound_pct": (40.0, 60.0),
    "redundant_load_ratio": (3.0, 6.0),
    "cache_bound_pct": (60.0, 80.0),
    "barrier_wait_share": (0.05, 0.1, 0.15),
    "redundant_wait_share": (0.5, 0.6, 0.8),
}
GRIDS = {"cpu": GRID, "cuda": CUDA_GRID}
CUDA_CATALOGUE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "synth_h100" / "profiles.json"
Setting = tuple[tuple[str, float], ...]
Scored = tuple[str, str, set[str], Profile]  # (id, project, accepted labels: the label only, profile)


def settings(base: dict[str, Any], grid: dict[str, tuple[float, ...]] = GRID) -> list[Setting]:
    """Every combination of the grid's values; the file's own values (base) first."""
    names = sorted(grid)
    values = [sorted(set(grid[n]) | {base[n].value}) for n in names]
    combos = [tuple(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    own = tuple((n, base[n].value) for n in names)
    return [own] + [c for c in combos if c != own]


def apply(base: dict[str, Any], setting: Setting) -> dict[str, Any]:
    """The thresholds with the setting's values in place of the file's."""
    result = dict(base)
    for name, value in setting:
        result[name] = dataclasses.replace(base[name], value=value)
    return result


def changes(base: dict[str, Any], setting: Setting) -> int:
    return sum(value != base[name].value for name, value in setting)


def hits(items: Sequence[Scored], thresholds: dict[str, Any],
         diagnose: Callable[[Profile, dict[str, Any]], list[Any]]) -> tuple[int, int]:
    """(top-1, top-3) hits of the items' labels under the thresholds; an item without a profile is a miss."""
    top1 = top3 = 0
    for _, _, labels, profile in items:
        names = [d.name for d in diagnose(profile, thresholds)]
        top1 += bool(names) and names[0] in labels
        top3 += bool(labels & set(names[:3]))
    return top1, top3


def item_hits(items: Sequence[Scored], base: dict[str, Any], candidates: Sequence[Setting],
              diagnose: Callable[[Profile, dict[str, Any]], list[Any]]) -> list[list[tuple[int, int]]]:
    """Per candidate setting, each item's (top-1, top-3) hit: diagnosed once, shared by every fold (choosing per
    fold again diagnosed each item once per fold, 12 times the work for 12 projects)."""
    return [[hits([item], apply(base, s), diagnose) for item in items] for s in candidates]


def choose(train: Sequence[int], per_setting: Sequence[Sequence[tuple[int, int]]], base: dict[str, Any],
           candidates: Sequence[Setting]) -> tuple[Setting, tuple[int, int]]:
    """The setting with the most top-1 hits on the train items (their indices into item_hits' rows), then top-3
    hits, then the fewest changes from the file."""
    scored = [((sum(row[i][0] for i in train), sum(row[i][1] for i in train)), -changes(base, s), index, s)
              for index, (s, row) in enumerate(zip(candidates, per_setting, strict=True))]
    best = max(scored, key=lambda x: (x[0], x[1], -x[2]))
    return best[3], best[0]


def loaded_entries(results: dict[str, Any], work_dir: Path,
                   profile_dir: Callable[[str], Path]) -> tuple[list[Scored], list[str]]:
    """(scored entries, ids that could not be loaded) from the results rows: each evaluated row's labelled
    profile from its work directory's profiles.json. A not_profiled row counts as a miss under every setting."""
    items: list[Scored] = []
    missing: list[str] = []
    for row in results["results"]:
        if row.get("status") not in ("ok", "not_profiled"):
            continue
        path = profile_dir(row["id"]) / "profiles.json"
        if row["status"] == "not_profiled" or not path.is_file():
            missing.append(row["id"])
            continue
        profiles = [Profile.from_dict(p) for p in read_json(path)]
        profile = profiles[row["position"]]
        items.append((row["id"], row["project"], {row["label"]}, profile))
    return items, missing


def rate(hit_count: int, n: int) -> float | None:
    return round(hit_count / n, 4) if n else None


def leave_one_project_out(items: Sequence[Scored], misses: dict[str, str], base: dict[str, Any],
                          diagnose: Callable[[Profile, dict[str, Any]], list[Any]],
                          catalogue: Sequence[Scored] = (), grid: dict[str, tuple[float, ...]] = GRID
                          ) -> dict[str, Any]:
    """Per held-out project: the setting chosen on the others, its held-out figures, the file's own figures on
    the same entries and the catalogue's figures under the chosen setting. misses: id -> project of entries that
    count as misses whatever the thresholds (not profiled, no stored profile)."""
    candidates = settings(base, grid)
    per_setting = item_hits(items, base, candidates, diagnose)
    projects = sorted({p for _, p, _, _ in items} | set(misses.values()))
    folds, totals = [], {"kernels": 0, "top1": 0, "top3": 0, "top1_file": 0, "top3_file": 0}
    for project in projects:
        test = [x for x in items if x[1] == project]
        train = [i for i, x in enumerate(items) if x[1] != project]
        n = len(test) + sum(p == project for p in misses.values())
        chosen, train_hits = choose(train, per_setting, base, candidates)
        held = hits(test, apply(base, chosen), diagnose)
        file_hits = hits(test, base, diagnose)
        fold: dict[str, Any] = {
            "held_out": project, "kernels": n, "train_kernels": len(train) + sum(p != project for p in misses.values()),
            "chosen": dict(chosen), "changed_from_file": changes(base, chosen),
            "train_top1": train_hits[0], "train_top3": train_hits[1],
            "top1": held[0], "top3": held[1], "top1_rate": rate(held[0], n), "top3_rate": rate(held[1], n),
            "top1_file_thresholds": file_hits[0], "top3_file_thresholds": file_hits[1]}
        if catalogue:
            cat = hits(catalogue, apply(base, chosen), diagnose)
            fold.update(catalogue_top1=cat[0], catalogue_top3=cat[1],
                        catalogue_top1_rate=rate(cat[0], len(catalogue)))
        folds.append(fold)
        for key, value in (("kernels", n), ("top1", held[0]), ("top3", held[1]), ("top1_file", file_hits[0]),
                           ("top3_file", file_hits[1])):
            totals[key] += value
    summary: dict[str, Any] = {
        **totals, "top1_rate": rate(totals["top1"], totals["kernels"]),
        "top3_rate": rate(totals["top3"], totals["kernels"]), "settings_tried": len(candidates),
        "grid": {k: list(v) for k, v in grid.items()}}
    if catalogue:
        file_cat = hits(catalogue, base, diagnose)
        summary.update(catalogue_kernels=len(catalogue), catalogue_top1_file_thresholds=file_cat[0],
                       catalogue_top3_file_thresholds=file_cat[1])
    return {"folds": folds, "summary": summary}


def accuracy_by_label(items: Sequence[Scored], missed_labels: Sequence[str], thresholds: dict[str, Any],
                      diagnose: Callable[[Profile, dict[str, Any]], list[Any]]) -> dict[str, dict[str, Any]]:
    """Per label, under the thresholds: kernels, top-1 and top-3 hits, and what ranked first where the label did
    not ("(none)": no rule fired; "(not profiled)": the entries of missed_labels, which count as misses)."""
    table: dict[str, dict[str, Any]] = {}
    for _, _, labels, profile in items:
        names = [d.name for d in diagnose(profile, thresholds)]
        for label in labels:
            row = table.setdefault(label, {"kernels": 0, "top1": 0, "top3": 0, "instead": {}})
            row["kernels"] += 1
            row["top1"] += bool(names) and names[0] == label
            row["top3"] += label in names[:3]
            if not (names and names[0] == label):
                first = names[0] if names else "(none)"
                row["instead"][first] = row["instead"].get(first, 0) + 1
    for label in missed_labels:
        row = table.setdefault(label, {"kernels": 0, "top1": 0, "top3": 0, "instead": {}})
        row["kernels"] += 1
        row["instead"]["(not profiled)"] = row["instead"].get("(not profiled)", 0) + 1
    return dict(sorted(table.items(), key=lambda kv: (-kv[1]["kernels"], kv[0])))


def label_table(by_label: dict[str, dict[str, Any]], target: str) -> str:
    """accuracy_by_label as a Markdown table, with a total row."""
    lines = [f"| diagnosis ({target}) | kernels | top-1 | top-3 | ranked first instead |", "|---|---|---|---|---|"]
    for label, row in by_label.items():
        instead = ", ".join(f"{name} {count}" for name, count in
                            sorted(row["instead"].items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"| {label} | {row['kernels']} | {row['top1']} | {row['top3']} | {instead} |")
    totals = [sum(row[key] for row in by_label.values()) for key in ("kernels", "top1", "top3")]
    lines.append(f"| **all** | **{totals[0]}** | **{totals[1]}** | **{totals[2]}** | |")
    return "\n".join(lines)


def catalogue_profiles(seeds: Iterable[int], work_dir: Path) -> list[Scored]:
    """Generate the CPU patterns' instances of the given seeds, check each (correctness and the slow version's
    profile, no timing: synth/check.py) and return (task, pattern, {planted bottleneck}, slow profile). Instances
    whose check fails count against the catalogue (no profile: every setting misses them) and are reported."""
    from perfforge.task import load_task
    from synth.check import check_task
    from synth.instance import write_task
    from synth.patterns import generate, patterns

    found: list[Scored] = []
    for pattern in patterns(target="cpu"):
        for seed in seeds:
            instance = generate(pattern.id, seed)
            directory = work_dir / pattern.id.replace("/", "__") / f"s{seed}"
            cached = directory / "profile_slow.json"
            if not cached.is_file():
                task = load_task(write_task(instance, directory / "task"))
                check = check_task(task, directory / "work", timing=False)
                write_json(cached, {"kept": check.kept, "reason": check.reason, "profile": check.profile_slow})
            data = read_json(cached)
            profile = Profile.from_dict(data["profile"]) if data["profile"] else Profile(
                machine="", tool_versions="", timing=None, target="cpu", kernel="")  # no profile: a miss
            found.append((f"{pattern.id}/s{seed}", pattern.id, {instance.bottleneck}, profile))
    return found


def fixture_catalogue(path: Path = CUDA_CATALOGUE) -> list[Scored]:
    """The GPU patterns' slow versions as profiled on an H100 (scripts/synth_gpu.py's captures): (check, pattern,
    {planted bottleneck}, slow profile)."""
    return [(key, check["pattern"], {check["bottleneck"]}, Profile.from_dict(check["profile_slow"]))
            for key, check in sorted(read_json(path).items())]
