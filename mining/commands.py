"""What `perfforge mine` and `perfforge card` do with their configs, and print."""

from __future__ import annotations

import json
import sys

from mining.card import CardConfig, write_card
from mining.config import MineConfig


def run_mine(config: MineConfig) -> int:
    from mining.pipeline import mine

    result = mine(config)
    if result.interrupted:
        print(f"interrupted: finished work is kept in {config.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    totals = result.stats["totals"]
    print(f"mined {totals['repositories']} repositories: {totals['commits_total']} commits, "
          f"{totals['candidates']} candidates, {totals['perf_commits']} performance commits, "
          f"{totals['pairs']} pairs ({totals['exact_duplicates']} exact and {totals['near_duplicates']} near "
          f"duplicates removed), {totals['failures']} failures skipped")
    print("categories: " + json.dumps(result.stats["perf_commit_categories"]))
    for name, path in result.paths.items():
        print(f"{name:>16}: {path}")
    return 0


def run_card(config: CardConfig) -> int:
    print(f"card: {write_card(config)}")
    return 0
