"""Training pairs rendered from the pattern catalogue's templates, without checking each one: pairs.parquet of
every generated instance of the chosen patterns (seeds SEED .. SEED+N-1, duplicates dropped as `perfforge synth
patterns` drops them), for a machine that cannot check them (a CPU machine rendering CUDA pairs: checking one
costs 35-53 s of a GPU, docs/eval_cuda.md).

`perfforge synth patterns` keeps an instance only once the pipeline has judged its fast version correct, faster
and its planted bottleneck diagnosed; here nothing is judged, so a record has no profile, no verified speedup, and
its evidence says it was not checked (that text becomes the training completion's Evidence line). A check file
written by an earlier `perfforge synth patterns` run on a GPU (its checks/*.json; --checks DIR) is used for its
own instance where it was kept: that record carries its profiles and speedup, as the catalogue's own would.

    python scripts/render_pairs.py --target cuda --patterns cuda/branch_divergence ... --instances 30 --seed 0 \\
        --out DIR [--checks CHECKS_DIR]

DIR gets tasks/ (the rendered task directories, which the records point at) and pairs.parquet.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfforge.io import read_json  # noqa: E402
from perfforge.naming import PAIRS_FILE  # noqa: E402
from perfforge.records import FoundBy, PairRecord  # noqa: E402
from synth.catalogue import instance_digest  # noqa: E402
from synth.check import InstanceCheck  # noqa: E402
from synth.instance import task_dir, write_task  # noqa: E402
from synth.patterns import generate, patterns  # noqa: E402
from synth.records import SYNTH_LICENCE, SYNTH_REPO, task_pair_records, write_records  # noqa: E402

UNCHECKED = "rendered from the catalogue's template; not checked on a GPU (no profile, no measured speedup)"


def checked(directory: Path | None) -> dict[tuple[str, int], InstanceCheck]:
    """The kept checks of an earlier catalogue run, by (pattern, seed)."""
    if directory is None:
        return {}
    found = (InstanceCheck.from_dict(read_json(path)) for path in sorted(directory.glob("*.json")))
    return {(c.pattern, c.seed): c for c in found if c.kept}


def evidence(check: InstanceCheck, was_checked: bool) -> list[str]:
    if not was_checked:
        return [f"planted bottleneck {check.bottleneck}", UNCHECKED]
    return [f"planted bottleneck {check.bottleneck}; diagnoses of the slow version: "
            + ", ".join(f"{n} ({s:.2f})" for n, s in check.diagnoses),
            f"verified speedup {check.speedup:.3f}x" if check.speedup else "correctness verified, not timed"]


def render(target: str, pattern_ids: Sequence[str] | None, instances: int, seed: int, out: Path,
           checks: Path | None = None, avoid: range = range(0)) -> tuple[Path, Counter]:
    """Write the tasks and pairs.parquet; (its path, counts of rendered / checked / duplicate / held-out-code
    instances). An instance whose slow or fast file is the same text as that of an instance of its pattern at a
    seed in `avoid` (the evaluation's) is left out: a held-out instance must not be in training under another
    seed (two seeds can draw the same kernel and differ only in the harness's sizes)."""
    earlier = checked(checks)
    counts: Counter = Counter()
    seen: set[str] = set()
    records: list[PairRecord] = []
    for chosen in patterns(target, list(pattern_ids or [])):
        held_out = {text for s in avoid for text in (generate(chosen.id, s).slow, generate(chosen.id, s).fast)}
        for s in range(seed, seed + instances):
            instance = generate(chosen.id, s)
            digest = instance_digest(instance)
            if digest in seen:
                counts["duplicate"] += 1
                continue
            if instance.slow in held_out or instance.fast in held_out:
                counts["held_out_code"] += 1
                continue
            seen.add(digest)
            root = write_task(instance, task_dir(out, chosen.id, s))
            check = earlier.get((chosen.id, s))
            was_checked = check is not None
            if check is None:
                check = InstanceCheck(task=instance.name, pattern=chosen.id, seed=s, target=chosen.target,
                                      bottleneck=chosen.bottleneck, kept=True)
            counts["checked" if was_checked else "rendered"] += 1
            records += task_pair_records(root, check, repo=SYNTH_REPO, repo_url=str(root.resolve()),
                                         commit=f"{chosen.id}@{s}", licence=SYNTH_LICENCE,
                                         found_by=FoundBy.SYNTHETIC_PATTERN, category=chosen.category,
                                         message=chosen.summary, evidence=evidence(check, was_checked))
    return write_records(out / PAIRS_FILE, records), counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cuda", help="patterns of this target (cpu, cuda, triton, all)")
    parser.add_argument("--patterns", nargs="*", default=[], help="only these pattern ids (target/name)")
    parser.add_argument("--instances", type=int, default=20, help="instances per pattern")
    parser.add_argument("--seed", type=int, default=0, help="first seed (evaluations start at 300: stay below)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--checks", type=Path, help="checks/ of an earlier perfforge synth patterns run")
    parser.add_argument("--avoid-seeds", type=int, nargs=2, default=[300, 20], metavar=("FIRST", "COUNT"),
                        help="leave out instances whose slow or fast file is that of an instance at these seeds "
                             "(the evaluation's; default 300 20)")
    args = parser.parse_args(argv)
    first, count = args.avoid_seeds
    path, counts = render(args.target, args.patterns, args.instances, args.seed, args.out, args.checks,
                          range(first, first + count))
    import pyarrow.parquet as pq

    rows = pq.read_table(path, columns=["pattern"]).column("pattern").to_pylist()
    print(f"{len(rows)} pairs in {path}: {counts['rendered']} instances rendered unchecked, {counts['checked']} "
          f"from earlier checks, {counts['duplicate']} duplicate seeds dropped, {counts['held_out_code']} left out for "
          "sharing a file with an instance at --avoid-seeds")
    for pattern, n in sorted(Counter(rows).items()):
        print(f"  {pattern}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
