"""The prompt summary: a Profile's diagnoses as a short, deterministic, token-budgeted text for a model.

`summarize(profile, sources=..., token_budget=...)` condenses what the profile measured (roofline point,
diagnoses with their findings, key counters, warp-stall breakdown, per-line hot spots) into plain lines, as
Opal-style prompting does. Content is ranked by importance; the budget is met by dropping the least important
lines whole, never by cutting a line. The same profile, sources and budget give byte-identical text.

Importance, most important first (the timing line is always there):
  1. the most severe diagnosis, then its findings     (counters)
  2. the roofline point                               (roofline)
  3. the warp-stall breakdown, then the hottest line  (stalls)
  4. each further diagnosis in severity order, each followed by the next hottest line
  5. the remaining hot lines, then the key counters
The kept lines are always a prefix of that order, so a larger budget never loses a line a smaller one kept.
They are printed grouped by section (roofline, diagnoses, stalls, hot lines, counters).

Tokens are counted by `count_tokens` when given (a real tokenizer's count); otherwise by `estimate_tokens`,
a deterministic word-piece estimate that needs no tokenizer download.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

# `import ... as`, not `from perfforge.records import ...`: the from-form makes the import system probe
# records.__path__, and records' module __getattr__ imports `datasets` before it looks at the name asked for.
import perfforge.records as records
from perfforge.errors import PerfforgeError
from perfforge.targets import TARGETS

DEFAULT_TOKEN_BUDGET = 400
MAX_STALL_REASONS = 6  # named in the breakdown; the rest are summed as "other" (ncu reports ~20 reasons)
MAX_LINE_METRICS = 4  # per-line counters shown for each hot line
MAX_CODE_CHARS = 100  # a hot line's code is shortened past this: the line number finds it in the source
LETTERS_PER_TOKEN = 4  # BPE vocabularies average about four characters of English or identifiers per token
DIGITS_PER_TOKEN = 3  # Llama 3 / GPT-4-style tokenizers split digit runs into groups of at most three


class Source(StrEnum):
    """What a summary may draw on (a closed set)."""

    NONE = "none"  # nothing but the timing line
    ROOFLINE = "roofline"  # the roofline point: intensity, achieved against peak, memory- or compute-bound
    COUNTERS = "counters"  # the diagnoses with their findings, and a few key counters
    STALLS = "stalls"  # the warp-stall breakdown and the per-line hot spots
    ALL = "all"  # roofline, counters and stalls


SOURCES_HELP = f"insight sources of the prompt's profile summary: {', '.join(Source)}"

# A few counters worth a line of their own when the profile has them, per target: (tool name, short label). Each
# target's spec holds its own (perfforge/targets.py); this view by name serves callers that look a target up.
KEY_COUNTERS: dict[str, tuple[tuple[str, str], ...]] = {spec.name: spec.key_counters for spec in TARGETS.values()}

_SECTIONS = ("roofline", "diagnoses", "stalls", "hot lines", "counters")
_SECTION_TITLES = {"diagnoses": "bottlenecks (most severe first):", "hot lines": "hot lines:"}
_WORD_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]")


@dataclass(frozen=True)
class Item:
    """One line of a summary and the section it is printed in."""

    section: str
    text: str


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: each run of letters counts ceil(len/4), each run of digits ceil(len/3),
    every other non-space character one; white space is free (tokenizers attach it to the next piece).
    An estimate, not measured against a tokenizer here: pass summarize() a real tokenizer's count where the
    budget must be exact."""
    total = 0
    for piece in _WORD_PIECES.findall(text):
        if piece[0].isalpha():
            total += math.ceil(len(piece) / LETTERS_PER_TOKEN)
        elif piece[0].isdigit():
            total += math.ceil(len(piece) / DIGITS_PER_TOKEN)
        else:
            total += 1
    return total


def split_sources(sources: Iterable[str]) -> list[str]:
    """The names of a --sources option, as given (`--sources roofline counters`) or comma-joined
    (`--sources roofline,counters`), checked: an unknown name is an error before any work is done."""
    names = [name.strip() for item in sources for name in str(item).split(",")]
    parse_sources(names)
    return names


