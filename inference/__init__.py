"""Inference: the offline optimisation loop over a served model (issue: optimisation loop)."""
