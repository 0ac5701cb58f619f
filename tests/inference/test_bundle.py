"""`perfforge optimize --bundle`: each round's work written as a bundle, run elsewhere with
`python3 -m profiling.bundle DIR` (here: in subprocesses, as on the GPU machine), and read back by rerunning the
same optimize command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfforge.errors import PerfforgeError
from profiling.bundle import RESULTS, RUN_COMMAND, read_results, run_bundle
from tests.inference.conftest import ScriptedEndpoint, invoke, optimize_argv, read_json
from tests.inference.test_optimize_e2e import FAST_ANSWER, WRONG_ANSWER, WRONG_C
from tests.profiling.conftest import FAST_C

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAVY_MODULES = ("datasets", "transformers", "vllm", "torch")

# Runs a bundle in a fresh interpreter, then names the heavy modules that the run imported.
RUN_AND_LIST_IMPORTS = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from profiling.bundle import run_bundle\n"
    "run_bundle(Path(sys.argv[1]))\n"
    f"print(json.dumps(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules)))\n"
)


def printed_command(stdout: str, bundle: Path) -> list[str]:
    """The bundle command that optimize printed, checked to name `bundle` (absolutely, or from its parent)."""
    (line,) = [line for line in stdout.splitlines() if RUN_COMMAND in line]
    argument = line.split(RUN_COMMAND, 1)[1].split()[0]
    assert (bundle.parent / argument).resolve() == bundle.resolve(), line
    return ["-m", "profiling.bundle", argument]


def run_in_fresh_python(bundle: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST_IMPORTS, str(bundle)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bundle done in " in done.stdout
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_bundle_round_trip(cpu_task: Path, tmp_path: Path, scripted_endpoint: ScriptedEndpoint) -> None:
    out = tmp_path / "out"
    argv = optimize_argv(cpu_task, out, scripted_endpoint, "--bundle", "--no-profile-candidates", candidates=2,
                         rounds=1)
    scripted_endpoint.script([FAST_ANSWER, WRONG_ANSWER])

    # 1. only the original's profile is asked for: no model, no judging here
    code, stdout, stderr = invoke(argv)
    assert code == 0, stderr
    bundle0 = out / "bundles" / "00"
    assert f"bundle written: {bundle0}" in stdout
    printed_command(stdout, bundle0)
    assert scripted_endpoint.requests == []
    manifest = read_json(bundle0 / "bundle.json")
    assert manifest == {"format": 1, "task": "task", "candidates": {}, "profile_original": True,
                        "profile_improved": False, "time_configs": False}
    assert (bundle0 / "task" / "task.toml").is_file() and (bundle0 / "task" / "kernel.c").is_file()
    readme = (bundle0 / "README.txt").read_text()
    assert RUN_COMMAND in readme and "00" in readme
    assert not (out / "original" / "profile.json").exists() and not (out / "report.json").exists()

    # 2. run it as the GPU machine would: no model stack, no datasets
    assert run_in_fresh_python(bundle0) == []
    results = read_json(bundle0 / RESULTS)
    assert results["original_profile"]["kernel"] == "matvec" and results["candidates"] == {}

    # 3. the rerun reads the profile, asks the model for round 1, and bundles the candidates
    code, stdout, stderr = invoke(argv)
    assert code == 0, stderr
    assert len(scripted_endpoint.completions) == 1
    assert read_json(out / "original" / "profile.json") == results["original_profile"]
    bundle1 = out / "bundles" / "01"
    assert f"bundle written: {bundle1}" in stdout
    command = printed_command(stdout, bundle1)
    manifest = read_json(bundle1 / "bundle.json")
    assert manifest["candidates"] == {"c1": "candidates/c1/kernel.c", "c2": "candidates/c2/kernel.c"}
    assert manifest["profile_original"] is False
    assert (bundle1 / "candidates" / "c1" / "kernel.c").read_text() == FAST_C
    assert (bundle1 / "candidates" / "c2" / "kernel.c").read_text() == WRONG_C
    assert not list(out.glob("rounds/*/c*/attempt.json"))
    prompt = scripted_endpoint.completions[0]["messages"][1]["content"]
    assert "cache_miss_bound" in prompt  # the diagnosis of the bundle's profile

    # 3b. rerunning before the bundle ran asks nothing and points at the same bundle
    code, stdout, _ = invoke(argv)
    assert code == 0 and f"bundle written: {bundle1}" in stdout
    assert len(scripted_endpoint.completions) == 1

    # 4. run the candidates' bundle with the printed command, from the bundle's parent directory
    done = subprocess.run([sys.executable, *command], cwd=bundle1.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = read_json(bundle1 / RESULTS)
    assert results["original_profile"] is None
    assert results["candidates"]["c1"]["verdict"]["status"] == "improved"
    assert results["candidates"]["c1"]["profile"] is None  # --no-profile-candidates travels in the manifest
    assert results["candidates"]["c2"]["verdict"]["status"] == "incorrect"
    assert read_results(bundle1, ["c1", "c2"], False) == results

    # 5. the last rerun reads the verdicts and finishes with a report, without asking again
    code, stdout, stderr = invoke(argv)
    assert code == 0, stderr
    assert len(scripted_endpoint.completions) == 1
    report = read_json(out / "report.json")
    assert report["outcome"] == "improved"
    assert report["counts"] == {"improved": 1, "incorrect": 1}
    assert report["best"]["speedup"] > 1.0
    assert (out / "optimized" / "kernel.c").read_text() == FAST_C
    assert "bundle written" not in stdout and "matvec_colwalk: " in stdout
    attempt = read_json(out / "rounds" / "01" / "c1" / "attempt.json")
    assert attempt["machine"] == results["candidates"]["c1"]["verdict"]["machine"]


def test_read_results_waits_for_everything_asked(tmp_path: Path) -> None:
    assert read_results(tmp_path, [], True) is None  # not run yet
    (tmp_path / RESULTS).write_text(json.dumps({"original_profile": None, "candidates": {"c1": {}}}))
    assert read_results(tmp_path, ["c1"], True) is None  # the profile is missing
    assert read_results(tmp_path, ["c1", "c2"], False) is None  # c2 is missing
    assert read_results(tmp_path, ["c1"], False) == {"original_profile": None, "candidates": {"c1": {}}}


def test_run_bundle_refuses_a_directory_that_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(PerfforgeError, match="is not a bundle"):
        run_bundle(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(PerfforgeError, match="bundle format 99"):
        run_bundle(tmp_path)
    done = subprocess.run([sys.executable, "-m", "profiling.bundle", str(tmp_path)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("python3 -m profiling.bundle: error: ") and "bundle format 99" in done.stderr


def test_bundle_with_out_inside_the_task_directory(cpu_task: Path, scripted_endpoint: ScriptedEndpoint) -> None:
    out = cpu_task / "perfforge-out"
    code, _, stderr = invoke(optimize_argv(cpu_task, out, scripted_endpoint, "--bundle"))
    assert code == 0, stderr
    copied = out / "bundles" / "00" / "task"
    assert (copied / "task.toml").is_file() and not (copied / "perfforge-out").exists()
