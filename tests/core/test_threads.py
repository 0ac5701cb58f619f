"""perfforge.threads.map_in_threads: runs in threads that stop starting new work at the first error."""

from __future__ import annotations

import threading
import time

import pytest

from perfforge.threads import map_in_threads


def test_no_run_starts_after_one_fails() -> None:
    """pool.map reports an error only when the items before it have ended: the stop flag was set late, and runs
    went on starting after the first failed (a dead model server would fail every later run). The flag is set the
    moment a run fails: with 2 workers, item 0 failing at once and item 1 running, no other item starts."""
    stop, started = threading.Event(), []

    def work(item: int) -> int:
        if stop.is_set():
            return -1
        started.append(item)
        if item == 0:
            raise RuntimeError("the server is gone")
        time.sleep(0.3)
        return item

    with pytest.raises(RuntimeError, match="the server is gone"):
        map_in_threads(work, range(10), workers=2, stop=stop, log=lambda _: None, what="test")
    assert set(started) <= {0, 1} and 0 in started  # item 1 may have begun before item 0 failed; no later one


def test_one_worker_runs_in_order_in_this_thread() -> None:
    here = threading.get_ident()
    assert map_in_threads(lambda i: (i, threading.get_ident() == here), range(3), workers=1,
                          stop=threading.Event(), log=lambda _: None, what="test") == [(0, True), (1, True), (2, True)]
