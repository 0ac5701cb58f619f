"""One executor for perfforge's long jobs: the local process pool, or a Dask distributed cluster.

    driver (perfforge mine / synth patterns / ...)             workers
      items ──submit──────────────────────────────────────────> fn(item) in a process of their own
      results <──────────────────────────────────────────────── (worker name, result) or a Failure
      writes each result itself, atomically, as it comes back

The driver alone writes files (shards, checks), so a worker needs no access to the driver's disk for its
results, and a worker that dies loses only what it was running: Dask runs its items again elsewhere (a worker's
death counts against `distributed.scheduler.allowed-failures`, 3 by default), an item that raises is retried
`retries` times, and what still fails comes back as a Failure the job reports, after every other item is done.
An interrupted job keeps what was written; a rerun submits only what is missing.

Backends:
- `local` (the default): `jobs` worker processes of this machine (in-process for 1), as before this module.
- `dask`: a Dask distributed cluster (`--cluster ADDRESS`: a running scheduler, e.g. one a Slurm allocation
  started; none: a LocalCluster of `jobs` worker processes started here and closed at the end). Dask was chosen
  over Ray because its wheels fit what reaches the GPU machines (Ray's 79 MB wheel does not, ../shared/STACK.md),
  and dask-jobqueue starts the same workers from Slurm, PBS or LSF (docs/scale.md).

GPU items (verdicts and profiles of GPU tasks) ask for the worker resource GPU=1; start one worker per GPU with
`--resources GPU=1` and CUDA_VISIBLE_DEVICES set, so two timed kernels never share a GPU. Items that time on the
CPU ask for CPU_TIMING=1 where a job says so (one per machine, `--resources CPU_TIMING=1` on one worker of each).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from perfforge.errors import ConfigError
from perfforge.gpus import machine_gpus

GPU_RESOURCE = "GPU"
CPU_TIMING_RESOURCE = "CPU_TIMING"


class ExecutorKind(StrEnum):
    LOCAL = "local"
    DASK = "dask"


@dataclass(frozen=True)
class ExecutorConfig:
    """How a job fans its items out; every long command's config carries these three fields' values."""

    kind: ExecutorKind = ExecutorKind.LOCAL
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)  # local processes, or LocalCluster workers
    cluster: str | None = None  # dask: a scheduler's address (tcp://host:8786); None: a LocalCluster started here
    retries: int = 1  # dask: runs of an item that raised, after the first; a worker's death is retried apart

    @classmethod
    def of(cls, executor: str, jobs: int, cluster: str | None) -> ExecutorConfig:
        """From a command's --executor, --jobs and --cluster, with one clear error for bad values."""
        try:
            kind = ExecutorKind(executor)
        except ValueError:
            raise ConfigError(f"--executor must be one of {', '.join(k.value for k in ExecutorKind)}, got "
                              f"{executor!r}") from None
        if jobs < 1:
            raise ConfigError(f"--jobs must be at least 1, got {jobs}")
        if cluster and kind is not ExecutorKind.DASK:
            raise ConfigError("--cluster names a Dask scheduler: pass --executor dask with it")
        return cls(kind=kind, jobs=jobs, cluster=cluster or None)


@dataclass(frozen=True)
class Failure:
    """An item that did not finish: what it raised (its last line) and the traceback, or why its worker was lost."""

    error: str
    detail: str = ""


@dataclass(frozen=True)
class Done:
    """One finished item: its index in the submitted order, the worker that ran it, and fn's result or a Failure."""

    index: int
    worker: str
    result: Any

    @property
    def failed(self) -> bool:
        return isinstance(self.result, Failure)


