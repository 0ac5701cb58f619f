"""mining/gitlog.py: the plumbing streams agree with PyDriller, survive missing objects, and never write.

PyDriller (the reference traversal) writes to the repository it opens, so it only ever reads a
`git clone --bare --shared` copy of a fixture repository.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from pydriller import Repository

from mining import gitlog
from mining.gitlog import (
    BlobReader,
    CommitMeta,
    FileDiff,
    StreamFailure,
    iter_commit_meta,
    iter_patches,
    list_shas,
    parse_patch,
    shared_clone,
)
from tests.conftest import NAIVE_SUM_CU, REDUCED_SUM_CU, RepoBuilder, git

UNICODE_PATH = "src/ünï côde.cu"
SPACE_PATH = "src/with space.cu"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01"
# Two functions 30 lines apart, so that editing both makes two hunks.
LONG_FILE = "".join(f"int f{i}(void) {{ return {i}; }}\n" for i in range(40))


def pydriller_copy(repo: RepoBuilder, tmp_path: Path) -> Path:
    """A bare clone sharing the fixture's objects: the only thing PyDriller is allowed to open."""
    copy = tmp_path / "pydriller-copy.git"
    subprocess.run(["git", "clone", "--bare", "--shared", "--quiet", str(repo.path), str(copy)], check=True)
    return copy


def all_paths(metas: list[CommitMeta]) -> dict[str, list[str]]:
    return {meta.sha: meta.files for meta in metas}


