"""The in-process backends on a tiny chat model built here: transformers' generate, and vLLM's offline engine (in
a script of its own, as users run it: vLLM spawns workers, which needs the `__main__` guard)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inference.backends import make_backend

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "system", "content": "You optimise kernels."}, {"role": "user", "content": "Make it faster."}]


def test_transformers_backend_samples_n_completions_reproducibly(tiny_model: Path) -> None:
    backend = make_backend("transformers", str(tiny_model))
    first = backend.generate(MESSAGES, n=3, max_tokens=12, temperature=0.8, seed=7)
    again = backend.generate(MESSAGES, n=3, max_tokens=12, temperature=0.8, seed=7)
    assert len(first) == 3 and [c.text for c in first] == [c.text for c in again]
    assert all(c.prompt_tokens > 5 and 0 < c.completion_tokens <= 12 for c in first)
    assert all(c.finish_reason in ("stop", "length") for c in first)
    count = backend.count_tokens()
    assert count is not None and count("hello world") >= 1


def test_an_unknown_model_directory_is_one_clear_error(tmp_path: Path) -> None:
    from perfforge.errors import PerfforgeError

    with pytest.raises(PerfforgeError, match="not a local model directory"):
        make_backend("transformers", str(tmp_path / "nothing"))


SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from inference.backends import make_backend

if __name__ == "__main__":
    backend = make_backend("vllm", {model!r}, max_model_len=1024)
    out = backend.generate({messages!r}, n=3, max_tokens=8, temperature=0.8, seed=1)
    print("RESULT", json.dumps([[c.finish_reason, c.completion_tokens, c.prompt_tokens] for c in out]), flush=True)
"""


@pytest.mark.skipif(not __import__("importlib").util.find_spec("vllm"), reason="vllm is not installed")
def test_vllm_offline_backend_samples_n_completions_in_one_call(tiny_model: Path, tmp_path: Path) -> None:
    script = tmp_path / "offline.py"
    script.write_text(SCRIPT.format(root=str(ROOT), model=str(tiny_model), messages=MESSAGES))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    rows = json.loads(line.removeprefix("RESULT "))
    assert len(rows) == 3 and all(reason == "length" and tokens == 8 and prompt > 5 for reason, tokens, prompt in rows)
