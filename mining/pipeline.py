"""`perfforge mine`: git histories in, commits.parquet + pairs.parquet + stats.json out.

Stage one runs in the main process, per repository: a `--shared` bare clone, metadata and changed paths of
every commit in one git stream, the prefilter. Its survivors are cut into chunks of `chunk_size` commits;
stage two runs the chunks in `jobs` worker processes (each with its own `--shared` clone per repository):
patches, classification, the optional LLM judge, function-level pairs. Each finished chunk is a shard file
written atomically under OUT/.work/shards, so an interrupted run redoes only unfinished chunks. The merge
deduplicates pairs across all repositories, writes the outputs atomically, then removes the shards (URL clones
in OUT/.work/repos stay for the next run).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mining.classify import Classification
from mining.config import MINER_VERSION, MineConfig
from mining.dedup import deduplicate, pair_signatures
from mining.gitlog import (
    BlobReader,
    CommitMeta,
    StreamFailure,
    iter_commit_meta,
    iter_patches,
    list_shas,
    resolve_commit,
    shared_clone,
)
from mining.judge import classify_with_judge, judge_client
from mining.licence import NOASSERTION, licence_of
from mining.pairs import CommitContext, pairs_of_commit
from mining.prefilter import MAX_KERNEL_FILES, kernel_python_files_at, prefilter
from mining.sources import Source, resolve_sources
from perfforge.errors import ConfigError, PerfforgeError
from perfforge.executor import Failure, WorkerTally, open_executor
from perfforge.io import read_json, write_json, write_parquet, write_parquet_batches
from perfforge.naming import COMMITS_FILE, PAIRS_FILE, STATS_FILE
from perfforge.records import (
    COMMIT_FEATURES,
    PAIR_FEATURES,
    SCHEMA_VERSION,
    CommitRecord,
    FoundBy,
    KernelKind,
    PairRecord,
    as_row,
)

FINGERPRINT_FILE = "fingerprint.txt"
CLONE_TIMEOUT_S = 3600  # a cluster worker's own clone of a repository URL (the driver's took as long)
# How many failure examples per repository the stats keep (all are counted).
MAX_FAILURE_EXAMPLES = 50
# Files skipped by design, counted apart from failures: kernels in languages without a parser (Metal, GLSL).
NOT_FAILURES = {"unsupported_language"}


@dataclass
class RepoPlan:
    """Stage one's result for one repository."""

    source: Source
    licence: str
    commits_total: int
    candidates: list[CommitMeta]
    kernel_files: dict[str, list[str]]
    prefilter_counts: dict[str, int]
    failures: list[dict[str, str]]
    seconds: float


@dataclass
class ChunkTask:
    """One unit of stage two: picklable, self-contained."""

    repo: str
    repo_url: str
    git_dir: Path
    licence: str
    commits: list[CommitMeta]
    kernel_files: dict[str, list[str]]
    shard_path: Path
    clones_dir: Path
    config: MineConfig


@dataclass
class MineResult:
    out: Path
    stats: dict[str, Any]
    interrupted: bool = False
    paths: dict[str, Path] = field(default_factory=dict)


# ---------------------------------------------------------------- stage one


def plan_repo(source: Source, clones_dir: Path, config: MineConfig) -> RepoPlan:
    started = time.perf_counter()
    head = resolve_commit(source.git_dir, config.rev)  # in the source: its clone has no remote-tracking branches
    if head is None:  # a repository with no commits yet gives none, and stops no other source
        return RepoPlan(source=source, licence=NOASSERTION, commits_total=0, candidates=[], kernel_files={},
                        prefilter_counts={}, failures=[], seconds=time.perf_counter() - started)
    git_dir = shared_clone(source.git_dir, clones_dir / "main" / (_key(source.name) + ".git"))
    shas = list_shas(git_dir, head)
    kernel_py_files = kernel_python_files_at(git_dir, head)
    failures: list[StreamFailure] = []
    counts: Counter[str] = Counter()
    candidates: list[CommitMeta] = []
    kernel_files: dict[str, list[str]] = {}
    for meta in iter_commit_meta(git_dir, shas, failures):
        result = prefilter(meta, kernel_py_files)
        counts[result.reason] += 1
        if result.is_candidate:
            candidates.append(meta)
            kernel_files[meta.sha] = result.kernel_files
    return RepoPlan(source=source, licence=licence_of(git_dir, head), commits_total=len(shas),
                    candidates=candidates, kernel_files=kernel_files, prefilter_counts=dict(counts),
                    failures=_failure_rows(failures),
                    seconds=time.perf_counter() - started)


