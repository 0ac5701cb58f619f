"""mining/sources.py: every way of naming a repository, and a clear SourceError for each wrong one."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mining.gitlog import list_shas
from mining.sources import DEMO_NAME, demo_bundle, name_from_url, resolve_sources
from perfforge.errors import SourceError
from tests.conftest import RepoBuilder, git


@pytest.fixture
def work_tree(make_repo: Callable[[str], RepoBuilder]) -> RepoBuilder:
    repo = make_repo("kernels")
    repo.commit("one", {"a.cu": "int a;\n"})
    return repo


@pytest.fixture
def bare(work_tree: RepoBuilder, tmp_path: Path) -> Path:
    path = tmp_path / "mirrors" / "bare-kernels.git"
    git(tmp_path, "clone", "--bare", "--quiet", str(work_tree.path), str(path))
    return path


def test_work_tree(work_tree: RepoBuilder, tmp_path: Path) -> None:
    [source] = resolve_sources([str(work_tree.path)], tmp_path / "repos")
    assert source.name == "kernels"
    assert source.url == str(work_tree.path.resolve())
    assert source.git_dir == (work_tree.path / ".git").resolve()
    assert not (tmp_path / "repos").exists()  # local repositories are read in place, never cloned


def test_bare_repository_named_without_dot_git(bare: Path, work_tree: RepoBuilder, tmp_path: Path) -> None:
    [source] = resolve_sources([str(bare)], tmp_path / "repos")
    assert source.name == "bare-kernels"
    assert source.git_dir == bare.resolve()
    assert list_shas(source.git_dir, "HEAD") == work_tree.shas


def test_list_file_with_comments_and_blank_lines(work_tree: RepoBuilder, bare: Path, tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# repositories to mine\n\n{work_tree.path}  # the work tree\n   \n{bare}\n# done\n")
    sources = resolve_sources([str(listing)], tmp_path / "repos")
    assert [s.name for s in sources] == ["kernels", "bare-kernels"]


def test_relative_paths_in_a_list_file_are_read_from_its_folder(work_tree: RepoBuilder, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`kernels` in /x/repos.txt means /x/kernels wherever perfforge runs; so does a nested list's name."""
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{work_tree.path.name}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    [source] = resolve_sources([str(listing)], tmp_path / "repos")
    assert source.git_dir == (work_tree.path / ".git").resolve()
    (tmp_path / "inner.txt").write_text("# empty\n")
    listing.write_text("inner.txt\n")
    with pytest.raises(SourceError, match="lists cannot name other lists"):
        resolve_sources([str(listing)], tmp_path / "repos")


def test_file_url_is_cloned_once_and_reused(work_tree: RepoBuilder, tmp_path: Path) -> None:
    """The second run finds the bare clone in repos_dir and does not clone again: a file put into the clone
    survives, and the directory keeps its inode and mtime."""
    url = f"file://{work_tree.path}"
    repos_dir = tmp_path / "repos"
    [first] = resolve_sources([url], repos_dir)
    assert first.name == name_from_url(url) == f"{tmp_path.name}/kernels"
    assert first.git_dir == repos_dir / f"{tmp_path.name}+kernels.git"
    assert list_shas(first.git_dir, "HEAD") == work_tree.shas
    marker = first.git_dir / "marker"
    marker.write_text("first clone")
    stat_before = first.git_dir.stat()

    [second] = resolve_sources([url], repos_dir)
    assert second == first
    assert marker.read_text() == "first clone"
    assert (second.git_dir.stat().st_ino, second.git_dir.stat().st_mtime_ns) == (stat_before.st_ino,
                                                                                 stat_before.st_mtime_ns)
    assert sorted(p.name for p in repos_dir.iterdir()) == [first.git_dir.name]


def test_no_spec_gives_the_demo_repository(tmp_path: Path) -> None:
    [source] = resolve_sources([], tmp_path / "repos")
    assert source.name == DEMO_NAME == "perfforge/minikern-demo"
    assert source.url == str(demo_bundle())
    assert len(list_shas(source.git_dir, "HEAD")) > 0


