"""A counter the profile lacks is "not measured", never 0 (issue 20): the rules that decide on it are not run, the
profile names them, and the prompt summary says so."""

from __future__ import annotations

from perfforge.records import CounterValue, Profile, Timing
from perfforge.summary import summarize
from profiling.cuda import launches as ln
from profiling.cuda import metrics as m
from profiling.diagnoses import diagnose, unmeasured


def _profile(**counters: float) -> Profile:
    return Profile(machine="test", tool_versions="", timing=Timing(1.0, 0.9, 1.1, 30, "cuda_events"), target="cuda",
                   kernel="k",
                   counters=[CounterValue(name=name, value=value, unit="") for name, value in counters.items()])


def test_a_rule_without_its_counters_is_not_run_and_is_named() -> None:
    """Without its counters a rule used to be silently absent, as if it had looked and found nothing; the profile now
    names it, with the counters it lacked (application-mode CUDA profiles have no launch counts, for one)."""
    profile = _profile(**{m.SM_THROUGHPUT_PCT: 20.0, m.MEMORY_THROUGHPUT_PCT: 15.0})
    names = {d.name for d in diagnose(profile)}
    assert "low_occupancy" not in names
    missing = unmeasured(profile)
    assert any(text.startswith("low_occupancy: not measured") and m.ACHIEVED_OCCUPANCY_PCT in text for text in missing)
    assert any(text.startswith("launch_overhead: not measured") and ln.LAUNCHES_PER_CALL in text for text in missing)
    assert not any(text.startswith("latency_bound") for text in missing)  # both of its counters are there


def test_a_measured_zero_is_judged() -> None:
    profile = _profile(**{m.ACHIEVED_OCCUPANCY_PCT: 5.0, m.THEORETICAL_OCCUPANCY_PCT: 100.0, m.ISSUE_ACTIVE_PCT: 10.0,
                          m.WAVES_PER_SM: 0.2})
    assert "low_occupancy" in {d.name for d in diagnose(profile)}
    assert not any(text.startswith("low_occupancy") for text in unmeasured(profile))


def test_the_prompt_summary_says_what_was_not_measured() -> None:
    profile = _profile(**{m.SM_THROUGHPUT_PCT: 20.0, m.MEMORY_THROUGHPUT_PCT: 15.0})
    profile.diagnoses, profile.unmeasured = diagnose(profile), unmeasured(profile)
    text = summarize(profile)
    assert "not measured (counters missing):" in text and "low_occupancy" in text.split("not measured")[1]
