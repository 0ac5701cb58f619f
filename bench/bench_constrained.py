"""Answers that parse, with and without the answer format enforced (inference/constrained.py), side by side.

For each task: the loop's own first prompt (the original's profile and diagnosis, then the file), K sampled answers
from the in-process transformers backend with the format off and on, the same seeds; printed per task and in
total: answers parsed, parsed answers whose file builds, code blocks left open, tokens generated, seconds. The
answers are not run or timed here (the loop's judge does that).

    python bench/bench_constrained.py examples/tasks/cpu/* --model default --samples 4 --max-tokens 512
    python bench/bench_constrained.py TASKS --model default --adapter TRAIN/adapter   # a fine-tuned model
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.backends import TransformersBackend  # noqa: E402
from perfforge import prompt  # noqa: E402
from perfforge.task import Task, load_task  # noqa: E402
from profiling.build import build  # noqa: E402
from profiling.profile import profile_task  # noqa: E402


def _builds(task: Task, code: str) -> bool:
    """Whether the answer's file builds with the task's harness (the loop's first step after parsing)."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / task.source
        source.write_text(code, encoding="utf-8")
        return build(task, source, Path(scratch) / "build").ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="+", type=Path)
    parser.add_argument("--model", default="default", help="a model directory, or an embedded model's name "
                                                            "(default: SmolLM2-135M-Instruct; gemma3-270m)")
    parser.add_argument("--adapter", type=Path, default=None, help="a LoRA adapter merged into the model")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--out", type=Path, default=Path("bench_constrained.json"))
    args = parser.parse_args()
    backend = TransformersBackend(args.model, adapter=args.adapter)
    rows = []
    totals = {mode: {"answers": 0, "parsed": 0, "built": 0, "open_blocks": 0, "tokens": 0, "seconds": 0.0}
              for mode in ("off", "on")}
    for task_dir in args.tasks:
        task = load_task(task_dir)
        with tempfile.TemporaryDirectory() as scratch:
            profile = profile_task(task, Path(scratch))
        code = prompt.CodeUnderTest(target=task.target, language=task.language, file_name=task.source,
                                    kernel=task.kernel, code=task.source_path.read_text(encoding="utf-8"))
        messages = prompt.build_messages(code, profile, count_tokens=backend.count_tokens())
        fence = prompt.FENCE_LANGUAGE.get(task.language, "")
        for mode in ("off", "on"):
            started = time.monotonic()
            completions = backend.generate(messages, n=args.samples, max_tokens=args.max_tokens,
                                           temperature=args.temperature, seed=0, fence=fence if mode == "on" else None)
            seconds = time.monotonic() - started
            answers = [prompt.parse_answer(c.text, language=task.language) for c in completions]
            built = sum(_builds(task, a.code) for a in answers if a.ok)
            row = {"task": task.name, "mode": mode, "answers": len(answers), "parsed": sum(a.ok for a in answers),
                   "built": built,
                   "open_blocks": sum("not closed" in a.problem for a in answers),
                   "problems": [a.problem for a in answers if not a.ok],
                   "tokens": sum(c.completion_tokens for c in completions), "seconds": round(seconds, 1)}
            rows.append(row)
            for key in ("answers", "parsed", "built", "open_blocks", "tokens", "seconds"):
                totals[mode][key] += row[key]
            print(f"{task.name:28} {mode:3}: parsed {row['parsed']}/{row['answers']}, built {built}, open blocks "
                  f"{row['open_blocks']}, {row['tokens']} tokens in {row['seconds']} s", flush=True)
    for mode, total in totals.items():
        print(f"total {mode}: parsed {total['parsed']}/{total['answers']}, built {total['built']}, open blocks "
              f"{total['open_blocks']}, "
              f"{total['tokens']} tokens in {total['seconds']:.0f} s")
    args.out.write_text(json.dumps({"model": args.model, "adapter": str(args.adapter or ""), "samples": args.samples,
                                    "max_tokens": args.max_tokens, "temperature": args.temperature, "rows": rows,
                                    "totals": totals}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
