"""bench/external_kernels: the labels' schema (a contract over every entry) and the scoring, on small synthetic
inputs. Nothing here downloads, builds the labelled projects or needs valgrind or a GPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from profiling.diagnoses import RULES

RUN_PY = Path(__file__).resolve().parents[2] / "bench" / "external_kernels" / "run.py"


def _load_run_module():
    spec = importlib.util.spec_from_file_location("external_kernels_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


run = _load_run_module()


@pytest.fixture(scope="module")
def catalogue():
    return run.load_catalogue()


# ---- the labels ---------------------------------------------------------------------------------------------------

def test_every_entry_follows_the_schema(catalogue) -> None:
    """Labels are registered diagnoses or declared missing, shas are full, projects and recipes exist, ids unique."""
    assert run.catalogue_problems(catalogue, RULES.names()) == []


def test_the_set_is_large_and_varied_enough(catalogue) -> None:
    """Issue 20: at least 40 labelled kernels from at least 4 projects, CPU and CUDA both (CPU at least 12)."""
    entries = catalogue.entries
    targets = [catalogue.target_of(e) for e in entries]
    assert len(entries) >= 40
    assert len({e.project for e in entries}) >= 4
    assert set(targets) == {"cpu", "cuda"}
    assert targets.count("cpu") >= 12


def test_commits_are_full_shas(catalogue) -> None:
    for entry in catalogue.entries:
        assert run.SHA_RE.match(entry.commit) and run.SHA_RE.match(entry.fix_commit), entry.id


def test_missing_vocabulary_is_used_and_not_a_rule(catalogue) -> None:
    """Each label declared missing from perfforge labels some entry and is not a registered diagnosis."""
    used = {name for e in catalogue.entries for name in (e.label, *e.secondary)}
    for name in catalogue.vocabulary:
        assert name in used, name
        assert name not in RULES, name


def test_every_recipe_placeholder_is_known(catalogue) -> None:
    """A recipe's command uses only placeholders run.py fills (a typo would reach the shell as text)."""
    for entry in catalogue.entries:
        recipe = catalogue.recipes[entry.recipe]
        cmds = run.commands_for(entry, recipe, Path("/src"), Path("/bin/prog"), "sm_90")
        for text in (cmds.prepare, cmds.build, cmds.run):
            assert not run.PLACEHOLDER_RE.search(text), (entry.id, text)
            assert "{bin}" not in text and "{file}" not in text


def test_an_entrys_defines_fill_its_recipes_build(catalogue) -> None:
    """`defines` (cut problem sizes, an element type) go into the recipe's {defines}; an entry without them builds
    with the recipe's command as it is."""
    entries = {e.id: e for e in catalogue.entries}

    def build(entry_id: str) -> str:
        entry = entries[entry_id]
        return run.commands_for(entry, catalogue.recipes[entry.recipe], Path("/src"), Path("/bin/prog"), "sm_90").build

    assert "-g -DREPETITIONS=200000 /src/cache-conflicts/cache-conflicts.cpp -o /bin/prog" in \
        build("hardware-effects/cache-conflicts")
    assert "-DPERFFORGE_T=__half -DPERFFORGE_LAUNCH=launch_gemm_kernel_v06_vectorized" in \
        build("CUDA-GEMM-Optimization/fp16/v06_vectorized")
    assert "PERFFORGE_T" not in build("CUDA-GEMM-Optimization/v00")  # the driver's default element type: float


def test_an_entrys_prepare_adds_a_step_to_its_recipes(catalogue) -> None:
    """{recipe_prepare} in an entry's own prepare is the recipe's, filled, followed by the entry's step (llm.c's
    attention_backward/1 shrinks T after the recipe's sizes); an entry without its own runs the recipe's alone."""
    entries = {e.id: e for e in catalogue.entries}

    def prepare(entry_id: str) -> str:
        entry = entries[entry_id]
        return run.commands_for(entry, catalogue.recipes[entry.recipe], Path("/src"), Path("/bin/prog"),
                                "sm_90").prepare

    shrunk, plain = prepare("llm.c/dev/cuda/attention_backward/1"), prepare("llm.c/dev/cuda/attention_backward/2")
    assert shrunk == plain + "; sed -i 's/int T = 1024;/int T = 256;/' /src/dev/cuda/attention_backward.cu"
    assert "int repeat_times = 10;" in plain and "{" + "recipe_prepare}" not in shrunk


