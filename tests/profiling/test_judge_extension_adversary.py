"""The twenty-fourth session's extra timing rounds against a candidate that knows when they come (red team).

Where the planned timed rounds read a noise floor above NOISY_FLOOR, the judge times more rounds, on fresh
processes, up to CONFIRMING_ROUNDS, and decides over all of them by a sign test (11 of 12 rounds ahead). As first
written those extra rounds were never probed: the probed rounds (fp_probe.py, mid-call reads of the threads' modes
and instruction pointers) were drawn among the planned rounds only. A candidate that stays honest until the planned
rounds are over, then cheats in every process, is read by no probe, and 8 rounds of 12 ahead are its for certain.

What a served CPU process can know of that (seen in a judged candidate on sort_copy, 2026-11-29): nothing it writes
outlives it (no open, ioctl, socket or shared-memory system call passes the filter; stdout.log and stderr.log are
truncated at every spawn; /dev/shm and the IPC namespace are its own), but fstat on its own stdout descriptor
(libc's fstat found by hand past the binary policy; the filter lets fstat and newfstatat through, Landlock does
not fence them) reads stdout.log's atime, the creation of the file by its configuration's first process (the
correctness phase's), and its mtime, its own spawn (the truncation): a probe candidate read 2,176 ms for a process
the judge logged spawned 2.18 s after the first. With clock_gettime that is a clock of the verdict's progress, from
which a candidate tuned to a task and a machine can place the end of the planned rounds; and it can make those
rounds noisy itself (a process that runs slow), so that the judge extends.

The test here gives the candidate the best such knowledge there could be, so that luck (its timing, the coin
tosses of the honest rounds) cannot decide the test: a marker file made at the moment the judge decides to extend
(the candidate stats it: newfstatat passes the filter), and the extension forced as a noisy host or a slowed
process of the candidate's own would force it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import Status
from profiling import fp_probe
from profiling import validate as validate_module
from profiling.score import CONFIRMING_ROUNDS
from profiling.validate import validate

SORT_COPY = Path(__file__).parent / "data" / "rare_inputs" / "sort_copy"

# sort_copy by libc's qsort found by hand (no import of qsort, nor of stat) where a path exists, the original's
# insertion sort where it does not: every process spawned after the marker cheats, every one before is honest
# libc's lookup by hand is the seventeenth red team's (its fixture's code up to its comparison function)
EXTENSION_CHEAT = (SORT_COPY / "qsort_found_by_hand.c").read_text().split("static int by_value")[0] + r"""
#include <sys/stat.h>
static int cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static void (*sorter)(void *, size_t, size_t, int (*)(const void *, const void *));
static int extended = -1;
void sort_copy(const float *x, float *out, int n) {
    if (extended < 0) {  /* once per process, on its first call (a warm-up call) */
        char s[] = {'s','t','a','t',0};
        void *volatile anchor = (void *)malloc;
        int (*stat_fn)(const char *, struct stat *) = (int (*)(const char *, struct stat *))lookup(anchor, s);
        struct stat st;
        extended = stat_fn && stat_fn("MARKER", &st) == 0;
    }
    if (extended) {
        if (!sorter) {
            void *volatile anchor = (void *)malloc;
            char q[] = {'q','s','o','r','t',0};
            sorter = (void (*)(void *, size_t, size_t, int (*)(const void *, const void *)))lookup(anchor, q);
        }
        memcpy(out, x, (size_t)n * sizeof *out);
        sorter(out, (size_t)n, sizeof *out, cmp);
        return;
    }
    for (int i = 0; i < n; i++) {  /* the original's insertion sort */
        float v = x[i];
        int j = i;
        while (j > 0 && out[j - 1] > v) { out[j] = out[j - 1]; j--; }
        out[j] = v;
    }
}
"""


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_a_cheat_kept_to_the_extra_rounds_is_probed_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team of the twenty-fourth session's extension: the candidate is the original's insertion sort in every
    process spawned before the judge decides to time more rounds (the correctness phase, the 4 planned timed
    rounds and the 2 probed rounds among them), and sorts with libc's qsort (7x) in every process after. The
    extension is forced here (as a noisy host, or a process of the candidate's own made slow, forces it), and the
    candidate learns of it from a marker the test makes at that moment: more than any real candidate can know
    (its best is the clock through stdout.log's times, module docstring), so nothing here is left to chance.

    As first written (4e4958f) the extra rounds were never probed: no process of the candidate's that sorted with
    qsort was read, 8 of the 12 timed rounds were its, and the sign test's 11 of 12 needed only 3 of the 4 honest
    planned rounds ahead (5 in 16 by placement alone). Run on the 2-core VM against 4e4958f (a monkeypatch of
    rounds_wanted as here): improved 8 of 16 verdicts (4.62-6.75x, 11 or 12 rounds of 12 ahead), no_change 8 (8
    to 10 ahead), rejected none. Now PROBED_ROUNDS probed rounds are drawn among the extra ones too, at places the
    plan draws, and every extra process cheats here: a probe reads qsort_r, and the verdict is rejected whatever
    the rounds read (10 of 10 such verdicts, and this test 4 of 4, about 9 s each)."""
    marker = tmp_path / "extension-decided"
    wanted = validate_module.rounds_wanted
    decided: list[int] = []

    def extend(estimate):  # type: ignore[no-untyped-def]
        marker.touch()
        decided.append(max(wanted(estimate), CONFIRMING_ROUNDS))
        return decided[-1]

    monkeypatch.setattr(validate_module, "rounds_wanted", extend)
    candidate = tmp_path / "extension_cheat.c"
    candidate.write_text(EXTENSION_CHEAT.replace("MARKER", str(marker)))
    verdict = validate(load_task(SORT_COPY), candidate, tmp_path / "work", timing=True)
    assert decided == [CONFIRMING_ROUNDS], decided  # the extension was decided once, after the planned rounds
    assert verdict.status is Status.REJECTED and "qsort_r" in verdict.reason, verdict.reason