def delete_loose_object(repo: RepoBuilder, sha: str) -> None:
    """Remove one object from a fresh repository (its objects are all loose: nothing ran `git gc`)."""
    (repo.path / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> RepoBuilder:
    """Root commit adding files (one with spaces, one non-ASCII, one binary), then a modification in two hunks,
    a deletion, a rename, binary and unicode edits, a commit with a multi-line message and an empty commit.
    Built once per module: every test only reads it."""
    path = tmp_path_factory.mktemp("history")
    git(path, "init", "-q", "-b", "main")
    repo = RepoBuilder(path)
    repo.commit("Initial import", {"src/sum.cu": NAIVE_SUM_CU, "src/long.c": LONG_FILE, "README.md": "# x\n",
                                   SPACE_PATH: "int s;\n", UNICODE_PATH: "int u;\n", "assets/logo.png": PNG_BYTES,
                                   "old/name.cu": "int moved(void) { return 1; }\n"})
    repo.commit("reduce with warp shuffles", {"src/sum.cu": REDUCED_SUM_CU})
    repo.commit("edit both ends of long.c\n\nA body line.\nAnother one.",
                {"src/long.c": LONG_FILE.replace("return 1;", "return -1;").replace("return 38;", "return 83;")})
    repo.commit("drop the readme", {"README.md": None})
    repo.commit("move name.cu", {"old/name.cu": None, "new/name.cu": "int moved(void) { return 1; }\n"})
    repo.commit("touch odd names and the logo", {SPACE_PATH: "int s2;\n", UNICODE_PATH: "int u2;\n",
                                                  "assets/logo.png": PNG_BYTES + b"\x01\x02"})
    repo.commit("empty: retrigger CI", {})
    return repo


# ---- metadata -----------------------------------------------------------------------------------------------------


def test_commit_meta_agrees_with_pydriller(history: RepoBuilder, tmp_path: Path) -> None:
    """sha, parents, date, message and changed paths of every commit, root commit and rename included (a rename is
    a delete and an add here, one ModifiedFile with both paths in PyDriller)."""
    git_dir = history.path / ".git"
    failures: list[StreamFailure] = []
    ours = {meta.sha: meta for meta in iter_commit_meta(git_dir, list_shas(git_dir, "HEAD"), failures)}
    theirs = list(Repository(str(pydriller_copy(history, tmp_path))).traverse_commits())

    assert failures == []
    assert sorted(ours) == sorted(c.hash for c in theirs) == sorted(history.shas)
    for commit in theirs:
        meta = ours[commit.hash]
        assert meta.parents == commit.parents
        assert meta.message == commit.msg
        assert datetime.fromisoformat(meta.date) == commit.author_date
        paths = {p for m in commit.modified_files for p in (m.old_path, m.new_path) if p is not None}
        assert sorted(meta.files) == sorted(paths)


def test_commit_meta_keeps_odd_paths_and_sees_a_rename_as_delete_and_add(history: RepoBuilder) -> None:
    """Spaces and non-ASCII characters come back unquoted; the root commit lists every file it adds."""
    git_dir = history.path / ".git"
    metas = list(iter_commit_meta(git_dir, list_shas(git_dir, "HEAD"), []))
    assert metas[0].parents == []
    assert {SPACE_PATH, UNICODE_PATH, "assets/logo.png"} <= set(metas[0].files)
    assert metas[2].message == "edit both ends of long.c\n\nA body line.\nAnother one."
    assert sorted(metas[4].files) == ["new/name.cu", "old/name.cu"]
    assert sorted(metas[5].files) == ["assets/logo.png", SPACE_PATH, UNICODE_PATH]
    assert (metas[6].message, metas[6].files) == ("empty: retrigger CI", [])  # PyDriller lists it too


def test_list_shas_is_oldest_first(history: RepoBuilder) -> None:
    assert list_shas(history.path / ".git", "HEAD") == history.shas


# ---- patches ------------------------------------------------------------------------------------------------------


def test_patches_agree_with_pydriller_on_modified_files(history: RepoBuilder, tmp_path: Path) -> None:
    """Added and removed lines of every file PyDriller calls modified, in order."""
    git_dir = history.path / ".git"
    shas = list_shas(git_dir, "HEAD")
    metas = list(iter_commit_meta(git_dir, shas, []))
    ours = {sha: {d.path: d for d in diffs}
            for sha, diffs in iter_patches(git_dir, shas, all_paths(metas), 10_000, [])}
    compared = 0
    for commit in Repository(str(pydriller_copy(history, tmp_path))).traverse_commits():
        for modified in commit.modified_files:
            if modified.change_type.name != "MODIFY" or modified.new_path.endswith(".png"):
                continue
            diff = ours[commit.hash][modified.new_path]
            assert diff.status == "modified"
            assert diff.added_lines == [text for _, text in modified.diff_parsed["added"]]
            assert diff.removed_lines == [text for _, text in modified.diff_parsed["deleted"]]
            compared += 1
    assert compared == 4  # sum.cu, long.c and the two odd names; the logo is binary


def test_streams_read_the_same_records_in_blocks_of_any_size(history: RepoBuilder,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Records longer than a read block, and separators split between two blocks, come out whole."""
    git_dir = history.path / ".git"
    shas = list_shas(git_dir, "HEAD")
    metas = list(iter_commit_meta(git_dir, shas, []))

    def read_all() -> tuple[list[CommitMeta], list[tuple[str, list[FileDiff]]]]:
        return list(iter_commit_meta(git_dir, shas, [])), list(iter_patches(git_dir, shas, all_paths(metas), 1000, []))

    whole = read_all()
    for block_bytes in (1, 2, 7, 64):
        monkeypatch.setattr(gitlog, "_READ_BLOCK_BYTES", block_bytes)
        assert read_all() == whole, block_bytes
    assert len(whole[0]) == len(shas) and any(diffs for _, diffs in whole[1])


def test_patch_status_of_added_deleted_and_modified_files(history: RepoBuilder) -> None:
    git_dir = history.path / ".git"
    shas = history.shas
    wanted = {shas[0]: ["src/sum.cu"], shas[1]: ["src/sum.cu"], shas[3]: ["README.md"],
              shas[4]: ["old/name.cu", "new/name.cu"]}
    statuses = {(sha, d.path): d.status for sha, diffs in iter_patches(git_dir, list(wanted), wanted, 1000, [])
                for d in diffs}
    assert statuses == {
        (shas[0], "src/sum.cu"): "added", (shas[1], "src/sum.cu"): "modified", (shas[3], "README.md"): "deleted",
        (shas[4], "old/name.cu"): "deleted", (shas[4], "new/name.cu"): "added",
    }


def test_patches_are_restricted_to_the_wanted_paths(history: RepoBuilder) -> None:
    """A commit with no wanted paths still comes back, with no diffs."""
    git_dir = history.path / ".git"
    wanted = {history.shas[5]: [UNICODE_PATH]}
    got = list(iter_patches(git_dir, history.shas[4:6], wanted, 1000, []))
    assert [(sha, [d.path for d in diffs]) for sha, diffs in got] == [(history.shas[4], []),
                                                                      (history.shas[5], [UNICODE_PATH])]


def test_binary_file_is_flagged_and_has_no_lines(history: RepoBuilder) -> None:
    git_dir = history.path / ".git"
    sha = history.shas[5]
    [(_, [diff])] = iter_patches(git_dir, [sha], {sha: ["assets/logo.png"]}, 1000, [])
    assert diff.is_binary
    assert diff.status == "modified"
    assert diff.added_lines == diff.removed_lines == [] and diff.hunks == []


def test_separator_characters_in_a_message_split_nothing(make_repo: Callable[[str], RepoBuilder],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream's own separators typed into a commit message: no phantom commit, no invented path, the next
    commit whole, in blocks of any size."""
    repo = make_repo("ctrl")
    repo.commit("init", {"k.cu": "int a;\n"})
    odd = "Speed up k\n\x1efoobar1baz\x1fx\n\x1dsrc/fake.cu\nend"
    repo.commit(odd, {"k.cu": "int a, b;\n"})
    repo.commit("next", {"k.cu": "int a, b, c;\n"})
    git_dir = repo.path / ".git"
    shas = list_shas(git_dir, "HEAD")
    for block_bytes in (1, 7, 1 << 20):
        monkeypatch.setattr(gitlog, "_READ_BLOCK_BYTES", block_bytes)
        metas = list(iter_commit_meta(git_dir, shas, []))
        assert [m.sha for m in metas] == shas and [m.files for m in metas] == [["k.cu"]] * 3, block_bytes
        assert metas[1].message == odd
        patches = list(iter_patches(git_dir, shas, all_paths(metas), 1000, []))
        assert [sha for sha, _ in patches] == shas and all(len(diffs) == 1 for _, diffs in patches)


def test_max_patch_lines_cuts_the_patch_and_sets_truncated(make_repo: Callable[[str], RepoBuilder]) -> None:
    """A 200-line rewrite read with a 20-line limit: the patch keeps 20 lines, the lines after the cut are gone."""
    repo = make_repo("big")
    repo.commit("add", {"gen.c": "".join(f"int a{i};\n" for i in range(200))})
    sha = repo.commit("rewrite", {"gen.c": "".join(f"int b{i};\n" for i in range(200))})
    git_dir = repo.path / ".git"
    [(_, [cut])] = iter_patches(git_dir, [sha], {sha: ["gen.c"]}, 20, [])
    [(_, [whole])] = iter_patches(git_dir, [sha], {sha: ["gen.c"]}, 10_000, [])
    assert cut.truncated and not whole.truncated
    assert len(cut.patch.split("\n")) == 20
    assert cut.removed_lines == whole.removed_lines[:len(cut.removed_lines)]
    assert len(cut.removed_lines) + len(cut.added_lines) < 20
    assert len(whole.removed_lines) == len(whole.added_lines) == 200


def test_hunks_hold_removed_and_added_lines_per_hunk(history: RepoBuilder) -> None:
    """Two edits 37 lines apart in long.c give two hunks, each with its own (removed, added) lines."""
    sha = history.shas[2]
    [(_, [diff])] = iter_patches(history.path / ".git", [sha], {sha: ["src/long.c"]}, 1000, [])
    assert diff.hunks == [(["int f1(void) { return 1; }"], ["int f1(void) { return -1; }"]),
                          (["int f38(void) { return 38; }"], ["int f38(void) { return 83; }"])]
    assert diff.patch.startswith("index ") and "@@ -1,5 +1,5 @@" in diff.patch
    assert diff.line_ranges == [(1, 5, 1, 5), (36, 5, 36, 5)]  # 3 lines of context around lines 2 and 39


def test_hunk_line_ranges_read_zero_and_missing_counts_and_give_up_on_an_odd_header() -> None:
    body = "--- a/x.c\n+++ b/x.c\n@@ -0,0 +1 @@\n+int a;\n@@ -5 +4,0 @@ int f(void)\n-int b;"
    diff = FileDiff(path="x.c", status="modified")
    parse_patch(diff, body, 100)
    assert diff.line_ranges == [(0, 0, 1, 1), (5, 1, 4, 0)]
    assert diff.hunks == [([], ["int a;"]), (["int b;"], [])]
    odd = FileDiff(path="x.c", status="modified")
    parse_patch(odd, body.replace("@@ -5 +4,0 @@", "@@ five lines on @@"), 100)
    assert odd.line_ranges == [] and odd.hunks == diff.hunks


# ---- missing objects ----------------------------------------------------------------------------------------------


@pytest.fixture
def broken_history(make_repo: Callable[[str], RepoBuilder]) -> RepoBuilder:
    """Five commits; the blob that commit 2 gives b.cu is deleted. Only that commit's diff reads it: b.cu does not
    change again, and the other commits touch a.cu or c.cu."""
    repo = make_repo("broken")
    repo.commit("one", {"a.cu": "int a;\n", "b.cu": "int b;\n"})
    repo.commit("two", {"a.cu": "int a1;\n"})
    repo.commit("three", {"b.cu": "int b2;\n"})
    repo.commit("four", {"a.cu": "int a2;\n"})
    repo.commit("five", {"c.cu": "int c;\n"})
    delete_loose_object(repo, git(repo.path, "rev-parse", f"{repo.shas[2]}:b.cu").strip())
    return repo


def test_missing_blob_fails_only_its_commit_and_the_patch_stream_goes_on(broken_history: RepoBuilder) -> None:
    git_dir = broken_history.path / ".git"
    shas = broken_history.shas
    failures: list[StreamFailure] = []
    wanted = {sha: ["a.cu", "b.cu", "c.cu"] for sha in shas}
    got = [sha for sha, _ in iter_patches(git_dir, shas, wanted, 1000, failures)]
    assert got == [shas[0], shas[1], shas[3], shas[4]]
    assert [f.sha for f in failures] == [shas[2]]
    assert failures[0].reason.startswith("fatal:")


def test_missing_blob_does_not_stop_the_metadata_stream(broken_history: RepoBuilder) -> None:
    """Names-only output reads trees, never blobs: every commit comes back, nothing fails."""
    git_dir = broken_history.path / ".git"
    failures: list[StreamFailure] = []
    metas = list(iter_commit_meta(git_dir, broken_history.shas, failures))
    assert [m.sha for m in metas] == broken_history.shas
    assert failures == []


@pytest.mark.parametrize("stream", ["meta", "patches"])
def test_missing_tree_fails_only_its_commit(make_repo: Callable[[str], RepoBuilder], stream: str) -> None:
    """The `src` tree of commit 3 is deleted: git cannot even list that commit's files."""
    repo = make_repo("broken_tree")
    repo.commit("one", {"a.cu": "int a;\n", "src/k.cu": "int k;\n"})
    repo.commit("two", {"b.cu": "int b;\n"})
    repo.commit("three", {"src/k.cu": "int k2;\n"})
    repo.commit("four", {"a.cu": "int a2;\n"})
    delete_loose_object(repo, git(repo.path, "rev-parse", f"{repo.shas[2]}:src").strip())
    git_dir, shas = repo.path / ".git", repo.shas
    failures: list[StreamFailure] = []
    if stream == "meta":
        got = [m.sha for m in iter_commit_meta(git_dir, shas, failures)]
    else:
        # as the pipeline asks: the kernel files the commits change (git reads only the trees these lie in)
        wanted = {s: ["a.cu", "b.cu", "src/k.cu"] for s in shas}
        got = [sha for sha, _ in iter_patches(git_dir, shas, wanted, 100, failures)]
    assert [f.sha for f in failures] == [shas[2]]
    assert got == [shas[0], shas[1], shas[3]]


def test_empty_commits_before_a_missing_blob_do_not_shift_the_blame(make_repo: Callable[[str], RepoBuilder]) -> None:
    """Two empty commits (--allow-empty) sit before the commit whose blob is missing. Without `--always`, git
    printed nothing for them, the count of commits seen lagged, and a commit already yielded was blamed too."""
    repo = make_repo("broken_after_empty")
    repo.commit("one", {"a.cu": "int a;\n", "b.cu": "int b;\n"})
    repo.commit("empty", {})
    repo.commit("empty again", {})
    repo.commit("two", {"a.cu": "int a1;\n"})
    repo.commit("three", {"b.cu": "int b2;\n"})
    repo.commit("four", {"a.cu": "int a2;\n"})
    delete_loose_object(repo, git(repo.path, "rev-parse", f"{repo.shas[4]}:b.cu").strip())
    failures: list[StreamFailure] = []
    wanted = {sha: ["a.cu", "b.cu"] for sha in repo.shas}
    got = [sha for sha, _ in iter_patches(repo.path / ".git", repo.shas, wanted, 100, failures)]
    assert got == [sha for sha in repo.shas if sha != repo.shas[4]]
    assert [f.sha for f in failures] == [repo.shas[4]]


def edited_twice(make_repo: Callable[[str], RepoBuilder], path: str) -> tuple[RepoBuilder, str]:
    repo = make_repo("awkward")
    repo.commit("add", {path: "int a;\n"})
    return repo, repo.commit("edit", {path: "int b;\n"})


def test_quoted_path_keeps_its_non_ascii_characters(make_repo: Callable[[str], RepoBuilder], tmp_path: Path) -> None:
    """A double quote in the name makes git quote the path even with core.quotepath=off; the ü stays raw UTF-8
    inside the quotes and must not come back as U+FFFD."""
    path = 'src/"quoted" ü.cu'
    repo, sha = edited_twice(make_repo, path)
    [commit] = [c for c in Repository(str(pydriller_copy(repo, tmp_path))).traverse_commits() if c.hash == sha]
    [meta] = iter_commit_meta(repo.path / ".git", [sha], [])
    [(_, diffs)] = iter_patches(repo.path / ".git", [sha], {sha: [path]}, 100, [])
    assert [m.new_path for m in commit.modified_files] == [path]
    assert meta.files == [path]
    assert [d.path for d in diffs] == [path]


def test_directory_ending_in_b_keeps_its_patch(make_repo: Callable[[str], RepoBuilder]) -> None:
    """git leaves the path unquoted (a space needs no quoting), so 'diff --git a/lib b/x.cu b/lib b/x.cu' must not
    be split at its last ' b/'."""
    path = "lib b/x.cu"
    repo, sha = edited_twice(make_repo, path)
    [meta] = iter_commit_meta(repo.path / ".git", [sha], [])
    [(_, diffs)] = iter_patches(repo.path / ".git", [sha], {sha: [path]}, 100, [])
    assert meta.files == [path]
    assert [d.path for d in diffs] == [path]


# ---- blobs --------------------------------------------------------------------------------------------------------


def test_blob_reader_returns_exact_bytes_and_none_when_missing(history: RepoBuilder) -> None:
    git_dir = history.path / ".git"
    first, last = history.shas[0], history.shas[-1]
    with BlobReader(git_dir) as blobs:
        assert blobs.read(first, "src/sum.cu") == NAIVE_SUM_CU.encode()
        assert blobs.read(first, "assets/logo.png") == PNG_BYTES
        assert blobs.read(last, UNICODE_PATH) == b"int u2;\n"
        assert blobs.read(last, "README.md") is None  # deleted in commit 4
        assert blobs.read(first, "no/such/file.cu") is None
        assert blobs.read("0" * 40, "src/sum.cu") is None
        assert blobs.read(first, "bad\nname") is None


def test_blob_reader_missing_path_with_a_space_is_none(history: RepoBuilder) -> None:
    """git echoes the request in its 'missing' line, so a path's own spaces change the word count."""
    with BlobReader(history.path / ".git") as blobs:
        assert blobs.read("HEAD", "src/gone space.cu") is None
        assert blobs.read("HEAD", SPACE_PATH) == b"int s2;\n"


def test_blob_reader_serves_many_reads_in_a_row(history: RepoBuilder) -> None:
    """One cat-file process answers 300 requests, hits and misses interleaved, without losing its place."""
    expected = {(sha, path): git(history.path, "show", f"{sha}:{path}")
                for sha in history.shas for path in ("src/sum.cu", "src/long.c")}
    with BlobReader(history.path / ".git") as blobs:
        for _ in range(25):
            for (sha, path), text in expected.items():
                assert blobs.read(sha, path) == text.encode()
                assert blobs.read(sha, "missing.cu") is None


def test_blob_reader_reading_a_directory_does_not_derail_the_next_read(history: RepoBuilder) -> None:
    """A directory named like a licence file (licence_of reads every such name) is a tree, not a blob: its content
    must still be consumed, or the next read parses tree bytes as its header."""
    with BlobReader(history.path / ".git") as blobs:
        assert blobs.read("HEAD", "src") is None
        assert blobs.read("HEAD", "src/sum.cu") == REDUCED_SUM_CU.encode()


# ---- shared clones ------------------------------------------------------------------------------------------------


def snapshot(git_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file under a git directory with its (mtime_ns, size)."""
    return {str(p.relative_to(git_dir)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in git_dir.rglob("*") if p.is_file()}


def test_shared_clone_never_writes_to_the_source(history: RepoBuilder, tmp_path: Path) -> None:
    source = history.path / ".git"
    before = snapshot(source)
    clone = shared_clone(source, tmp_path / "clones" / "history.git")
    assert snapshot(source) == before
    assert list_shas(clone, "HEAD") == history.shas
    assert (clone / "objects" / "info" / "alternates").read_text().strip() == str((source / "objects").resolve())


def test_shared_clone_of_a_mirror_without_config(history: RepoBuilder, tmp_path: Path) -> None:
    """Mirrors copied by rsync can lack `config`; the clone still works and has one of its own."""
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "--bare", "--quiet", str(history.path), str(mirror))
    (mirror / "config").unlink()
    before = snapshot(mirror)
    clone = shared_clone(mirror, tmp_path / "clones" / "mirror.git")
    assert snapshot(mirror) == before and not (mirror / "config").exists()
    assert (clone / "config").is_file()
    assert [m.sha for m in iter_commit_meta(clone, list_shas(clone, "HEAD"), [])] == history.shas


def test_shared_clone_reuses_an_existing_clone_of_the_same_source(history: RepoBuilder, tmp_path: Path) -> None:
    dest = shared_clone(history.path / ".git", tmp_path / "clone.git")
    marker = dest / "marker"
    marker.write_text("kept")
    assert shared_clone(history.path / ".git", dest) == dest
    assert marker.read_text() == "kept"
    assert not list(dest.parent.glob("clone.git*.incomplete"))


def test_shared_clone_replaces_a_clone_of_another_source(history: RepoBuilder,
                                                         make_repo: Callable[[str], RepoBuilder],
                                                         tmp_path: Path) -> None:
    """A stale clone left at dest by another repository (a reused work directory) is not read as this one."""
    other = make_repo("other")
    other.commit("unrelated", {"x.cu": "int x;\n"})
    dest = shared_clone(other.path / ".git", tmp_path / "clone.git")
    assert shared_clone(history.path / ".git", dest) == dest
    assert list_shas(dest, "HEAD") == history.shas



def test_patches_of_paths_with_pathspec_magic_are_read_literally(make_repo: Callable[[str], RepoBuilder]) -> None:
    """Wanted paths go to git as pathspecs: names with `*` or `[x]` still come back, and only those asked for."""
    repo = make_repo("magic")
    repo.commit("add", {"src/a*.cu": "int a;\n", "src/ab.cu": "int b;\n", "src/[x].cu": "int x;\n",
                        "src/x.cu": "int y;\n"})
    sha = repo.commit("edit all", {"src/a*.cu": "int a2;\n", "src/ab.cu": "int b2;\n", "src/[x].cu": "int x2;\n",
                                   "src/x.cu": "int y2;\n"})
    failures: list[StreamFailure] = []
    [(got_sha, diffs)] = list(iter_patches(repo.path / ".git", [sha], {sha: ["src/a*.cu", "src/[x].cu"]}, 100,
                                           failures))
    assert got_sha == sha and not failures
    assert sorted(d.path for d in diffs) == ["src/[x].cu", "src/a*.cu"]
    assert all(d.added_lines for d in diffs)
