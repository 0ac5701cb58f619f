"""HIP (AMD GPU) target, EXPERIMENTAL: a parser of rocprofv3's CSV output into Profile records.

No AMD machine is available to this project: the parser follows ROCm's documented CSV layouts and is tested on
hand-written fixtures (tests/fixtures/rocprof/README.md). Building and running HIP tasks is not implemented.
"""

from profiling.hip.rocprof import KernelTime, RocprofError, kernel_times, load_profile, load_profiles, read_run

__all__ = ["KernelTime", "RocprofError", "kernel_times", "load_profile", "load_profiles", "read_run"]
