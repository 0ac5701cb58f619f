"""The sandbox's filesystem fence: code under test writes beneath its own directories only (Landlock), while the
user's own builds and applications keep writing where they always do."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from perfforge.task import load_task
from profiling import landlock, sandbox
from profiling.build import build
from profiling.harness_run import run_harness

needs_landlock = pytest.mark.skipif(not sandbox.filesystem_isolation_available(),
                                    reason="this kernel has no Landlock")

WRITES = 'echo in > "$1/f" && echo extra > "$2/f" && echo dev > /dev/null && echo out > "$3/f"'


def _run_writes(tmp_path: Path, limits: sandbox.Limits | None = None) -> sandbox.RunResult:
    own, extra, outside = tmp_path / "own", tmp_path / "extra", tmp_path / "outside"
    outside.mkdir()
    return sandbox.run(["bash", "-c", WRITES, "writes", str(own), str(extra), str(outside)], cwd=own,
                       writable=[extra], limits=limits or sandbox.Limits())


@needs_landlock
def test_a_run_writes_beneath_its_own_and_the_named_directories_only(tmp_path: Path) -> None:
    result = _run_writes(tmp_path)
    assert result.returncode == 1 and "Permission denied" in result.stderr
    assert (tmp_path / "own" / "f").read_text() == "in\n" and (tmp_path / "extra" / "f").read_text() == "extra\n"
    assert not (tmp_path / "outside" / "f").exists()
    assert result.filesystem_isolated and not any("filesystem" in note for note in result.notes)


def test_the_users_own_code_writes_anywhere(tmp_path: Path) -> None:
    result = _run_writes(tmp_path, sandbox.Limits(filesystem=True))
    assert result.ok, result.reason()
    assert (tmp_path / "outside" / "f").read_text() == "out\n"
    assert not result.filesystem_isolated and not any("filesystem" in note for note in result.notes)


def test_without_landlock_the_result_says_the_filesystem_was_not_isolated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "filesystem_isolation_available", lambda: False)
    result = _run_writes(tmp_path)
    assert result.ok and not result.filesystem_isolated
    assert "filesystem not isolated: no Landlock on this kernel" in result.notes


# A candidate that appends a byte to the binary named by ORIGINAL_BIN the first time it runs: what a kernel could
# do (through calls the static checks would refuse, which run_harness does not apply) to slow the baseline down.
TAMPERING_C = """\
#include <stdio.h>
void matvec(int n, const float *m, const float *w, float *out) {
    static int done;
    if (!done) {
        done = 1;
        FILE *f = fopen(ORIGINAL_BIN, "ab");
        if (f) { fputc(0, f); fclose(f); }
    }
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc;
    }
}
"""


@needs_landlock
def test_a_candidate_cannot_rewrite_the_originals_build(cpu_task_dir: Path, tmp_path: Path) -> None:
    task = load_task(cpu_task_dir)
    original = build(task, task.source_path, tmp_path / "work")
    candidate_path = tmp_path / "candidate.c"
    candidate_path.write_text(f'#define ORIGINAL_BIN "{original.directory / "bin"}"\n' + TAMPERING_C)
    candidate = build(task, candidate_path, tmp_path / "work")
    assert original.ok and candidate.ok, candidate.reason()
    run = run_harness(task, candidate, "check", task.config(), tmp_path / "run")
    assert run.result.ok, run.result.reason()  # the write failed quietly; the candidate still computed
    assert original.intact()


def test_a_chmod_of_the_originals_binary_is_tampering(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Landlock does not cover metadata: a candidate could make the original's binary unrunnable, so the build's
    digest covers its mode."""
    task = load_task(cpu_task_dir)
    original = build(task, task.source_path, tmp_path / "work")
    (original.directory / "bin").chmod(0o644)
    assert not original.intact()


def test_no_process_outlives_its_run(tmp_path: Path) -> None:
    """A daemon (a new session, its parent gone) is re-parented to the validator and killed when the run ends."""
    daemon = '(setsid sleep 60 >/dev/null 2>&1 & echo $! > daemon.pid) ; sleep 0.2'
    result = sandbox.run(["bash", "-c", daemon], cwd=tmp_path / "own")
    pid = int((tmp_path / "own" / "daemon.pid").read_text())
    assert result.ok and not Path(f"/proc/{pid}").exists()


