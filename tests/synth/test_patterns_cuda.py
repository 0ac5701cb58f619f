"""The CUDA patterns of the catalogue: the slow and fast versions of every seed define the profiled kernel and its
launcher, and the outputs stay modest (that every instance is a distinct, loadable task is tested for all patterns
in test_patterns_cpu.py; compiling and timing them needs nvcc and a GPU: the catalogue run does that)."""

from __future__ import annotations

import re

import pytest

from synth.patterns import generate, patterns

CUDA_PATTERNS = [p.id for p in patterns(target="cuda")]
SEEDS = range(8)


def test_the_catalogue_covers_the_cuda_bottlenecks():
    assert len(CUDA_PATTERNS) >= 11
    bottlenecks = {p.bottleneck for p in patterns(target="cuda")}
    assert bottlenecks >= {"uncoalesced_global_access", "shared_memory_bank_conflicts", "atomic_contention",
                           "branch_divergence", "low_occupancy", "register_spills", "poor_cache_locality",
                           "launch_overhead", "unfused_elementwise_chain", "scalar_global_loads",
                           "redundant_global_loads"}


def test_every_planted_bottleneck_has_a_cuda_rule():
    from profiling.diagnoses import RULES
    from profiling.diagnoses.registry import _load_rule_modules

    _load_rule_modules()
    for p in patterns(target="cuda"):
        assert "cuda" in RULES[p.bottleneck].targets, p.id


def defines_kernel(source: str, kernel: str) -> bool:
    """A __global__ function whose name is the task's kernel or starts with it (ncu's kernel filter matches so)."""
    return re.search(rf"__global__\s+void\s+(__launch_bounds__\([^)]*\)\s+)?{re.escape(kernel)}\w*\s*\(",
                     source) is not None


@pytest.mark.parametrize("pattern_id", CUDA_PATTERNS)
def test_instances_define_the_kernel_and_its_launcher(pattern_id):
    for seed in SEEDS:
        instance = generate(pattern_id, seed)
        assert instance.target == "cuda" and instance.language == "cuda"
        assert defines_kernel(instance.slow, instance.kernel) and defines_kernel(instance.fast, instance.kernel)
        assert instance.slow != instance.fast
        launcher = re.search(r"void (launch_\w+)\(", instance.harness).group(1)
        assert f"void {launcher}(" in instance.slow and f"void {launcher}(" in instance.fast
        assert instance.build["flags"] == ["-O3", "-lineinfo", "-arch=sm_90"]
        assert instance.message and instance.description
        for output in instance.outputs:
            if output["dtype"] == "float32" and "rtol" in output:
                assert output["rtol"] <= 1e-3


def _product(expression: str, params: dict[str, int]) -> int:
    return int(eval(expression, {}, dict(params)))  # noqa: S307 (the generators' own count expressions)


@pytest.mark.parametrize("pattern_id", CUDA_PATTERNS)
def test_default_outputs_stay_within_64_mib(pattern_id):
    size = {"float32": 4, "float64": 8, "int32": 4, "uint8": 1}
    for seed in SEEDS:
        instance = generate(pattern_id, seed)
        default = next(c for c in instance.configs if c.get("default"))["params"]
        counts = dict(re.findall(r'pf_output\(&r, "(\w+)", \w+, \(size_t\)\((.+?)\)\);', instance.harness))
        for output in instance.outputs:
            expression = counts[output["name"]].replace("(size_t)", "")
            assert _product(expression, default) * size[output["dtype"]] <= 64 << 20, (pattern_id, seed)
