"""Exact and near-duplicate removal of pairs.

Exact: the formatting-blind code hash (records.code_hash): the same change reformatted, or cherry-picked to
another branch or repository. Near: the same edit on nearly the same function (forks, vendored copies, a
change ported between backends): both the edit (token 5-grams of the changed lines, with their +/- mark) and
the function before it reach MinHash Jaccard 0.85 with an earlier pair's, the threshold the code-dedup
literature uses for near-duplicate files. LSH finds candidates by the edit; the function is then checked, so
two successive edits of one function (A->B, then B->C) stay apart. The earliest pair (by date) is kept.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Any

from datasketch import MinHash, MinHashLSH

from mining.config import NEAR_DUPLICATE_JACCARD

MINHASH_PERMUTATIONS = 128
SHINGLE_TOKENS = 5
# datasketch 2's default hashing scheme, named so that signatures rebuilt from stored values use the same one.
MINHASH_SCHEME = "affine32"
_TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\S")


@dataclass
class DedupStats:
    exact_duplicates: int = 0
    near_duplicates: int = 0


def _shingles(text: str, mark: str) -> set[str]:
    tokens = _TOKEN_RE.findall(text)
    return {mark + " ".join(tokens[i:i + SHINGLE_TOKENS]) for i in range(max(len(tokens) - SHINGLE_TOKENS + 1, 1))}


@functools.cache
def _permutations() -> tuple:
    """The permutation parameters every signature shares: drawing them for each one cost more than hashing."""
    return MinHash(num_perm=MINHASH_PERMUTATIONS, scheme=MINHASH_SCHEME).permutations


def _minhash(hashvalues: list[int] | None = None) -> MinHash:
    return MinHash(num_perm=MINHASH_PERMUTATIONS, hashvalues=hashvalues, permutations=_permutations(),
                   scheme=MINHASH_SCHEME)


def _signature(shingles: set[str]) -> MinHash:
    signature = _minhash()
    signature.update_batch([shingle.encode("utf-8", "surrogatepass") for shingle in shingles])
    return signature


def _signatures(before: str, after: str) -> tuple[MinHash, MinHash]:
    """(signature of the edit: changed lines with their mark, signature of the function before)."""
    changed = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))[2:]
    removed = "\n".join(line[1:] for line in changed if line.startswith("-") and not line.startswith("---"))
    added = "\n".join(line[1:] for line in changed if line.startswith("+") and not line.startswith("+++"))
    return _signature(_shingles(removed, "-") | _shingles(added, "+")), _signature(_shingles(before, ""))


def pair_signatures(function_before: str, function_after: str) -> list[list[int]]:
    """The pair's two MinHash signatures as plain integers, so that workers can compute them and the merge
    only compares (see deduplicate's `signatures` key)."""
    return [signature.hashvalues.tolist() for signature in _signatures(function_before, function_after)]


def deduplicate(rows: list[dict[str, Any]], threshold: float = NEAR_DUPLICATE_JACCARD) -> tuple[list[dict], DedupStats]:
    """Rows without exact or near duplicates, oldest kept. Rows need code_hash, date, repo, commit, path,
    kernel_name, function_before/after, and may carry precomputed `signatures` (pair_signatures)."""
    stats = DedupStats()
    seen_hashes: set[str] = set()
    edits = MinHashLSH(threshold=threshold, num_perm=MINHASH_PERMUTATIONS)  # indexed by the edit
    befores: dict[str, MinHash] = {}
    kept: list[dict[str, Any]] = []
    for index, row in enumerate(sorted(rows, key=lambda r: (r["date"], r["repo"], r["commit"], r["path"],
                                                              r["kernel_name"]))):
        if row["code_hash"] in seen_hashes:
            stats.exact_duplicates += 1
            continue
        seen_hashes.add(row["code_hash"])
        edit, before = _restore(row)
        if any(befores[key].jaccard(before) >= threshold for key in edits.query(edit)):
            stats.near_duplicates += 1
            continue
        edits.insert(str(index), edit)
        befores[str(index)] = before
        kept.append(row)
    return kept, stats


def _restore(row: dict[str, Any]) -> tuple[MinHash, MinHash]:
    if "signatures" not in row:
        return _signatures(row["function_before"], row["function_after"])
    edit, before = (_minhash(values) for values in row["signatures"])
    return edit, before