class WorkerTally:
    """What each worker has finished, for a job's progress line: "2 workers up | cpu-0 12, cpu-1 11 | 1 failed".
    `live` counts the workers up now (Executor.workers: a Dask scheduler's list), asked at most every LIVE_EVERY_S
    so that a fast job does not query the scheduler per item."""

    LIVE_EVERY_S = 5.0
    SHOWN = 4  # workers named on the line, busiest first; the rest as "+N more"

    def __init__(self, live: Callable[[], int] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.finished: Counter[str] = Counter()
        self.failed = 0
        self._live, self._clock = live, clock
        self._live_count: int | None = None
        self._asked_at = -float("inf")

    def add(self, done: Done) -> None:
        if done.failed:
            self.failed += 1
        else:
            self.finished[done.worker] += 1

    def line(self) -> str:
        parts = []
        if self._live is not None:
            if self._clock() - self._asked_at >= self.LIVE_EVERY_S:
                self._live_count, self._asked_at = self._live(), self._clock()
            parts.append(f"{self._live_count} worker{'s' if self._live_count != 1 else ''} up")
        busiest = self.finished.most_common()
        named = ", ".join(f"{worker} {count}" for worker, count in busiest[:self.SHOWN])
        if len(busiest) > self.SHOWN:
            named += f", +{len(busiest) - self.SHOWN} more"
        if named:
            parts.append(named)
        if self.failed:
            parts.append(f"{self.failed} failed")
        return " | ".join(parts)


def _call(fn: Callable[[Any], Any], item: Any) -> tuple[str, Any]:
    """Runs on the worker: fn(item), and this worker's name for the progress line."""
    return _worker_name(), fn(item)


def _worker_name() -> str:
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a Dask worker
        return f"{socket.gethostname()}:{os.getpid()}"
    return worker.name if isinstance(worker.name, str) else str(worker.address)


def _local_worker_signals() -> None:
    """A local worker leaves interrupts to the driver: Ctrl-C reaches the whole process group, and a worker that
    raised KeyboardInterrupt too would print its own traceback. SIGTERM (how the driver stops it) kills it at
    once, whatever handler it inherited through fork."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class LocalExecutor:
    """`jobs` processes of this machine; in-process for 1 (no pickling, the tracebacks as they are)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def describe(self) -> str:
        return f"local, {self.jobs} process(es)"

    def workers(self) -> int:
        return self.jobs

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any], *, gpu: bool = False,
                      cpu_timing: bool = False) -> Iterator[Done]:
        """fn over items, results as they finish. gpu and cpu_timing mean nothing here: the job's --jobs already
        says how many run at once on this machine."""
        items = list(items)
        if self.jobs == 1 or len(items) <= 1:
            for index, item in enumerate(items):
                yield _guarded(index, fn, item)
            return
        pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=_local_worker_signals)
        try:
            pending: dict[Future[tuple[str, Any]], int] = {pool.submit(_call, fn, item): i
                                                           for i, item in enumerate(items)}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = pending.pop(future)
                    try:
                        worker, result = future.result()
                    except Exception as exc:  # noqa: BLE001 (one item's failure is reported, not fatal)
                        yield Done(index, "local", _failure(exc))
                        continue
                    yield Done(index, worker, result)
        except BaseException:
            _stop_local_workers(pool)  # interrupted: the running items are dropped, their results never written
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        pass


def _guarded(index: int, fn: Callable[[Any], Any], item: Any) -> Done:
    try:
        worker, result = _call(fn, item)
    except Exception as exc:  # noqa: BLE001
        return Done(index, "local", _failure(exc))
    return Done(index, worker, result)


def _failure(exc: BaseException) -> Failure:
    lines = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return Failure(lines[-1] if lines else type(exc).__name__,
                   "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def _stop_local_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's processes and reap them (Python 3.14 has terminate_workers(); before it the processes
    are only reachable through the private `_processes`), then join the pool's manager thread, which sees them gone
    and ends: left running into the interpreter's exit, its wake-up pipe can close under concurrent.futures' exit
    hook, which then prints a 16-line "Exception ignored in: <module 'threading'>" traceback after the one line an
    interrupt should print (a SIGTERM-stopped `perfforge mine`, 1 CI run in about 10)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=10)
    if manager is not None:
        manager.join(timeout=10)