def _failure_rows(failures: list[StreamFailure]) -> list[dict[str, str]]:
    return [{"commit": f.sha, "path": "", "reason": "missing_object: " + f.reason} for f in failures]


def _key(name: str) -> str:
    return name.replace("/", "+")


def chunk_tasks(plan: RepoPlan, work_dir: Path, config: MineConfig) -> list[ChunkTask]:
    tasks = []
    for start in range(0, len(plan.candidates), config.chunk_size):
        commits = plan.candidates[start:start + config.chunk_size]
        chunk_id = hashlib.sha1("".join(c.sha for c in commits).encode()).hexdigest()[:16]
        tasks.append(ChunkTask(
            repo=plan.source.name, repo_url=plan.source.url, git_dir=plan.source.git_dir, licence=plan.licence,
            commits=commits, kernel_files={c.sha: plan.kernel_files[c.sha] for c in commits},
            shard_path=work_dir / "shards" / _key(plan.source.name) / f"{chunk_id}.json",
            clones_dir=work_dir / "clones", config=config))
    return tasks


# ---------------------------------------------------------------- stage two (worker processes)

def _worker_clone(task: ChunkTask) -> Path:
    """This process's own shared clone of the task's repository, made by its first chunk in this process. A
    cluster's worker on another machine, where the driver's clone is not, clones the repository's URL itself."""
    clone = task.clones_dir / f"{socket.gethostname()}-{os.getpid()}" / (_key(task.repo) + ".git")
    if task.git_dir.is_dir() or not _is_url(task.repo_url):
        return shared_clone(task.git_dir, clone)
    if not clone.is_dir():
        clone.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", task.repo_url, str(clone)], check=True,
                       capture_output=True, timeout=CLONE_TIMEOUT_S)
    return clone


def _is_url(text: str) -> bool:
    return "://" in text or (text.startswith("git@") and ":" in text)


def run_chunk(task: ChunkTask) -> dict[str, Any]:
    """Classify the chunk's commits and extract pairs of the perf ones: the chunk's shard, which the driver writes
    (a worker of a cluster need not reach the driver's disk)."""
    started = time.perf_counter()
    git_dir = _worker_clone(task)
    config = task.config
    judge = judge_client(config)
    judge_counts: Counter[str] = Counter()
    failures: list[StreamFailure] = []
    by_sha = {c.sha: c for c in task.commits}
    commits, pairs, skips = [], [], []
    files: dict[str, list[str]] = {}  # "sha:path" -> [file_before, file_after], once per file, not per pair
    with BlobReader(git_dir) as blobs:
        for sha, diffs in iter_patches(git_dir, list(by_sha), task.kernel_files, config.max_patch_lines, failures):
            meta = by_sha[sha]
            classification, found_by = classify_with_judge(meta.message, diffs, config, judge, judge_counts)
            commit_pairs = []
            if config.pairs and classification.is_perf:
                context = CommitContext(task.repo, task.repo_url, task.licence, meta, classification.perf_score,
                                        classification.category.value, classification.evidence, found_by)
                commit_pairs, file_skips = pairs_of_commit(context, diffs, blobs, config.max_file_bytes)
                skips.extend(asdict(s) for s in file_skips)
                pairs.extend(_shard_pair(p, files) for p in commit_pairs)
            commits.append(as_row(_commit_record(task.repo, meta, task.kernel_files[sha], classification, found_by,
                                                 len(commit_pairs))))
    skips.extend(_failure_rows(failures))
    return {"commits": commits, "pairs": pairs, "files": files, "failures": skips, "judge": dict(judge_counts),
            "seconds": time.perf_counter() - started}


