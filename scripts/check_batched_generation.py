"""Does batching change what the transformers backend generates? Greedy answers of a batch (several requests, each
with several rows, left-padded to one width) against the same requests generated alone, row by row.

Written after Gemma-3-270M's expert-iteration samples on an H100 (2026-11-27, docs/eval_cpu_h100.md "Gemma"): of
8 candidates per task sampled in batches, only candidates 1 and 2 were ever proven faster, and the rest were mostly
garbage (`$$$$`, `, , ,`), while the same model's 2-candidate eval runs were clean. On this VM's CPU every row of a
batch equals its request generated alone (prompts of 894-990 tokens, past Gemma's 512-token sliding window). Run it
on the GPU machine to see whether the GPU's batched generation differs:

    python scripts/check_batched_generation.py --model gemma3-270m [--adapter DIR] --rows 8 --requests 4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.backends import Request, TransformersBackend  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tasks" / "cpu"


def prompts(count: int, chars: int) -> list[list[dict[str, str]]]:
    """`count` prompts of different lengths (so a batch pads them), from the CPU example kernels."""
    files = sorted(EXAMPLES.glob("*/kernel.c"))
    return [[{"role": "system", "content": "You optimise C kernels."},
             {"role": "user", "content": "Make this faster:\n```c\n"
              + (files[i % len(files)].read_text() * 8)[:chars + 300 * i] + "\n```"}] for i in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--adapter", type=Path, default=None)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--rows", type=int, default=8, help="rows (candidates) per request")
    parser.add_argument("--chars", type=int, default=3000, help="characters of the shortest prompt")
    parser.add_argument("--tokens", type=int, default=40, help="new tokens per row")
    parser.add_argument("--fence", default="c", help="the constrained answer's fence ('' for free answers)")
    args = parser.parse_args()
    backend = TransformersBackend(args.model, adapter=args.adapter)
    fence = args.fence or None
    messages = prompts(args.requests, args.chars)
    lengths = [len(backend.tokenizer.apply_chat_template(m, add_generation_prompt=True, return_dict=True)["input_ids"])
               for m in messages]
    alone = [backend.generate_many([Request(m, 1, args.tokens, 0.0, 0, fence)])[0][0].text for m in messages]
    batch = backend.generate_many([Request(m, args.rows, args.tokens, 0.0, 0, fence) for m in messages])
    differing = 0
    for index, (length, completions) in enumerate(zip(lengths, batch, strict=True)):
        same = "".join("=" if c.text == alone[index] else "x" for c in completions)
        differing += same.count("x")
        print(f"request {index} ({length} prompt tokens): rows {same}")
        for completion in completions:
            if completion.text != alone[index]:
                print(f"  alone {alone[index][:70]!r}\n  row   {completion.text[:70]!r}")
                break
    print(f"{differing} of {args.requests * args.rows} rows differ from their request generated alone "
          f"on {backend.device}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
