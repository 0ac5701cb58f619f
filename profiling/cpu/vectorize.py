"""Which loops of the editable source gcc vectorised, and why the others were not.

The source is compiled alone (`-c`, the task's flags) with `-fopt-info-vec-all-internals=FILE`: gcc writes one
section per loop it analyses ("Analyzing loop at kernel.c:7"), ending in "optimized: loop vectorized" or in
"missed: couldn't vectorize loop" and the reason. The internals are needed for aliasing: when gcc gives up
because the run-time overlap checks would be too many, the closing reason it prints is often an unrelated
one from the last vector mode it tried ("no vectype for stmt"), while the section says
"number of versioning for alias run-time tests exceeds 10". Only gcc writes this report; other compilers get None.

A floating-point sum that gcc may not reassociate (no -ffast-math) is still reported "loop vectorized" when the
loads and the arithmetic feeding it are: the section then notes "using an in-order (fold-left) reduction", and the
adds run one lane after another in source order, a chain of scalar adds. `fold_left` records it: such a loop's
reduction is not vectorised.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import PerfforgeError
from profiling import sandbox

COMPILE_TIMEOUT_S = 120.0


class VectorizeError(PerfforgeError):
    """The editable source did not compile on its own for the vectoriser report."""


# Reason categories, matched against gcc's messages in a loop's section; the first category listed wins when
# several match. Aliasing first: it is what `restrict` fixes, and gcc's closing reason hides it.
REASON_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("possible_aliasing", ("number of versioning for alias run-time tests exceeds", "possible alias",
                           "versioning for alias not supported", "versioning not supported when optimizing for size")),
    ("control_flow", ("control flow in loop", "unsupported control flow", "multiple exits")),
    ("function_call", ("function call", "clobbers memory")),
    ("unsafe_fp_reduction", ("unsafe fp math", "reduction: not commutative")),
    ("complicated_access_pattern", ("complicated access pattern", "not suitable for gather", "not suitable for scatter",
                                    "not suitable for strided", "unsupported access")),
    ("data_dependence", ("bad data dependence", "possible dependence", "dependence distance")),
    # a scalar carried from one iteration to the next that is not a reduction (a conditional counter, a running
    # index): `out[kept++] = v` in a filter
    ("loop_carried_scalar", ("unsupported use in stmt", "unsupported phi")),
    ("unknown_trip_count", ("number of iterations cannot be computed", "not enough data-refs")),
    ("unsupported_type", ("no vectype", "unsupported data-type", "unsupported data type")),
    ("not_profitable", ("not profitable", "cost model")),
    # an outer loop of a nest: gcc vectorises innermost loops; the verdict that matters is the inner loop's
    ("outer_loop", ("multiple nested loops",)),
)
# gcc asked for run-time alias checks in a loop it then failed to vectorise: aliasing is a likely cause even when
# the closing reason names something else.
_ALIAS_SUSPECT = "versioning for alias required"

_SECTION_RE = re.compile(r"^Analyzing loop at (?P<file>[^:\n]+):(?P<line>\d+)")
_MESSAGE_RE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>optimized|missed|note): *(?P<text>.*)")


@dataclass
class LoopReport:
    """gcc's verdict on one loop of the source (all its analyses together: versions, epilogues, inlined copies)."""

    line: int
    vectorized: bool = False
    vector_bytes: int = 0  # widest vectors used (8: two floats, 32: AVX2); 0 when not vectorised
    fold_left: bool = False  # vectorised with its reduction kept in order: the reduction's adds stay scalar
    reasons: list[str] = field(default_factory=list)  # reason categories, most decisive first
    messages: list[str] = field(default_factory=list)  # gcc's "not vectorized: ..." words, first few

    @property
    def reason(self) -> str:
        return self.reasons[0] if self.reasons else ("" if self.vectorized else "other")


def classify(texts: Sequence[str]) -> list[str]:
    """Reason categories found in gcc's messages, in REASON_PATTERNS order."""
    joined = "\n".join(texts)
    return [name for name, patterns in REASON_PATTERNS if any(p in joined for p in patterns)]


