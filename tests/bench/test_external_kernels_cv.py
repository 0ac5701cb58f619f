"""Leave-one-project-out cross-validation of thresholds (bench/external_kernels/cv.py): each fold chooses its
setting on the other projects only, so a setting that fits the held-out project alone is not chosen for it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.external_kernels import cv  # noqa: E402
from perfforge.records import CounterValue, Profile  # noqa: E402
from profiling.diagnoses.registry import Threshold  # noqa: E402

BASE = {"knob": Threshold("knob", 1.0, "ratio", "test")}
GRID = {"knob": (1.0, 2.0)}


def _profile(kind: str) -> Profile:
    return Profile(machine="", tool_versions="", timing=None, target="cpu", kernel="k",
                   counters=[CounterValue("kind", {"a": 0.0, "b": 1.0}[kind], "")])


def _diagnose(profile: Profile, thresholds: dict) -> list:
    """A stand-in rule set: knob 1 ranks `a` first, knob 2 ranks `b` first; both are always in the top 3."""
    first = "a" if thresholds["knob"].value == 1.0 else "b"
    second = "b" if first == "a" else "a"
    return [SimpleNamespace(name=first), SimpleNamespace(name=second)]


def _item(entry_id: str, project: str, label: str) -> cv.Scored:
    return (entry_id, project, {label}, _profile(label))


def test_each_fold_chooses_on_the_other_projects_only() -> None:
    """p1 and p2 want knob 2 (label b), p3 wants knob 1: held out, p3 gets the others' choice and misses."""
    items = [_item("p1/x", "p1", "b"), _item("p1/y", "p1", "b"), _item("p2/x", "p2", "b"), _item("p3/x", "p3", "a")]
    report = cv.leave_one_project_out(items, {}, BASE, _diagnose, grid=GRID)
    folds = {f["held_out"]: f for f in report["folds"]}
    assert folds["p3"]["chosen"] == {"knob": 2.0} and folds["p3"]["top1"] == 0 and folds["p3"]["top3"] == 1
    assert folds["p3"]["top1_file_thresholds"] == 1  # the file's value would have hit: no peeking at the test set
    assert folds["p1"]["chosen"] == {"knob": 1.0}  # p2 (b) and p3 (a) tie at one hit: the file's value wins ties
    assert report["summary"]["kernels"] == 4 and report["summary"]["top1"] == folds["p1"]["top1"] + \
        folds["p2"]["top1"] + folds["p3"]["top1"]


def test_entries_without_a_profile_count_as_misses_of_their_project() -> None:
    items = [_item("p1/x", "p1", "a"), _item("p2/x", "p2", "a")]
    report = cv.leave_one_project_out(items, {"p2/gone": "p2"}, BASE, _diagnose, grid=GRID)
    folds = {f["held_out"]: f for f in report["folds"]}
    assert folds["p2"]["kernels"] == 2 and folds["p2"]["top1"] == 1 and folds["p2"]["top1_rate"] == 0.5


def test_the_files_own_values_are_always_tried_first() -> None:
    candidates = cv.settings(BASE, {"knob": (3.0,)})
    assert candidates[0] == (("knob", 1.0),) and (("knob", 3.0),) in candidates


def test_the_cuda_grid_names_thresholds_of_the_cuda_file_and_its_catalogue_is_the_h100_fixture() -> None:
    """Every threshold the CUDA grid varies is in thresholds/cuda.toml (a misspelt name would vary nothing), the
    file's own value is among those tried, and the catalogue the folds are scored on is every GPU pattern's slow
    H100 profile, each with its planted bottleneck as the only accepted label."""
    from profiling.diagnoses import diagnose, thresholds_for

    base = thresholds_for("cuda")
    assert set(cv.CUDA_GRID) <= set(base)
    assert cv.settings(base, cv.CUDA_GRID)[0] == tuple((n, base[n].value) for n in sorted(cv.CUDA_GRID))
    catalogue = cv.fixture_catalogue()
    assert len(catalogue) >= 20 and all(len(labels) == 1 for _, _, labels, _ in catalogue)
    assert cv.hits(catalogue, base, diagnose) == (len(catalogue), len(catalogue))


def test_accuracy_per_label_says_what_ranked_first_instead() -> None:
    """The README's per-diagnosis tables: under knob 1 `a` ranks first, so the `b` entries are second (top-3 hits)
    and name `a` as what came first; an entry that was not profiled counts as a miss of its label."""
    items = [_item("p1/x", "p1", "a"), _item("p1/y", "p1", "b"), _item("p2/x", "p2", "b")]
    table = cv.accuracy_by_label(items, ["b"], BASE, _diagnose)
    assert table == {"b": {"kernels": 3, "top1": 0, "top3": 2, "instead": {"a": 2, "(not profiled)": 1}},
                     "a": {"kernels": 1, "top1": 1, "top3": 1, "instead": {}}}
    assert cv.label_table(table, "cpu").splitlines()[-1] == "| **all** | **4** | **1** | **3** | |"
