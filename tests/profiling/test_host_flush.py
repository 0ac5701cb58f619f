"""The judge's host cache flush (profiling/host_flush.py): which cores share the kernel's last level, and that every
line of the buffer is written once per flush, whichever cores write it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from profiling.host_flush import HostFlusher, parse_cpu_list, sharing_last_level


def _sysfs(root: Path, layout: dict[int, dict[int, str]]) -> Path:
    """A fake /sys/devices/system/cpu: per CPU, per cache level, its shared_cpu_list."""
    for cpu, levels in layout.items():
        for index, (level, shared) in enumerate(sorted(levels.items())):
            directory = root / f"cpu{cpu}" / "cache" / f"index{index}"
            directory.mkdir(parents=True)
            (directory / "level").write_text(f"{level}\n")
            (directory / "shared_cpu_list").write_text(f"{shared}\n")
    return root


@pytest.mark.parametrize(("text", "cpus"), [("0-3,8,10-11\n", {0, 1, 2, 3, 8, 10, 11}), ("5", {5}), ("", set())])
def test_cpu_lists_parse(text: str, cpus: set[int]) -> None:
    assert parse_cpu_list(text) == cpus


def test_only_the_cores_of_the_kernels_l3_are_used(tmp_path: Path) -> None:
    """Two chiplets of 4 cores, each with its own L3: a kernel on core 5 is flushed from 4-7 only (core 5 first),
    and only from cores this process may use."""
    layout = {cpu: {1: str(cpu), 2: str(cpu), 3: "0-3" if cpu < 4 else "4-7"} for cpu in range(8)}
    root = _sysfs(tmp_path, layout)
    assert sharing_last_level(5, frozenset(range(8)), root) == (5, 4, 6, 7)
    assert sharing_last_level(5, frozenset({0, 1, 5, 6}), root) == (5, 6)


def test_a_cpu_sysfs_says_nothing_about_is_flushed_alone(tmp_path: Path) -> None:
    assert sharing_last_level(3, frozenset(range(8)), tmp_path) == (3,)


def test_every_byte_is_written_once_per_flush() -> None:
    """Whichever slices go to which cores, each flush adds one to every byte of the buffer (nothing skipped, nothing
    written twice)."""
    flusher = HostFlusher()
    try:
        cpu = min(os.sched_getaffinity(0))
        for _ in range(2):
            flusher.flush(cpu)
        flusher.flush(None)
        assert np.all(flusher.buffer == 3)
        assert os.sched_getaffinity(0) == flusher.allowed  # the caller's own pin is the caller's business
    finally:
        flusher.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to slice over")
def test_a_flusher_made_before_the_pin_uses_the_other_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge pins its thread to the kernel's core before it flushes. A flusher made there read the pin as all
    it may use and flushed alone (the H100 host: 231 slice writes in 264 flushes); one made before the pin (with
    the pair) writes a slice on every other core that shares the kernel core's last level."""
    import profiling.host_flush as host_flush
    from profiling.paired import _judge_thread

    cpu = min(os.sched_getaffinity(0))
    writes: list[int] = []
    real = host_flush._write_on
    monkeypatch.setattr(host_flush, "_write_on", lambda core, part, allowed: (writes.append(core),
                                                                               real(core, part, allowed)))
    early = HostFlusher()
    sharing = host_flush.sharing_last_level(cpu, early.allowed)
    try:
        with _judge_thread(cpu, on=True):
            late = HostFlusher()
            early.flush(cpu)
            late.flush(cpu)
    finally:
        early.close()
        late.close()
    assert late.allowed == {cpu}
    slices = early.buffer.size // host_flush.MIN_SLICE_BYTES
    assert sorted(writes) == sorted(c for c in sharing if c != cpu)[:slices - 1]
