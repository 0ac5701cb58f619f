"""A real Dask cluster on this machine for the scale tests: a scheduler and two workers, each its own process
started by Dask's own command line (no nanny, so a worker killed stays dead, as a lost node does)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


@dataclass
class DaskCluster:
    address: str
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)

    def kill(self, name: str) -> None:
        """SIGKILL the worker `name`: what the scheduler sees of a node that died."""
        process = self.workers[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)


def _start(command: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _scheduler_address(scheduler_file: Path) -> str:
    """The address in the scheduler's file once it is whole ("" before)."""
    try:
        return json.loads(scheduler_file.read_text()).get("address", "")
    except (OSError, ValueError):
        return ""


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    scheduler_file = tmp_path / "scheduler.json"
    processes = [_start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                         "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)], tmp_path / "scheduler.log")]
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        # the scheduler writes its file in place: it can be seen empty or half written (a CI run read it empty)
        while not (address := _scheduler_address(scheduler_file)):
            assert time.monotonic() < deadline, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.1)
        cluster = DaskCluster(address)
        for name, resources in (("w1", "CPU_TIMING=1"), ("w2", "CPU_TIMING=1")):
            process = _start([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                              str(scheduler_file), "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name",
                              name, "--resources", resources,
                              # the cluster is the subject, not the judge's timing: verdicts never extended
                              "--preload", "tests.judge_on_planned_rounds"], tmp_path / f"{name}.log")
            processes.append(process)
            cluster.workers[name] = process
        from distributed import Client

        with Client(cluster.address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT_S)
        yield cluster
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=1)  # a worker whose peer was killed may not stop on SIGTERM (waited 5 s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