@pytest.mark.skipif(not sandbox.private_shared_memory_available(), reason="no mount namespace on this machine")
def test_what_a_run_leaves_in_dev_shm_is_its_own_and_goes_with_it(tmp_path: Path) -> None:
    """A cache in POSIX shared memory (a file in /dev/shm) is seen neither by a run at the same time nor by the
    machine, and is gone when its run ends: each run mounts a /dev/shm of its own."""
    name = f"/dev/shm/pf-sandbox-test-{os.getpid()}"
    (tmp_path / "w").mkdir()
    writer = sandbox.spawn(["sh", "-c", f"echo cached > {name} && cat {name} > seen && sleep 30"], cwd=tmp_path / "w")
    try:
        for _ in range(100):
            if (tmp_path / "w" / "seen").is_file() and (tmp_path / "w" / "seen").read_text():
                break
            time.sleep(0.05)
        assert (tmp_path / "w" / "seen").read_text() == "cached\n"
        reader = sandbox.run(["cat", name], cwd=tmp_path / "r")
        assert reader.returncode != 0 and "No such file" in reader.stderr
        assert not Path(name).exists()
    finally:
        writer.close()
    assert not Path(name).exists()


@needs_landlock
@pytest.mark.skipif(not sandbox.private_shared_memory_available(), reason="no mount namespace on this machine")
def test_a_run_cannot_unmount_its_dev_shm_to_reach_the_machines(tmp_path: Path) -> None:
    """Attack: the run is root in its own mount namespace; unmount the private /dev/shm (or mount another tmpfs)
    to see and write the machine's /dev/shm beneath. Landlock forbids changing the mount topology."""
    marker = Path("/dev/shm") / f"pf-host-{os.getpid()}"
    marker.write_text("host")
    try:
        result = sandbox.run(["sh", "-c", f"umount /dev/shm; umount -l /dev/shm; mount -t tmpfs x /dev/shm; "
                                          f"cat {marker}"], cwd=tmp_path / "run")
        assert "host" not in result.stdout and "No such file" in result.stderr
    finally:
        marker.unlink()


@pytest.mark.skipif(not sandbox.filesystem_isolation_available() or landlock.abi_version() < 6,
                    reason="signal scoping needs Landlock ABI 6")
