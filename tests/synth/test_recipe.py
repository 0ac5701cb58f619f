"""synth/recipe.py: `perfforge synth recipe` on a tiny real git repository whose hot function gets faster at the
commit (CPU target: the benchmark is profiled with callgrind at both sides)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perfforge.cli import main
from perfforge.io import read_json
from tests.conftest import RepoBuilder, git

# Prefix sums, quadratic before the commit (each element re-sums the prefix), linear after it. callgrind ranks by
# instructions, which the quadratic version spends ~n/2 times more of.
MAIN_C = """\
#include <stdio.h>
#include <stdlib.h>

void hot(const float *a, float *out, int n) {
{body}
}

int main(void) {
    int n = 600;
    float *a = malloc(n * sizeof(float));
    float *out = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] = (float)(i % 7) - 3.0f;
    for (int rep = 0; rep < 30; rep++) hot(a, out, n);  /* enough after the fix to outrank the loader */
    printf("%f\\n", out[n - 1]);
    free(a);
    free(out);
    return 0;
}
"""
SLOW_BODY = """\
    for (int i = 0; i < n; i++) {
        float s = 0.0f;
        for (int k = 0; k <= i; k++) s += a[k];
        out[i] = s;
    }"""
FAST_BODY = """\
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        s += a[i];
        out[i] = s;
    }"""
BUILD = "gcc -O1 -g -fno-inline -o app main.c"


@pytest.fixture
def prefix_repo(make_repo: Callable[[str], RepoBuilder]) -> RepoBuilder:
    repo = make_repo("prefix")
    repo.commit("Initial import", {"main.c": MAIN_C.replace("{body}", SLOW_BODY), "README.md": "# prefix sums\n"})
    repo.commit("hot: running sum instead of re-summing every prefix",
                {"main.c": MAIN_C.replace("{body}", FAST_BODY)})
    return repo


def write_recipe(path: Path, repo: Path, **fields: object) -> Path:
    values = {"repo": str(repo), "commit": "HEAD", "build": BUILD, "benchmark": "./app", "target": "cpu",
              "kernels": ["hot"], "top": 3, **fields}
    lines = []
    for key, value in values.items():
        if value is None:
            continue
        rendered = ("[" + ", ".join(f'"{v}"' for v in value) + "]" if isinstance(value, list)
                    else str(value) if isinstance(value, int) else f'"{value}"')
        lines.append(f"{key} = {rendered}")
    path.write_text("\n".join(lines) + "\n")
    return path


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_recipe_profiles_the_named_kernel_at_both_sides_without_touching_the_repository(
        prefix_repo: RepoBuilder, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = write_recipe(tmp_path / "recipe.toml", prefix_repo.path)
    out = tmp_path / "out"
    refs_before = git(prefix_repo.path, "for-each-ref")
    assert main(["synth", "recipe", str(recipe), "--out", str(out)]) == 0
    assert "| hot |" in capsys.readouterr().out

    comparison = read_json(out / "comparison.json")
    assert comparison["parent"] == prefix_repo.shas[0] and comparison["commit"] == prefix_repo.shas[1]
    (hot,) = comparison["kernels"]
    assert hot["found_before"] and hot["found_after"] and hot["unit"] == "instructions"
    assert hot["ratio_before_over_after"] > 50  # ~n/2 times fewer instructions
    assert "top_diagnosis_before" in hot and isinstance(hot["diagnoses_after"], list)

    (record,) = pq.read_table(out / "pairs.parquet").to_pylist()
    assert record["kernel_name"] == "hot" and record["path"] == "main.c" and record["target"] == "cpu"
    assert "k <= i" in record["function_before"] and "k <= i" not in record["function_after"]
    assert record["commit"] == prefix_repo.shas[1] and record["parent"] == prefix_repo.shas[0]
    assert record["message"].startswith("hot: running sum") and "-        for (int k = 0" in record["diff"]
    assert record["profile_before"]["counters"] and record["profile_after"]["kernel"] == "hot"

    # The source repository is untouched: no build output, no new refs, no worktrees, a clean status.
    assert not (prefix_repo.path / "app").exists()
    assert git(prefix_repo.path, "status", "--porcelain") == ""
    assert git(prefix_repo.path, "for-each-ref") == refs_before
    assert len(git(prefix_repo.path, "worktree", "list").splitlines()) == 1
    assert (out / "before" / "src" / "app").is_file() and (out / "after" / "build.log").is_file()

    # Resumed: both sides' profiles are reused, not measured again.
    stamp = (out / "after" / "profiles.json").stat().st_mtime_ns
    assert main(["synth", "recipe", str(recipe), "--out", str(out)]) == 0
    assert (out / "after" / "profiles.json").stat().st_mtime_ns == stamp


@pytest.mark.parametrize(("fields", "words"), [
    ({"build": None}, "missing field(s) build"),
    ({"commit": "no-such-rev"}, "unknown commit 'no-such-rev'"),
    ({"target": "tpu"}, "target must be one of cpu, cuda"),
    ({"colour": "blue"}, "unknown field(s) colour"),
    ({"build": "gcc -o app missing.c"}, "the build failed at the before side"),
], ids=["missing-field", "unknown-commit", "bad-target", "unknown-field", "build-failure"])
def test_a_bad_recipe_gives_one_clear_error_line(prefix_repo: RepoBuilder, tmp_path: Path, fields: dict,
                                                 words: str, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = write_recipe(tmp_path / "recipe.toml", prefix_repo.path, **fields)
    assert main(["synth", "recipe", str(recipe), "--out", str(tmp_path / "out")]) == 2
    line = error_line(capsys)
    assert words in line, line
    if "build failed" in words:
        assert "missing.c" in line  # the compiler's stderr tail


def test_a_root_commit_needs_a_parent(make_repo: Callable[[str], RepoBuilder], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo("single")
    repo.commit("only", {"main.c": MAIN_C.replace("{body}", FAST_BODY)})
    recipe = write_recipe(tmp_path / "recipe.toml", repo.path)
    assert main(["synth", "recipe", str(recipe), "--out", str(tmp_path / "out")]) == 2
    assert "has no parent" in error_line(capsys)
