"""mining.pipeline end to end on repositories the tests build: outputs, resumption, parallelism, failures."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import mining.pipeline as pipeline
import perfforge.llm_client
from mining.config import MineConfig
from mining.pipeline import mine
from perfforge.errors import BackendError, ConfigError, PerfforgeError, SourceError
from tests.conftest import NAIVE_SUM_CU, REDUCED_SUM_CU, OpenAIEndpoint, RepoBuilder, git


def run(sources: list[Path], out: Path, **options: object) -> pipeline.MineResult:
    config = MineConfig(sources=[str(s) for s in sources], out=out, progress=False, **options)
    return mine(config)


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def snapshot(git_dir: Path) -> dict[str, str]:
    """Path -> content hash of every file in a git directory."""
    return {str(p.relative_to(git_dir)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(git_dir.rglob("*")) if p.is_file()}


def test_mines_commits_and_function_pairs_with_provenance(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    """The docs-only commit is prefiltered away; the vague warp-shuffle commit becomes a cuda_kernel pair."""
    result = run([perf_repo.path], tmp_path / "out", jobs=1)
    commits = rows(result.paths["commits.parquet"])
    assert [c["commit"] for c in commits] == [perf_repo.shas[0], perf_repo.shas[2], perf_repo.shas[3]]
    perf = {c["commit"]: c["is_perf"] for c in commits}
    assert perf == {perf_repo.shas[0]: False, perf_repo.shas[2]: True, perf_repo.shas[3]: False}
    (pair,) = rows(result.paths["pairs.parquet"])
    assert (pair["repo"], pair["commit"], pair["parent"]) == ("perf_repo", perf_repo.shas[2], perf_repo.shas[1])
    assert (pair["kernel_name"], pair["kernel_kind"], pair["target"]) == ("sum_kernel", "cuda_kernel", "cuda")
    assert pair["licence"] == "MIT" and pair["found_by"] == "mined:rules"
    assert "atomicAdd(out, x[i])" in pair["function_before"] and "__shfl_down_sync" in pair["function_after"]
    assert pair["file_before"] == NAIVE_SUM_CU and pair["file_after"] == REDUCED_SUM_CU
    assert pair["diff"].startswith("--- a/src/sum.cu")
    stats = json.loads(result.paths["stats.json"].read_text())
    assert stats["totals"]["commits_total"] == 4 and stats["totals"]["candidates"] == 3
    assert stats["repos"]["perf_repo"]["prefilter"] == {"candidate": 3, "no_kernel_files": 1}
    assert stats["perf_commit_categories"] == {"atomics": 1}


def test_never_writes_to_the_source_repository(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    before = snapshot(perf_repo.path / ".git")
    run([perf_repo.path], tmp_path / "out", jobs=2)
    assert snapshot(perf_repo.path / ".git") == before
    assert git(perf_repo.path, "status", "--porcelain") == ""


def test_interrupted_run_resumes_without_redoing_finished_chunks(perf_repo: RepoBuilder, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the first chunk keeps its shard; the rerun does only the rest and equals a clean run."""
    real_run_chunk = pipeline.run_chunk
    calls: list[int] = []

    def interrupted_after_one(task: pipeline.ChunkTask) -> int:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run_chunk(task)

    monkeypatch.setattr(pipeline, "run_chunk", interrupted_after_one)
    out = tmp_path / "out"
    first = run([perf_repo.path], out, jobs=1, chunk_size=1)
    assert first.interrupted
    assert not (out / "pairs.parquet").exists()
    assert len(list((out / ".work" / "shards").rglob("*.json"))) == 1

    calls.clear()
    monkeypatch.setattr(pipeline, "run_chunk", lambda task: (calls.append(1), real_run_chunk(task))[1])
    second = run([perf_repo.path], out, jobs=1, chunk_size=1)
    assert not second.interrupted and len(calls) == 2  # three chunks, one already done

    fresh = run([perf_repo.path], tmp_path / "fresh", jobs=1, chunk_size=1)
    for name in ("commits.parquet", "pairs.parquet"):
        assert rows(second.paths[name]) == rows(fresh.paths[name])


