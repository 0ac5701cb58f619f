"""Fast reads of a git history through git's own plumbing.

Measured on karpathy/llm.c (STACK.md): PyDriller loads ~85-200 commits/s with diffs, plain git streams
~2,000/s with patches and far more with file names only. So mining reads metadata and file names for every
commit in one `git diff-tree --stdin` stream (the prefilter), and patches and blobs only for candidates.

Real mirrors miss objects now and then; git stops a `--stdin` stream at the first commit it cannot read.
`_stream` restarts after that commit and reports it as failed, so one missing object never aborts a run.
Everything here only reads the repository it is given.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from perfforge.errors import SourceError
from perfforge.io import atomic_dir

# ASCII separators: record, field, end of message. git quotes them in paths; a commit message may hold them, so a
# record starts only where a separator is followed by a sha asked for, and a message ends at the last _EOM.
_RS, _FS, _EOM = "\x1e", "\x1f", "\x1d"
_RS_BYTES = _RS.encode()
_SEPARATOR = b"\n" + _RS_BYTES  # between two records of a stream
# Bytes read from git per call: large enough that Python's per-read cost vanishes, small enough to stream.
_READ_BLOCK_BYTES = 1 << 20
_META_FORMAT = "--format=%x1e%H%x1f%P%x1f%at%x1f%B%x1d"


@dataclass
class CommitMeta:
    """A commit as the prefilter sees it: metadata and changed paths, no content."""

    sha: str
    parents: list[str]
    date: str  # author date, ISO 8601 UTC
    message: str
    files: list[str]


@dataclass
class FileDiff:
    """The patch of one file in one commit."""

    path: str
    status: str  # "added", "deleted", "modified"
    added_lines: list[str] = field(default_factory=list)  # without the leading "+"
    removed_lines: list[str] = field(default_factory=list)
    hunks: list[tuple[list[str], list[str]]] = field(default_factory=list)  # (removed, added) per hunk
    # Per hunk, from its header: (old_start, old_count, new_start, new_count), 1-based lines; a count of 0 means
    # lines inserted or deleted after the start line. Empty when the headers cannot be read.
    line_ranges: list[tuple[int, int, int, int]] = field(default_factory=list)
    patch: str = ""  # unified diff text, possibly truncated (see truncated)
    is_binary: bool = False
    truncated: bool = False  # the patch was longer than the limit and was cut


@dataclass
class StreamFailure:
    sha: str
    reason: str


def run_git(git_dir: Path, *args: str) -> str:
    """Output of a git command on git_dir; SourceError with git's own message on failure."""
    proc = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True,
                          errors="replace")
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args[:2])} failed in {git_dir}: {proc.stderr.strip()}")
    return proc.stdout


def is_git_dir(path: Path) -> bool:
    proc = subprocess.run(["git", "--git-dir", str(path), "rev-parse", "--git-dir"], capture_output=True)
    return proc.returncode == 0