@pytest.mark.parametrize(("url", "name"), [
    ("https://github.com/karpathy/llm.c.git", "karpathy/llm.c"),
    ("https://github.com/karpathy/llm.c/", "karpathy/llm.c"),
    ("git@github.com:ggml-org/llama.cpp.git", "ggml-org/llama.cpp"),
    ("file:///srv/mirrors/owner/name", "owner/name"),
])
def test_name_from_url(url: str, name: str) -> None:
    assert name_from_url(url) == name


# ---- errors -------------------------------------------------------------------------------------------------------


def test_nonexistent_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"source .*nowhere does not exist"):
        resolve_sources([str(tmp_path / "nowhere")], tmp_path / "repos")


def test_directory_that_is_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("no git here\n")
    with pytest.raises(SourceError, match="plain is not a git repository"):
        resolve_sources([str(plain)], tmp_path / "repos")


def test_list_file_line_naming_a_nonexistent_path(work_tree: RepoBuilder, tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# header\n{work_tree.path}\n\n{tmp_path / 'gone'}\n")
    with pytest.raises(SourceError, match=rf"{re.escape(str(listing))}:4: source .*gone does not exist"):
        resolve_sources([str(listing)], tmp_path / "repos")


def test_empty_list_file(tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text("# nothing yet\n\n   \n")
    with pytest.raises(SourceError, match="names no repository"):
        resolve_sources([str(listing)], tmp_path / "repos")


def test_list_file_naming_another_list_file(tmp_path: Path) -> None:
    inner = tmp_path / "inner.txt"
    inner.write_text("# empty\n")
    outer = tmp_path / "outer.txt"
    outer.write_text(f"{inner}\n")
    with pytest.raises(SourceError, match=rf"{re.escape(str(outer))}:1: .*lists cannot name other lists"):
        resolve_sources([str(outer)], tmp_path / "repos")


def test_same_repository_given_twice(work_tree: RepoBuilder, tmp_path: Path) -> None:
    """Once as given, once through a list file with a trailing slash: the same repository twice."""
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{work_tree.path}/\n")
    with pytest.raises(SourceError, match="is given twice"):
        resolve_sources([str(work_tree.path), str(listing)], tmp_path / "repos")


def test_repositories_in_directories_of_the_same_name_are_told_apart(make_repo, tmp_path: Path) -> None:
    """Mirrors laid out as owner+name/repo all end in 'repo': their parents name them."""
    first, second = make_repo("a+x/repo"), make_repo("b+y/repo")
    for repo in (first, second):
        repo.commit("init", {"k.cu": "__global__ void k() {}\n"})
    names = [s.name for s in resolve_sources([str(first.path), str(second.path)], tmp_path / "repos")]
    assert names == ["a+x/repo", "b+y/repo"]


def test_dot_git_directory_is_named_after_its_work_tree(work_tree: RepoBuilder, tmp_path: Path) -> None:
    """Stripping '.git' from the name '.git' itself once left the empty name."""
    [source] = resolve_sources([str(work_tree.path / ".git")], tmp_path / "repos")
    assert source.name == "kernels"


def test_work_tree_and_its_dot_git_directory_are_the_same_repository(work_tree: RepoBuilder, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="is given twice"):
        resolve_sources([str(work_tree.path), str(work_tree.path / ".git")], tmp_path / "repos")


def test_url_that_cannot_be_cloned(tmp_path: Path) -> None:
    """Nothing is left in repos_dir to be mistaken for a clone on the next run."""
    repos_dir = tmp_path / "repos"
    url = f"file://{tmp_path / 'no-such-repo'}"
    with pytest.raises(SourceError, match=rf"cannot clone {re.escape(url)}: .*does not appear to be a git repository"):
        resolve_sources([url], repos_dir)
    assert list(repos_dir.iterdir()) == []
