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
from profiling.device_turns import GPU_TURNS, DeviceTurns, device_lock_path


def _take_a_turn(busy: str, devices: str) -> str:
    """In a process of its own, as a synth check or a Dask worker on one GPU: the turn, then a critical section
    that fails if another process is inside it."""
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = devices
    device_turns.has_gpu_device = lambda: True  # as on a GPU machine
    with GPU_TURNS:
        try:
            Path(busy).mkdir()
        except FileExistsError:
            return "overlap"
        time.sleep(0.2)
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
    with open(device_lock_path("turns"), "a") as handle:  # the flock went with the last exit
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_lock_files_follow_the_visible_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_lock_path("turns").name == "perfforge-turns-gpu-1.lock"
    assert device_lock_path("ncu", {"CUDA_VISIBLE_DEVICES": "0,2"}).name == "perfforge-ncu-gpu-0,2.lock"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert device_lock_path("turns").name == "perfforge-turns-gpu-all.lock"
    assert device_lock_path("turns", {"CUDA_VISIBLE_DEVICES": "../x"}).name == "perfforge-turns-gpu-___x.lock"


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
