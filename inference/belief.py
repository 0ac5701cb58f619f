"""The belief trace: what a candidate's answer claimed, what evidence of the prompt it cited, and whether the
measurement confirmed it (Opal's belief tracing, made mechanical).

A claim is confirmed when the candidate is correct and faster and the bottleneck the prompt targeted shrank in
the candidate's profile (its severity fell by at least SEVERITY_DROP, or the diagnosis vanished); partly when it
is faster but that bottleneck stayed (the gain came from elsewhere); refuted when it is correct but not faster;
untested when nothing correct was measured.
"""

from __future__ import annotations

import re

from perfforge.records import Belief, CounterDelta, Profile
from perfforge.summary import KEY_COUNTERS, num
from perfforge.verdict import Status

# A diagnosis counts as shrunk when its severity falls by at least this much: severities of one kernel
# profiled twice differ by a few hundredths (sampling, cache state), a real fix moves them by tenths.
SEVERITY_DROP = 0.1

_LINE_REF_RE = re.compile(r"\blines?\s+(\d+)", re.IGNORECASE)


def cited_evidence(text: str, profile: Profile | None) -> list[str]:
    """The diagnoses, key counters and hot lines of the prompt's profile that `text` (hypothesis and evidence)
    names: diagnosis names with or without underscores, counter names or labels, "line N" of a hot line."""
    if profile is None or not text:
        return []
    lower = text.lower()
    cited = [d.name for d in profile.diagnoses
             if d.name in lower or d.name.replace("_", " ") in lower]
    present = {c.name for c in profile.counters}
    for name, label in KEY_COUNTERS.get(profile.target, ()):
        if name in present and (_names(name, lower) or _names(label, lower)):
            cited.append(name)
    hot = {h.line for h in profile.hot_lines}
    cited.extend(f"line {n}" for n in sorted({int(m) for m in _LINE_REF_RE.findall(text)} & hot))
    return cited


def _names(term: str, text: str) -> bool:
    """`term` appears in `text` as a word of its own ("Ir" in "Ir fell", not in "their")."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(term.lower())}(?![A-Za-z0-9_])", text) is not None


def counter_deltas(before: Profile, after: Profile) -> list[CounterDelta]:
    """The target's key counters that both profiles have (perfforge.summary.KEY_COUNTERS order)."""
    old = {c.name: c for c in before.counters}
    new = {c.name: c for c in after.counters}
    deltas = []
    for name, _ in KEY_COUNTERS.get(before.target, ()):
        if name in old and name in new:
            deltas.append(CounterDelta(name=name, unit=old[name].unit, before=old[name].value,
                                       after=new[name].value))
    return deltas


def deltas_text(deltas: list[CounterDelta]) -> str:
    """"D1mr 3.1e+06 -> 2e+05 (-94%); ..." for feedback and reports."""
    parts = []
    for d in deltas:
        change = f" ({(d.after - d.before) / d.before:+.0%})" if d.before else ""
        parts.append(f"{d.name} {num(d.before)} -> {num(d.after)}{change}")
    return "; ".join(parts)


def severity(profile: Profile | None, name: str) -> float:
    """The named diagnosis's severity in the profile; 0 when it is not diagnosed."""
    if profile is None:
        return 0.0
    return next((d.severity for d in profile.diagnoses if d.name == name), 0.0)


def judge_belief(status: Status, *, focus: str, original: Profile | None,
                 candidate: Profile | None) -> tuple[Belief, str]:
    """The belief value of one attempt and the reason for it."""
    if status is Status.NEEDS_REVIEW:
        return Belief.UNVERIFIED, "faster beyond the plausibility gate: held for review"
    if status in (Status.NO_CHANGE, Status.SLOWER):
        return Belief.REFUTED, f"correct but {status.replace('_', ' ')}: the edit did not remove a costly bottleneck"
    if status is not Status.IMPROVED:
        return Belief.UNTESTED, f"{status}: nothing correct to measure"
    if not focus or candidate is None:
        return Belief.CONFIRMED, "faster (no profile of the candidate to check the bottleneck against)"
    was, now = severity(original, focus), severity(candidate, focus)
    if round(was - now, 9) >= SEVERITY_DROP or (was > 0 and now == 0):
        return Belief.CONFIRMED, f"faster, and {focus} fell from severity {was:.2f} to {now:.2f}"
    return Belief.PARTLY, f"faster, but {focus} stayed at severity {now:.2f} (was {was:.2f}): the gain came " \
                          "from elsewhere"