def test_a_failing_chunk_loses_nothing_else_and_the_rerun_finishes(perf_repo: RepoBuilder, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One chunk raises (a bug, a corrupt object): every other chunk still runs and its shard is written, the run
    ends with one error line naming the chunk, and the rerun redoes only that chunk."""
    real_run_chunk = pipeline.run_chunk
    bad = perf_repo.shas[2]

    def failing(task: pipeline.ChunkTask) -> dict:
        if any(c.sha == bad for c in task.commits):
            raise RuntimeError("a corrupt object")
        return real_run_chunk(task)

    out = tmp_path / "out"
    monkeypatch.setattr(pipeline, "run_chunk", failing)
    with pytest.raises(PerfforgeError, match=rf"1 of 3 chunk\(s\) failed.*perf_repo.*{bad[:12]}.*a corrupt object"):
        run([perf_repo.path], out, jobs=1, chunk_size=1)
    assert len(list((out / ".work" / "shards").rglob("*.json"))) == 2
    calls: list[int] = []
    monkeypatch.setattr(pipeline, "run_chunk", lambda task: (calls.append(1), real_run_chunk(task))[1])
    rerun = run([perf_repo.path], out, jobs=1, chunk_size=1)
    assert len(calls) == 1
    fresh = run([perf_repo.path], tmp_path / "fresh", jobs=1, chunk_size=1)
    for name in ("commits.parquet", "pairs.parquet"):
        assert rows(rerun.paths[name]) == rows(fresh.paths[name])


def test_parallel_run_equals_serial_run(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    serial = run([perf_repo.path], tmp_path / "serial", jobs=1, chunk_size=1)
    parallel = run([perf_repo.path], tmp_path / "parallel", jobs=2, chunk_size=1)
    for name in ("commits.parquet", "pairs.parquet"):
        assert rows(serial.paths[name]) == rows(parallel.paths[name])


def test_resuming_with_other_options_is_refused_until_overwrite(perf_repo: RepoBuilder, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Unfinished work made under one threshold is not mixed with work under another."""
    def interrupted(task: pipeline.ChunkTask) -> int:
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "run_chunk", interrupted)
        assert run([perf_repo.path], out, jobs=1).interrupted
    with pytest.raises(ConfigError, match="other options.*--overwrite"):
        run([perf_repo.path], out, jobs=1, perf_threshold=0.7)
    assert not run([perf_repo.path], out, jobs=1, perf_threshold=0.7, overwrite=True).interrupted


