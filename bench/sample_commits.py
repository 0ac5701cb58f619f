"""Draw a reproducible sample of commits to label by hand.

The population is every non-merge commit on a repository's default branch that
modifies at least one kernel-bearing source file (see KERNEL_PATH_RE). The
sample does not look at commit messages, so it favours neither the classifier
nor the keyword baseline.

    python bench/sample_commits.py REPO_GIT_DIR --n 50 --seed 0 [--path-re REGEX] [--exclude-labels DIR]

--exclude-labels leaves out commits already labelled in any CSV under DIR, for a fresh held-out sample.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import subprocess
from pathlib import Path

# Extensions that hold GPU/HPC kernels or the host code that launches them.
KERNEL_PATH_RE = r"\.(cu|cuh|hip|cl|c|cc|cpp|cxx|h|hpp|f|f90|F90|py|metal)$"


def commits_touching(git_dir: str, path_re: str) -> list[str]:
    """Non-merge commits of HEAD (oldest first) with a changed path matching path_re.

    Real mirrors miss objects now and then; `git diff-tree --stdin` stops at the
    first commit it cannot read, so that commit is skipped and the stream restarted.
    """
    shas = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-list", "--no-merges", "--reverse", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    pattern = re.compile(path_re)
    matched: list[str] = []
    start = 0
    while start < len(shas):
        proc = subprocess.run(
            ["git", "--git-dir", git_dir, "diff-tree", "--stdin", "-r", "--root",
             "--name-only", "--format=@%H"],
            input="\n".join(shas[start:]) + "\n", capture_output=True, text=True,
        )
        done = 0
        current, hit = "", False
        for line in proc.stdout.splitlines():
            if line.startswith("@"):
                if hit:
                    matched.append(current)
                current, hit, done = line[1:], False, done + 1
            elif line and pattern.search(line):
                hit = True
        if proc.returncode == 0:
            if hit:
                matched.append(current)
            break
        start += max(done, 1)  # the commit being read when git stopped is skipped
    return matched


def labelled_shas(labels_dir: Path) -> set[str]:
    shas: set[str] = set()
    for path in labels_dir.rglob("*.csv"):
        with path.open(newline="") as handle:
            shas.update(row["sha"] for row in csv.DictReader(handle))
    return shas


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("git_dir")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--path-re", default=KERNEL_PATH_RE)
    parser.add_argument("--exclude-labels", type=Path, default=None)
    args = parser.parse_args()
    population = commits_touching(args.git_dir, args.path_re)
    if args.exclude_labels:
        excluded = labelled_shas(args.exclude_labels)
        population = [sha for sha in population if sha not in excluded]
    sample = random.Random(args.seed).sample(population, min(args.n, len(population)))
    for sha in sample:
        print(sha)


if __name__ == "__main__":
    main()
