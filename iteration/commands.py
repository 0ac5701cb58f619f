"""What `perfforge iterate` does with its config, and prints."""

from __future__ import annotations

import sys

from iteration.config import IterateConfig


def run_iterate(config: IterateConfig) -> int:
    from iteration.expert import iterate

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        records = iterate(config, log=log)
    except KeyboardInterrupt:
        log(f"interrupted: finished runs and trainings are kept in {config.out}; run the same command to resume")
        return 130
    for record in records:
        trained = f"trained {record.train_steps} steps" if record.trained else record.note
        print(f"round {record.number}: {record.improved} of {record.candidates} candidates proven faster "
              f"({record.correct} correct, {record.parsed} parsed); {record.kept_total} kept; {trained}")
    print(f"{'iterate.json':>12}: {config.out / 'iterate.json'}")
    return 0