def _shard_pair(pair: PairRecord, files: dict[str, list[str]]) -> dict[str, Any]:
    """A pair as the shard stores it: whole files moved to the shard's file table, MinHash signatures added
    (computed here, in parallel, for the merge's deduplication)."""
    row = as_row(pair)
    before, after = row.pop("file_before"), row.pop("file_after")
    key = f"{pair.commit}:{pair.path}"
    files.setdefault(key, [before, after])
    return {**row, "file_key": key, "signatures": pair_signatures(pair.function_before, pair.function_after)}


def _record_pair(row: dict[str, Any], files: dict[str, list[str]]) -> dict[str, Any]:
    """The record of a shard pair: its files put back, the merge's fields taken out."""
    record = {k: v for k, v in row.items() if k not in ("signatures", "file_key")}
    record["file_before"], record["file_after"] = files[row["file_key"]]
    return record


def _commit_record(repo: str, meta: CommitMeta, kernel_files: list[str], classification: Classification,
                   found_by: FoundBy, n_pairs: int) -> CommitRecord:
    return CommitRecord(
        repo=repo, commit=meta.sha, parent=meta.parents[0] if meta.parents else "", date=meta.date,
        message=meta.message, files=meta.files, kernel_files=kernel_files, is_perf=classification.is_perf,
        perf_score=classification.perf_score, category=classification.category.value,
        evidence=classification.evidence, found_by=found_by.value, n_pairs=n_pairs)


# ---------------------------------------------------------------- orchestration


def check_work_dir(work_dir: Path, config: MineConfig) -> None:
    """Resume only work made under the same options; --overwrite starts afresh."""
    marker = work_dir / FINGERPRINT_FILE
    if config.overwrite and work_dir.exists():
        shutil.rmtree(work_dir)
    if marker.exists() and marker.read_text().strip() != config.fingerprint():
        raise ConfigError(f"{config.out} holds unfinished work made with other options or another miner "
                          "version; rerun with the same options to resume it, or pass --overwrite to start afresh")
    work_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(config.fingerprint() + "\n")


# Options that do not change a finished dataset: where it is, how fast and how visibly it was made.
_NOT_DATASET_OPTIONS = ("out", "jobs", "overwrite", "progress", "chunk_size", "executor", "cluster")


