"""Every file and directory name two stages agree on: the datasets' files and the optimisation loop's run layout.

A stage that writes one of these and a stage that reads it both name it from here, so a rename is one edit.

A dataset directory (perfforge mine, synth, optimize, bench/judge_examples.py):

    commits.parquet      one row per candidate commit (mining)
    pairs.parquet        one PairRecord per before/after pair (mining, synth)
    attempts.parquet     one AttemptRecord per judged candidate (optimize)
    judgements.parquet   one JudgementRecord per labelled commit (the mining judge's training data)
    stats.json           what the run counted

One run of the optimisation loop (RunLayout; perfforge optimize --out, and each of eval's runs):

    original/profile.json        the original's profile the prompts are built from
    rounds/NN/cK/<source file>   candidate K of round NN, beside
    rounds/NN/cK/attempt.json    its AttemptRecord (its presence marks the candidate as judged) and
    rounds/NN/cK/profile.json    its profile, when it improved
    bundles/NN/                  with --bundle: the round's work for another machine
    attempts.parquet, patch.diff, optimized/, report.json, report.md
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

COMMITS_FILE = "commits.parquet"
PAIRS_FILE = "pairs.parquet"
ATTEMPTS_FILE = "attempts.parquet"
JUDGEMENTS_FILE = "judgements.parquet"
STATS_FILE = "stats.json"
TRAINING_FILES = (PAIRS_FILE, ATTEMPTS_FILE, JUDGEMENTS_FILE)  # what `perfforge train` reads

PROFILE_FILE = "profile.json"  # a profile beside what it profiles (perfforge profile --out, a candidate's)
VERDICT_FILE = "verdict.json"  # perfforge validate --out
ATTEMPT_FILE = "attempt.json"


@dataclass(frozen=True)
class RunLayout:
    """Where one run of the optimisation loop keeps its files (the drawing above)."""

    out: Path

    @property
    def original_profile(self) -> Path:
        """The original's profile the prompt is built from; written here before a run, the loop profiles nothing."""
        return self.out / "original" / PROFILE_FILE

    def round_dir(self, number: int) -> Path:
        return self.out / "rounds" / f"{number:02d}"

    def candidate_dir(self, number: int, index: int) -> Path:
        """Where candidate `index` of round `number` keeps its file, attempt.json and (improved) profile.json."""
        return self.round_dir(number) / candidate_name(index)

    def attempt_files(self) -> list[Path]:
        """Every recorded attempt, in round and candidate order."""
        return sorted((self.out / "rounds").glob(f"*/c*/{ATTEMPT_FILE}"),
                      key=lambda p: (p.parent.parent.name, int(p.parent.name[1:])))

    def bundle_dir(self, number: int) -> Path:
        return self.out / "bundles" / f"{number:02d}"

    @property
    def attempts(self) -> Path:
        return self.out / ATTEMPTS_FILE

    @property
    def patch(self) -> Path:
        return self.out / "patch.diff"

    @property
    def optimized_dir(self) -> Path:
        return self.out / "optimized"

    @property
    def report_json(self) -> Path:
        return self.out / "report.json"

    @property
    def report_md(self) -> Path:
        return self.out / "report.md"


def candidate_name(index: int) -> str:
    return f"c{index}"