def parse_sources(sources: Iterable[str] | str) -> frozenset[Source]:
    """The sources named (a comma-separated string or an iterable of names), with "all" expanded."""
    names = sources.split(",") if isinstance(sources, str) else list(sources)
    names = [str(n).strip().lower() for n in names]
    valid = [s.value for s in Source]
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        problem = f"unknown summary source(s) {', '.join(map(repr, unknown))}" if unknown else "no summary source"
        raise PerfforgeError(f"{problem}; valid sources: {', '.join(valid)}")
    chosen = {Source(n) for n in names} - {Source.NONE}
    if Source.ALL in chosen:
        return frozenset({Source.ROOFLINE, Source.COUNTERS, Source.STALLS})
    return frozenset(chosen)


def summarize(profile: records.Profile, *, sources: Iterable[str] | str = ("all",),
              token_budget: int = DEFAULT_TOKEN_BUDGET, count_tokens: Callable[[str], int] | None = None) -> str:
    """The profile's summary in at most `token_budget` tokens (the timing line, then the most important lines)."""
    chosen = parse_sources(sources)
    count = count_tokens or estimate_tokens
    head = timing_line(profile)
    head_tokens = count(head)
    if head_tokens > token_budget:
        raise PerfforgeError(f"token_budget={token_budget} cannot hold even the timing line ({head_tokens} tokens); "
                             f"give at least {head_tokens}")
    items = ranked_items(profile, chosen)
    kept = 0
    while kept < len(items) and count(render(head, items[:kept + 1])) <= token_budget:
        kept += 1
    return render(head, items[:kept])


def render(head: str, items: list[Item]) -> str:
    """The timing line, then the items grouped by section in the fixed section order (importance within)."""
    lines = [head]
    for section in _SECTIONS:
        texts = [item.text for item in items if item.section == section]
        if texts and section in _SECTION_TITLES:
            lines.append(_SECTION_TITLES[section])
        lines.extend(texts)
    return "\n".join(lines)


def ranked_items(profile: records.Profile, sources: frozenset[Source]) -> list[Item]:
    """Every line the sources allow, most important first."""
    diagnoses = sorted(profile.diagnoses, key=lambda d: (-d.severity, d.name)) if Source.COUNTERS in sources else []
    hot_lines = sorted(profile.hot_lines, key=lambda h: (-h.share, h.line)) if Source.STALLS in sources else []
    blocks = [diagnosis_items(rank, d) for rank, d in enumerate(diagnoses, start=1)]
    items: list[Item] = blocks[0] if blocks else []
    if Source.ROOFLINE in sources and profile.roofline is not None:
        items.append(Item("roofline", roofline_line(profile.roofline)))
    if Source.STALLS in sources and profile.stalls:
        items.append(Item("stalls", stall_line(profile.stalls)))
    hot = [Item("hot lines", hot_line_text(h)) for h in hot_lines]
    items.extend(hot[:1])
    for index, block in enumerate(blocks[1:], start=1):
        items.extend(block)
        items.extend(hot[index:index + 1])
    items.extend(hot[max(1, len(blocks)):])
    if Source.COUNTERS in sources:
        if profile.unmeasured:  # what the ranking could not see: absent is not the same as fine
            names = ", ".join(text.split(":", 1)[0] for text in profile.unmeasured)
            items.append(Item("diagnoses", f"not measured (counters missing): {names}"))
        items.extend(Item("counters", text) for text in key_counter_lines(profile))
    return items


# ---------------------------------------------------------------------------------------------------- lines