class DaskExecutor:
    """A Dask distributed cluster: the scheduler at `cluster`, or a LocalCluster of `jobs` processes."""

    def __init__(self, config: ExecutorConfig) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError("--executor dask needs Dask distributed: pip install 'distributed==2026.8.0'") from None
        self.retries = config.retries
        self._cluster = None
        if config.cluster:
            try:
                self.client = Client(config.cluster, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"no Dask scheduler answered at {config.cluster} ({exc}): start one (`dask "
                                  "scheduler`, docs/scale.md) or leave out --cluster for a local cluster") from None
        else:
            self._cluster = _local_cluster(config.jobs)
            self.client = Client(self._cluster)
        self.address = self.client.scheduler.address

    def describe(self) -> str:
        return f"dask at {self.address}, {self.workers()} worker(s)"

    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any], *, gpu: bool = False,
                      cpu_timing: bool = False) -> Iterator[Done]:
        from distributed import as_completed

        resources = {GPU_RESOURCE: 1} if gpu else {CPU_TIMING_RESOURCE: 1} if cpu_timing else None
        futures = {}
        for index, item in enumerate(items):
            future = self.client.submit(_call, fn, item, pure=False, retries=self.retries, resources=resources)
            futures[future] = index
        try:
            for future in as_completed(futures):
                index = futures[future]
                try:
                    worker, result = future.result()
                except Exception as exc:  # noqa: BLE001 (KilledWorker included: reported, not fatal)
                    yield Done(index, "dask", _failure(exc))
                    continue
                yield Done(index, worker, result)
        except BaseException:
            self.client.cancel(list(futures), force=True)
            raise

    def close(self) -> None:
        # A local cluster's workers and nannies drop their connections as it stops, and Dask logs each dropped
        # one with a traceback (CommClosedError): the end of a finished job, not an error of the user's.
        quiet = logging.getLogger("distributed")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()
        finally:
            quiet.setLevel(level)


def _local_cluster(jobs: int) -> Any:
    """A cluster of this machine, laid out as docs/scale.md asks of a real one: `jobs` CPU workers (the first holds
    CPU_TIMING, so timed CPU checks run one at a time) and one worker per visible GPU (GPU=1, CUDA_VISIBLE_DEVICES
    set to it), each a process under a nanny that restarts it if it dies."""
    from distributed import Nanny, Scheduler, SpecCluster

    workers: dict[str, dict[str, Any]] = {}
    for index in range(jobs):
        resources = {CPU_TIMING_RESOURCE: 1} if index == 0 else {}
        workers[f"cpu-{index}"] = {"cls": Nanny, "options": {"nthreads": 1, "resources": resources,
                                                             "name": f"cpu-{index}"}}
    for gpu in visible_gpus():
        workers[f"gpu-{gpu}"] = {"cls": Nanny, "options": {"nthreads": 1, "resources": {GPU_RESOURCE: 1},
                                                           "env": {"CUDA_VISIBLE_DEVICES": gpu}, "name": f"gpu-{gpu}"}}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None, "host": "127.0.0.1"}}
    return SpecCluster(workers=workers, scheduler=scheduler, name="perfforge-local")


def visible_gpus() -> list[str]:
    """The GPUs a local cluster gives a worker each: CUDA_VISIBLE_DEVICES's list when it is set, else the NVIDIA
    device files (/dev/nvidia0, ...); never a driver call from the driver process."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    return list(machine_gpus())


Executor = LocalExecutor | DaskExecutor


@contextmanager
def open_executor(config: ExecutorConfig, log: Callable[[str], None] | None = None) -> Iterator[Executor]:
    """The executor `config` names, closed (a LocalCluster stopped) when the job ends, however it ends."""
    executor: Executor = (DaskExecutor(config) if config.kind is ExecutorKind.DASK else LocalExecutor(config.jobs))
    if log is not None:
        log(f"executor: {executor.describe()}")
    try:
        yield executor
    finally:
        executor.close()
