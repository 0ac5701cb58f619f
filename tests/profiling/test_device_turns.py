"""The GPU's turns (profiling/device_turns.py): threads of a process, processes on one GPU, and a GPU task's
profile taking its turn. A machine without a GPU stands in for one by patching has_gpu_device."""

from __future__ import annotations

import concurrent.futures
import fcntl
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from profiling import device_turns
from profiling.device_turns import GPU_TURNS, DeviceTurns, device_lock_paths


def _take_a_turn(busy: str, devices: str | None, machine: tuple[str, ...] = (), hold_s: float = 0.2) -> str:
    """In a process of its own, as a synth check or a Dask worker on one GPU: the turn, then a critical section
    that fails if another process is inside it. devices None: CUDA_VISIBLE_DEVICES unset, on a machine whose GPUs
    are `machine`."""
    import os

    if devices is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = devices
    device_turns.has_gpu_device = lambda: True  # as on a GPU machine
    device_turns.machine_gpus = lambda: machine
    with GPU_TURNS:
        try:
            Path(busy).mkdir()
        except FileExistsError:
            return "overlap"
        time.sleep(hold_s)
        Path(busy).rmdir()
    return "ok"


def test_processes_on_one_gpu_take_turns(tmp_path: Path) -> None:
    """Scenario: `perfforge synth patterns --jobs 3` on one GPU, each check timing its pair of kernels; without a
    turn across processes their timings would overlap (the in-process lock alone sees only threads)."""
    devices = f"test-{tmp_path.name}"  # a lock file of this test's own
    with concurrent.futures.ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_take_a_turn, [str(tmp_path / "busy")] * 3, [devices] * 3))
    assert results == ["ok"] * 3


def test_a_thread_nests_its_turn_and_others_wait(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(device_turns, "has_gpu_device", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"test-{tmp_path.name}")
    turns = DeviceTurns()
    entered = threading.Event()

    def other() -> None:
        with turns:
            entered.set()

    with turns, turns:  # a verdict's turn, and a nested one of the same thread: no deadlock
        waiting = threading.Thread(target=other)
        waiting.start()
        assert not entered.wait(0.3)
    assert entered.wait(10)
    waiting.join()
    with open(device_lock_paths("turns")[0], "a") as handle:  # the flock went with the last exit
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_an_unpinned_process_and_one_pinned_to_a_gpu_take_turns(tmp_path: Path) -> None:
    """Scenario: on a 2-GPU machine, `perfforge synth patterns --jobs 2` unpinned (it sees both GPUs) beside a Dask
    worker pinned to GPU 1 (CUDA_VISIBLE_DEVICES=1). Both use GPU 1; when the lock was keyed by the variable's
    text ("all" against "1") neither saw the other and their timings and ncu runs overlapped."""
    machine = (f"test-{tmp_path.name}-0", f"test-{tmp_path.name}-1")  # lock files of this test's own
    busy = str(tmp_path / "busy")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        unpinned = pool.submit(_take_a_turn, busy, None, machine, 1.5)
        pinned = pool.submit(_take_a_turn, busy, machine[1], machine, 1.5)
        assert [unpinned.result(), pinned.result()] == ["ok", "ok"]


def test_lock_files_follow_the_visible_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    def names(kind: str, env: dict[str, str] | None = None) -> list[str]:
        return [path.name for path in device_lock_paths(kind, env)]

    monkeypatch.setattr(device_turns, "machine_gpus", lambda: ("0", "1"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert names("turns") == ["perfforge-turns-gpu-1.lock"]
    assert names("ncu", {"CUDA_VISIBLE_DEVICES": "2, 0,2"}) == ["perfforge-ncu-gpu-0.lock", "perfforge-ncu-gpu-2.lock"]
    assert names("turns", {"CUDA_VISIBLE_DEVICES": ""}) == ["perfforge-turns-gpu-none.lock"]
    assert names("turns", {"CUDA_VISIBLE_DEVICES": "../x"}) == ["perfforge-turns-gpu-___x.lock"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert names("turns") == ["perfforge-turns-gpu-0.lock", "perfforge-turns-gpu-1.lock"]  # unset: every GPU
    monkeypatch.setattr(device_turns, "machine_gpus", lambda: ())
    assert names("turns") == ["perfforge-turns-gpu-all.lock"]  # none found: one lock for the machine


def test_the_machines_gpus_are_read_from_their_device_nodes(tmp_path: Path) -> None:
    from perfforge.gpus import machine_gpus

    for name in ("nvidia10", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia0", "kfd"):
        (tmp_path / name).touch()
    assert machine_gpus(tmp_path) == ("0", "2", "10")
    assert machine_gpus(tmp_path / "absent") == ()


@pytest.mark.parametrize(("target", "held"), [("cuda", True), ("cpu", False)])
def test_a_gpu_tasks_profile_is_measured_in_the_gpus_turn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          target: str, held: bool) -> None:
    """eval --parallel-runs on a GPU: an original's profile (its timing, ncu's replays) beside another run's GPU
    verdict would disturb that verdict's timing; a GPU task's profile holds the turn, a CPU task's does not."""
    from types import SimpleNamespace

    from profiling import profile as profile_module

    seen: list[bool] = []

    def measure(*_args: object) -> tuple[None, dict[str, str]]:
        other_entered = threading.Event()

        def other_judge() -> None:
            with GPU_TURNS:
                other_entered.set()

        other = threading.Thread(target=other_judge)
        other.start()
        seen.append(not other_entered.wait(0.3))  # another thread waits while the profile holds the turn
        return None, {}

    task = SimpleNamespace(target=target, name="t", source_path=tmp_path / "k", build=SimpleNamespace(compiler="x"),
                           config=lambda name=None: SimpleNamespace(name="default"))
    monkeypatch.setattr(profile_module, "build", lambda *a, **k: SimpleNamespace(ok=True))
    monkeypatch.setattr(profile_module, "profile_build_flags", lambda *_a: ())
    monkeypatch.setattr(profile_module, "measure", measure)
    monkeypatch.setattr(profile_module, "profiler_for", lambda _target: lambda *_a: SimpleNamespace())
    monkeypatch.setattr(profile_module, "attach_diagnoses", lambda _profile: None)
    profile_module.profile_task(task, tmp_path)  # type: ignore[arg-type]
    assert seen == [held]
    with GPU_TURNS:  # the other thread got its turn and gave it back
        pass
