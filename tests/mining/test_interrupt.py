"""`perfforge mine` stopped for real: SIGINT to its process group (a terminal's Ctrl-C) and SIGTERM to the main
process alone (kill, timeout, CI cancellation, Slurm), while its workers wait on a slow LLM judge. Each leaves no
process behind, keeps its finished shards, says so in one line, and a rerun completes with the dataset a clean run
makes.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.conftest import Spawned, json_post_server, spawn_perfforge

JUDGE_MODEL = "judge"
JUDGE_ANSWER = '{"is_perf": true, "category": "other", "reason": "scripted"}'


class SlowJudge:
    """An OpenAI-compatible judge that takes `delay_s` per answer: workers are inside a request when the signal
    comes, as they are with a real model."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.requests = 0
        self.lock = threading.Lock()

    def reply(self, path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests += 1
        time.sleep(self.delay_s)
        return 200, {"object": "chat.completion", "model": JUDGE_MODEL, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": JUDGE_ANSWER}, "finish_reason": "stop"}]}


@pytest.fixture
def judge() -> Iterator[tuple[SlowJudge, str]]:
    state = SlowJudge()
    with json_post_server(state.reply) as url:
        yield state, url


def mine_argv(out: Path, url: str) -> list[str]:
    """The embedded demo repository, every candidate sent to the judge, one commit per chunk, two workers."""
    return ["mine", "--out", str(out), "--jobs", "2", "--chunk-size", "1", "--no-progress", "--judge-url", url,
            "--judge-model", JUDGE_MODEL, "--judge-band-low", "0", "--judge-band-high", "1"]


def shards(out: Path) -> set[Path]:
    return set((out / ".work" / "shards").rglob("*.json"))


def wait_for_shards(run: Spawned, out: Path, count: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(shards(out)) < count:
        assert run.process.poll() is None, run.process.communicate()
        assert time.monotonic() < deadline, f"no {count} shards within {timeout_s} s"
        time.sleep(0.05)


def dataset(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: pq.read_table(out / name).to_pylist() for name in ("commits.parquet", "pairs.parquet")}


@pytest.mark.parametrize("how", ["sigint_to_group", "sigterm_to_main"])
def test_an_interrupted_mine_leaves_nothing_behind_and_resumes(how: str, judge: tuple[SlowJudge, str],
                                                               tmp_path: Path) -> None:
    state, url = judge
    out = tmp_path / "out"
    state.delay_s = 0.5
    run = spawn_perfforge(mine_argv(out, url), tmp_path)
    wait_for_shards(run, out, 2)
    kept = shards(out)
    sent = time.monotonic()
    if how == "sigint_to_group":  # the workers get it too, as from a terminal
        os.killpg(run.process.pid, signal.SIGINT)
    else:
        run.process.send_signal(signal.SIGTERM)
    stdout, stderr = run.process.communicate(timeout=60)
    stopped_s = time.monotonic() - sent
    assert run.process.returncode == 130, stderr
    assert stderr.strip().splitlines() == [
        f"interrupted: finished work is kept in {out}; run the same command again to resume"]
    assert run.left_behind() == []
    # Queued chunks are dropped, not finished: two workers at 0.5 s a commit stop within a request or two.
    assert stopped_s < 5, f"took {stopped_s:.1f} s to stop"
    done = shards(out)
    assert kept <= done  # nothing finished was lost

    state.delay_s, state.requests = 0.0, 0
    resumed = spawn_perfforge(mine_argv(out, url), tmp_path)
    _, stderr = resumed.process.communicate(timeout=300)
    assert resumed.process.returncode == 0, stderr
    resumed_requests, state.requests = state.requests, 0
    fresh = spawn_perfforge(mine_argv(tmp_path / "fresh", url), tmp_path)
    _, stderr = fresh.process.communicate(timeout=300)
    assert fresh.process.returncode == 0, stderr
    candidates = json.loads((tmp_path / "fresh" / "stats.json").read_text())["totals"]["candidates"]
    assert len(done) < candidates  # the signal came mid-way
    assert resumed_requests == state.requests - len(done)  # the finished chunks were not judged again
    assert dataset(out) == dataset(tmp_path / "fresh")