def shared_clone(source_git_dir: Path, dest: Path) -> Path:
    """A bare clone sharing the source's objects (no copy, milliseconds): all tools work on it, never on the
    source, because PyDriller/GitPython write to the repository they open (STACK.md) and concurrent
    writers race on config.lock. It also gives mirrors without a `config` file one.

    An existing clone at dest is reused when it shares the same source; it is made under a temporary name
    and renamed, so an interrupted clone is never mistaken for a finished one."""
    alternates = dest / "objects" / "info" / "alternates"
    source_objects = str((source_git_dir / "objects").resolve())
    if alternates.exists() and alternates.read_text().strip() == source_objects:
        return dest
    with atomic_dir(dest) as staging:
        proc = subprocess.run(["git", "clone", "--bare", "--shared", "--quiet", str(source_git_dir), str(staging)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SourceError(f"cannot clone {source_git_dir}: {proc.stderr.strip()}")
    return dest


def resolve_commit(git_dir: Path, rev: str) -> str | None:
    """The sha of the commit rev names in the repository (read there, so remote-tracking branches such as
    origin/main count); None when the repository has no commits at all. SourceError when rev names none."""
    proc = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          capture_output=True, text=True)
    if proc.returncode == 0:
        return proc.stdout.strip()
    if not run_git(git_dir, "rev-list", "-n", "1", "--all").strip():
        return None
    raise SourceError(f"{git_dir} has no commit named {rev!r}; give --rev a branch, tag or sha that exists there")


def list_shas(git_dir: Path, rev: str) -> list[str]:
    """Non-merge commits reachable from rev, oldest first."""
    return run_git(git_dir, "rev-list", "--no-merges", "--reverse", rev).split()


def _stream(git_dir: Path, shas: list[str], args: list[str],
            failures: list[StreamFailure]) -> Iterator[tuple[str, str]]:
    """(sha, output text) per commit of `git diff-tree --stdin ARGS`, restarting after unreadable commits.

    Each commit's output starts with a line beginning with the record separator, then the sha; ARGS must hold
    `--always`, so that a commit with an empty diff prints it too and headers match input shas one to one.
    When git stops, the commit it was printing may be whole (git died before the next header, e.g. on a
    missing tree) or not (a missing blob inside its patch): it is run again alone to tell which.
    """
    start = 0
    while start < len(shas):
        outcome = _DiffTreeRun(git_dir, shas[start:], args)
        yield from outcome.complete_records()
        if outcome.returncode == 0:
            return
        last = outcome.last_record
        failed = start if last is None else start + outcome.headers_seen - 1
        if last is not None:
            alone = _DiffTreeRun(git_dir, [last[0]], args)
            records = list(alone.complete_records())
            if alone.returncode == 0:  # the last commit was whole: git stopped on the next one
                yield from records
                failed += 1
        if failed < len(shas):
            failures.append(StreamFailure(shas[failed], outcome.error))
        start = failed + 1


class _DiffTreeRun:
    """One `git diff-tree --stdin` process over shas; records are read as the output streams in."""

    def __init__(self, git_dir: Path, shas: list[str], args: list[str]) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in complete_records, once git exits)
        command = ["git", "--git-dir", str(git_dir), "--literal-pathspecs", "-c", "core.quotepath=off",
                   "diff-tree", "--stdin", *args]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self._headers = {sha.encode() for sha in shas}
        # Fed from a thread: git writes while it reads, and a full stdout pipe would block it (and us) forever.
        self._feeder = threading.Thread(target=self._feed, args=(("\n".join(shas) + "\n").encode(),), daemon=True)
        self._feeder.start()
        self.headers_seen = 0
        self.last_record: tuple[str, str] | None = None
        self.returncode: int | None = None
        self.error = ""

    def _feed(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.close()
        except BrokenPipeError:  # git stopped reading: its exit status and stderr say why
            pass

    def complete_records(self) -> Iterator[tuple[str, str]]:
        """Records followed by another header, then the last one too if git succeeded.

        The output is read in large blocks and cut at record headers (a separator at a line start), and each
        record is decoded at once: per-line reads and decodes cost more than git itself on large patches."""
        buffer = bytearray()
        scan_from = 0  # where the next separator may start: bytes before it were searched already
        for block in iter(functools.partial(self._proc.stdout.read1, _READ_BLOCK_BYTES), b""):
            if not buffer and not self.headers_seen:  # the output opens with the first header's separator
                block = block.removeprefix(_RS_BYTES)
            buffer += block
            start, pending = 0, None
            while (cut := buffer.find(_SEPARATOR, scan_from)) >= 0:
                header = cut + len(_SEPARATOR)
                if header + 40 > len(buffer):  # whose header this is shows in the next block
                    pending = cut
                    break
                if bytes(buffer[header:header + 40]) not in self._headers:  # the bytes inside a commit message
                    scan_from = cut + 1
                    continue
                yield self._record(bytes(buffer[start:cut]))
                start = scan_from = header
            del buffer[:start]  # once per block: a record longer than a block is never copied over and over
            scan_from = pending - start if pending is not None else max(len(buffer) - len(_SEPARATOR) + 1, 0)
        self._feeder.join()
        self.returncode = self._proc.wait()
        self._stderr.seek(0)
        stderr = self._stderr.read().decode("utf-8", errors="replace").strip()
        self._stderr.close()
        self.error = stderr.splitlines()[-1] if stderr else f"git diff-tree exited with {self.returncode}"
        last = self._record(bytes(buffer).removesuffix(b"\n")) if buffer else None
        if self.returncode == 0 and last is not None:
            yield last
        else:
            self.last_record = last

    def _record(self, raw: bytes) -> tuple[str, str]:
        """(sha, text) of one record without its separator: the text starts with the header line."""
        self.headers_seen += 1
        text = decode_text(raw)
        return text[:40], text


def decode_text(data: bytes) -> str:
    """Text of file content or a patch. A line that is not UTF-8 (a Latin-1 comment in old C code) is read as
    Latin-1, which never fails and keeps every byte; the other lines stay UTF-8, so one stray byte does not change
    how every other function of the file reads."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "\n".join(_decode_line(line) for line in data.split(b"\n"))


def _decode_line(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote_path(path: str) -> str:
    """git quotes a path that holds a quote, a backslash or a control character C-style ("a\\tb.cu",
    octal escapes for bytes); undo it. Unquoted paths come back as they are."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    raw = bytearray()
    body, i = path[1:-1], 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 == len(body):
            raw.extend(char.encode("utf-8", "surrogateescape"))
            i += 1
        elif body[i + 1] in "01234567":
            raw.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            raw.append(_C_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
    return raw.decode("utf-8", errors="replace")


def _parse_meta(text: str) -> CommitMeta:
    header, _, rest = text.rpartition(_EOM)  # the last one: a message may hold the character, a path never does
    sha, parents, timestamp, message = header.split(_FS, 3)
    date = datetime.fromtimestamp(int(timestamp), tz=UTC).isoformat()
    files = [_unquote_path(p) for p in rest.splitlines() if p]
    return CommitMeta(sha=sha, parents=parents.split(), date=date, message=message.strip(), files=files)


def iter_commit_meta(git_dir: Path, shas: list[str], failures: list[StreamFailure]) -> Iterator[CommitMeta]:
    """Metadata and changed paths of each commit (rename detection off: a move is a delete and an add)."""
    args = ["-r", "--root", "--always", "--no-renames", "--name-only", _META_FORMAT]
    for _, text in _stream(git_dir, shas, args, failures):
        yield _parse_meta(text)


def iter_patches(git_dir: Path, shas: list[str], paths_by_sha: dict[str, list[str]], max_patch_lines: int,
                 failures: list[StreamFailure]) -> Iterator[tuple[str, list[FileDiff]]]:
    """Patches of the given commits, restricted to paths_by_sha[sha]; each file's patch is cut at
    max_patch_lines (FileDiff.truncated), so a huge generated kernel file does not swell a record.

    git is given the union of the wanted paths as literal pathspecs, so it never diffs the docs, tests and
    vendored files that candidate commits also touch; the per-commit filter then drops a union path that
    another commit of the batch wanted."""
    wanted = {sha: set(paths) for sha, paths in paths_by_sha.items()}
    pathspecs = sorted({path for paths in wanted.values() for path in paths})
    args = ["-r", "--root", "--always", "--no-renames", "-p", "-U3", "--format=%x1e%H", "--", *pathspecs]
    for sha, text in _stream(git_dir, shas, args, failures):
        diffs = [d for d in _split_patch(text.partition("\n")[2], max_patch_lines) if d.path in wanted.get(sha, ())]
        yield sha, diffs


_FILE_HEADER_RE = re.compile(r"^diff --git ", re.MULTILINE)
_HUNK_HEADER_RE = re.compile(r"^(@@.*)\n?", re.MULTILINE)  # the header line (captured) with its line break
_HUNK_RANGE_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")  # a missing count is 1
_ADDED_LINE_RE = re.compile(r"^\+(.*)", re.MULTILINE)  # `.` stops at the line break, and keeps a \r
_REMOVED_LINE_RE = re.compile(r"^-(.*)", re.MULTILINE)
_QUOTED_PAIR_RE = re.compile(r'^("(?:[^"\\]|\\.)*") ')


def _header_path(rest: str) -> str:
    """The path of `diff --git a/P b/P` (renames are off, so both sides are the same path P, which may hold
    spaces, " b/" included); quoted when git quotes it."""
    quoted = _QUOTED_PAIR_RE.match(rest)
    if quoted:
        return _unquote_path(quoted.group(1))[2:]
    return rest[2:2 + (len(rest) - 5) // 2]


def _split_patch(text: str, max_patch_lines: int) -> list[FileDiff]:
    """The files of one commit's patch text, each parsed (the text before the first header is not a file's)."""
    diffs = []
    for chunk in _FILE_HEADER_RE.split(text)[1:]:
        header, _, body = chunk.removesuffix("\n").partition("\n")  # the line break before the next header
        diff = FileDiff(path=_header_path(header), status="modified")
        parse_patch(diff, body, max_patch_lines)
        diffs.append(diff)
    return diffs


def parse_patch(diff: FileDiff, body: str, max_patch_lines: int) -> None:
    """Fill diff from the text of its patch after the `diff --git` header (mode lines, hunks).

    Whole-text regular expressions, not a loop over lines: large commits have hundreds of thousands of lines."""
    for line in body.split("\n", 6)[:6]:
        if line.startswith("new file mode"):
            diff.status = "added"
        elif line.startswith("deleted file mode"):
            diff.status = "deleted"
        elif line.startswith("Binary files"):
            diff.is_binary = True
    if body.count("\n") >= max_patch_lines:
        diff.truncated = True
        body = "\n".join(body.split("\n", max_patch_lines)[:max_patch_lines])
    # [text before the first hunk (`---`/`+++` headers, not changes), header 1, hunk 1, header 2, hunk 2, ...]
    pieces = _HUNK_HEADER_RE.split(body)
    headers, hunks = pieces[1::2], pieces[2::2]
    diff.hunks = [(_REMOVED_LINE_RE.findall(hunk), _ADDED_LINE_RE.findall(hunk)) for hunk in hunks]
    ranges = [_HUNK_RANGE_RE.match(header) for header in headers]
    if all(ranges):
        diff.line_ranges = [(int(old_start), int(old_count or 1), int(new_start), int(new_count or 1))
                            for old_start, old_count, new_start, new_count in (r.groups() for r in ranges)]
    diff.added_lines = [line for _, lines in diff.hunks for line in lines]
    diff.removed_lines = [line for lines, _ in diff.hunks for line in lines]
    diff.patch = body


class BlobReader:
    """File contents at given revisions through one long-lived `git cat-file --batch` process."""

    def __init__(self, git_dir: Path) -> None:
        self._proc = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def read(self, rev: str, path: str) -> bytes | None:
        """Bytes of rev:path, or None when it does not exist there (or the object is missing)."""
        if "\n" in path:
            return None
        self._proc.stdin.write(f"{rev}:{path}\n".encode())
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline().decode("utf-8", errors="replace").rstrip("\n")
        if reply.endswith((" missing", " ambiguous")):
            return None  # no content follows; the spec itself may hold spaces
        header = reply.split()
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)  # the newline after the content
        return data if header[1] == "blob" else None  # a tree or commit was read whole and dropped

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