def _dataset_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options that shaped a dataset, comparable across runs (paths as strings, a source path resolved)."""
    chosen = {k: str(v) if isinstance(v, Path) else v for k, v in options.items() if k not in _NOT_DATASET_OPTIONS}
    chosen["sources"] = [str(Path(s).resolve()) if Path(s).exists() else s for s in chosen.get("sources", [])]
    return chosen


def check_finished(config: MineConfig) -> None:
    """A finished dataset in OUT is replaced only by a run of the same options, or with --overwrite: another
    option (--no-pairs, another source) would silently replace it with a different dataset."""
    stats_path = config.out / STATS_FILE
    if config.overwrite or not stats_path.is_file():
        return
    before = _dataset_options(read_json(stats_path).get("config", {}))
    now = _dataset_options(asdict(config))
    differing = [f"--{k.replace('_', '-')} {before[k]!r} -> {now[k]!r}" if k in before else
                 f"--{k.replace('_', '-')} (not recorded) -> {now[k]!r}" for k in now if before.get(k) != now[k]]
    if differing:
        raise ConfigError(f"{config.out} holds a finished dataset mined with other options ({'; '.join(differing)});"
                          " give another --out, or pass --overwrite to replace it")


def mine(config: MineConfig) -> MineResult:
    work_dir = config.out / ".work"
    check_finished(config)
    check_work_dir(work_dir, config)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    sources = resolve_sources(config.sources, work_dir / "repos")
    judge_client(config, check=True)
    plans = [plan_repo(source, work_dir / "clones", config) for source in sources]
    tasks = [task for plan in plans for task in chunk_tasks(plan, work_dir, config)]
    interrupted = not _run_tasks([t for t in tasks if not t.shard_path.exists()], config)
    if interrupted:
        return MineResult(out=config.out, stats={}, interrupted=True)
    stats = _merge(plans, tasks, config, started_at)
    # The outputs are whole: the resume state (clones, shards of whole source files) has done its job.
    shutil.rmtree(work_dir / "clones", ignore_errors=True)
    shutil.rmtree(work_dir / "shards", ignore_errors=True)
    (work_dir / FINGERPRINT_FILE).unlink(missing_ok=True)
    return MineResult(out=config.out, stats=stats, paths={name: config.out / name for name in
                                                           (COMMITS_FILE, PAIRS_FILE, STATS_FILE)})


def _run_tasks(todo: list[ChunkTask], config: MineConfig) -> bool:
    """Run the chunks on the executor --executor names; False if interrupted. Each shard is written here, atomically,
    as its chunk comes back, so an interruption or a lost worker loses only running chunks. A chunk that fails
    (after the executor's retries) ends the run once every other chunk is done, with its error; the rerun
    resumes."""
    total = sum(len(t.commits) for t in todo)
    failed: list[tuple[ChunkTask, Failure]] = []
    log = (lambda line: tqdm.write(line)) if config.progress and todo else None
    with tqdm(total=total, unit="commit", desc="mining", disable=not config.progress or not todo) as bar:
        try:
            with open_executor(config.executor_config(), log) as executor:
                tally = WorkerTally(executor.workers)
                for done in executor.map_unordered(run_chunk, todo):
                    task = todo[done.index]
                    tally.add(done)
                    bar.set_postfix_str(tally.line(), refresh=False)
                    if isinstance(done.result, Failure):
                        failed.append((task, done.result))
                        continue
                    write_json(task.shard_path, done.result, compact=True)
                    bar.update(len(task.commits))
        except KeyboardInterrupt:
            return False
    if failed:
        task, failure = failed[0]
        raise PerfforgeError(f"{len(failed)} of {len(todo)} chunk(s) failed; the other shards are kept and a rerun "
                             f"redoes only the failed ones. First: {task.repo} ({len(task.commits)} commits from "
                             f"{task.commits[0].sha[:12]}): {failure.error}\n{failure.detail}")
    return True


# What the merge keeps of a pair in memory: enough to deduplicate and count, not the code itself.
# The kinds --kernels-only keeps: code that runs as a kernel, not the host code around it.
KERNEL_KINDS = frozenset({KernelKind.CUDA_KERNEL, KernelKind.DEVICE_FUNCTION, KernelKind.TRITON_KERNEL,
                          KernelKind.OPENCL_KERNEL, KernelKind.OPENMP_REGION})
_PAIR_SUMMARY_FIELDS = ("repo", "commit", "date", "path", "kernel_name", "code_hash", "signatures", "category",
                        "kernel_kind", "language")


def _merge(plans: list[RepoPlan], tasks: list[ChunkTask], config: MineConfig, started_at: str) -> dict[str, Any]:
    """Deduplicate on pair summaries, then stream the kept pairs shard by shard into pairs.parquet: memory holds
    one shard's code at a time, however large the run."""
    shards_by_repo: dict[str, list[dict[str, Any]]] = {}
    summaries: list[dict[str, Any]] = []
    for shard_number, task in enumerate(tasks):
        shard = read_json(task.shard_path)
        for index, pair in enumerate(shard["pairs"]):
            summaries.append({**{k: pair[k] for k in _PAIR_SUMMARY_FIELDS}, "_at": (shard_number, index)})
        shard["n_pairs"] = len(shard.pop("pairs"))
        del shard["files"]
        shards_by_repo.setdefault(task.repo, []).append(shard)
    kept, dedup_stats = deduplicate(summaries, config.near_duplicate_jaccard)
    if config.kernels_only:
        kept = [summary for summary in kept if KernelKind(summary["kernel_kind"]) in KERNEL_KINDS]
    kept_at = {summary["_at"] for summary in kept}
    write_parquet_batches(config.out / PAIRS_FILE, _kept_pairs(tasks, kept_at), PAIR_FEATURES)
    kept_per_commit = Counter((p["repo"], p["commit"]) for p in kept)
    commits = [c for shards in shards_by_repo.values() for s in shards for c in s["commits"]]
    for commit in commits:
        commit["n_pairs"] = kept_per_commit[(commit["repo"], commit["commit"])]
    commits.sort(key=lambda c: (c["repo"], c["date"], c["commit"]))
    write_parquet(config.out / COMMITS_FILE, commits, COMMIT_FEATURES)
    stats = _stats(plans, shards_by_repo, commits, kept, len(summaries), dedup_stats, config, started_at)
    write_json(config.out / STATS_FILE, stats)
    return stats


def _kept_pairs(tasks: list[ChunkTask], kept_at: set[tuple[int, int]]) -> Iterator[list[dict[str, Any]]]:
    for shard_number, task in enumerate(tasks):
        shard = read_json(task.shard_path)
        yield [_record_pair(pair, shard["files"])
               for index, pair in enumerate(shard["pairs"]) if (shard_number, index) in kept_at]


def _repo_stats(plan: RepoPlan, shards: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> dict[str, Any]:
    failures = plan.failures + [f for s in shards for f in s["failures"]]
    repo_commits = [c for s in shards for c in s["commits"]]
    stage2_seconds = sum(s["seconds"] for s in shards)
    return {
        "url": plan.source.url, "licence": plan.licence, "commits_total": plan.commits_total,
        "prefilter": plan.prefilter_counts, "candidates": len(plan.candidates),
        "perf_commits": sum(1 for c in repo_commits if c["is_perf"]),
        "pairs_before_dedup": sum(s["n_pairs"] for s in shards),
        "pairs": sum(1 for p in pairs if p["repo"] == plan.source.name),
        "failures": dict(Counter(f["reason"].split(":")[0] for f in failures if f["reason"] not in NOT_FAILURES)),
        "files_not_parsed": dict(Counter(f["reason"] for f in failures if f["reason"] in NOT_FAILURES)),
        "failure_examples": [f for f in failures if f["reason"] not in NOT_FAILURES][:MAX_FAILURE_EXAMPLES],
        "stage1_seconds": round(plan.seconds, 3),
        "prefilter_commits_per_s": round(plan.commits_total / plan.seconds, 1) if plan.seconds else None,
        "stage2_worker_seconds": round(stage2_seconds, 3),
    }


def _stats(plans: list[RepoPlan], shards_by_repo: dict[str, list[dict[str, Any]]], commits: list[dict[str, Any]],
           pairs: list[dict[str, Any]], pairs_before_dedup: int, dedup_stats: Any, config: MineConfig,
           started_at: str) -> dict[str, Any]:
    judge: Counter[str] = Counter()
    for shards in shards_by_repo.values():
        for shard in shards:
            judge.update(shard["judge"])
    repos = {plan.source.name: _repo_stats(plan, shards_by_repo.get(plan.source.name, []), pairs) for plan in plans}
    perf = [c for c in commits if c["is_perf"]]
    return {
        "schema_version": SCHEMA_VERSION, "miner_version": MINER_VERSION, "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "prefilter_max_kernel_files": MAX_KERNEL_FILES,
        "totals": {
            "repositories": len(plans), "commits_total": sum(p.commits_total for p in plans),
            "candidates": sum(len(p.candidates) for p in plans), "perf_commits": len(perf),
            "pairs_before_dedup": pairs_before_dedup,
            "exact_duplicates": dedup_stats.exact_duplicates, "near_duplicates": dedup_stats.near_duplicates,
            "pairs": len(pairs), "failures": sum(sum(r["failures"].values()) for r in repos.values()),
        },
        "perf_commit_categories": dict(Counter(c["category"] for c in perf).most_common()),
        "pair_categories": dict(Counter(p["category"] for p in pairs).most_common()),
        "pair_kernel_kinds": dict(Counter(p["kernel_kind"] for p in pairs).most_common()),
        "pair_languages": dict(Counter(p["language"] for p in pairs).most_common()),
        "judge": dict(judge),
        "repos": repos,
    }
