"""Function-level before/after pairs of one performance commit.

For each kernel file the commit modified: the file at the parent and at the commit (one `cat-file --batch`
process), the functions tree-sitter finds changed in it (mining.functions), and one PairRecord per function.
The launches add what matching by name misses (mining.kernel_pairing): a pair per new kernel that replaced or
fused old ones, and on a launcher's pair, the unchanged kernel it now launches with another configuration.
Every file that gives no pair for a reason other than "no function changed" is reported as a FileSkip.
"""

from __future__ import annotations

from dataclasses import dataclass

from mining.functions import LineRange, changed_functions, extract_functions, language_of
from mining.gitlog import BlobReader, CommitMeta, FileDiff, decode_text
from mining.kernel_pairing import KernelPairer, KernelReplacement, LaunchConfigChange
from perfforge.records import FoundBy, KernelKind, Pairing, PairRecord, Target, code_hash


@dataclass
class FileSkip:
    commit: str
    path: str
    reason: str  # missing_blob, binary_file, undecodable, file_too_large, huge_diff, unsupported_language


@dataclass
class CommitContext:
    """What every pair of one commit shares."""

    repo: str
    repo_url: str
    licence: str
    meta: CommitMeta
    perf_score: float
    category: str
    evidence: list[str]
    found_by: FoundBy


def decode_source(data: bytes) -> str | None:
    """Text of a source file; None for binary content (a NUL byte near the start)."""
    return None if b"\0" in data[:8000] else decode_text(data)


def target_of(language: str, kind: KernelKind, file_text: str) -> Target:
    if kind == KernelKind.TRITON_KERNEL:
        return Target.TRITON
    if kind == KernelKind.OPENCL_KERNEL or language == "opencl":
        return Target.OPENCL
    if language == "cuda":
        return Target.HIP if "hip_runtime" in file_text or "__HIP_PLATFORM" in file_text else Target.CUDA
    if language == "python":  # host code beside Python-DSL kernels runs with them
        if "triton" in file_text:
            return Target.TRITON
        if "cutlass" in file_text or "numba" in file_text:
            return Target.CUDA
    return Target.CPU


def pairs_of_commit(context: CommitContext, diffs: list[FileDiff], blobs: BlobReader,
                    max_file_bytes: int) -> tuple[list[PairRecord], list[FileSkip]]:
    pairs: list[PairRecord] = []
    skips: list[FileSkip] = []
    parent = context.meta.parents[0] if context.meta.parents else ""
    for diff in diffs:
        if diff.status != "modified" or not parent:
            continue  # added or deleted files have no before/after function
        result = _file_pairs(context, diff, parent, blobs, max_file_bytes)
        if isinstance(result, FileSkip):
            skips.append(result)
        else:
            pairs.extend(result)
    return pairs, skips


def _file_pairs(context: CommitContext, diff: FileDiff, parent: str, blobs: BlobReader,
                max_file_bytes: int) -> list[PairRecord] | FileSkip:
    sha = context.meta.sha

    def skip(reason: str) -> FileSkip:
        return FileSkip(sha, diff.path, reason)

    language = language_of(diff.path)
    if language is None:
        return skip("unsupported_language")
    if diff.is_binary:
        return skip("binary_file")
    if diff.truncated:
        return skip("huge_diff")
    before_bytes, after_bytes = blobs.read(parent, diff.path), blobs.read(sha, diff.path)
    if before_bytes is None or after_bytes is None:
        return skip("missing_blob")
    if max(len(before_bytes), len(after_bytes)) > max_file_bytes:
        return skip("file_too_large")
    before, after = decode_source(before_bytes), decode_source(after_bytes)
    if before is None or after is None:
        return skip("undecodable")
    unified = diff.patch[diff.patch.find("--- "):] + "\n"  # git's patch without its `index` line
    return _FileVersions(context, diff.path, language, before, after, unified, parent).pairs(diff.line_ranges)


@dataclass
class _FileVersions:
    """What every pair of one modified file shares."""

    context: CommitContext
    path: str
    language: str
    before: str
    after: str
    diff: str
    parent: str

    def pairs(self, line_ranges: list[LineRange]) -> list[PairRecord]:
        """A pair per changed function, then per kernel replaced under a new name, in after-file order."""
        changes = changed_functions(self.before, self.after, self.language, line_ranges)
        # Both extractions are cached by changed_functions: no file is parsed twice.
        kernels = KernelPairer(extract_functions(self.before, self.language),
                               extract_functions(self.after, self.language), self.language)
        found = []  # (line of the function after the commit, pair)
        for change in changes:
            found.append((change.after.start_line, self.pair(change.name, change.kind, change.before.code,
                                                             change.after.code, kernels.launch_config_change(change))))
        for replacement in kernels.replacements():
            new = replacement.after[0]
            found.append((new.start_line, self.pair(new.name, new.kind, replacement.code_before,
                                                    replacement.code_after, replacement)))
        return [pair for _, pair in sorted(found, key=lambda item: item[0])]

    def pair(self, name: str, kind: KernelKind, code_before: str, code_after: str,
             launches: KernelReplacement | LaunchConfigChange | None) -> PairRecord:
        """The record of one pair; launches, what the launches showed, is None for a plain match by name (its
        evidence entry follows the commit's)."""
        context, meta, language = self.context, self.context.meta, self.language
        return PairRecord(
            repo=context.repo, repo_url=context.repo_url, commit=meta.sha, parent=self.parent, date=meta.date,
            path=self.path, licence=context.licence, found_by=context.found_by.value, language=language,
            target=target_of(language, kind, self.after).value, kernel_name=name, kernel_kind=kind.value,
            function_before=code_before, function_after=code_after, file_before=self.before, file_after=self.after,
            diff=self.diff, code_hash=code_hash(code_before, code_after, language), perf_score=context.perf_score,
            category=context.category, message=meta.message,
            evidence=[*context.evidence, launches.evidence()] if launches else context.evidence,
            pairing=(launches.pairing if launches else Pairing.SAME_NAME).value,
            launched_kernels=list(launches.kernels) if isinstance(launches, LaunchConfigChange) else [])
