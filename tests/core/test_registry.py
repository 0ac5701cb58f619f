"""The generic registry: a duplicate name is an error, an unknown name answers with the close matches and the valid
names, and the project's registries (targets, diagnoses, patterns, static checks, profilers) behave that way."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.cli import main
from perfforge.errors import PerfforgeError
from perfforge.registry import Registry, UnknownNameError
from perfforge.targets import TARGETS
from perfforge.task import TaskError, load_task
from tests.profiling.conftest import write_task


@pytest.fixture
def colours() -> Registry[int]:
    registry: Registry[int] = Registry("colour", entry_type=int)
    for value, name in enumerate(("red", "green", "blue")):
        registry.register(name, value)
    return registry


def test_a_duplicate_name_is_an_error_naming_the_kind(colours: Registry[int]) -> None:
    with pytest.raises(ValueError, match="colour 'red' is registered twice"):
        colours.register("red", 7)
    with pytest.raises(ValueError, match="registered twice"):
        colours["green"] = 8  # item assignment registers: no silent replacement either
    assert colours.get("red") == 0 and len(colours) == 3


def test_an_unknown_name_answers_close_matches_and_the_valid_names(colours: Registry[int]) -> None:
    with pytest.raises(UnknownNameError) as caught:
        colours.get("gren")
    assert str(caught.value) == "unknown colour 'gren'; did you mean green? valid names: blue, green, red"
    assert isinstance(caught.value, PerfforgeError) and isinstance(caught.value, KeyError)  # one line; dict-like
    with pytest.raises(UnknownNameError, match=r"^unknown colour 'purple'; valid names: blue, green, red$"):
        colours["purple"]
    assert colours.get("purple", None) is None  # with a default, no error


def test_entries_are_checked_against_the_entry_type(colours: Registry[int]) -> None:
    with pytest.raises(TypeError, match="colour 'cyan' must be a int, not str"):
        colours.register("cyan", "0x00ffff")  # type: ignore[arg-type]


def test_the_decorator_form_registers_and_returns_what_it_decorates() -> None:
    handlers: Registry[object] = Registry("handler")

    @handlers.register("shout")
    def shout(text: str) -> str:
        return text.upper()

    assert handlers.get("shout") is shout and shout("a") == "A"
    assert list(handlers) == ["shout"] and handlers.names() == ("shout",) and "shout" in handlers
    assert handlers.items() == (("shout", shout),) and handlers.values() == (shout,)


def test_the_loader_runs_once_before_the_first_lookup_and_again_after_a_failure() -> None:
    calls: list[int] = []
    lazy: Registry[int] = Registry("number", loader=lambda: calls.append(1) or lazy.register(str(len(calls)), 0))
    lazy.register("early", 5)  # registering does not load
    assert not calls
    assert "1" in lazy and lazy.names() == ("early", "1") and calls == [1]

    failures = iter([RuntimeError("half-written module"), None])

    def flaky() -> None:
        error = next(failures)
        if error:
            raise error
        broken.register("late", 1)

    broken: Registry[int] = Registry("number", loader=flaky)
    with pytest.raises(RuntimeError):
        broken.names()
    assert broken.get("late") == 1


def test_a_stand_in_can_be_registered_and_taken_out_again(monkeypatch: pytest.MonkeyPatch,
                                                          colours: Registry[int]) -> None:
    """How tests add an entry for their duration (synth's test_catalogue adds patterns this way)."""
    with monkeypatch.context() as patch:
        patch.setitem(colours, "cyan", 3)  # type: ignore[arg-type]
        assert colours.get("cyan") == 3
    assert "cyan" not in colours and colours.unregister("blue") == 2 and colours.names() == ("red", "green")


def test_an_unknown_target_in_a_task_toml_is_the_same_one_line_task_error(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = write_task(tmp_path / "task")
    manifest = root / "task.toml"
    manifest.write_text(manifest.read_text().replace('target = "cpu"', 'target = "gpu"'))
    with pytest.raises(TaskError) as caught:
        load_task(root)
    assert str(caught.value) == f"{manifest}: field 'target' must be one of cpu, cuda, triton, torch, hip (got 'gpu')"
    assert main(["validate", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'target' must be one of cpu, cuda, triton, torch, hip (got 'gpu')" in err
    assert TARGETS.close_matches("cdua") == ["cuda"]


def test_the_project_registries_refuse_duplicates_and_explain_unknown_names() -> None:
    from profiling.diagnoses import registry as diagnoses
    from profiling.profile import PROFILERS
    from profiling.static_checks import STATIC_CHECKS
    from synth.patterns import PATTERNS, patterns

    rule = diagnoses.get_rule("cache_miss_bound")
    with pytest.raises(ValueError, match="diagnosis 'cache_miss_bound' is registered twice"):
        diagnoses.register(rule)
    with pytest.raises(PerfforgeError, match="unknown diagnosis 'cache_mis_bound'; did you mean cache_miss_bound.*"
                                             "valid names: .*branch_mispredictions"):
        diagnoses.get_rule("cache_mis_bound")
    with pytest.raises(ValueError, match="registered twice"):
        PATTERNS.register("cpu/loop_order", PATTERNS.get("cpu/loop_order"))
    with pytest.raises(PerfforgeError, match=r"^unknown pattern\(s\) cpu/nope; `perfforge synth list` names them all$"):
        patterns(ids=["cpu/nope"])  # the pattern message the CLI tests assert, unchanged
    with pytest.raises(ValueError, match="static check 'library_fallback' is registered twice"):
        STATIC_CHECKS.register("library_fallback", STATIC_CHECKS.get("library_fallback"))
    with pytest.raises(UnknownNameError, match="unknown profiler 'nsight'; valid names: callgrind, ncu, rocprofv3"):
        PROFILERS.get("nsight")
