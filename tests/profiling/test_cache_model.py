"""The simulated cache model: fixed by default whatever the host reports, host values only where plausible."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.errors import ConfigError
from profiling.cpu import cache_model
from profiling.cpu.cache_model import (
    CACHE_MODEL_ENV,
    host_cache_model,
    reported_last_level_bytes,
    simulated_cache_model,
)

# (level, type, size, ways, line) as /sys/devices/system/cpu/cpu0/cache/index*/ shows them.
XEON_480MIB = [(1, "Data", "48K", 12, 64), (1, "Instruction", "64K", 16, 64), (2, "Unified", "2048K", 16, 64),
               (3, "Unified", "491520K", 16, 64)]
EPYC_32MIB = [(1, "Data", "32K", 8, 64), (1, "Instruction", "32K", 8, 64), (2, "Unified", "1024K", 8, 64),
              (3, "Unified", "32768K", 16, 64)]
FIXED_OPTIONS = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]


def fake_sysfs(root: Path, levels: list[tuple[int, str, str, int, int]]) -> Path:
    for index, (level, kind, size, ways, line) in enumerate(levels):
        directory = root / f"index{index}"
        directory.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                            ("coherency_line_size", line)):
            (directory / name).write_text(f"{value}\n")
    return root


def test_the_fixed_model_is_the_default_and_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Diagnoses are calibrated on this model: a change of it must be deliberate (and re-check the catalogue)."""
    monkeypatch.delenv(CACHE_MODEL_ENV, raising=False)
    model = simulated_cache_model()
    assert model.valgrind_options() == FIXED_OPTIONS
    assert model.describe() == ("simulated caches: I1 32 KiB 8-way 64 B lines (fixed), D1 32 KiB 8-way 64 B lines "
                                "(fixed), LL 8 MiB 16-way 64 B lines (fixed)")


def test_the_host_model_refuses_an_implausible_last_level(tmp_path: Path) -> None:
    """The machine that broke CI: a 480 MiB L3 (and a number of sets valgrind cannot simulate)."""
    model = host_cache_model(fake_sysfs(tmp_path, XEON_480MIB))
    assert model.valgrind_options() == ["--I1=65536,16,64", "--D1=49152,12,64", "--LL=8388608,16,64"]
    assert model.d1.origin == "host"
    assert model.ll.origin == "default: host reports 480 MiB 16-way 64 B lines, outside 1 MiB-64 MiB"


def test_the_host_model_takes_plausible_levels(tmp_path: Path) -> None:
    model = host_cache_model(fake_sysfs(tmp_path, EPYC_32MIB))
    assert model.valgrind_options() == ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=33554432,16,64"]
    assert {model.i1.origin, model.d1.origin, model.ll.origin} == {"host"}


def test_a_shape_valgrind_cannot_simulate_falls_back(tmp_path: Path) -> None:
    """A 12 MiB 16-way cache has 12,288 sets, not a power of two; a machine that reports no I1 gets the default."""
    model = host_cache_model(fake_sysfs(tmp_path, [(1, "Data", "32K", 8, 64), (3, "Unified", "12288K", 16, 64)]))
    assert model.ll.valgrind_value() == "8388608,16,64"
    assert "not a power-of-two number of sets" in model.ll.origin
    assert model.i1.origin == "default: not reported"


def test_the_environment_chooses_the_host_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cache_model, "SYSFS_CACHE_DIR", fake_sysfs(tmp_path, EPYC_32MIB))
    monkeypatch.setenv(CACHE_MODEL_ENV, "host")
    assert simulated_cache_model().ll.valgrind_value() == "33554432,16,64"


def test_an_unknown_model_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_MODEL_ENV, "big")
    with pytest.raises(ConfigError, match="PERFFORGE_CACHE_MODEL='big' is not a cache model: use 'fixed'"):
        simulated_cache_model()


def test_the_judge_flush_reads_the_reported_last_level_unfiltered(tmp_path: Path) -> None:
    """The flush must cover what the machine reports (480 MiB here, capped by the judge), not the simulated model;
    with no cache directory it is 0 and the judge falls back to its default."""
    assert reported_last_level_bytes(fake_sysfs(tmp_path / "xeon", XEON_480MIB)) == 480 << 20
    assert reported_last_level_bytes(fake_sysfs(tmp_path / "epyc", EPYC_32MIB)) == 32 << 20
    assert reported_last_level_bytes(tmp_path / "absent") == 0
