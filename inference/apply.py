"""`perfforge optimize --apply`: the winning candidate as a commit on a new branch of the user's repository.

The user's work tree is never touched: the branch is made in a temporary `git worktree`, committed there, and
the worktree removed. The branch then holds one commit, the patch, whose message carries the measured speedup,
ready for `git push` and a pull request (docs/optimize.md shows the GitHub Actions recipe).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.task import Task


def _git(args: list[str], cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise PerfforgeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def default_branch(task: Task) -> str:
    return f"perfforge/optimize-{task.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def repository_of(task: Task) -> Path:
    """The root of the git repository holding the task (checked before the loop runs, and again when applying)."""
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], task.root))
    except PerfforgeError:
        raise PerfforgeError(f"--apply needs the task {task.root} inside a git repository; run without --apply and "
                             "use patch.diff") from None


def apply_to_branch(task: Task, code: str, *, message: str, branch: str | None = None) -> tuple[Path, str]:
    """Commit `code` as the task's source file on a new branch from HEAD; (repository root, branch)."""
    root = repository_of(task)
    relative = task.source_path.resolve().relative_to(root.resolve())
    name = branch or default_branch(task)
    if subprocess.run(["git", "check-ref-format", "--branch", name], cwd=root, capture_output=True).returncode:
        raise PerfforgeError(f"--branch {name!r} is not a valid branch name")
    if subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], cwd=root,
                      capture_output=True).returncode == 0:
        raise PerfforgeError(f"branch {name} already exists in {root}; give another --branch")
    identity = [] if _has_identity(root) else ["-c", "user.name=perfforge", "-c", "user.email=perfforge@localhost"]
    with tempfile.TemporaryDirectory(prefix="perfforge-apply-") as tmp:
        worktree = Path(tmp) / "tree"
        _git(["worktree", "add", "--quiet", "-b", name, str(worktree), "HEAD"], root)
        try:
            (worktree / relative).write_text(code, encoding="utf-8")
            _git(["add", str(relative)], worktree)
            _git([*identity, "commit", "--quiet", "-m", message], worktree)
        finally:
            _git(["worktree", "remove", "--force", str(worktree)], root)
    return root, name


def _has_identity(root: Path) -> bool:
    return subprocess.run(["git", "config", "user.email"], cwd=root, capture_output=True).returncode == 0
