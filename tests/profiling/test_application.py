"""Whole-application mode on the CPU: callgrind ranks the functions of a real program, the top ones are profiled."""

from __future__ import annotations

import subprocess
from pathlib import Path

from perfforge.cli import main
from profiling.application import is_user_code, profile_application, rank_functions

APP_C = """\
#include <stdio.h>
#include <stdlib.h>
static float strided(const float *a, int n) {
    float s = 0;
    for (int r = 0; r < 200; r++)
        for (int i = 0; i < n; i += 16)
            s += a[i] * r;
    return s;
}
static float once(const float *a, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
int main(void) {
    int n = 1 << 19;
    float *a = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] = (float)(i % 7);
    printf("%f %f\\n", strided(a, n), once(a, n));
    return 0;
}
"""


def _app(tmp_path: Path) -> Path:
    (tmp_path / "app.c").write_text(APP_C)
    subprocess.run(["gcc", "-O1", "-g", "-fno-inline", "app.c", "-o", "app"], cwd=tmp_path, check=True)
    return tmp_path


def test_ranks_functions_and_profiles_the_costliest(tmp_path: Path) -> None:
    app = _app(tmp_path)
    profiles = profile_application("./app", app, target="cpu", top=2, work_dir=tmp_path / "work")
    assert [p.kernel for p in profiles][0] == "strided"
    strided = profiles[0]
    assert strided.counter("Ir") > 0 and strided.hot_lines and strided.hot_lines[0].line == 7
    assert "ranked by instructions" in strided.timing.method
    assert any(d.name == "cache_miss_bound" for d in strided.diagnoses)  # a 64-byte stride misses on every load


def test_ranking_skips_inclusive_call_costs() -> None:
    text = "events: Ir\nfl=a.c\nfn=main\n1 10\ncfn=f\ncalls=1 2\n2 1000\nfn=f\n2 1000\n"
    ranked = rank_functions(text)
    assert [(f.name, f.self_instructions) for f in ranked] == [("f", 1000.0), ("main", 10.0)]


# A selection loop in C++: at -O2 its first instruction is the range-for's begin() from <array>, so callgrind's fl=
# for the function is /usr/include/c++/12/array, though nearly all of its instructions are on lines of select.cpp.
SELECT_CPP = """\
#include <array>
#include <cstdio>
#include <cstdlib>

using Keys = std::array<unsigned, 8192>;

__attribute__((noinline)) unsigned select(const Keys &keys, Keys &out, unsigned limit) {
    unsigned kept = 0;
    for (unsigned key : keys)
        if (key < limit)
            out[kept++] = key;
    return kept;
}

int main() {
    static Keys keys, out;
    for (unsigned &key : keys) key = rand() % 100;
    unsigned total = 0;
    for (int round = 0; round < 40; round++) total += select(keys, out, 50);
    printf("%u\\n", total);
    return 0;
}
"""


def _function_file(callgrind_text: str, prefix: str) -> str:
    """callgrind's fl= for the function whose name starts with prefix (the file of its first instruction)."""
    current = ""
    for line in callgrind_text.splitlines():
        if line.startswith("fl="):
            current = line[3:]
        elif line.startswith(f"fn={prefix}"):
            return current
    return ""


def test_a_cpp_function_is_filed_under_its_own_file_not_an_inlined_header(tmp_path: Path) -> None:
    """Scenario (perf-ninja's conditional_store_1): a C++ function whose first instruction is inlined from a
    standard header. Filed under that header, it was dropped as system code and never profiled."""
    (tmp_path / "select.cpp").write_text(SELECT_CPP)
    subprocess.run(["g++", "-O2", "-g", "select.cpp", "-o", "select"], cwd=tmp_path, check=True)
    profiles = profile_application("./select", tmp_path, target="cpu", top=1, work_dir=tmp_path / "work")
    ranking = (tmp_path / "work" / "callgrind.ranking.out").read_text()
    assert _function_file(ranking, "select(").startswith("/usr/include/"), "the scenario needs a header-first function"
    (select,) = profiles
    assert select.kernel.startswith("select(") and select.source_file == str(tmp_path / "select.cpp")
    assert {line.line for line in select.hot_lines} >= {9, 10, 11}  # the loop's lines, read from select.cpp
    assert select.diagnoses[0].name == "branch_mispredictions"  # random keys against a limit of half of them


