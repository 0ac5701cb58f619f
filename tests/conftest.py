"""Shared fixtures and helpers: small real git repositories built by the tests themselves (never downloaded), the
CLI run in process, a local JSON endpoint, and one tiny chat model per session."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The files whose tests take longest (seconds of setup and calls on this 2-core VM, `--durations=0` under the README's
# `-n 2 --dist loadfile`, session 28: 240, 88, 84, 65, 52, 44, 39, 37, 37, 35, 31, 27; the suite's 95 files sum to
# 1,180 s, the run took 627 s, 37 s over an even split). xdist's loadfile hands files to the workers in collection
# order, so a long file collected late can run alone at the end while the other worker idles: these go first (longest
# first fills both workers to the end); every other file, and the tests inside each file, keep their order.
SLOWEST_FILES_FIRST = (
    "tests/profiling/test_judge_adversary.py",
    "tests/iteration/test_expert.py",
    "tests/eval/test_eval_e2e.py",
    "tests/inference/test_vllm_serve.py",
    "tests/synth/test_patterns_cpu.py",
    "tests/inference/test_optimize_e2e.py",
    "tests/profiling/test_cpu_diagnoses.py",
    "tests/scale/test_eval_on_a_cluster.py",
    "tests/profiling/test_judge_adversary_python.py",
    "tests/inference/test_interrupt.py",
    "tests/profiling/test_triton_harness.py",
    "tests/profiling/test_served_python_redteam.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first = {path: rank for rank, path in enumerate(SLOWEST_FILES_FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))  # stable: the rest as collected


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread_per_xdist_worker() -> None:
    """Under the README's two xdist workers, torch in each worker would start an OpenMP thread per core and the two
    pools spin against each other on 2 cores (the iterate fixture's training and sampling took 232 s beside the
    other worker against 33 s alone). One intra-op thread per worker: the workers are the parallelism."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="module")
def judge_on_planned_rounds() -> Iterator[None]:
    """For modules whose subject is the pipeline around the judge (a round keeps its proven wins and trains on them,
    an evaluation writes a row per run, a reward is log2 of a verified speedup), not the judge's timing: verdicts
    are decided on the task's planned rounds and never extended to CONFIRMING_ROUNDS. Under the suite's two busy
    xdist workers nearly every timed reading of the matvec task has a noise floor above NOISY_FLOOR, and an extended
    verdict takes 3-4x as long (about 14 s against 4 s); these modules timed 12 such verdicts, a minute of the
    suite's time. The extension itself is tested where it is the subject (tests/profiling/test_validate.py,
    test_judge_extension_adversary.py, the adversary files), with the judge's own settings."""
    import profiling.score

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(profiling.score, "NOISY_FLOOR", float("inf"))
        yield  # the processes such modules start: tests/judge_on_planned_rounds.py


# Deterministic identity and clock, so that shas do not depend on who runs the tests or when.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **_GIT_ENV, **(env or {})}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=full_env)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


@dataclass
class RepoBuilder:
    """A git work tree that tests fill commit by commit: `commit(message, {path: text or bytes or None})`.

    None deletes the path. Each commit gets the next day's date in 2024, so history order is stable.
    """

    path: Path
    shas: list[str] = field(default_factory=list)

    def commit(self, message: str, files: dict[str, str | bytes | None]) -> str:
        for name, content in files.items():
            target = self.path / name
            if content is None:
                git(self.path, "rm", "-q", "--", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            git(self.path, "add", "--", name)
        day = len(self.shas) + 1
        date = f"2024-01-{day:02d}T12:00:00+00:00" if day <= 28 else f"2024-02-{day - 28:02d}T12:00:00+00:00"
        git(self.path, "commit", "-q", "--allow-empty", "-m", message,
            env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        sha = git(self.path, "rev-parse", "HEAD").strip()
        self.shas.append(sha)
        return sha


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], RepoBuilder]:
    """Factory of empty repositories (branch main) under tmp_path."""

    def factory(name: str = "repo") -> RepoBuilder:
        path = tmp_path / name
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")
        return RepoBuilder(path)

    return factory


MIT_LICENSE = """MIT License

Copyright (c) 2024 Test Author

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation
the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software.

The above copyright notice and this permission notice shall be included in all copies or substantial portions of
the Software.
"""

NAIVE_SUM_CU = """#include <cuda_runtime.h>

__global__ void sum_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, x[i]);
    }
}

void launch_sum(const float* x, float* out, int n) {
    sum_kernel<<<(n + 255) / 256, 256>>>(x, out, n);
}
"""

REDUCED_SUM_CU = """#include <cuda_runtime.h>

__global__ void sum_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffff, v, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, v);
    }
}

void launch_sum(const float* x, float* out, int n) {
    sum_kernel<<<(n + 255) / 256, 256>>>(x, out, n);
}
"""


