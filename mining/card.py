"""Dataset cards in the Hugging Face format (YAML header + the sections of datasets' card template), written
from what a dataset directory holds: stats.json, commits.parquet and pairs.parquet. Every figure in a card is
read from the data; nothing is typed in by hand.
The "Data Fields" tables come from perfforge.record_docs.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

from perfforge.errors import DatasetError
from perfforge.io import read_json, write_text
from perfforge.naming import COMMITS_FILE, PAIRS_FILE, STATS_FILE
from perfforge.record_docs import fields_table
from perfforge.records import SCHEMA_VERSION, PairRecord

REQUIRED_FILES = (STATS_FILE, COMMITS_FILE, PAIRS_FILE)


@dataclass
class CardConfig:
    dataset: Path = field(default=Path("perfforge-out/mine"), metadata={
        "positional": True, "help": "dataset directory written by perfforge mine"})
    # Not data_cards/: run from a clone, the default would rewrite the committed demo card.
    out_dir: Path = field(default=Path("perfforge-out/cards"), metadata={
        "help": "directory the card is written to (the repository's committed cards are in data_cards/)"})
    name: str | None = field(default=None, metadata={"help": "dataset name (default: the dataset directory's name)"})


def _load(dataset: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    missing = [name for name in REQUIRED_FILES if not (dataset / name).is_file()]
    if missing:
        raise DatasetError(f"{dataset} is not a perfforge dataset (missing {', '.join(missing)}); "
                           "pass the output directory of perfforge mine")
    stats = read_json(dataset / STATS_FILE)
    major = str(stats.get("schema_version", "0")).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise DatasetError(f"{dataset} holds schema version {stats.get('schema_version')}, this perfforge reads "
                           f"{SCHEMA_VERSION}; mine it again with this version")
    commits = pq.read_table(dataset / COMMITS_FILE, columns=["repo", "is_perf", "category"]).to_pylist()
    pairs = pq.read_table(dataset / PAIRS_FILE, columns=["repo", "licence", "language", "target",
                                                              "kernel_kind", "category", "found_by"]).to_pylist()
    return stats, commits, pairs


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"


def _header(name: str, stats: dict[str, Any], pairs: list[dict[str, Any]]) -> str:
    licences = sorted({p["licence"] for p in pairs} or {r["licence"] for r in stats["repos"].values()})
    header = {
        "pretty_name": name,
        "license": [_hf_licence(lic) for lic in licences] or ["other"],
        "language": ["code"],
        "tags": ["performance", "gpu", "hpc", "kernels", "code-optimization", "perfforge"],
        "task_categories": ["text-generation"],
        "size_categories": [_size_category(len(pairs))],
        "configs": [{"config_name": "pairs", "data_files": PAIRS_FILE, "default": True},
                    {"config_name": "commits", "data_files": COMMITS_FILE}],
    }
    return "---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n"


def _hf_licence(spdx: str) -> str:
    """The Hub's licence identifiers are lower-case SPDX ids; unknown ones are "other"."""
    return "other" if spdx == "NOASSERTION" else spdx.lower()