def test_glibc_and_system_paths_are_not_user_code(tmp_path: Path) -> None:
    """Distribution packages are built with -ffile-prefix-map=BUILD=.: glibc's sources have relative paths."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.c").write_text("int main(void) { return 0; }\n")
    for path in ("./elf/dl-lookup.c", "./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S",
                 "../sysdeps/x86_64/start.S", "/usr/include/c++/12/array", "/usr/local/include/x.h", "???", ""):
        assert not is_user_code(path, tmp_path), path
    assert is_user_code(str(tmp_path / "src" / "app.c"), tmp_path)
    assert is_user_code("src/app.c", tmp_path)  # a relative path the user's build left, found in the workdir


def test_ranking_files_a_function_by_its_own_instructions() -> None:
    text = ("events: Ir\nob=/work/prog\nfl=/usr/include/c++/12/array\nfn=select(std::array<int, 4ul>&)\n10 5\n"
            "fi=/work/labs/solution.cpp\n12 900\nfe=/usr/include/c++/12/array\n10 5\n"
            "ob=/usr/lib/x86_64-linux-gnu/libc.so.6\nfl=./string/../sysdeps/x86_64/multiarch/memset-vec.S\n"
            "fn=__memset_avx2_unaligned_erms\n5 80\n")
    select, memset = rank_functions(text)
    assert (select.file, select.self_instructions, select.object) == ("/work/labs/solution.cpp", 910, "/work/prog")
    assert select.files == (("/work/labs/solution.cpp", 900.0), ("/usr/include/c++/12/array", 10.0))
    assert memset.object == "/usr/lib/x86_64-linux-gnu/libc.so.6" and not is_user_code(memset.file)


# A particle push through seven pointers, six written: more run-time overlap checks than gcc allows (10), so the
# loop stays scalar for fear of aliasing (`restrict` would fix it). noipa keeps gcc from specialising the call.
PUSH_C = """\
#include <stdio.h>
#include <stdlib.h>
__attribute__((noipa)) void push(float *x, float *y, float *z, float *vx, float *vy, float *vz, const float *q,
                                 int n, float dt) {
    for (int i = 0; i < n; i++) {
        vx[i] += dt * q[i];
        vy[i] -= dt * q[i];
        vz[i] += dt * q[i] * 0.5f;
        x[i] += dt * vx[i];
        y[i] += dt * vy[i];
        z[i] += dt * vz[i];
    }
}
int main(void) {
    int n = 2048;
    float *m = calloc(7 * (size_t)n, sizeof(float));
    for (int i = 0; i < 7 * n; i++) m[i] = (float)(i % 5);
    for (int step = 0; step < 40; step++)
        push(m, m + n, m + 2 * n, m + 3 * n, m + 4 * n, m + 5 * n, m + 6 * n, n, 0.01f);
    printf("%f\\n", m[0] + m[3 * n]);
    return 0;
}
"""


def test_an_application_profile_carries_the_static_facts_a_task_profile_has(tmp_path: Path) -> None:
    """The loop nest, gcc's vectoriser verdict under the flags the binary records, and the cores: without them
    missed_vectorization (and four other CPU rules) could not fire on an application's profile."""
    (tmp_path / "push.c").write_text(PUSH_C)
    subprocess.run(["gcc", "-O3", "-g", "push.c", "-o", "push"], cwd=tmp_path, check=True)
    (push,) = profile_application("./push", tmp_path, target="cpu", top=1, work_dir=tmp_path / "work")
    assert push.kernel == "push"
    line = next(hot for hot in push.hot_lines if hot.line == 6)
    assert line.metric("static.loop_depth") == 1 and line.metric("static.outer_loop_line") == 5
    assert line.metric("gcc.vectorized") == 0 and line.metric("gcc.missed.possible_aliasing") == 1
    assert push.counter("cpu_cores") and push.counter("static.openmp_pragmas") == 0
    assert "-O3" in push.tool_versions and "DW_AT_producer" in push.tool_versions
    assert push.diagnoses[0].name == "missed_vectorization"


def test_cli_profiles_an_application(tmp_path: Path, capsys) -> None:
    app = _app(tmp_path)
    assert main(["profile", "--command", "./app", "--workdir", str(app), "--target", "cpu", "--top", "1",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "strided (cpu)" in out and "profile-0-strided.json" in out


def test_cli_refuses_task_and_command_together(tmp_path: Path, capsys) -> None:
    assert main(["profile", str(tmp_path), "--command", "./app"]) == 2
    assert "either a task directory or --command" in capsys.readouterr().err
