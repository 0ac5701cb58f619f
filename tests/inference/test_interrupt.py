"""`perfforge optimize` stopped for real while it waits for round 2's answer: SIGINT to its process group (a
terminal's Ctrl-C) and SIGTERM to the main process alone (kill, timeout, CI cancellation, Slurm). Each leaves no
process behind and says so in one line; round 1's attempt is kept, and a rerun asks only for round 2 and finishes.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.conftest import json_post_server, spawn_perfforge
from tests.inference.conftest import ScriptedEndpoint, optimize_argv, write_cpu_task
from tests.inference.test_optimize_e2e import FAST_ANSWER


class HeldEndpoint(ScriptedEndpoint):
    """The scripted endpoint, except that a request arriving when no round is scripted is held (as a model still
    generating) until `release` is set, then answered 503 without being recorded."""

    held: threading.Event
    release: threading.Event

    def hold_or_reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            hold = path == "/v1/chat/completions" and not self.rounds
        if hold:
            self.held.set()
            self.release.wait(120)
            return 503, {"error": {"message": "held request released", "type": "ServiceUnavailable", "code": 503}}
        return self.reply(path, body)


@pytest.fixture
def endpoint() -> Iterator[HeldEndpoint]:
    state = HeldEndpoint()
    state.held, state.release = threading.Event(), threading.Event()
    with json_post_server(lambda path, body, headers: state.hold_or_reply(path, body)) as url:
        state.base_url = url
        try:
            yield state
        finally:
            state.release.set()


@pytest.mark.parametrize("how", ["sigint_to_group", "sigterm_to_main"])
def test_an_interrupted_optimize_leaves_nothing_behind_and_resumes(how: str, endpoint: HeldEndpoint,
                                                                   tmp_path: Path) -> None:
    task = write_cpu_task(tmp_path / "task")
    out = tmp_path / "out"
    argv = optimize_argv(task, out, endpoint, "--keep-going", "--no-profile-candidates", rounds=2)
    endpoint.script([FAST_ANSWER])
    run = spawn_perfforge(argv, tmp_path, planned_rounds=True)  # interruption is the subject, not timing
    assert endpoint.held.wait(180), run.process.communicate()
    if how == "sigint_to_group":  # every process of the run gets it, as from a terminal
        os.killpg(run.process.pid, signal.SIGINT)
    else:
        run.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, stderr = run.process.communicate(timeout=60)
    assert run.process.returncode == 130, stderr
    assert time.monotonic() - sent < 5
    assert "Traceback" not in stderr
    assert f"round 2: generating 1 candidate(s) of up to 2048 tokens with openai:{endpoint.model}@" in stderr
    assert stderr.splitlines()[-1] == (f"interrupted: finished attempts are kept in {out}; run the same command "
                                       "again to resume")
    assert run.left_behind() == []
    assert (out / "rounds" / "01" / "c1" / "attempt.json").is_file()  # round 1's verdict is kept

    endpoint.release.set()
    asked = len(endpoint.completions)
    endpoint.script([FAST_ANSWER])
    resumed = spawn_perfforge(argv, tmp_path, planned_rounds=True)
    stdout, stderr = resumed.process.communicate(timeout=300)
    assert resumed.process.returncode == 0, stderr
    assert len(endpoint.completions) == asked + 1  # only round 2 was asked again
    attempts = pq.read_table(out / "attempts.parquet").to_pylist()
    statuses = {a["round"]: a["status"] for a in attempts}
    assert sorted(statuses) == [1, 2] and statuses[1] == "improved"
    assert resumed.left_behind() == []
