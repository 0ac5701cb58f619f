"""What the `perfforge synth` commands do with their configs, and print."""

from __future__ import annotations

import sys

from synth.check import InstanceCheck
from synth.config import SynthListConfig, SynthPatternsConfig


def run_synth_list(config: SynthListConfig) -> int:
    from synth.patterns import patterns

    for p in patterns(config.target):
        print(f"{p.id:<36} {p.bottleneck:<30} {p.summary}")
    return 0


def run_synth_patterns(config: SynthPatternsConfig) -> int:
    from synth.catalogue import run_catalogue

    def report(check: InstanceCheck) -> None:
        outcome = "kept" if check.kept else f"dropped: {check.reason}"
        speed = f" {check.speedup:.2f}x" if check.speedup else ""
        top = f" top diagnosis {check.top_diagnosis}" if check.diagnoses else ""
        print(f"{check.pattern} s{check.seed}:{speed}{top} {outcome}", file=sys.stderr)

    result = run_catalogue(config, on_check=report)
    if result.interrupted:
        print(f"interrupted: finished checks are kept in {config.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    total = result.stats["total"]
    print(f"{total['generated']} instances generated ({total['duplicates']} duplicate seeds skipped), "
          f"{total['kept']} kept; planted bottleneck top diagnosis in {total['top_diagnosis_correct']} of "
          f"{total['profiled']} profiled")
    print(result.paths["table"].read_text(encoding="utf-8"), end="")
    for name, path in result.paths.items():
        print(f"{name:>8}: {path}")
    return 0
