"""Python (Triton) kernel processes served to the judge: the untrusted-interpreter half of a verdict.

The candidate's code shares an interpreter with the harness and can rewrite any of it, so the judge takes nothing
the process says as evidence: it stops the process after every "done" and reads the buffers from its own memory,
refuses a process that left another one running after its set-up, and reads the filter from /proc. These tests run
the example Triton task (shrunk to small configurations) under Triton's CPU interpreter; each attack's scenario is
in its docstring. The timing attacks that need a device (work still running after "done", copies in flight) are in
tests/profiling/test_judge_adversary_triton.py and run on a GPU machine.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import RuleStatus, Status
from profiling import sandbox
from profiling.static_checks import STATIC_CHECKS
from profiling.validate import validate
from tests.profiling.attack_sources import CHANNEL_FINDER

pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DIR = REPO / "profiling" / "runtime"


@pytest.fixture
def task_dir(small_row_sum: Path) -> Path:
    return small_row_sum


def judge(task_dir: Path, tmp_path: Path, source: str) -> tuple[Status, str]:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent(source))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", served=True)
    return verdict.status, verdict.reason


KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, m, n, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        acc += tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def launch(x, out, m, n):
    row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=64)
'''


def test_a_legitimate_triton_candidate_is_correct_through_the_served_path(task_dir: Path, tmp_path: Path) -> None:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(KERNEL + "\n\ndef row_sum(x, out, m, n):\n    launch(x, out, m, n)\n")
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work")  # Triton's default: served
    assert verdict.status is Status.CORRECT, verdict.reason
    assert "not timed" in verdict.reason and "interpreter" in verdict.reason
    rules = {rule.rule: rule for rule in verdict.rules}
    assert rules[20].status is RuleStatus.ENFORCED and "nothing the interpreter says is evidence" in rules[20].detail
    assert rules[22].status is RuleStatus.NOT_ENFORCED  # no object to read
    assert "before the candidate's module is imported" in rules[23].detail or not sandbox.seccomp_available()


def test_a_process_left_running_by_the_set_up_is_refused(task_dir: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: at import, start a child process through torch.multiprocessing (an attribute path the static
    check's import patterns missed; the host-code allow-list refuses it now, so the static checks are set aside
    here to test what runs). A child is not stopped with the kernel process, so it could work on the judge's
    inputs while the judge writes them. On a CPU the filter is in before the candidate's import, so the fork is
    refused; on a GPU (the filter's first stage lets Triton's compiler start processes) the judge refuses a
    process that is not alone."""
    monkeypatch.setattr("profiling.validate.run_static_checks", lambda code, task: [])
    status, reason = judge(task_dir, tmp_path, KERNEL + '''

mp = torch.multiprocessing.get_context("fork")


def _linger():
    while True:
        pass


_helper = mp.Process(target=_linger, daemon=False)
_helper.start()


def row_sum(x, out, m, n):
    launch(x, out, m, n)
''')
    assert status in (Status.REJECTED, Status.CRASHED), reason
    assert "other process" in reason or "Operation not permitted" in reason, reason


def test_outputs_finished_by_a_thread_after_done_read_as_never_written(task_dir: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: return from the call at once and let a thread compute the outputs a moment later (the harness then
    says "done" with nothing written). The judge stops every thread at "done" and reads its own mapping: the
    outputs still hold the poison. (The import of concurrent.futures is refused by the static python_policy
    first; taken out here, this tests the layer behind it, which holds wherever a thread is reached otherwise.)"""
    monkeypatch.delitem(STATIC_CHECKS._entries, "python_policy")
    status, reason = judge(task_dir, tmp_path, KERNEL + '''
from concurrent.futures import ThreadPoolExecutor

_pool = ThreadPoolExecutor(1)


def _later(x, out, m, n):
    total = 0
    for i in range(200000):
        total += i
    launch(x, out, m, n)


def row_sum(x, out, m, n):
    _pool.submit(_later, x, out, m, n)
''')
    assert status is Status.INCORRECT, reason


def test_a_done_sent_by_the_candidate_itself_is_not_evidence(task_dir: Path, tmp_path: Path) -> None:
    """Attack: find the judge's channel among the process's descriptors and say "done" before computing (so the
    judge's clock would stop early). The judge stops the process the moment it reads "done": the outputs are not
    there yet, and the harness's own "done" arrives out of turn."""
    status, reason = judge(task_dir, tmp_path, KERNEL + CHANNEL_FINDER + '''

def row_sum(x, out, m, n):
    if not _channel:
        _find_channel()
    _channel[0].send(b"done")
    launch(x, out, m, n)
''')
    assert status in (Status.INCORRECT, Status.REJECTED), reason


FILTER_PROBE = '''
import mmap, os, sys, threading
sys.path.insert(0, sys.argv[1])
import perfforge_serve
assert perfforge_serve.install_filter()
results = {}
try:
    os.fork()
    results["fork"] = "allowed"
except PermissionError:
    results["fork"] = "refused"
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    results["exec_mapping"] = "allowed"
except PermissionError:
    results["exec_mapping"] = "refused"
try:
    os.setsid()
    results["setsid"] = "allowed"
except PermissionError:
    results["setsid"] = "refused"
try:
    os.kill(os.getppid(), 0)
    results["kill_other"] = "allowed"
except PermissionError:
    results["kill_other"] = "refused"
os.kill(os.getpid(), 0)
seen = []
worker = threading.Thread(target=lambda: seen.append(sum(range(1000))))
worker.start(); worker.join()
results["thread"] = "ran" if seen == [499500] else "failed"
mmap.mmap(-1, 4096)  # plain memory still maps
print(sorted(results.items()))
'''


@pytest.mark.skipif(not sandbox.seccomp_available(), reason="needs seccomp")
def test_the_python_filter_refuses_processes_exec_mappings_and_other_processes_but_not_threads() -> None:
    result = subprocess.run([sys.executable, "-c", FILTER_PROBE, str(RUNTIME_DIR)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(sorted({"fork": "refused", "exec_mapping": "refused", "setsid": "refused",
                                                "kill_other": "refused", "thread": "ran"}.items()))


def test_a_process_the_judge_started_itself_is_not_taken_for_the_candidates(tmp_path: Path) -> None:
    """The judge's own helpers (its L2 flusher on a GPU machine; a model server or a compiler another thread
    starts) may start after a kernel process: read as an orphan that process left, one had the original refused (the
    H200 run that spawned every configuration at once). A process of the judge's own session is never a run's
    (every run starts a session of its own), tracked or not; an orphan the kernel process left (a daemon in a
    session of its own, adopted here) still is."""
    spawned = sandbox.spawn(["bash", "-c", "(setsid sleep 30 & echo $! > daemon.pid); exec sleep 30"], cwd=tmp_path)
    helper = subprocess.Popen(["sleep", "30"])
    try:
        for _ in range(100):
            if (tmp_path / "daemon.pid").is_file() and (tmp_path / "daemon.pid").read_text().strip():
                break
            time.sleep(0.05)
        daemon = int((tmp_path / "daemon.pid").read_text())
        assert helper.pid not in spawned.others() and daemon in spawned.others()
        sandbox.track(helper.pid)
        assert helper.pid not in spawned.others()
    finally:
        helper.kill()
        helper.wait()
        sandbox.untrack(helper.pid)
        spawned.close()