def test_a_finished_run_leaves_only_its_outputs(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    """Shards (whole source files, gigabytes on big histories) and clones go once the outputs are written."""
    out = tmp_path / "out"
    run([perf_repo.path], out, jobs=2)
    assert sorted(p.name for p in out.iterdir()) == [".work", "commits.parquet", "pairs.parquet", "stats.json"]
    assert list((out / ".work").iterdir()) == []


def test_no_pairs_classifies_commits_only(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    result = run([perf_repo.path], tmp_path / "out", jobs=1, pairs=False)
    assert any(c["is_perf"] for c in rows(result.paths["commits.parquet"]))
    assert rows(result.paths["pairs.parquet"]) == []


def test_bad_files_and_missing_objects_are_recorded_not_fatal(make_repo, tmp_path: Path) -> None:
    """A binary .cu, a patch over the size limit and a commit whose blob is gone are counted and skipped."""
    repo = make_repo("broken")
    repo.commit("import", {"src/a.cu": NAIVE_SUM_CU, "src/blob.cu": b"\x00\x01binary", "src/big.cu": "int x;\n"})
    repo.commit("2x faster: warp shuffle reduction",
                {"src/a.cu": REDUCED_SUM_CU, "src/blob.cu": b"\x00\x02binary",
                 "src/big.cu": "".join(f"int x{i};\n" for i in range(300))})
    lost = repo.commit("tune block size for speed", {"src/b.cu": REDUCED_SUM_CU.replace("256", "128")})
    repo.commit("3x faster sum", {"src/a.cu": REDUCED_SUM_CU.replace("256", "512")})
    blob = git(repo.path, "rev-parse", f"{lost}:src/b.cu").strip()  # only the lost commit's diff needs it
    os.remove(repo.path / ".git" / "objects" / blob[:2] / blob[2:])

    result = run([repo.path], tmp_path / "out", jobs=1, max_patch_lines=100)
    stats = json.loads(result.paths["stats.json"].read_text())
    failures = stats["repos"]["broken"]["failures"]
    assert failures.get("binary_file") == 1
    assert failures.get("huge_diff") == 1
    assert failures.get("missing_object") == 1
    assert stats["repos"]["broken"]["failure_examples"][-1]["commit"] == lost
    mined = {c["commit"] for c in rows(result.paths["commits.parquet"])}
    assert repo.shas[-1] in mined and lost not in mined  # the commit after the broken one was still mined


def test_llm_judge_decides_the_uncertain_band(perf_repo: RepoBuilder, tmp_path: Path,
                                              openai_endpoint: OpenAIEndpoint) -> None:
    """Only commits whose rule score is inside the band are sent; the judged ones say so in found_by."""
    openai_endpoint.answer = '{"is_perf": true, "category": "tiling", "reason": "retiled"}'
    result = run([perf_repo.path], tmp_path / "out", jobs=1, judge_url=openai_endpoint.base_url,
                 judge_model=openai_endpoint.model, judge_band_low=0.0, judge_band_high=0.2)
    commits = rows(result.paths["commits.parquet"])
    judged = [c for c in commits if c["found_by"] == "mined:llm-judge"]
    assert judged and all(c["is_perf"] and c["category"] == "tiling" for c in judged)
    assert all(c["evidence"][0].startswith("llm_judge: perf") for c in judged)
    assert all(c["found_by"] == "mined:rules" for c in commits if c["perf_score"] > 0.75)
    stats = json.loads(result.paths["stats.json"].read_text())
    assert stats["judge"]["asked"] == stats["judge"]["answered"] == len(judged)


def test_a_judge_endpoint_that_does_not_serve_the_model_fails_before_any_work(
        perf_repo: RepoBuilder, tmp_path: Path, openai_endpoint: OpenAIEndpoint,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perfforge.llm_client, "RETRY_DELAYS_S", (0.0, 0.0))
    with pytest.raises(BackendError, match="does not serve model 'no-such-model'"):
        run([perf_repo.path], tmp_path / "out", jobs=1, judge_url=openai_endpoint.base_url,
            judge_model="no-such-model")
    assert not list((tmp_path / "out" / ".work").rglob("*.json"))


def test_a_lower_threshold_gives_every_performance_commit_a_category(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    """--perf-threshold decides is_perf and the category together: a commit the run calls perf never has the
    category none (the classifier once decided the category with its default threshold)."""
    commits = rows(run([perf_repo.path], tmp_path / "out", jobs=1, perf_threshold=0.02).paths["commits.parquet"])
    perf = [c for c in commits if c["is_perf"]]
    assert len(perf) >= 2 and any(c["perf_score"] < 0.5 for c in perf)
    assert all(c["category"] != "none" for c in perf)


def test_rev_is_read_in_the_source_so_remote_tracking_branches_count(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    """A shared clone carries no refs/remotes: origin/main is resolved in the source, then mined by sha."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(perf_repo.path), str(clone))
    git(clone, "checkout", "-q", "--detach", "HEAD~1")
    git(clone, "branch", "-q", "-D", "main")  # only refs/remotes/origin/main names the tip now
    result = run([clone], tmp_path / "out", jobs=1, rev="origin/main", pairs=False)
    assert [c["commit"] for c in rows(result.paths["commits.parquet"])][-1] == perf_repo.shas[3]


def test_a_rev_that_names_no_commit_is_one_error_naming_it(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"has no commit named 'no-such-branch'; give --rev") as caught:
        run([perf_repo.path], tmp_path / "out", jobs=1, rev="no-such-branch")
    assert "\n" not in str(caught.value)


def test_a_repository_without_commits_gives_none_and_stops_no_other(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    result = run([empty, perf_repo.path], tmp_path / "out", jobs=1, pairs=False)
    stats = json.loads(result.paths["stats.json"].read_text())
    assert stats["repos"]["empty"]["commits_total"] == 0 and stats["repos"]["perf_repo"]["commits_total"] == 4


def test_a_finished_dataset_is_not_replaced_by_a_run_of_other_options(perf_repo: RepoBuilder, tmp_path: Path) -> None:
    """`mine --no-pairs` into a finished OUT once replaced 13 pairs by none without a word: it is refused, naming
    the option, until --overwrite; the same options (or only another --jobs) mine it again."""
    out = tmp_path / "out"
    first = run([perf_repo.path], out, jobs=1)
    pairs_before = rows(first.paths["pairs.parquet"])
    assert pairs_before
    with pytest.raises(ConfigError, match=r"finished dataset mined with other options \(--pairs True -> False\); "
                                          r"give another --out, or pass --overwrite to replace it"):
        run([perf_repo.path], out, jobs=1, pairs=False)
    with pytest.raises(ConfigError, match=r"--perf-threshold 0\.5 -> 0\.9"):
        run([perf_repo.path], out, jobs=1, perf_threshold=0.9)
    assert rows(out / "pairs.parquet") == pairs_before
    assert rows(run([perf_repo.path], out, jobs=2, chunk_size=1).paths["pairs.parquet"]) == pairs_before
    assert rows(run([perf_repo.path], out, jobs=1, pairs=False, overwrite=True).paths["pairs.parquet"]) == []
