"""Profiling: build, run, time, counters, stalls, roofline, diagnosis, validation (issue: pipeline)."""
