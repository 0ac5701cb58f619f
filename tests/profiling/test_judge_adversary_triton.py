"""The Triton judge's red team: attacks that need a device, by an attacker who has read the harness.

A Triton candidate shares its interpreter with the Python harness and can rewrite any of it (the static check's
patterns are evaded here through attribute paths it does not list). Each test is one attack, its scenario in the
docstring, and the verdict the judge must give. Runs where torch sees a CUDA GPU and Triton is installed (skipped
elsewhere: tests never need a GPU); the CPU half of the red team is tests/profiling/test_served_python.py.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import Status
from profiling.validate import validate
from tests.profiling.attack_sources import CHANNEL_FINDER, NEUTERED_SYNC


def _gpu() -> bool:
    try:
        import torch
        import triton  # noqa: F401
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


pytestmark = pytest.mark.skipif(not _gpu(), reason="needs Triton and a CUDA GPU")

REPO = Path(__file__).resolve().parents[2]
ROW_SUM = REPO / "examples" / "tasks" / "triton" / "row_sum_strided"
FAST = (ROW_SUM / "fast.py").read_text()
ACCEPTED = (Status.IMPROVED, Status.NO_CHANGE, Status.SLOWER, Status.NEEDS_REVIEW, Status.CORRECT)

# A kernel that spins on the device: work to leave running, or to hide the real work behind.
SPIN = '''

@triton.jit
def spin_kernel(out_ptr, rounds):
    value = tl.program_id(0).to(tl.float32)
    for i in range(rounds):
        value = value * 1.0000001 + 0.5
    tl.store(out_ptr + tl.program_id(0), value)
'''


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "row_sum"
    shutil.copytree(ROW_SUM, directory)
    toml = (directory / "task.toml").read_text().replace("params = { m = 8192, n = 8192 }",
                                                        "params = { m = 4096, n = 4096 }")
    (directory / "task.toml").write_text(toml)
    return directory


@pytest.fixture
def runtime_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static checks set aside: the attacks here test the run-time fences (the host-code allow-list refuses
    their torch.cuda aliases and torch.multiprocessing before anything runs)."""
    monkeypatch.setattr("profiling.validate.run_static_checks", lambda code, task: [])


def judge(task_dir: Path, tmp_path: Path, source: str) -> tuple[Status, float | None, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent(source))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", served=True)
    return verdict.status, verdict.speedup, verdict.reason


def test_the_fast_version_is_proven_faster(task_dir: Path, tmp_path: Path) -> None:
    """Legitimate: a program per row with coalesced loads, against one thread per row reading columns. Served, a
    whole call counts the Python launch's host cost: 1.93x on the H100 on 2026-11-26 (above 2x before), so only a
    clear speedup is asked for."""
    status, speedup, reason = judge(task_dir, tmp_path, FAST)
    assert status is Status.IMPROVED and speedup and speedup > 1.5, reason


def test_identical_code_is_no_change(task_dir: Path, tmp_path: Path) -> None:
    """Legitimate: the original judged against itself reads as no change (the whole-call timing is not biased)."""
    status, _, reason = judge(task_dir, tmp_path, (ROW_SUM / "kernel.py").read_text())
    assert status is Status.NO_CHANGE, reason


@pytest.mark.usefixtures("runtime_only")
def test_work_on_a_side_stream_with_synchronisation_disabled_is_caught(task_dir: Path, tmp_path: Path) -> None:
    """Attack: disable torch.cuda.synchronize (through an alias the static check's assignment pattern misses) and
    run the kernel on a side stream behind a long spin, so the harness says "synced" and copies the outputs back
    before they exist. The judge reads a sample of the outputs the moment the process says "done"."""
    status, _, reason = judge(task_dir, tmp_path, FAST + SPIN + NEUTERED_SYNC + '''

def row_sum(x, out, m, n):
    with _cuda.stream(_side):
        spin_kernel[(132,)](_spin_buffer(x), 200000)
        row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=BLOCK_N)
''')
    assert status not in ACCEPTED, reason


@pytest.mark.parametrize("rounds", [500_000, 2_000_000, 50_000_000])
@pytest.mark.usefixtures("runtime_only")
def test_work_left_running_after_done_buys_no_speed(task_dir: Path, tmp_path: Path, rounds: int) -> None:
    """Attack: compute the right outputs, then leave a spin running on a side stream with synchronisation disabled,
    so it slows whatever runs next on the device: the original's following call. A short spin (a few ms) shows as
    the original slower right after the candidate's calls than after its own (_lingering_work); one that outlasts
    every pair of calls as the original faster once the candidate's process is killed (_original_alone). Either
    way the verdict must not be a bigger win than the same kernel's without the spin. The 2M-round spin slowed
    the original by less than those comparisons' bounds and read 2.76x against the honest 2.09x (H100) until the
    judge's own flush right after each call was timed (_device_busy_after): it waits while the spin runs."""
    honest, honest_speedup, honest_reason = judge(task_dir, tmp_path / "honest", FAST)
    assert honest is Status.IMPROVED and honest_speedup, honest_reason
    status, speedup, reason = judge(task_dir, tmp_path / "attack", FAST.replace("def row_sum(", "def _row_sum(") + SPIN
                                    + NEUTERED_SYNC + f'''

def row_sum(x, out, m, n):
    _row_sum(x, out, m, n)
    with _cuda.stream(_side):
        spin_kernel[(132,)](_spin_buffer(x), {rounds})
''')
    assert status not in ACCEPTED or (speedup or 0) <= 1.15 * honest_speedup, (reason, honest_reason)


@pytest.mark.usefixtures("runtime_only")
def test_a_done_said_early_on_the_channel_is_caught(task_dir: Path, tmp_path: Path) -> None:
    """Attack: find the judge's channel and say "done" (with "start" and "synced" before it) at the start of the
    call, so the judge's clock stops before the kernel runs."""
    status, _, reason = judge(task_dir, tmp_path, FAST.replace("def row_sum(", "def _row_sum(") + CHANNEL_FINDER + '''

def row_sum(x, out, m, n):
    if not _channel:
        _find_channel()
    for word in (b"synced", b"done"):
        _channel[0].send(word)
    _row_sum(x, out, m, n)
''')
    assert status not in ACCEPTED, reason
