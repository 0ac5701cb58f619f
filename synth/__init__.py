"""Synthesis: pattern catalogue tasks and runnable tasks from mined commits (issue: synthesis)."""