def test_a_bad_label_and_a_short_sha_are_reported(catalogue) -> None:
    entry = catalogue.entries[0]
    bad = run.Catalogue(projects=catalogue.projects, recipes=catalogue.recipes, vocabulary=catalogue.vocabulary,
                        entries=(run.Entry(**{**entry.__dict__, "label": "slow_code", "commit": "abc123"}),))
    problems = run.catalogue_problems(bad, RULES.names())
    assert any("'slow_code' is neither a diagnosis nor in [vocabulary]" in p for p in problems)
    assert any("commit 'abc123' is not a 40-digit hex sha" in p for p in problems)


def test_an_unknown_field_is_an_error(tmp_path: Path) -> None:
    labels = tmp_path / "labels.toml"
    labels.write_text('schema_version = 1\n[recipes.r]\ntarget = "cpu"\nexport = []\nbuild = ""\nrun = "x"\n'
                      'flags = "-O3"\n')
    with pytest.raises(run.CatalogueError, match=r"recipe r: unknown fields \['flags'\]"):
        run.load_catalogue(labels)


def test_list_prints_the_cuda_builds_without_running_anything(capsys) -> None:
    assert run.main(["--list", "--target", "cuda", "--project", "SGEMM_CUDA"]) == 0
    out = capsys.readouterr().out
    assert "SGEMM_CUDA/1 [cuda]" in out and "checkout=MISSING" in out
    assert "nvcc -O3" in out and "--command '<work>/SGEMM_CUDA_1/bin/prog 1'" in out


# ---- names, templates, export -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "base"), [
    ("void sgemm2DBlocktiling<128, 128, 8, 8, 8>(int, int, int, float, const float *, const float *, float, float *)",
     "sgemm2DBlocktiling"),
    ("power(std::array<std::array<float, 400ul>, 400ul> const&, unsigned int)", "power"),
    ("Life::simulateNext()", "Life::simulateNext"),
    ("layernorm_forward_kernel1", "layernorm_forward_kernel1"),
])
def test_base_name(name: str, base: str) -> None:
    assert run.base_name(name) == base


def test_matches_an_inlined_symbol_and_a_qualified_name() -> None:
    assert run.matches("power(std::array<float, 4ul> const&, unsigned int)", ["multiply", "power"])
    assert run.matches("simulateNext", ["Life::simulateNext"])
    assert not run.matches("init(std::vector<int>&)", ["solution"])