def test_a_run_cannot_signal_a_process_outside_its_fence(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        result = sandbox.run(["bash", "-c", f"kill -STOP {bystander.pid}"], cwd=tmp_path / "own")
        state = Path(f"/proc/{bystander.pid}/stat").read_text().rpartition(")")[2].split()[0]
        assert result.returncode != 0 and state != "T"
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.skipif(not sandbox.filesystem_isolation_available() or os.geteuid() != 0,
                    reason="without Landlock, or as a user who may not make device nodes anyway")
def test_a_run_makes_no_device_node(tmp_path: Path) -> None:
    result = sandbox.run(["mknod", "node", "c", "1", "3"], cwd=tmp_path / "own")
    assert result.returncode != 0 and not (tmp_path / "own" / "node").exists()


@needs_landlock
def test_a_program_started_by_another_is_fenced_by_its_command(tmp_path: Path) -> None:
    """ncu starts the profiled program itself: the program's own command fences it (ncu stays unfenced)."""
    own, outside = tmp_path / "own", tmp_path / "outside"
    own.mkdir()
    outside.mkdir()
    command = landlock.fenced_command(["bash", "-c", 'echo in > "$1/f"; echo out > "$2/f"', "w", str(own),
                                       str(outside)], [own])
    result = subprocess.run(command, capture_output=True, text=True)
    assert (own / "f").read_text() == "in\n" and not (outside / "f").exists()
    assert "Permission denied" in result.stderr


def test_a_daemon_holding_the_output_pipes_times_the_run_out_and_dies(tmp_path: Path) -> None:
    daemon = '(setsid sleep 60 & echo $! > daemon.pid) ; sleep 0.2'  # its stdout is the run's pipe
    result = sandbox.run(["bash", "-c", daemon], cwd=tmp_path / "own", limits=sandbox.Limits(timeout_s=2))
    pid = int((tmp_path / "own" / "daemon.pid").read_text())
    assert result.timed_out and result.duration_s < 15 and not Path(f"/proc/{pid}").exists()


def test_a_chain_of_daemons_is_swept_to_its_end(tmp_path: Path) -> None:
    """Each generation starts the next in a new session and exits; the run returns once the last has started."""
    chain = ('n=$1; if [ "$n" -gt 0 ]; then setsid bash -c "$0" "$0" $((n-1)) >/dev/null 2>&1 &'
             ' else echo $$ > last.pid; exec sleep 60; fi')
    top = (f"setsid bash -c '{chain}' '{chain}' 30 >/dev/null 2>&1 &"
           " for i in $(seq 200); do [ -s last.pid ] && break; sleep 0.05; done")
    result = sandbox.run(["bash", "-c", top], cwd=tmp_path / "own")
    last = int((tmp_path / "own" / "last.pid").read_text())
    assert result.ok and not Path(f"/proc/{last}").exists()



def test_a_run_ending_in_another_thread_leaves_the_judges_own_tools_alone(tmp_path: Path) -> None:
    """Scenario (iterate --jobs judges tasks in threads of one process): a sandboxed run ends and sweeps this
    process's new children that no run tracks, while another thread's judge reads a candidate's object with nm. The
    tool, killed mid-read and reaped by the sweep, left its own wait returncode 0 and a listing cut short: the
    candidate's symbols unread. Started through run_trusted, it is tracked from its first instant and finishes."""
    import threading

    results: list[subprocess.CompletedProcess] = []

    def judge_reads_an_object() -> None:
        time.sleep(0.3)  # after the run started: the tool is none of the children that run had before it
        results.append(sandbox.run_trusted(["bash", "-c", "sleep 1.5; echo all symbols"], timeout_s=30, text=True))

    reader = threading.Thread(target=judge_reads_an_object)
    reader.start()
    ran = sandbox.run(["bash", "-c", "sleep 1"], cwd=tmp_path / "run")  # ends, and sweeps, while the tool reads
    reader.join()
    assert ran.returncode == 0
    (tool,) = results
    assert tool.returncode == 0 and tool.stdout == "all symbols\n"


def test_a_run_ending_leaves_the_processes_this_process_started_alone(tmp_path: Path) -> None:
    """Scenario (eval --parallel-runs, iterate --jobs): a worker thread starts a child of the judge's own process
    that no run tracks (eval's vLLM server, started by whichever run asks first; a compiler that Triton runs while a
    model generates) after a sandboxed run started. The run ended and swept: the child was killed and reaped, and its
    owner read returncode 0 from a server cut short; and a kernel process spawned before it counted it as the
    candidate's own process (a served verdict rejects those as a deviation). A child in this process's session is
    never a run's (each run starts a session of its own): it survives the sweep and is no run's. A run's own daemon
    is still swept."""
    import threading

    (tmp_path / "kernel").mkdir()
    kernel = sandbox.spawn(["sleep", "30"], cwd=tmp_path / "kernel")
    server: list[subprocess.Popen] = []

    def start_server() -> None:
        time.sleep(0.3)  # after the run started: none of the children the run had before it
        server.append(subprocess.Popen(["sleep", "30"]))

    starter = threading.Thread(target=start_server)
    starter.start()
    try:
        ran = sandbox.run(["bash", "-c", "sleep 1"], cwd=tmp_path / "run")  # ends, and sweeps, after the server
        starter.join()
        assert ran.returncode == 0
        assert server[0].poll() is None, "the sweep killed the judge's own child"
        assert server[0].pid not in kernel.others(), "the judge's own child counted as the kernel's"
    finally:
        kernel.close()
        for process in server:
            process.kill()
            process.wait()
    daemon = '(setsid sleep 60 >/dev/null 2>&1 & echo $! > daemon.pid) ; sleep 0.2'  # leaves the run's session
    assert sandbox.run(["bash", "-c", daemon], cwd=tmp_path / "d").returncode == 0
    assert not Path(f"/proc/{int((tmp_path / 'd' / 'daemon.pid').read_text())}").exists()


def test_the_judges_own_tools_are_out_of_the_terminals_reach_but_in_its_session() -> None:
    """Ctrl-C reaches the terminal's foreground process group, and eval lets the runs under way finish after it: a
    judge's tool in that group (nm reading a candidate's object) died with it, and the fair candidate was recorded
    as rejected ("the binary policy could not read the candidate's object"), kept on resume. A tool gets a process
    group of its own, and stays in the judge's session (so no sweep takes it for a run's leftover)."""
    tool = sandbox.start_tracked(["sleep", "5"])
    try:
        assert os.getpgid(tool.pid) == tool.pid != os.getpgrp()
        assert os.getsid(tool.pid) == os.getsid(0)
    finally:
        tool.kill()
        tool.wait()
        sandbox.untrack(tool.pid)