def _table(counts: Counter[str] | dict[str, int], header: tuple[str, str]) -> str:
    rows = [f"| {header[0]} | {header[1]} |", "|---|---:|"]
    rows.extend(f"| {key} | {value} |" for key, value in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return "\n".join(rows)


def _sources_table(stats: dict[str, Any]) -> str:
    rows = ["| repository | licence | commits | candidates | perf commits | pairs | failures |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for repo, r in sorted(stats["repos"].items()):
        rows.append(f"| {repo} | {r['licence']} | {r['commits_total']} | {r['candidates']} | {r['perf_commits']} | "
                    f"{r['pairs']} | {sum(r['failures'].values())} |")
    return "\n".join(rows)


def render_card(name: str, stats: dict[str, Any], commits: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> str:
    totals = stats["totals"]
    perf_categories = Counter(c["category"] for c in commits if c["is_perf"])
    config = stats["config"]
    return "\n".join([
        _header(name, stats, pairs),
        f"# {name}\n",
        "## Dataset Description\n",
        f"Function-level before/after pairs of performance changes mined from {totals['repositories']} git "
        f"histor{'y' if totals['repositories'] == 1 else 'ies'} by perfforge's miner v{stats['miner_version']} "
        f"(schema {stats['schema_version']}), {stats['finished_at']}. {totals['pairs']} pairs from "
        f"{totals['perf_commits']} performance commits out of {totals['candidates']} candidate commits "
        f"({totals['commits_total']} commits read).\n",
        "### Supported Tasks\n",
        "Training and evaluating models that optimise code for performance (given the code before, produce the "
        "code after); studying performance changes by technique. Profiles (`profile_before`, `profile_after`) "
        "are empty until `perfforge profile` measures runnable versions.\n",
        "### Languages\n", _table(Counter(p["language"] for p in pairs), ("language", "pairs")) + "\n",
        "## Dataset Structure\n",
        "Two configurations: `pairs` (pairs.parquet, one row per changed function) and `commits` "
        "(commits.parquet, one row per commit that passed the prefilter, with its classification).\n",
        "### Sizes\n", _sources_table(stats) + "\n",
        "### Performance commits by category\n", _table(perf_categories, ("category", "commits")) + "\n",
        "### Pairs by category\n", _table(Counter(p["category"] for p in pairs), ("category", "pairs")) + "\n",
        "### Pairs by kernel kind\n", _table(Counter(p["kernel_kind"] for p in pairs), ("kernel kind", "pairs")) + "\n",
        ("Only kernels were kept (`perfforge mine --kernels-only`).\n" if config.get("kernels_only") else
         "Host functions are included (the launchers and drivers around kernels); `perfforge mine --kernels-only` "
         "keeps kernels alone.\n"),
        "### Data Fields (pairs)\n", fields_table(PairRecord) + "\n",
        "The full schema, commits and profiles included: docs/records.md in perfforge.\n",
        "## Dataset Creation\n",
        "### Source Data\n",
        "The git histories listed above (Sizes), mined at revision "
        f"`{config['rev']}`. Merges are skipped; each commit is compared with its first parent.\n",
        "### How it was built\n",
        "1. Prefilter on metadata and changed paths: commits touching kernel files (CUDA, HIP, OpenCL, C/C++, "
        "Fortran, Python kernel DSLs) outside tests, docs and vendored code, and not a mass change (more than "
        f"{stats['prefilter_max_kernel_files']} kernel files).\n"
        "2. Classification from the message and the kernel files' diff (rule evidence, weights in "
        f"mining/classify.py), threshold {config['perf_threshold']}"
        + (f"; an LLM judge ({config['judge_model']}) decided scores in [{config['judge_band_low']}, "
           f"{config['judge_band_high']}]" if config.get("judge_url") else "") + ".\n"
        "3. Function-level pairs with tree-sitter for every function changed in a kernel file, and, read from the "
        "launches, for every kernel renamed or fused into a new one (paired with the kernels it replaced); "
        "`pairing` says how each pair was matched.\n"
        f"4. Exact (formatting-blind hash) and near-duplicate (MinHash, Jaccard {config['near_duplicate_jaccard']})"
        f" removal: {totals['exact_duplicates']} exact and {totals['near_duplicates']} near duplicates dropped.\n",
        "### Annotations\n",
        "`is_perf`, `category` and `evidence` are machine labels. Their measured quality on a hand-labelled "
        "set of real commits is in perfforge's README (bench/eval_classifier.py).\n",
        "## Considerations for Using the Data\n",
        "### Known Limitations\n",
        "- Labels come from a classifier: some pairs are not performance changes, and performance commits with "
        "uninformative messages and diffs are missed.\n"
        "- A pair is one function changed by a performance commit; large commits also change functions that are "
        "not part of the optimisation.\n"
        "- Code is not compiled or run at mining time: no pair is known to be correct or faster until profiled.\n"
        f"- {totals['failures']} commits or files could not be read (missing objects, binary or huge files); "
        "stats.json lists them.\n"
        "- Records with licence NOASSERTION come from repositories whose licence was not recognised: check "
        "them before redistribution.\n",
        "## Additional Information\n",
        "### Licensing Information\n",
        "Each record carries the SPDX id of its repository's licence (`licence`); the code stays under that "
        "licence.\n",
        _table(Counter(p["licence"] for p in pairs), ("licence", "pairs")) + "\n",
    ])


def write_card(config: CardConfig) -> Path:
    stats, commits, pairs = _load(config.dataset)
    name = config.name or config.dataset.resolve().name
    path = config.out_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.md"
    write_text(path, render_card(name, stats, commits, pairs))
    return path
