"""The executor (perfforge/executor.py) on this machine: options checked with one error line, every item's result
or failure coming back once, and the GPUs a local cluster would give a worker each."""

from __future__ import annotations

import os

import pytest

from perfforge.errors import ConfigError
from perfforge.executor import (
    Done,
    ExecutorConfig,
    ExecutorKind,
    Failure,
    LocalExecutor,
    WorkerTally,
    visible_gpus,
)


def square_or_fail(item: int) -> int:
    if item == 3:
        raise ValueError("three is refused")
    return item * item


def worker_pid(_: int) -> int:
    return os.getpid()


@pytest.mark.parametrize(("executor", "jobs", "cluster", "message"), [
    ("ray", 1, None, "--executor must be one of local, dask, got 'ray'"),
    ("local", 0, None, "--jobs must be at least 1, got 0"),
    ("local", 2, "tcp://head:8786", "--cluster names a Dask scheduler: pass --executor dask with it"),
])
def test_bad_options_are_one_error_line(executor: str, jobs: int, cluster: str | None, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ExecutorConfig.of(executor, jobs, cluster)
    assert str(info.value) == message


def test_dask_with_a_cluster_is_accepted() -> None:
    config = ExecutorConfig.of("dask", 4, "tcp://head:8786")
    assert (config.kind, config.jobs, config.cluster) == (ExecutorKind.DASK, 4, "tcp://head:8786")


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_item_comes_back_once_and_a_failure_is_a_result_not_an_exception(jobs: int) -> None:
    """One item raises: the others still finish, and it comes back as a Failure naming its error."""
    done = list(LocalExecutor(jobs).map_unordered(square_or_fail, range(6)))
    assert sorted(d.index for d in done) == list(range(6))
    results = {d.index: d.result for d in done}
    assert {i: r for i, r in results.items() if i != 3} == {0: 0, 1: 1, 2: 4, 4: 16, 5: 25}
    failure = results[3]
    assert isinstance(failure, Failure) and failure.error == "ValueError: three is refused"
    assert "square_or_fail" in failure.detail  # the traceback, for the log
    assert [d for d in done if d.failed] == [d for d in done if d.index == 3]


def test_two_local_jobs_run_in_other_processes() -> None:
    pids = {d.result for d in LocalExecutor(2).map_unordered(worker_pid, range(4))}
    assert os.getpid() not in pids


def test_a_local_cluster_gives_each_listed_gpu_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 0")
    assert visible_gpus() == ["2", "0"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpus() == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []


def test_the_progress_line_tallies_what_each_worker_finished() -> None:
    """The line a job shows: workers up (asked of the executor at most every LIVE_EVERY_S), the busiest workers by
    items finished, the rest counted, and failures."""
    asked: list[int] = []
    now = [0.0]

    def live() -> int:
        asked.append(1)
        return 2 if len(asked) == 1 else 1

    tally = WorkerTally(live, clock=lambda: now[0])
    for index, worker in enumerate(["cpu-0", "cpu-1", "cpu-0", "gpu-0", "gpu-1", "cpu-2", "cpu-0"]):
        tally.add(Done(index, worker, index))
    tally.add(Done(7, "cpu-1", Failure("lost")))
    assert tally.line() == "2 workers up | cpu-0 3, cpu-1 1, gpu-0 1, gpu-1 1, +1 more | 1 failed"
    now[0] = WorkerTally.LIVE_EVERY_S / 2
    assert tally.line().startswith("2 workers up") and len(asked) == 1  # not asked again yet
    now[0] = WorkerTally.LIVE_EVERY_S
    assert tally.line().startswith("1 worker up |") and len(asked) == 2
    assert WorkerTally().line() == ""
