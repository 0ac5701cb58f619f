"""`perfforge validate`, `profile` and `diagnose` from the command line, on an example task and a test task."""

from __future__ import annotations

import json
from pathlib import Path

from perfforge.cli import main
from perfforge.io import read_json
from perfforge.records import Profile

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "decay_loop_invariant"


def test_validate_writes_the_verdict_and_exits_by_correctness(cpu_task_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["validate", str(cpu_task_dir), "--no-timing", "--out", str(tmp_path / "v")]) == 0
    verdict = read_json(tmp_path / "v" / "verdict.json")
    assert verdict["status"] == "correct" and verdict["correct"] and len(verdict["rules"]) == 25
    assert "matvec_colwalk: correct" in capsys.readouterr().out
    wrong = tmp_path / "wrong.c"
    wrong.write_text("void matvec(int n, const float *m, const float *w, float *out) { out[0] = 1; }\n")
    assert main(["validate", str(cpu_task_dir), "--candidate", str(wrong), "--out", str(tmp_path / "w")]) == 1
    assert read_json(tmp_path / "w" / "verdict.json")["status"] == "incorrect"


def test_relative_output_directories_work(cpu_task_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Builds and runs happen in directories of their own: a relative --out (the default) must still work."""
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(cpu_task_dir), "--no-timing", "--out", "v"]) == 0
    assert main(["profile", str(cpu_task_dir), "--out", "p"]) == 0
    assert read_json(tmp_path / "v" / "verdict.json")["status"] == "correct"
    assert Profile.from_dict(read_json(tmp_path / "p" / "profile.json")).counters


def test_validate_names_a_missing_candidate(cpu_task_dir: Path, capsys) -> None:
    assert main(["validate", str(cpu_task_dir), "--candidate", "/no/such.c"]) == 2
    assert "--candidate /no/such.c does not exist" in capsys.readouterr().err


def test_bad_task_gets_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "task.toml").write_text('name = "x"\ntarget = "gpu"\n')
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'target' must be one of" in err


def test_profile_then_diagnose_the_profile(tmp_path: Path, capsys) -> None:
    assert main(["profile", str(EXAMPLE), "--out", str(tmp_path / "p"), "--sources", "counters"]) == 0
    out = capsys.readouterr().out
    assert "1. loop_invariant_work" in out and "--- prompt summary ---" in out
    profile = Profile.from_dict(read_json(tmp_path / "p" / "profile.json"))
    assert profile.target == "cpu" and profile.timing.trials > 0 and profile.counter("Ir") > 0
    assert profile.diagnoses[0].name == "loop_invariant_work" and profile.diagnoses[0].findings
    assert main(["diagnose", str(tmp_path / "p" / "profile.json"), "--json"]) == 0
    diagnoses = json.loads(capsys.readouterr().out)
    assert diagnoses[0]["name"] == "loop_invariant_work" and diagnoses[0]["findings"][0]["lines"]


def test_diagnose_refuses_what_is_not_a_profile(tmp_path: Path, capsys) -> None:
    (tmp_path / "x.json").write_text('{"colour": 1}')
    assert main(["diagnose", str(tmp_path / "x.json")]) == 2
    assert "is not a profile written by perfforge profile" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path)]) == 2
    assert "neither a task directory" in capsys.readouterr().err
