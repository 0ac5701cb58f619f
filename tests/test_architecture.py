"""The house rules of docs/architecture.md, read from the code's own imports (lazy ones inside functions included).

- The core (perfforge/) imports no stage; only its command line (perfforge/cli.py) reaches the stages, through
  their `config` and `commands` modules.
- A stage imports the core freely, and another stage only along the edges listed in ALLOWED (the same list as
  docs/architecture.md).
- No two files import each other, directly or around a circle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = "perfforge"
STAGES = ("mining", "synth", "profiling", "inference", "eval", "training", "iteration")

# (importing stage, imported module or package): the stage-to-stage edges docs/architecture.md allows.
ALLOWED = {
    ("inference", "profiling"),  # build, run, judge, profile candidates
    ("eval", "profiling"),
    ("synth", "profiling"),
    ("training", "profiling"),  # the GRPO reward judges completions
    ("eval", "inference.run"),  # the loop, through its one entry point
    ("eval", "inference.config"),  # the loop's settings for one run
    ("eval", "inference.serve"),  # model configurations start their servers
    ("eval", "inference.backends"),
    ("eval", "synth.patterns"),  # catalogue tasks, through catalogue_tasks
    ("eval", "synth.kernelbench"),  # the kernelbench suite's tasks, through find_problems and import_problems
    ("synth", "mining.functions"),  # function extraction
    ("synth", "mining.gitlog"),  # git plumbing
    ("synth", "mining.licence"),
    ("iteration", "inference.run"),  # expert iteration samples through the loop's one entry point
    ("iteration", "inference.config"),
    ("iteration", "inference.backends"),  # one engine lent to every run of a round
    ("iteration", "profiling"),  # the loop's judge
    ("iteration", "training.trainer"),  # and fine-tunes on what the judge proved
    ("iteration", "training.config"),
}
# What the command line may import from a stage: each stage's config and command modules.
CLI_MODULES = ("config", "commands", "card")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for package in (CORE, *STAGES) for p in (ROOT / package).rglob("*.py")}


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a file imports, anywhere in it (a name imported from a package that is a module of its
    own counts as that module)."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts:
            if ".".join(parts) in modules:
                return ".".join(parts)
            parts.pop()
        return None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        found.update(r for r in (resolve(n) for n in names) if r)
    found.discard(module_name(path))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(path, modules) for name, path in modules.items()}


def allowed(importer: str, imported: str) -> bool:
    source, target = importer.split(".")[0], imported.split(".")[0]
    if source == target or target == CORE:
        return True
    if importer == f"{CORE}.cli":
        return imported.split(".")[-1] in CLI_MODULES
    if source == CORE:
        return False
    return any(edge == source and (imported == module or imported.startswith(module + "."))
               for edge, module in ALLOWED)


def test_no_forbidden_edge_between_stages(graph: dict[str, set[str]]) -> None:
    forbidden = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if not allowed(a, b))
    assert not forbidden, "imports docs/architecture.md does not allow:\n" + "\n".join(forbidden)


def test_training_does_not_reach_the_loop(graph: dict[str, set[str]]) -> None:
    assert not [(a, b) for a, targets in graph.items() for b in targets
                if a.startswith("training") and b.startswith("inference")]


def test_no_import_cycle_between_files(graph: dict[str, set[str]]) -> None:
    assert not circles(graph)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_checker_sees_a_forbidden_edge_and_a_circle() -> None:
    """The rules above can fail: a made-up training -> inference edge and a two-file circle are caught."""
    assert not allowed("training.reward", "inference.loop")
    assert not allowed("perfforge.task", "profiling.build")
    assert allowed("perfforge.cli", "mining.commands") and not allowed("perfforge.cli", "mining.pipeline")
    assert allowed("eval.runner", "inference.run") and not allowed("eval.runner", "inference.loop")
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_the_allowed_edges_are_the_documented_ones() -> None:
    """docs/architecture.md lists every allowed stage-to-stage edge, in the form `stage -> module`."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^- `(\w+) -> ([\w.]+)`", text, re.MULTILINE))
    assert documented == ALLOWED
