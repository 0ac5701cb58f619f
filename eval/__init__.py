"""Evaluation: suites, fast_p, ablations and reports (issue: evaluation)."""
