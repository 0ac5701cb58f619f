"""Loop runs in threads of one process (iterate --jobs, eval --parallel-runs): their generations batch on one
engine (inference.backends.Shared), their judges run at once on the machine's cores.

Threads cannot be stopped mid-run. On Ctrl-C (or a run's error) the runs under way finish, their files whole, so a
rerun resumes after them; no other starts; then the interrupt (or the error) goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_in_threads(work: Callable[[Item], Result], items: Iterable[Item], *, workers: int, stop: threading.Event,
                   log: Callable[[str], None], what: str) -> list[Result]:
    """work(item) for every item, `workers` at a time; the results in the items' order. `work` reads `stop` before
    it starts anything (it is set when the pool is stopping); workers 1: one after the other, in this thread."""
    if workers == 1:
        return [work(item) for item in items]
    def guarded(item: Item) -> Result:
        try:
            return work(item)
        except BaseException:
            stop.set()  # at once: pool.map reports a run's error only when the runs before it have ended
            raise

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        results = list(pool.map(guarded, items))
    except BaseException as error:
        stop.set()
        reason = "interrupted" if isinstance(error, KeyboardInterrupt) else f"stopping after an error ({error})"
        log(f"{what}: {reason}; the runs under way finish first (at most {workers})")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return results
