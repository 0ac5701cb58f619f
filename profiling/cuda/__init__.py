"""The CUDA side of profiling: ncu command lines, parsers of ncu's CSV pages, and the Profile they make.

Stdlib only: this package runs on GPU machines that lack the dataset and training stacks.
"""