def num(value: float) -> str:
    """Short and stable: whole numbers from 1000 up to a million, four significant digits otherwise."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if 1e3 <= abs(value) < 1e6:
        return f"{value:.0f}"
    return f"{value:.4g}"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def timing_line(profile: records.Profile) -> str:
    t = profile.timing
    name = profile.kernel or "kernel"
    where = f" [{profile.target}]" if profile.target else ""
    machine = f" on {profile.machine}" if profile.machine else ""
    return (f"{name}{where}{machine}: median {num(t.median_ms)} ms (p10 {num(t.p10_ms)}, p90 {num(t.p90_ms)}; "
            f"{t.trials} trials, {t.method})")


def roofline_line(point: records.RooflinePoint) -> str:
    """Intensity, achieved against peak, which roof bounds the kernel and how close it runs to that roof."""
    intensity = point.arithmetic_intensity_flop_per_byte
    text = (f"roofline: {num(intensity)} FLOP/byte; {num(point.achieved_gflop_per_s)} of "
            f"{num(point.peak_gflop_per_s)} GFLOP/s, {num(point.achieved_gbyte_per_s)} of "
            f"{num(point.peak_gbyte_per_s)} GB/s")
    if point.peak_gflop_per_s <= 0 or point.peak_gbyte_per_s <= 0:
        return text + " (no peaks: bound unknown)"
    ridge = point.peak_gflop_per_s / point.peak_gbyte_per_s
    if intensity < ridge:
        return (text + f"; memory-bound (ridge {num(ridge)} FLOP/byte), at "
                f"{percent(point.achieved_gbyte_per_s / point.peak_gbyte_per_s)} of the memory roof")
    return (text + f"; compute-bound (ridge {num(ridge)} FLOP/byte), at "
            f"{percent(point.achieved_gflop_per_s / point.peak_gflop_per_s)} of the compute roof")


def diagnosis_items(rank: int, diagnosis: records.Diagnosis) -> list[Item]:
    """The diagnosis's headline (name, severity, hint), then one line per finding (or per evidence line)."""
    head = f"{rank}. {diagnosis.name} (severity {diagnosis.severity:.2f})"
    if diagnosis.hint:
        head += f": {diagnosis.hint}"
    details = [finding_text(f) for f in diagnosis.findings] or list(diagnosis.evidence)
    return [Item("diagnoses", head)] + [Item("diagnoses", f"   - {text}") for text in details]


def finding_text(finding: records.Finding) -> str:
    unit = f" {finding.unit}" if finding.unit else ""
    text = f"{finding.metric} = {num(finding.value)}{unit} ({finding.comparison} {num(finding.threshold)})"
    if finding.lines:
        text += f" at line{'s' if len(finding.lines) > 1 else ''} {', '.join(str(n) for n in finding.lines)}"
    return text


def stall_line(stalls: list[records.Stall]) -> str:
    ranked = sorted(stalls, key=lambda s: (-s.share, s.reason))
    shown = [f"{s.reason} {percent(s.share)}" for s in ranked[:MAX_STALL_REASONS]]
    rest = sum(s.share for s in ranked[MAX_STALL_REASONS:])
    if rest > 0:
        shown.append(f"other {percent(rest)}")
    return "warp stalls: " + ", ".join(shown)


def hot_line_text(hot: records.HotLine) -> str:
    code = " ".join(hot.code.split())
    if len(code) > MAX_CODE_CHARS:
        code = code[:MAX_CODE_CHARS - 3] + "..."
    cause = f", {hot.dominant_stall}" if hot.dominant_stall else ""
    text = f"- line {hot.line} ({percent(hot.share)}{cause}): {code}"
    metrics = [f"{m.name} {num(m.value)}" for m in hot.metrics[:MAX_LINE_METRICS]]
    return text + (f" [{'; '.join(metrics)}]" if metrics else "")


def key_counter_lines(profile: records.Profile) -> list[str]:
    """The target's key counters that the profile has, in the order its spec lists them (none for a target that
    is not runnable, such as a mined OpenCL kernel's)."""
    spec = TARGETS.get(profile.target, None)
    known = spec.key_counters if spec is not None else ()
    values = {c.name: c for c in profile.counters}
    lines = []
    for name, label in known:
        counter = values.get(name)
        if counter is not None:
            unit = counter.unit if counter.unit == "%" else f" {counter.unit}" if counter.unit else ""
            lines.append(f"counter: {label} = {num(counter.value)}{unit} ({name})")
    return lines
