"""CPU diagnoses on real profiles: every example task's planted bottleneck ranks first on its slow version and
is gone (or less severe) on its fast version; a contract over the rules and their thresholds."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tomllib
from pathlib import Path

import pytest

from perfforge.records import Profile, Timing
from profiling.cpu.profile import profile_cpu
from profiling.diagnoses import diagnose, registry
from tests.profiling.conftest import rows_harness

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks" / "cpu"
RUNTIME = ROOT / "profiling" / "runtime"
CPU_RULES = ("cache_miss_bound", "poor_data_layout", "loop_invariant_work", "missing_parallelism",
             "poor_openmp_schedule", "missed_vectorization", "branch_mispredictions")

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                reason="CPU profiles need gcc and valgrind")


def _flags(build: dict) -> list[str]:
    return list(build["flags"]) + (["-fopenmp"] if build.get("openmp") else [])


def _profile(directory: Path, kernel_c: str, harness_c: str, kernel: str, flags: list[str], args: list[str],
             work_bytes: float | None) -> Profile:
    """Build with gcc directly, time a few calls in time mode, then profile under callgrind."""
    directory.mkdir(parents=True)
    (directory / "kernel.c").write_text(kernel_c)
    (directory / "harness.c").write_text(harness_c)
    subprocess.run(["gcc", *flags, f"-I{RUNTIME}", "harness.c", "kernel.c", "-o", "bin", "-lm"], cwd=directory,
                   check=True)
    subprocess.run([str(directory / "bin"), "time", "--seed", "0", "--out", str(directory), "--warmup", "1",
                    "--trials", "5", *args], check=True)
    times = sorted(json.loads((directory / "timing.json").read_text())["times_ms"])
    timing = Timing(statistics.median(times), times[0], times[-1], len(times), "monotonic_clock")
    profile = profile_cpu(directory / "bin", args, directory / "kernel.c", kernel, "gcc", flags,
                          directory / "scratch", timing, work_bytes=work_bytes)
    profile.diagnoses = diagnose(profile)  # as profile_task does: profilers return profiles without diagnoses
    return profile


def _task_profiles(name: str, tmp: Path) -> tuple[dict, Profile, Profile]:
    task = tomllib.loads((TASKS / name / "task.toml").read_text())
    config = next(c for c in task["configs"] if c.get("default"))
    args = [f"{key}={value}" for key, value in config["params"].items()]
    work_bytes = eval(task["work"]["bytes"], {"__builtins__": {}}, dict(config["params"]))  # task arithmetic
    harness = (TASKS / name / task["harness"]).read_text()
    profiles = [_profile(tmp / version, (TASKS / name / file).read_text(), harness, task["kernel"],
                         _flags(task["build"]), args, work_bytes)
                for version, file in (("slow", task["source"]), ("fast", task["reference"]))]
    return task, profiles[0], profiles[1]


@pytest.mark.parametrize("name", sorted(p.name for p in TASKS.iterdir() if (p / "task.toml").is_file()))
def test_planted_bottleneck_ranks_first_and_the_fix_removes_it(name: str, tmp_path: Path) -> None:
    task, slow, fast = _task_profiles(name, tmp_path)
    planted = task["bottleneck"]
    assert slow.diagnoses, f"{name}: nothing diagnosed"
    assert slow.diagnoses[0].name == planted, [(d.name, d.severity) for d in slow.diagnoses]
    top = slow.diagnoses[0]
    assert top.findings and top.evidence and top.hint
    after = {d.name: d.severity for d in fast.diagnoses}
    assert after.get(planted, 0.0) < top.severity, (name, after)
    assert sum(line.share for line in slow.hot_lines) > 0.8  # the hot lines hold most of the kernel's cost
    assert slow.machine and "valgrind" in slow.tool_versions and slow.target == "cpu"


def test_example_tasks_cover_every_rule_with_an_example() -> None:
    planted = {tomllib.loads((p / "task.toml").read_text())["bottleneck"] for p in TASKS.iterdir()}
    assert planted == set(CPU_RULES) - {"poor_openmp_schedule"}  # that one has the test below instead


TRIANGLE_C = """\
void lower(const float *a, float *out, int n) {
#pragma omp parallel for SCHEDULE
    for (int i = 0; i < n; i++) {
        float s = 0.0f;
        for (int j = 0; j <= i; j++) {
            s += a[i * n + j] * a[j];
        }
        out[i] = s;
    }
}
"""
TRIANGLE_HARNESS = rows_harness("lower", 300)


@pytest.mark.parametrize(("schedule", "expected"), [("", True), ("schedule(static)", True),
                                                     ("schedule(dynamic, 4)", False)])
def test_static_schedule_over_a_triangular_loop(schedule: str, expected: bool, tmp_path: Path) -> None:
    profile = _profile(tmp_path / "tri", TRIANGLE_C.replace("SCHEDULE", schedule), TRIANGLE_HARNESS, "lower",
                       ["-O2", "-g", "-fopenmp"], ["n=300"], None)
    names = [d.name for d in profile.diagnoses]
    if profile.counter("cpu_cores") < 2:
        pytest.skip("one core: no schedule to balance")
    assert ("poor_openmp_schedule" in names) is expected
    assert "missing_parallelism" not in names  # it has a pragma


def test_every_rule_reads_documented_thresholds() -> None:
    registry._load_rule_modules()
    thresholds = registry.thresholds_for("cpu")
    # every registered CPU rule, the catalogue's and those beyond it (avoidable work, dependences)
    names = sorted(name for name, rule in registry.RULES.items() if "cpu" in rule.targets)
    assert set(CPU_RULES) <= set(names)
    for name in names:
        rule = registry.get_rule(name)
        assert rule.targets == ("cpu",) and rule.hint
        for entry in rule.thresholds:
            assert entry in thresholds, f"{name} reads {entry}, which cpu.toml lacks"
            assert thresholds[entry].unit and len(thresholds[entry].reason) > 20
    used = {entry for name in names for entry in registry.get_rule(name).thresholds}
    assert set(thresholds) <= used, f"unused thresholds: {set(thresholds) - used}"


COMPACT_C = """\
void compact(const float *a, float *out, int n) {
    int kept = 0;
    for (long i = 0; i < (long)n * n; i++) {
        if (a[i] > 0.5f && kept < n) {
            out[kept++] = a[i];
        }
    }
}
"""
TOTAL_C = """\
void total(const float *a, float *out, int n) {
    float s = 0.0f;
    for (long i = 0; i < (long)n * n; i++) {
        s += a[i] * a[i];
    }
    out[0] = s;
}
"""


@pytest.mark.parametrize(("kernel", "code", "expected"), [
    ("compact", COMPACT_C, ["carries `kept`", "alone would race", "prefix-sum", "scan"]),
    ("total", TOTAL_C, ["reduction(+:s)"]),
])
def test_missing_parallelism_names_what_the_loop_carries(kernel: str, code: str, expected: list[str],
                                                         tmp_path: Path) -> None:
    """A filter loop (`out[kept++] = ...`) is no `#pragma omp parallel for` away from parallel: the hint says what
    the loop carries and suggests a scan; a sum only needs a reduction clause. The cores and the missing pragma
    that let the rule run are preconditions, not evidence."""
    profile = _profile(tmp_path / kernel, code, rows_harness(kernel, 500), kernel, ["-O2", "-g"], ["n=500"], None)
    if profile.counter("cpu_cores") < 2:
        pytest.skip("one core: nothing to parallelise over")
    diagnosis = next(d for d in profile.diagnoses if d.name == "missing_parallelism")
    for text in expected:
        assert text in diagnosis.hint, diagnosis.hint
    assert not any(line.startswith(("cpu_cores", "static.openmp_pragmas")) for line in diagnosis.evidence)
    assert [f.metric for f in diagnosis.findings] == ["loop_nest_share"]
    assert [p.split(" =")[0] for p in diagnosis.preconditions] == ["cpu_cores", "static.openmp_pragmas"]


def test_an_independent_loop_keeps_the_plain_pragma_hint(tmp_path: Path) -> None:
    task, slow, _ = _task_profiles("modes_missing_openmp", tmp_path)
    top = slow.diagnoses[0]
    assert top.name == "missing_parallelism" and top.hint == registry.get_rule("missing_parallelism").hint
    assert not any("carries" in line for line in top.evidence)