@pytest.fixture
def perf_repo(make_repo: Callable[[str], RepoBuilder]) -> RepoBuilder:
    """A small history: licence, a CUDA kernel, a docs change, a warp-shuffle optimisation with a vague
    message, a bug fix, and an 'optimizer' false friend."""
    repo = make_repo("perf_repo")
    repo.commit("Initial import", {"LICENSE": MIT_LICENSE, "src/sum.cu": NAIVE_SUM_CU, "README.md": "# sums\n"})
    repo.commit("docs: explain the sum", {"README.md": "# sums\n\nAdds floats.\n"})
    repo.commit("rework reduce: warp shuffle reduction instead of per-element atomics",
                {"src/sum.cu": REDUCED_SUM_CU})
    repo.commit("fix optimizer learning rate in the training script",
                {"train.py": "lr = 0.01\n", "src/sum.cu": REDUCED_SUM_CU.replace("0.0f", "0.f")})
    return repo


@dataclass
class OpenAIEndpoint:
    """A local OpenAI-compatible chat server (see the openai_endpoint fixture): what it answers, the model it
    serves (others get HTTP 404, as vLLM answers), and the requests it received."""

    base_url: str = ""
    model: str = "test-model"
    answer: str = '{"is_perf": true, "category": "other", "reason": "test"}'
    requests: list[dict[str, Any]] = field(default_factory=list)


# Answers one POST: (request path, its JSON body, its headers) -> (HTTP status, JSON reply).
Reply = Callable[[str, dict[str, Any], Any], tuple[int, dict[str, Any]]]


@contextlib.contextmanager
def json_post_server(reply: Reply) -> Iterator[str]:
    """http.server on 127.0.0.1 (port 0) in a thread, answering every POST with `reply`; yields the base URL
    (http://127.0.0.1:PORT/v1) for OpenAI-compatible clients."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            status, answer = reply(self.path, body, self.headers)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def openai_endpoint() -> Iterator[OpenAIEndpoint]:
    """A local chat server answering /v1/chat/completions with the endpoint's fixed answer."""
    state = OpenAIEndpoint()

    def reply(path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any]]:
        state.requests.append({"path": path, "auth": headers["Authorization"], **body})
        if path != "/v1/chat/completions" or body.get("model") != state.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        return 200, {"object": "chat.completion", "model": state.model, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": state.answer}, "finish_reason": "stop"}]}

    with json_post_server(reply) as url:
        state.base_url = url
        yield state


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """`perfforge ARGV` in this process: (exit code, stdout, stderr)."""
    from perfforge.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("perfforge: error:")]


@dataclass
class Spawned:
    """`perfforge` run as a real command in a session of its own (so that a signal to its process group is what a
    terminal's Ctrl-C sends), marked by an environment variable that every process it starts inherits."""

    process: subprocess.Popen
    marker: str

    def processes(self) -> list[str]:
        """'pid command' of every live process of this run: in its session, or carrying its marker (a process
        that made a session of its own, as a vLLM server does, still inherits the environment)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                stat = (entry / "stat").read_text()
                environ = (entry / "environ").read_bytes()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # gone meanwhile, or another user's
                continue
            state, _, _, session = stat.rpartition(")")[2].split()[:4]
            mine = session == str(self.process.pid) or f"PERFFORGE_TEST_RUN={self.marker}".encode() in environ
            if mine and state != "Z":
                found.append(f"{entry.name} {command.strip()}")
        return found

    def left_behind(self, wait_s: float = 5.0) -> list[str]:
        """The run's processes still alive once it has exited (given `wait_s` to go: a killed child is reaped by
        init a moment later)."""
        deadline = time.monotonic() + wait_s
        while (found := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return found


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_perfforge(argv: list[str], cwd: Path, env: dict[str, str] | None = None, *,
                    planned_rounds: bool = False) -> Spawned:
    """`python -m perfforge.cli ARGV` from this checkout, its stdout and stderr piped as text. SIGINT is restored to
    its default in the child, as a terminal gives it: a test run started in the background by a non-interactive shell
    (`cmd &`) inherits SIGINT ignored, and Python then installs no Ctrl-C handler, so the interrupt tests would
    test nothing but the shell. planned_rounds: the same main() through tests/judge_on_planned_rounds.py (verdicts
    never extended), for tests whose subject is not the judge's timing."""
    marker = uuid.uuid4().hex
    full_env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PERFFORGE_TEST_RUN": marker,
                **(env or {})}
    module = "tests.judge_on_planned_rounds" if planned_rounds else "perfforge.cli"
    process = subprocess.Popen([sys.executable, "-m", module, *argv], cwd=cwd, env=full_env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_default_sigint)
    return Spawned(process, marker)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tests' tiny chat model (tests/inference/tiny_model.py), built once per session."""
    from tests.inference.tiny_model import build_tiny_chat_model

    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-model") / "tiny")
