"""Check catalogue instances on a GPU machine and bring the judgements back in one file.

The GPU machine's image has torch, numpy and pyarrow but not datasets or tqdm, and a command there has a time
limit; so this runs `perfforge synth patterns`'s checks without records or a progress bar, stops starting new
instances once --budget-s has passed (finished checks are kept; a later call with the same seeds would resume),
and writes every check (with both profiles) into one JSON file that `--import` merges into a local output
directory, where `perfforge synth patterns` with the same options then writes stats and records.

    # on the GPU machine (from the checkout)
    PYTHONPATH=. python3 scripts/synth_gpu.py --target cuda --instances 2 --seed 0 --out /tmp/synth \
        --bundle $OUT/checks.json
    # here, with the bundle fetched back
    python scripts/synth_gpu.py --import checks.json --out perfforge-out/synth-gpu
    perfforge synth patterns --target cuda --instances 2 --seed 0 --out perfforge-out/synth-gpu
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfforge.io import read_json, write_json  # noqa: E402
from synth.catalogue import check_path, run_catalogue  # noqa: E402
from synth.check import InstanceCheck  # noqa: E402
from synth.config import SynthPatternsConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--target", default="cuda")
    parser.add_argument("--patterns", nargs="*", default=[])
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=540.0, help="start no instance after this many seconds")
    parser.add_argument("--bundle", type=Path, help="write every check of the output directory into this file")
    parser.add_argument("--import", dest="import_bundle", type=Path, help="merge a bundle into --out and stop")
    args = parser.parse_args(argv)
    if args.import_bundle:
        return import_bundle(args.import_bundle, args.out)
    started = time.monotonic()
    config = SynthPatternsConfig(out=args.out, target=args.target, patterns=args.patterns,
                                 instances=args.instances, seed=args.seed, progress=False)

    def report(check: InstanceCheck) -> None:
        speed = f"{check.speedup:.2f}x" if check.speedup else "-"
        print(f"[{time.monotonic() - started:6.0f} s] {check.pattern} s{check.seed} {speed} "
              f"top={check.top_diagnosis or '-'} {'kept' if check.kept else 'DROPPED: ' + check.reason[:300]} "
              f"({check.duration_s:.0f} s)", flush=True)
        if time.monotonic() - started > args.budget_s:
            raise KeyboardInterrupt  # run_catalogue keeps what is finished and reports an interrupted run

    result = run_catalogue(config, on_check=report, records=False)
    print(json.dumps(result.stats["total"]), "interrupted" if result.interrupted else "complete", flush=True)
    if args.bundle:
        checks = [read_json(path) for path in sorted((args.out / "checks").glob("*.json"))]
        write_json(args.bundle, {"checks": checks, "stats": result.stats}, compact=True)
    return 0


def import_bundle(bundle: Path, out: Path) -> int:
    """Write the bundle's checks where `perfforge synth patterns --out OUT` finds them (it then resumes)."""
    checks = read_json(bundle)["checks"]
    for data in checks:
        write_json(check_path(out, data["task"], data["pattern"]), data)
    print(f"{len(checks)} checks imported into {out / 'checks'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
