"""Program-counter samples of a process (profiling/pc_samples.py): real perf events on a real child process."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from profiling import pc_samples


def perf_events_available() -> bool:
    sampler = pc_samples.Sampler.attach(os.getpid())
    if sampler is None:
        return False
    sampler.close()
    return True


needs_perf = pytest.mark.skipif(not perf_events_available(), reason="perf events unavailable (perf_event_paranoid)")

SORTS = r"""
#include <stdio.h>
#include <stdlib.h>
static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
int main(void) {
    static float v[100000];
    printf("ready\n");
    fflush(stdout);
    if (getchar() == EOF) return 1;  /* the test reads its mappings first (libc loaded by now) */
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 100000; i++) v[i] = (float)rand();
        qsort(v, 100000, sizeof *v, by_value);
    }
    printf("%f\n", v[0]);
    return 0;
}
"""


@needs_perf
def test_samples_name_the_library_routine_a_process_ran(tmp_path: Path) -> None:
    """A program sorting with libc's qsort: a good share of its samples land in qsort_r (glibc's qsort calls it,
    and its merge helper sits unnamed in the gap before it), none are attributed where the watch does not look."""
    (tmp_path / "sorts.c").write_text(SORTS)
    subprocess.run(["gcc", "-O2", "sorts.c", "-o", "sorts"], cwd=tmp_path, check=True, capture_output=True)
    process = subprocess.Popen([str(tmp_path / "sorts")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sampler = pc_samples.Sampler.attach(process.pid)
    assert sampler is not None and process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    mappings = pc_samples.executable_mappings(process.pid)
    process.communicate(b"\n", timeout=120)
    ips = sampler.drain()
    sampler.close()
    found = pc_samples.Watch(re.compile(r"qsort|qsort_r"), frozenset()).routines(ips, mappings)
    assert len(ips) > 50 and found["libc.so.6's qsort_r"] > len(ips) // 5, (len(ips), found)
    assert not pc_samples.Watch(re.compile(r"qsort|qsort_r"), frozenset({"qsort_r"})).routines(ips, mappings)
    assert not pc_samples.Watch(re.compile(r"fesetenv"), frozenset()).routines(ips, mappings)
