"""The catalogue machinery: manifests, the registry, generation, the run (resume, duplicates, failures), records."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from perfforge.cli import main
from perfforge.errors import PerfforgeError
from perfforge.io import read_json, read_parquet
from perfforge.task import dumps_toml, load_task
from synth import patterns as registry
from synth.catalogue import catalogue_table, run_catalogue
from synth.check import InstanceCheck
from synth.config import SynthPatternsConfig
from synth.instance import task_dir, write_task
from synth.patterns import Generation, Pattern, generate, patterns


def test_manifest_round_trips_through_toml() -> None:
    data = {"name": 'a "quoted"\nname', "n": 3, "x": 1e-5, "flag": False, "flags": ["-O3", "-g"],
            "build": {"openmp": True, "link": ["-lm"]}, "configs": [{"name": "s", "params": {"n": 4}, "default": True},
                                                                    {"name": "d", "params": {"n": 8, "m": 2}}]}
    assert tomllib.loads(dumps_toml(data)) == data


def test_manifest_refuses_values_toml_cannot_hold() -> None:
    with pytest.raises(ValueError, match="not finite"):
        dumps_toml({"x": float("nan")})
    with pytest.raises(TypeError, match="no TOML form"):
        dumps_toml({"x": object()})


def test_generation_is_deterministic_and_loads_as_a_task(tmp_path: Path) -> None:
    first, again = generate("cpu/loop_order", 4), generate("cpu/loop_order", 4)
    assert first == again
    task = load_task(write_task(first, tmp_path / "t"))
    assert (task.pattern, task.pattern_seed, task.bottleneck) == ("cpu/loop_order", 4, "cache_miss_bound")
    assert task.reference_path is not None and task.reference_path.read_text() == first.fast
    assert task.source_path.read_text() == first.slow


def test_unknown_pattern_and_bad_ids_are_clear_errors() -> None:
    with pytest.raises(PerfforgeError, match="unknown pattern.*cpu/nope.*synth list"):
        patterns(ids=["cpu/nope"])
    with pytest.raises(ValueError, match="target/name"):
        registry.pattern("nope", bottleneck="x", category=registry.Category.OTHER, summary="")


def test_list_command_names_every_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "list", "--target", "cpu"]) == 0
    listed = capsys.readouterr().out
    assert all(p.id in listed for p in patterns("cpu"))


@pytest.fixture
def odd_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two extra patterns: one whose generator ignores the seed (every seed after the first is a duplicate) and
    one whose generator fails at odd seeds."""
    patterns()  # load the real ones first

    def same_every_seed(g: Generation):  # noqa: ANN202
        instance = generate("cpu/loop_order", 0)
        return g.instance(**{k: v for k, v in instance.__dict__.items()
                             if k not in ("pattern", "seed", "name", "target", "bottleneck", "category")})

    def fails_at_odd_seeds(g: Generation):  # noqa: ANN202
        if g.seed % 2:
            raise RuntimeError("odd seed")
        return same_every_seed(g)

    for name, generator in (("same", same_every_seed), ("flaky", fails_at_odd_seeds)):
        monkeypatch.setitem(registry.PATTERNS, f"cpu/{name}", Pattern(
            id=f"cpu/{name}", target="cpu", bottleneck="cache_miss_bound", category="memory_access",
            summary="test pattern", generator=generator))


def test_duplicates_and_generation_failures_are_recorded_not_checked(tmp_path: Path, odd_patterns: None) -> None:
    config = SynthPatternsConfig(out=tmp_path / "out", patterns=["cpu/same", "cpu/flaky"], instances=2, seed=1,
                                 progress=False, timing=False)
    checked: list[InstanceCheck] = []
    # patterns run in id order: cpu/flaky seed 1 fails, its seed 2 is checked; cpu/same's seeds duplicate it
    result = run_catalogue(config, on_check=checked.append, records=False)
    assert [c.task for c in checked] == ["flaky_s2"]
    reasons = sorted(c.reason.split(":")[0] for c in result.checks if c.task != "flaky_s2")
    assert reasons == ["duplicate of flaky_s2", "duplicate of flaky_s2", "generation failed"]
    same = result.stats["patterns"]["cpu/same"]
    assert (same["generated"], same["duplicates"], same["kept"]) == (0, 2, 0)
    assert result.stats["patterns"]["cpu/flaky"]["dropped"] == {"generation failed": 1}
    assert "duplicate seeds" in catalogue_table(result.stats)


def test_run_checks_keeps_resumes_and_writes_records(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = SynthPatternsConfig(out=out, patterns=["cpu/aliasing_update"], instances=2, seed=0, progress=False,
                                 timing=False)

    def interrupt(check: InstanceCheck) -> None:
        raise KeyboardInterrupt

    first = run_catalogue(config, on_check=interrupt)
    assert first.interrupted and len(first.checks) == 1 and "pairs" not in first.paths
    resumed: list[InstanceCheck] = []
    second = run_catalogue(config, on_check=resumed.append)
    assert [c.seed for c in resumed] == [1]  # seed 0's check was kept from the interrupted run
    assert all(c.kept for c in second.checks), [c.reason for c in second.checks]
    stats = read_json(second.paths["stats"])["patterns"]["cpu/aliasing_update"]
    assert (stats["generated"], stats["kept"], stats["top_diagnosis_correct"]) == (2, 2, 2)
    rows = read_parquet(second.paths["pairs"])
    assert len(rows) == 2
    row = rows[0]
    assert row["found_by"] == "synthetic:pattern" and row["pattern"] == "cpu/aliasing_update"
    assert row["profile_before"]["diagnoses"][0]["name"] == "missed_vectorization"
    assert row["kernel_name"] == load_task(task_dir(out, "cpu/aliasing_update", row_seed(row))).kernel
    assert row["function_before"] in row["file_before"] and row["function_after"] in row["file_after"]
    assert row["verified_speedup"] is None  # --no-timing: correctness only


def row_seed(row: dict) -> int:
    return int(row["commit"].rsplit("@", 1)[1])


def test_bad_options_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "patterns", "--instances", "0", "--out", str(tmp_path)]) == 2
    assert "--instances must be at least 1" in capsys.readouterr().err
    assert main(["synth", "patterns", "--patterns", "cpu/nope", "--out", str(tmp_path)]) == 2
    assert "unknown pattern(s) cpu/nope" in capsys.readouterr().err
