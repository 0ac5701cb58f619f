"""Where histories come from: local repositories (work tree or bare), git URLs, a file listing them, or the
embedded demo repository shipped with the package.

Every source becomes a `Source` with a git directory that mining reads through `--shared` bare clones. A
local repository is never opened by anything but `git clone`; a URL is cloned once (bare) into the run's work
directory and reused by later runs.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mining.gitlog import is_git_dir
from perfforge.errors import SourceError
from perfforge.io import atomic_dir

DEMO_NAME = "perfforge/minikern-demo"
_URL_RE = re.compile(r"^(https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:")


@dataclass(frozen=True)
class Source:
    name: str  # owner/name for URLs, the directory name for local repositories
    url: str  # what the user gave (a path or a URL)
    git_dir: Path  # a git directory that can be read (the repository's own, or a clone of a URL)


def demo_bundle() -> Path:
    return Path(str(resources.files("perfforge") / "data" / "demo.bundle"))


def resolve_sources(specs: list[str], repos_dir: Path) -> list[Source]:
    """Sources for the given specs; the demo repository when specs is empty."""
    if not specs:
        return [_clone_once(str(demo_bundle()), DEMO_NAME, repos_dir)]
    sources: list[Source] = []
    for spec in specs:
        sources.extend(_expand(spec, repos_dir))
    seen: dict[Path, Source] = {}
    for source in sources:
        if source.git_dir in seen:
            raise SourceError(f"repository {source.git_dir} is given twice (as {seen[source.git_dir].url} and "
                              f"{source.url}); give each repository once")
        seen[source.git_dir] = source
    return _distinct_names(sources)


def _distinct_names(sources: list[Source]) -> list[Source]:
    """Local repositories that share a directory name (`a/repo`, `b/repo`) are named by their parent too."""
    names = [s.name for s in sources]
    renamed = []
    for source in sources:
        if names.count(source.name) > 1 and not _URL_RE.match(source.url):
            parent = Path(source.url).parent.name if Path(source.url).name != ".git" else \
                Path(source.url).parent.parent.name
            source = Source(name=f"{parent}/{source.name}", url=source.url, git_dir=source.git_dir)
        renamed.append(source)
    final = [s.name for s in renamed]
    clash = sorted({n for n in final if final.count(n) > 1})
    if clash:
        raise SourceError(f"two sources are both named {clash[0]!r}; give them directories with distinct names")
    return renamed


def _expand(spec: str, repos_dir: Path) -> list[Source]:
    if _URL_RE.match(spec):
        return [_clone_once(spec, name_from_url(spec), repos_dir)]
    path = Path(spec).expanduser()
    if path.is_file() and not is_git_dir(path):
        return _from_list_file(path, repos_dir)
    if not path.exists():
        raise SourceError(f"source {spec} does not exist; give a repository path, a git URL or a file listing them")
    git_dir = _git_dir_of(path)
    return [Source(name=_local_name(path), url=str(path.resolve()), git_dir=git_dir)]


def _from_list_file(path: Path, repos_dir: Path) -> list[Source]:
    """One source per non-empty line; `#` starts a comment."""
    sources: list[Source] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not _URL_RE.match(line) and not Path(line).expanduser().is_absolute():
            line = str(path.parent / line)  # relative to the list file, not to where perfforge runs
        if Path(line).is_file() and not is_git_dir(Path(line)):
            raise SourceError(f"{path}:{number}: {line} is a list file; lists cannot name other lists")
        try:
            sources.extend(_expand(line, repos_dir))
        except SourceError as exc:
            raise SourceError(f"{path}:{number}: {exc}") from None
    if not sources:
        raise SourceError(f"source list {path} names no repository; write one path or URL per line")
    return sources


def _git_dir_of(path: Path) -> Path:
    """The git directory of a work tree or of a bare repository."""
    if is_git_dir(path) and not (path / ".git").exists() and (path / "objects").is_dir():
        return path.resolve()
    dot_git = path / ".git"
    if dot_git.exists() and is_git_dir(dot_git):
        return dot_git.resolve() if dot_git.is_dir() else _worktree_git_dir(path)
    raise SourceError(f"source {path} is not a git repository (no .git directory and not a bare repository)")


def _worktree_git_dir(path: Path) -> Path:
    """A `.git` file (linked work tree, submodule) points elsewhere: ask git where."""
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--absolute-git-dir"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SourceError(f"source {path} is not a readable git repository: {proc.stderr.strip()}")
    return Path(proc.stdout.strip())


def _local_name(path: Path) -> str:
    """The repository's directory name: `llm.c` for `llm.c/`, `llm.c/.git` and `llm.c.git`."""
    resolved = path.resolve()
    name = resolved.parent.name if resolved.name == ".git" else resolved.name
    return name[:-4] if name.endswith(".git") else name


def name_from_url(url: str) -> str:
    """owner/name of a git URL (`https://host/owner/name.git` -> owner/name)."""
    tail = re.split(r"[:/]", url.rstrip("/"))
    parts = [p for p in tail if p]
    name = parts[-1][:-4] if parts[-1].endswith(".git") else parts[-1]
    return f"{parts[-2]}/{name}" if len(parts) >= 2 else name


def _clone_once(url: str, name: str, repos_dir: Path) -> Source:
    """A bare clone of url under repos_dir, made on the first run only (clones are resumable work)."""
    dest = repos_dir / (name.replace("/", "+") + ".git")
    if not (dest.exists() and is_git_dir(dest)):
        with atomic_dir(dest) as staging:
            proc = subprocess.run(["git", "clone", "--bare", "--quiet", url, str(staging)], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                raise SourceError(f"cannot clone {url}: {proc.stderr.strip() or 'git clone failed'}")
    return Source(name=name, url=url, git_dir=dest)