def test_fill_leaves_shell_braces_alone() -> None:
    text = run.fill("sed -E 's/a\\{[^}]*\\}/{version}/' {file} ${HOME}", {"version": "3", "file": "f.cu"})
    assert text == "sed -E 's/a\\{[^}]*\\}/3/' f.cu ${HOME}"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_export_writes_the_paths_at_the_commit_and_leaves_the_checkout(tmp_path: Path) -> None:
    """The entry's commit is exported even when the working tree has moved on; the checkout is not touched."""
    repo = tmp_path / "repo"
    (repo / "labs" / "a").mkdir(parents=True)
    _git(repo.parent, "init", "-q", str(repo))
    (repo / "labs" / "a" / "solution.cpp").write_text("int v1;\n")
    (repo / "other.txt").write_text("x\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "v1")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "labs" / "a" / "solution.cpp").write_text("int v2;\n")
    dest = tmp_path / "out"
    assert run.export_tree(repo, commit, ["labs/a"], dest) == []
    assert (dest / "labs" / "a" / "solution.cpp").read_text() == "int v1;\n"
    assert not (dest / "other.txt").exists()
    assert (repo / "labs" / "a" / "solution.cpp").read_text() == "int v2;\n"
    with pytest.raises(run.StageError, match="is not in"):
        run.export_tree(repo, "0" * 40, ["labs/a"], tmp_path / "none")


# ---- scoring -------------------------------------------------------------------------------------------------------

def _row(entry_id: str, project: str, target: str, label: str, diagnoses: list[str], *, status: str = "ok",
         secondary: tuple[str, ...] = (), in_vocabulary: bool = True) -> dict:
    return run.score({"id": entry_id, "project": project, "target": target, "label": label,
                      "secondary": list(secondary), "in_vocabulary": in_vocabulary, "status": status,
                      "diagnoses": [{"name": name, "severity": 0.5} for name in diagnoses]})


SYNTHETIC = [
    _row("a/1", "a", "cpu", "cache_miss_bound", ["cache_miss_bound", "branch_mispredictions"]),
    _row("a/2", "a", "cpu", "missed_vectorization", ["cache_miss_bound", "missed_vectorization"]),
    _row("b/1", "b", "cuda", "uncoalesced_global_access", ["dram_bound", "latency_bound", "low_occupancy",
                                                           "uncoalesced_global_access"],
         secondary=("low_occupancy",)),
    _row("b/2", "b", "cuda", "barrier_stalls", ["latency_bound"], in_vocabulary=False),
    _row("b/3", "b", "cuda", "dram_bound", [], status="failed"),
    _row("c/1", "c", "cpu", "branch_mispredictions", [], status="not_profiled"),
]


def test_score_top1_top3_and_lenient() -> None:
    first, second, third = SYNTHETIC[:3]
    assert (first["top1"], first["top3"]) == (True, True)
    assert (second["top1"], second["top3"], second["first"]) == (False, True, "cache_miss_bound")
    assert (third["top1"], third["top3"]) == (False, False)
    assert (third["top1_lenient"], third["top3_lenient"]) == (False, True)  # low_occupancy is third
    assert not SYNTHETIC[4]["top3"] and not SYNTHETIC[5]["top3"]


def test_summary_counts_evaluated_kernels_per_target_and_label() -> None:
    summary = run.summarise(SYNTHETIC)
    overall = summary["overall"]
    assert (overall["kernels"], overall["not_evaluated"], overall["top1"], overall["top3"]) == (5, 1, 1, 2)
    assert overall["top3_rate"] == 0.4
    assert sorted(overall["missed_top3"]) == ["b/1", "b/2", "c/1"]
    assert summary["in_vocabulary"]["kernels"] == 4
    assert summary["by_target"]["cpu"]["kernels"] == 3 and summary["by_target"]["cuda"]["kernels"] == 2
    assert summary["by_target"]["cuda"]["top3_lenient"] == 1
    assert summary["by_label"]["cache_miss_bound"]["top1_rate"] == 1.0
    assert summary["statuses"] == {"failed": 1, "not_profiled": 1, "ok": 4}


def test_leave_one_project_out_folds_split_by_project() -> None:
    folds = {fold["held_out"]: fold for fold in run.lopo_folds(SYNTHETIC)}
    assert set(folds) == {"a", "b", "c"}
    assert folds["b"]["test"] == ["b/1", "b/2"]  # b/3 failed: in no fold
    assert sorted(folds["b"]["train"]) == ["a/1", "a/2", "c/1"]
    assert folds["a"]["test_figures"]["top3"] == 2
    for fold in folds.values():
        assert not set(fold["test"]) & set(fold["train"])


def test_profile_row_takes_the_first_profile_of_the_labelled_function(catalogue) -> None:
    entry = next(e for e in catalogue.entries if e.id == "perf-ninja/loop_interchange_1")
    profiled = [("__memset_avx2_unaligned_erms", []),
                ("power(std::array<std::array<float, 400ul>, 400ul> const&, unsigned int)",
                 [("cache_miss_bound", 0.4), ("missed_vectorization", 0.2)])]
    row = run.profile_row(entry, profiled)
    assert (row["status"], row["position"]) == ("ok", 1)
    assert [d["name"] for d in row["diagnoses"]] == ["cache_miss_bound", "missed_vectorization"]
    assert run.profile_row(entry, profiled[:1])["status"] == "not_profiled"


# ---- the ranking workaround ---------------------------------------------------------------------------------------

CALLGRIND_OUT = """\
events: Ir
ob=/work/prog
fl=/usr/include/c++/12/array
fn=select(std::array<int, 4ul>&)
10 5
fi=/work/labs/solution.cpp
12 900
fe=/usr/include/c++/12/array
10 5
ob=/usr/lib/x86_64-linux-gnu/libc.so.6
fl=./string/../sysdeps/x86_64/multiarch/memset-vec-unaligned-erms.S
fn=__memset_avx2_unaligned_erms
5 80
"""
