"""scripts/render_pairs.py: CUDA training pairs rendered from the catalogue's templates on a machine without a GPU,
each saying it was not checked; an earlier check's profile kept for its own instance; an evaluation instance's
code never in training."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from perfforge.records import Diagnosis, Profile, Timing
from synth.check import InstanceCheck
from synth.patterns import generate
from training.examples import pair_example, read_rows

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from render_pairs import UNCHECKED, render  # noqa: E402

PATTERN = "cuda/branch_divergence"


def test_rendered_pairs_say_they_were_not_checked(tmp_path: Path) -> None:
    path, counts = render("cuda", [PATTERN], 3, 0, tmp_path / "out", avoid=range(0))
    kind, rows = read_rows(path)
    assert kind == "pairs" and counts["rendered"] == 3 and counts["checked"] == 0
    assert {row["pattern"] for row in rows} == {PATTERN}
    assert all(row["profile_before"] is None and row["verified_speedup"] is None for row in rows)
    assert all(UNCHECKED in row["evidence"] for row in rows)
    example = pair_example(rows[0], sources=["all"], token_budget=400, max_code_chars=6000)
    assert example is not None
    assert "Profile and diagnosis" not in example.prompt[1]["content"]
    assert "not checked" in example.completion[0]["content"]


def test_an_earlier_check_keeps_its_profile(tmp_path: Path) -> None:
    checks = tmp_path / "checks"
    checks.mkdir()
    check = InstanceCheck(task="branch_divergence_s1", pattern=PATTERN, seed=1, target="cuda",
                          bottleneck="branch_divergence", kept=True, diagnoses=[("branch_divergence", 0.93)],
                          profile_slow=asdict(Profile(
                              machine="NVIDIA H100 80GB HBM3", tool_versions="nvcc 13.0", target="cuda",
                              kernel="even_odd_iterate", source_file="kernel.cu",
                              timing=Timing(median_ms=0.26, p10_ms=0.26, p90_ms=0.27, trials=30, method="cuda_events"),
                              diagnoses=[Diagnosis(name="branch_divergence", severity=0.93, evidence=["16 of 32 lanes"],
                                                   hint="make it uniform")])))
    (checks / "one.json").write_text(json.dumps(check.to_dict()))
    path, counts = render("cuda", [PATTERN], 2, 0, tmp_path / "out", checks, avoid=range(0))
    _, rows = read_rows(path)
    assert counts["checked"] == 1 and counts["rendered"] == 1
    by_seed = {row["commit"]: row for row in rows}
    assert by_seed[f"{PATTERN}@1"]["profile_before"] is not None
    example = pair_example(by_seed[f"{PATTERN}@1"], sources=["all"], token_budget=400, max_code_chars=6000)
    assert example is not None and "Target this bottleneck: branch_divergence." in example.prompt[1]["content"]
    assert "branch_divergence (0.93)" in by_seed[f"{PATTERN}@1"]["evidence"][0]
    assert by_seed[f"{PATTERN}@0"]["profile_before"] is None


def test_an_instance_sharing_code_with_an_evaluation_seed_is_left_out(tmp_path: Path) -> None:
    pattern = "cuda/register_spills"  # seed 302 draws a kernel a training seed below 30 also draws
    held_out = generate(pattern, 302).slow
    twins = [s for s in range(30) if generate(pattern, s).slow == held_out]
    assert twins, "the fixture needs a training seed whose kernel an evaluation seed repeats"
    path, counts = render("cuda", [pattern], 30, 0, tmp_path / "out", avoid=range(300, 305))
    _, rows = read_rows(path)
    assert counts["held_out_code"] >= len(twins)
    assert all(row["file_before"] != held_out for row in rows)
