"""The GitHub Actions recipe (examples/ci/perfforge-optimize.yml) is valid YAML and only uses perfforge flags and
report fields that exist: a renamed option or report key would break users' workflows silently."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import yaml

from inference.config import OptimizeConfig, ServeConfig
from inference.report import outcome

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "ci" / "perfforge-optimize.yml"


def _flags(cls: type) -> set[str]:
    return {"--" + f.name.replace("_", "-") for f in dataclasses.fields(cls)}


def _commands(text: str, name: str) -> list[str]:
    """Each `perfforge NAME ...` command of the recipe's shell steps, continuation lines joined."""
    joined = text.replace("\\\n", " ")
    return re.findall(rf"perfforge {name}\b[^\n]*", joined)


def test_the_recipe_is_a_workflow_with_the_steps_it_documents() -> None:
    workflow = yaml.safe_load(RECIPE.read_text())
    steps = [step.get("name", "") for step in workflow["jobs"]["optimize"]["steps"]]
    assert "Serve the model" in steps and "Optimise, and open a pull request per proven win" in steps
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_every_flag_the_recipe_passes_exists() -> None:
    text = RECIPE.read_text()
    optimize, serve = _commands(text, "optimize"), _commands(text, "serve")
    assert optimize and serve
    for command, cls in [(c, OptimizeConfig) for c in optimize] + [(c, ServeConfig) for c in serve]:
        used = set(re.findall(r"(?<=\s)--[a-z][a-z-]*", command))
        assert used <= _flags(cls), f"{command!r} uses unknown flags {used - _flags(cls)}"


def test_the_report_field_and_value_the_recipe_reads_exist() -> None:
    assert "['outcome'] != 'improved'" in RECIPE.read_text()
    won = SimpleNamespace(pending_bundle=None, best=object())
    lost = SimpleNamespace(pending_bundle=None, best=None)
    assert outcome(won) == "improved" and outcome(lost) == "no_improvement"
    assert '"outcome": outcome(state)' in Path(outcome.__code__.co_filename).read_text()
