"""Diagnoses: named bottlenecks found in a profile, each a registered rule with its counters and thresholds.

`diagnose(profile)` runs every rule registered for the profile's target and returns the diagnoses ranked by
severity. Rules live one module per target (cpu.py, cuda.py); thresholds are data in thresholds/<target>.toml,
each with its unit and the reason for its value.
"""

from profiling.diagnoses.registry import RULES, Rule, attach_diagnoses, diagnose, register, thresholds_for, unmeasured

__all__ = ["RULES", "Rule", "attach_diagnoses", "diagnose", "register", "thresholds_for", "unmeasured"]