@dataclass
class _Section:
    line: int
    vectorized: bool = False
    vector_bytes: int = 0
    fold_left: bool = False
    texts: list[str] = field(default_factory=list)  # every message of the section
    at_loop: list[str] = field(default_factory=list)  # the messages located at the loop's own line
    closing: list[str] = field(default_factory=list)  # the reasons given after "couldn't vectorize loop"


_VECTOR_BYTES_RE = re.compile(r"using (\d+) byte vectors")
_FOLD_LEFT = "in-order (fold-left) reduction"


def _sections(text: str, source_name: str) -> list[_Section]:
    sections: list[_Section] = []
    current: _Section | None = None
    after_missed = False
    for line in text.splitlines():
        start = _SECTION_RE.match(line)
        if start:
            current = _Section(int(start["line"])) if Path(start["file"]).name == source_name else None
            if current is not None:
                sections.append(current)
            continue
        message = _MESSAGE_RE.match(line)
        if current is None or message is None:
            continue
        body = message["text"].strip()
        current.texts.append(body)
        if int(message["line"]) == current.line:
            current.at_loop.append(body)
        if _FOLD_LEFT in body:
            current.fold_left = True
        if message["kind"] == "optimized" and body.startswith("loop vectorized"):
            current.vectorized = True
            width = _VECTOR_BYTES_RE.search(body)
            current.vector_bytes = max(current.vector_bytes, int(width.group(1)) if width else 0)
        elif body == "couldn't vectorize loop":
            after_missed = True
            continue
        elif after_missed and body.startswith("not vectorized"):
            current.closing.append(body)
        after_missed = False
    return sections


def parse_vectorization_report(text: str, source_name: str) -> dict[int, LoopReport]:
    """Per loop line of the source file named source_name, gcc's verdict."""
    loops: dict[int, LoopReport] = {}
    texts: dict[int, list[str]] = {}
    at_loop: dict[int, list[str]] = {}
    for section in _sections(text, source_name):
        report = loops.setdefault(section.line, LoopReport(section.line))
        report.vectorized = report.vectorized or section.vectorized
        report.vector_bytes = max(report.vector_bytes, section.vector_bytes)
        report.fold_left = report.fold_left or (section.vectorized and section.fold_left)
        texts.setdefault(section.line, []).extend(section.texts)
        at_loop.setdefault(section.line, []).extend(section.at_loop)
        report.messages.extend(m for m in section.closing if m not in report.messages)
    for line, report in loops.items():
        if report.vectorized:
            continue
        closing = classify(report.messages)
        everything = classify(at_loop[line])
        reasons = ["possible_aliasing"] if "possible_aliasing" in everything else []
        if not reasons and not closing and any(_ALIAS_SUSPECT in t for t in texts[line]):
            reasons.append("possible_aliasing")
        for reason in closing + everything:
            if reason not in reasons:
                reasons.append(reason)
        report.reasons = reasons or ["other"]
        report.messages = report.messages[:3]
    return loops


def vectorization_report(source: Path, compiler: str, flags: Sequence[str], scratch: Path,
                         timeout_s: float = COMPILE_TIMEOUT_S, *, lines_of: str = "") -> dict[int, LoopReport] | None:
    """Compile source alone with the task's flags and gcc's vectoriser report; None for a compiler other than
    gcc/g++ (no such report). VectorizeError when the source does not compile on its own. The verdicts are on the
    loops of source, or of the file named lines_of (a header whose code the source inlines, in application mode)."""
    if Path(compiler).name not in ("gcc", "g++", "cc", "c++") and not Path(compiler).name.startswith(("gcc-", "g++-")):
        return None
    scratch.mkdir(parents=True, exist_ok=True)
    source = source.resolve()
    report_file = scratch / "vectorize.txt"
    report_file.unlink(missing_ok=True)  # gcc appends to an existing report
    argv = [compiler, *flags, f"-fopt-info-vec-all-internals={report_file}", f"-I{source.parent}", "-c",
            str(source), "-o", str(scratch / "vectorize.o")]
    result = sandbox.run(argv, cwd=scratch, limits=sandbox.Limits(timeout_s=timeout_s, memory_bytes=None))
    if not result.ok or not report_file.is_file():
        raise VectorizeError(f"compiling {source.name} alone for gcc's vectoriser report failed: {result.reason()}")
    return parse_vectorization_report(report_file.read_text(encoding="utf-8", errors="replace"),
                                      lines_of or source.name)
