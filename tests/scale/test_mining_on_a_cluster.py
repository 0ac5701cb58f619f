"""`perfforge mine --executor dask` on a real local Dask cluster: the same dataset as a local run, with one of the
two workers killed mid-run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

from mining.config import MineConfig
from mining.pipeline import mine
from tests.conftest import NAIVE_SUM_CU, REDUCED_SUM_CU, RepoBuilder
from tests.scale.conftest import DaskCluster

CHANGES = 14  # commits per repository that touch the kernel: enough chunks that a kill lands mid-run


def _history(repo: RepoBuilder, name: str) -> RepoBuilder:
    repo.commit("Initial import", {"LICENSE": "MIT License\n", f"src/{name}.cu": NAIVE_SUM_CU})
    for change in range(CHANGES):
        message = ("rework reduce: warp shuffle reduction instead of per-element atomics" if change % 2 == 0 else
                   "back to the simple kernel for the tests")
        body = REDUCED_SUM_CU if change % 2 == 0 else NAIVE_SUM_CU
        repo.commit(message, {f"src/{name}.cu": body.replace("sum_kernel", f"sum_kernel_{change}")})
    return repo


def _rows(out: Path, name: str) -> list[dict]:
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: (r["repo"], r["commit"], r.get("path", "")))


def test_mining_three_repositories_on_a_cluster_with_a_worker_killed_equals_a_local_run(
        make_repo, tmp_path: Path, dask_cluster: DaskCluster) -> None:
    """Scenario: three repositories, one commit per chunk; as soon as the first shard is written, worker w1 is
    killed (SIGKILL, no nanny: a node lost). The scheduler hands its chunk to w2; the driver wrote every shard
    itself, so nothing finished is lost, and the dataset equals a one-process local run's."""
    sources = [str(_history(make_repo(name), name).path) for name in ("alpha", "beta", "gamma")]
    local = tmp_path / "local"
    mine(MineConfig(sources=sources, out=local, jobs=1, chunk_size=1, progress=False))

    out = tmp_path / "cluster"
    shards = out / ".work" / "shards"
    killed: dict[str, int] = {}

    def kill_after_first_shard() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            written = list(shards.rglob("*.json")) if shards.is_dir() else []
            if written:
                killed["shards_then"] = len(written)
                dask_cluster.kill("w1")
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_after_first_shard)
    killer.start()
    result = mine(MineConfig(sources=sources, out=out, chunk_size=1, progress=False, executor="dask",
                             cluster=dask_cluster.address))
    killer.join()
    assert not result.interrupted
    total_chunks = 3 * (CHANGES + 1)
    assert killed and killed["shards_then"] < total_chunks, "the kill came after the run: nothing was tested"
    assert dask_cluster.workers["w1"].poll() is not None  # it stayed dead
    for name in ("commits.parquet", "pairs.parquet"):
        assert _rows(out, name) == _rows(local, name)
    assert len(_rows(out, "commits.parquet")) == total_chunks
