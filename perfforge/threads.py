"""Loop runs in threads of one process (iterate --jobs, eval --parallel-runs): their generations batch on one
engine (inference.backends.Shared), their judges run at once on the machine's cores.

Threads cannot be stopped mid-run. On Ctrl-C (or a run's error) the runs under way finish, their files whole, so a
rerun resumes after them; no other starts; then the interrupt (or the error) goes on.

Three ways a Ctrl-C went astray, all measured:
- the kernel may deliver a process's SIGINT to a worker thread, and Python runs its handler (KeyboardInterrupt) only
  in the main thread: asleep in pool.map's wait without a timeout, it woke when a whole task had ended (CI: 6 of 8
  runs of an interrupted iterate finished instead of the 2 under way). The main thread here waits in WAKE_S slices.
- a KeyboardInterrupt raised inside ThreadPoolExecutor.submit, while it starts a worker, leaves that worker out of
  the pool's list, and shutdown(wait=True) returned while it still ran. Here every worker that began is waited for.
- Python 3.11's Thread.join, interrupted by the KeyboardInterrupt while the thread still runs, marks that thread
  stopped (threading.py's bpo-45274 handler releases the lock the running thread holds): is_alive() then says False
  and a second join() returns at once, so the caller went on while that worker's run was still writing (CI: an
  interrupted iterate's run had judged its candidate but not yet written its attempts when the test looked). Here
  no Thread.join is used: each worker sets its own `ended` event, and the main thread waits on those.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

WAKE_S = 0.05  # s: how late a Ctrl-C delivered to a worker thread may be seen; a wake-up costs microseconds


def map_in_threads(work: Callable[[Item], Result], items: Iterable[Item], *, workers: int, stop: threading.Event,
                   log: Callable[[str], None], what: str) -> list[Result]:
    """work(item) for every item, `workers` at a time, taken in the items' order; the results in that order. No
    worker takes an item once `stop` is set (at the first error or interrupt; `work` may read it too); workers 1:
    one after the other, in this thread."""
    if workers == 1:
        return [work(item) for item in items]
    todo = list(items)
    results: dict[int, Result] = {}
    errors: list[BaseException] = []
    taking = threading.Lock()
    taken = iter(range(len(todo)))

    def worker() -> None:
        while not stop.is_set():
            with taking:
                index = next(taken, None)
            if index is None:
                return
            try:
                results[index] = work(todo[index])
            except BaseException as error:
                errors.append(error)
                stop.set()  # at once: no worker takes another item
                return

    began = [threading.Event() for _ in range(workers)]
    ended = [threading.Event() for _ in range(workers)]

    def run(n: int) -> None:
        began[n].set()
        try:
            worker()
        finally:
            ended[n].set()

    try:
        for n in range(workers):
            threading.Thread(target=run, args=(n,), name=f"pf-{what}-{n}", daemon=True).start()
        for done in ended:
            while not done.wait(WAKE_S):
                pass
    except BaseException as error:  # a Ctrl-C in this thread
        _stop_and_wait(began, ended, stop, log, f"{what}: interrupted ({type(error).__name__})")
        raise
    if errors:
        log(f"{what}: stopped after an error ({errors[0]}); the runs under way finished first (at most {workers})")
        raise errors[0]
    return [results[index] for index in range(len(todo))]


def _stop_and_wait(began: list[threading.Event], ended: list[threading.Event], stop: threading.Event,
                   log: Callable[[str], None], reason: str) -> None:
    """Sets `stop` and waits for every worker that began. A worker whose start the interrupt cut short either never
    began or began after `stop` was set (it then takes nothing), so none with work goes unwaited for."""
    stop.set()
    log(f"{reason}; the runs under way finish first (at most {len(began)})")
    for first, last in zip(began, ended, strict=True):
        if first.is_set():
            last.wait()
