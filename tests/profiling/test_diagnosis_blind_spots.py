"""What the CUDA diagnoses cannot see, and what is only a symptom (issue 20). A counter the profile lacks is "not
measured", never 0: the rules that decide on it are not run, the profile names them, the prompt summary says so. A
small grid of threads that each walk memory uncoalesced is weighed as the symptom of the uncoalesced access."""

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


def _one_thread_per_row(*, excess_sectors: float) -> Profile:
    """A softmax with one thread per row, as issue 20 saw it: a grid of a fifth of a wave at full theoretical
    occupancy, each thread walking its row (excess sectors), the memory system half busy."""
    return _profile(**{m.ACHIEVED_OCCUPANCY_PCT: 6.0, m.THEORETICAL_OCCUPANCY_PCT: 100.0, m.WAVES_PER_SM: 0.2,
                       m.ISSUE_ACTIVE_PCT: 5.0, m.SM_THROUGHPUT_PCT: 8.0, m.MEMORY_THROUGHPUT_PCT: 55.0,
                       m.GLOBAL_LD_SECTORS: 1e6, m.GLOBAL_ST_SECTORS: 1e4, m.GLOBAL_EXCESSIVE_SECTORS: excess_sectors})


def test_a_small_grid_of_uncoalesced_threads_is_a_symptom_of_its_cause() -> None:
    """low_occupancy used to rank first (0.72 against 0.52); the fix (a warp per row) is about coalescing."""
    ranked = diagnose(_one_thread_per_row(excess_sectors=9.5e5))
    assert [d.name for d in ranked][:2] == ["uncoalesced_global_access", "low_occupancy"]
    occupancy = next(d for d in ranked if d.name == "low_occupancy")
    assert any("warp per row" in line for line in occupancy.evidence)


def test_a_small_grid_with_coalesced_access_keeps_its_weight() -> None:
    ranked = diagnose(_one_thread_per_row(excess_sectors=1e4))
    assert ranked[0].name == "low_occupancy" and not any("warp per row" in line for line in ranked[0].evidence)


def test_a_cpu_profile_without_its_core_count_cannot_judge_parallelism() -> None:
    """The parallelism rules read the core count as 0 and stayed silent; now they say they could not judge."""
    profile = Profile(machine="test", tool_versions="", timing=Timing(5.0, 4.9, 5.1, 30, "monotonic_clock"),
                      target="cpu", kernel="k", counters=[CounterValue("Ir", 1e9, "inst")])
    missing = unmeasured(profile)
    assert any(text.startswith("missing_parallelism: not measured (cpu_cores)") for text in missing)
    assert any(text.startswith("poor_openmp_schedule: not measured (cpu_cores)") for text in missing)
    assert not any(text.startswith("cache_miss_bound") for text in missing)
