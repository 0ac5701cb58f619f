"""The judge's host cache flush (profiling/host_flush.py): a call's buffers evicted line by line and left as they
were, the whole-buffer flush where eviction is not at hand, which cores share the kernel's last level, and that every
line of that buffer is written once per flush, whichever cores write it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import profiling.host_flush as host_flush
from profiling.host_flush import HostFlusher, evict_lines, parse_cpu_list, sharing_last_level


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


@pytest.mark.skipif(evict_lines() is None, reason="no C compiler or no eviction instruction on this host")
def test_a_calls_buffers_are_evicted_and_left_as_they_were() -> None:
    """Eviction writes dirty lines back and drops them: the values stay, unaligned starts and odd sizes included,
    and the whole-buffer flush is not used (its buffer is never made)."""
    rng = np.random.default_rng(5)
    backing = rng.standard_normal(100_003).astype(np.float32)
    regions = (backing[3:], rng.integers(0, 255, 17, dtype=np.uint8), np.empty(0, np.float64))
    before = [region.copy() for region in regions]
    flusher = HostFlusher()
    try:
        flusher.flush(min(os.sched_getaffinity(0)), regions)
        assert flusher._buffer is None
    finally:
        flusher.close()
    for region, kept in zip(regions, before, strict=True):
        assert np.array_equal(region, kept)


def test_without_eviction_the_whole_buffer_is_flushed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No compiler (or an architecture without an eviction instruction): the call's buffers are not enough, every
    line of the flush buffer is written instead."""
    monkeypatch.setattr(host_flush, "evict_lines", lambda: None)
    flusher = HostFlusher()
    try:
        flusher.flush(None, (np.ones(64, np.float32),))
        assert np.all(flusher.buffer == 1)
    finally:
        flusher.close()


def test_every_byte_is_written_once_per_flush() -> None:
    """Whichever slices go to which cores, each flush adds one to every byte of the buffer (nothing skipped, nothing
    written twice)."""
    flusher = HostFlusher()
    try:
        cpu = min(os.sched_getaffinity(0))
        for _ in range(2):
            flusher.flush_all(cpu)
        flusher.flush_all(None)
        assert np.all(flusher.buffer == 3)
        assert os.sched_getaffinity(0) == flusher.allowed  # the caller's own pin is the caller's business
    finally:
        flusher.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to slice over")
def test_a_flusher_made_before_the_pin_uses_the_other_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge pins its thread to the kernel's core before it flushes. A flusher made there read the pin as all
    it may use and flushed alone (the H100 host: 231 slice writes in 264 flushes); one made before the pin (with
    the pair) writes a slice on every other core that shares the kernel core's last level."""
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
            early.flush_all(cpu)
            late.flush_all(cpu)
    finally:
        early.close()
        late.close()
    assert late.allowed == {cpu}
    slices = early.buffer.size // host_flush.MIN_SLICE_BYTES
    assert sorted(writes) == sorted(c for c in sharing if c != cpu)[:slices - 1]
