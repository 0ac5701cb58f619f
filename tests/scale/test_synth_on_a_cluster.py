"""`perfforge synth patterns --executor dask` on a real local Dask cluster: the same checks as a local run, with one
of the two workers killed after the first check came back."""

from __future__ import annotations

from pathlib import Path

from synth.catalogue import run_catalogue
from synth.check import InstanceCheck
from synth.config import SynthPatternsConfig
from tests.scale.conftest import DaskCluster

FIELDS = ("task", "pattern", "seed", "kept", "reason", "verdict_status", "top_diagnosis")


def _summary(checks: list[InstanceCheck]) -> list[tuple]:
    return sorted(tuple(getattr(c, f, None) for f in FIELDS) for c in checks)


def test_a_check_batch_on_a_cluster_with_a_worker_killed_equals_a_local_run(tmp_path: Path,
                                                                           dask_cluster: DaskCluster) -> None:
    """Scenario: two CPU instances checked (correctness and diagnosis, --no-timing) on two workers; when the
    first check is back, worker w1 dies. Its instance, if it had one, is checked again on w2; every check is
    recorded once, and each reads as the local run's (kept, reason, top diagnosis)."""
    options = {"patterns": ["cpu/aliasing_update"], "instances": 2, "seed": 0, "progress": False, "timing": False}
    local = run_catalogue(SynthPatternsConfig(out=tmp_path / "local", **options), records=False)

    def kill_after_first(check: InstanceCheck) -> None:
        if dask_cluster.workers["w1"].poll() is None:
            dask_cluster.kill("w1")

    cluster = run_catalogue(SynthPatternsConfig(out=tmp_path / "cluster", executor="dask",
                                                cluster=dask_cluster.address, **options),
                            on_check=kill_after_first, records=False)
    assert dask_cluster.workers["w1"].poll() is not None
    assert len(cluster.checks) == 2 and not cluster.interrupted
    assert _summary(cluster.checks) == _summary(local.checks)
    assert all(c.kept for c in cluster.checks), [c.reason for c in cluster.checks]
