"""Unit tests of inference/ without the pipeline: beliefs, counter deltas, the focus, patches, task matching,
configuration checks, the vLLM server's command line and backend selection."""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import pytest

import inference.backends as backends
import inference.serve as serve
from inference.belief import SEVERITY_DROP, cited_evidence, counter_deltas, deltas_text, judge_belief
from inference.commands import _task_for
from inference.config import OptimizeConfig, ServeConfig
from inference.loop import choose_focus, unified_patch
from perfforge.cli import build_parser, main
from perfforge.config import from_namespace
from perfforge.errors import BackendError, ConfigError
from perfforge.llm_client import ChatClient
from perfforge.models import DEFAULT_MODEL_NAME
from perfforge.records import Belief, CounterDelta, CounterValue, Diagnosis, HotLine, Profile, Timing
from perfforge.task import load_task
from perfforge.verdict import Status
from tests.conftest import OpenAIEndpoint
from tests.inference.conftest import write_cpu_task
from tests.profiling.conftest import FAST_C, SLOW_C

TIMING = Timing(median_ms=1.0, p10_ms=0.9, p90_ms=1.1, trials=5, method="monotonic_clock")


def profile(*diagnoses: tuple[str, float], counters: dict[str, float] | None = None, hot: tuple[int, ...] = (),
            target: str = "cpu", kernel: str = "matvec") -> Profile:
    return Profile(machine="m", tool_versions="t", timing=TIMING,
                   counters=[CounterValue(name, value, "count") for name, value in (counters or {}).items()],
                   hot_lines=[HotLine(line=n, code="x", share=0.5, dominant_stall="") for n in hot],
                   diagnoses=[Diagnosis(name=name, severity=severity, evidence=[]) for name, severity in diagnoses],
                   target=target, kernel=kernel)


# --- belief.judge_belief --------------------------------------------------------------------------------------------

ORIGINAL = profile(("cache_miss_bound", 0.52), ("missing_parallelism", 0.40))


@pytest.mark.parametrize("status", [s.value for s in Status if s.value not in
                                    ("improved", "no_change", "slower", "needs_review")])
def test_nothing_correct_is_untested(status: str) -> None:
    belief, detail = judge_belief(Status(status), focus="cache_miss_bound", original=ORIGINAL, candidate=ORIGINAL)
    assert belief is Belief.UNTESTED
    assert detail == f"{status}: nothing correct to measure"


@pytest.mark.parametrize("status", ["no_change", "slower"])
def test_correct_but_not_faster_is_refuted(status: str) -> None:
    belief, detail = judge_belief(Status(status), focus="cache_miss_bound", original=ORIGINAL, candidate=None)
    assert belief is Belief.REFUTED
    assert detail.startswith(f"correct but {status.replace('_', ' ')}:")


def test_held_for_review_is_unverified() -> None:
    belief, detail = judge_belief(Status.NEEDS_REVIEW, focus="cache_miss_bound", original=ORIGINAL,
                                  candidate=profile())
    assert belief is Belief.UNVERIFIED and "held for review" in detail


def test_improved_without_a_profile_or_a_focus_is_confirmed_unchecked() -> None:
    for focus, candidate in (("cache_miss_bound", None), ("", profile(("cache_miss_bound", 0.52)))):
        belief, detail = judge_belief(Status.IMPROVED, focus=focus, original=ORIGINAL, candidate=candidate)
        assert belief is Belief.CONFIRMED and "no profile of the candidate" in detail


def test_improved_and_the_focus_shrank_or_vanished_is_confirmed() -> None:
    shrank = profile(("missing_parallelism", 0.40), ("cache_miss_bound", 0.20))
    belief, detail = judge_belief(Status.IMPROVED, focus="cache_miss_bound", original=ORIGINAL, candidate=shrank)
    assert belief is Belief.CONFIRMED and detail == "faster, and cache_miss_bound fell from severity 0.52 to 0.20"
    # a diagnosis that vanishes counts even when its severity was below SEVERITY_DROP
    weak = profile(("cache_miss_bound", 0.05))
    belief, detail = judge_belief(Status.IMPROVED, focus="cache_miss_bound", original=weak,
                                  candidate=profile(("missing_parallelism", 0.4)))
    assert belief is Belief.CONFIRMED and "fell from severity 0.05 to 0.00" in detail


def test_improved_but_the_focus_stayed_is_partly() -> None:
    stayed = profile(("cache_miss_bound", 0.50))
    belief, detail = judge_belief(Status.IMPROVED, focus="cache_miss_bound", original=ORIGINAL, candidate=stayed)
    assert belief is Belief.PARTLY
    assert detail.startswith("faster, but cache_miss_bound stayed at severity 0.50 (was 0.52)")
    # a bottleneck that the original did not have cannot shrink
    belief, _ = judge_belief(Status.IMPROVED, focus="bank_conflicts", original=ORIGINAL, candidate=stayed)
    assert belief is Belief.PARTLY


def test_a_drop_of_exactly_severity_drop_is_confirmed() -> None:
    assert SEVERITY_DROP == 0.1
    belief, _ = judge_belief(Status.IMPROVED, focus="cache_miss_bound", original=profile(("cache_miss_bound", 0.5)),
                             candidate=profile(("cache_miss_bound", 0.4)))
    assert belief is Belief.CONFIRMED


# --- belief.cited_evidence, counter_deltas, deltas_text -------------------------------------------------------------

CITED_PROFILE = profile(("cache_miss_bound", 0.52), ("missing_parallelism", 0.40),
                        counters={"Ir": 9.4e6, "D1mr": 2.4e6, "DLmr": 1e5, "Dr": 5e6}, hot=(4, 5))


def test_cited_evidence_names_diagnoses_counters_and_hot_lines() -> None:
    text = "Hypothesis: fix the cache miss bound walk.\nEvidence: D1mr is high; L1 data read misses at line 5, line 9"
    assert cited_evidence(text, CITED_PROFILE) == ["cache_miss_bound", "D1mr", "line 5"]
    assert cited_evidence("missing_parallelism and LAST-LEVEL READ MISSES on lines 4", CITED_PROFILE) == [
        "missing_parallelism", "DLmr", "line 4"]
    assert cited_evidence("Dr is a counter but not a key counter", CITED_PROFILE) == []
    assert cited_evidence("", CITED_PROFILE) == []
    assert cited_evidence("cache_miss_bound", None) == []


def test_cited_evidence_does_not_find_counter_names_inside_words() -> None:
    assert cited_evidence("Their first loop is fine", CITED_PROFILE) == []


def test_counter_deltas_keep_the_key_counters_both_profiles_have_in_order() -> None:
    before = profile(counters={"Bcm": 10, "DLmr": 1e5, "Ir": 9e6, "Dr": 1, "D1mr": 2e6})
    after = profile(counters={"D1mr": 1e5, "Ir": 8e6, "DLmr": 9e4, "D1mw": 3, "Dr": 2})
    deltas = counter_deltas(before, after)
    assert deltas == [CounterDelta("Ir", "count", 9e6, 8e6), CounterDelta("D1mr", "count", 2e6, 1e5),
                      CounterDelta("DLmr", "count", 1e5, 9e4)]
    assert counter_deltas(profile(target="metal", counters={"Ir": 1}), profile(counters={"Ir": 2})) == []


def test_deltas_text() -> None:
    deltas = [CounterDelta("D1mr", "", 3.1e6, 2e5), CounterDelta("Ir", "", 0.0, 5.0),
              CounterDelta("Bcm", "", 200.0, 300.0)]
    assert deltas_text(deltas) == "D1mr 3.1e+06 -> 200000 (-94%); Ir 0 -> 5; Bcm 200 -> 300 (+50%)"
    assert deltas_text([]) == ""


# --- loop.choose_focus, loop.unified_patch --------------------------------------------------------------------------


def test_choose_focus() -> None:
    logged: list[str] = []
    both = profile(("cache_miss_bound", 0.6), ("missing_parallelism", 0.3))
    assert choose_focus(both, None, logged.append) == "cache_miss_bound"
    assert choose_focus(both, "missing_parallelism", logged.append) == "missing_parallelism"
    assert logged == []
    assert choose_focus(both, "bank_conflicts", logged.append) == "bank_conflicts"
    assert logged == ["note: bank_conflicts is not among the original's diagnoses (cache_miss_bound, "
                      "missing_parallelism); targeting it as asked"]
    assert choose_focus(profile(), None, logged.append) == ""
    assert choose_focus(None, None, logged.append) == ""
    assert choose_focus(None, "x", logged.append) == "x"
    assert "(none)" in logged[-1]


def test_unified_patch(tmp_path: Path) -> None:
    task = load_task(write_cpu_task(tmp_path / "task"))
    patch = unified_patch(task, FAST_C)
    lines = patch.splitlines()
    assert lines[:2] == ["--- a/kernel.c", "+++ b/kernel.c"] and lines[2].startswith("@@ -1,")
    assert "-    for (int j = 0; j < n; j++)" in lines and "+        float acc = 0.0f;" in lines
    # the signature and the closing brace are kept; the four lines between them are replaced
    assert sum(1 for line in lines if line.startswith("-") and not line.startswith("---")) == 4
    assert unified_patch(task, SLOW_C) == ""


# --- commands._task_for ---------------------------------------------------------------------------------------------


def test_task_for_matches_the_kernel_name_or_a_cuda_signature() -> None:
    tasks = {"matvec": "matvec task", "sum_kernel": "sum task"}  # _task_for only looks tasks up by kernel name
    assert _task_for(profile(kernel="matvec"), tasks) == "matvec task"
    assert _task_for(profile(kernel="sum_kernel(float const*, float*, int)"), tasks) == "sum task"
    assert _task_for(profile(kernel="sum_kernel_v2"), tasks) is None
    assert _task_for(profile(kernel="sum_kernel_v2(float*)"), tasks) is None
    assert _task_for(profile(kernel="matve"), tasks) is None
    assert _task_for(profile(kernel="other"), {}) is None


# --- OptimizeConfig.validate, ServeConfig ---------------------------------------------------------------------------


@pytest.mark.parametrize(("settings", "message"), [
    ({"temperature": 0.0, "candidates": 2}, "--temperature 0 samples one candidate"),
    ({"branch": "perf/x"}, "--branch names the branch that --apply makes"),
    ({"bundle": True, "apply": True}, "--bundle stops before the verdicts exist"),
    ({"task": None}, "give a task directory or --command"),
    ({"command": "./app"}, "not both and not neither"),
    ({"task": None, "command": "./app"}, "--command needs --tasks"),
    ({"task": None, "command": "./app", "tasks": Path("t"), "target": "hip"}, "--target must be cpu or cuda"),
    ({"candidates": 0}, "--candidates must be at least 1"),
    ({"token_budget": 0}, "--token-budget must be at least 1"),
    ({"temperature": -0.1}, "--temperature must be at least 0"),
])
def test_optimize_config_conflicts(settings: dict, message: str) -> None:
    config = OptimizeConfig(**{"task": Path("task"), **settings})
    with pytest.raises(ConfigError, match=re.escape(message)):
        config.validate()


def test_optimize_config_accepted_combinations() -> None:
    OptimizeConfig(task=Path("task"), temperature=0.0, candidates=1).validate()
    OptimizeConfig(task=Path("task"), apply=True, branch="perf/x").validate()
    OptimizeConfig(command="./app", tasks=Path("tasks"), target="cuda").validate()


def test_config_conflict_on_the_command_line_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["optimize", "no-such-task", "--branch", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfforge: error: --branch names the branch that --apply makes")
    assert len(err.splitlines()) == 1


def test_serve_lora_flags() -> None:
    args = build_parser().parse_args(["serve", "--lora", "fast=/adapters/fast", "slow=/a=b", "--port", "9000"])
    config = from_namespace(ServeConfig, args)
    assert config.lora == ["fast=/adapters/fast", "slow=/a=b"] and config.port == 9000


@pytest.mark.parametrize("item", ["fast", "=/adapters/fast", "fast="])
def test_serve_lora_needs_name_and_directory(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="write NAME=DIR"):
        ServeConfig(lora=[item]).validate()
    assert main(["serve", "--lora", item]) == 2
    assert capsys.readouterr().err.startswith(f"perfforge: error: --lora {item!r}: write NAME=DIR")


def test_serve_port_range() -> None:
    for port in (0, 65536):
        with pytest.raises(ConfigError, match=f"--port {port} is not a port number"):
            ServeConfig(port=port).validate()
    ServeConfig(port=65535).validate()


# --- serve.server_argv ----------------------------------------------------------------------------------------------


def model_dir(tmp_path: Path, config: object | None) -> Path:
    directory = tmp_path / "my-model"
    directory.mkdir()
    if config is not None:
        (directory / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return directory


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_server_argv_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    directory = model_dir(tmp_path, {"max_position_embeddings": 8192})
    argv = serve.server_argv(ServeConfig(model=str(directory), port=8123), directory)
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert flag(argv, "--model") == str(directory) and flag(argv, "--served-model-name") == "my-model"
    assert flag(argv, "--port") == "8123" and flag(argv, "--host") == "127.0.0.1"
    assert flag(argv, "--dtype") == "float32"  # auto on the CPU
    assert flag(argv, "--max-model-len") == "4096"
    assert "--enforce-eager" in argv
    assert "--enable-lora" not in argv and "--lora-modules" not in argv
    monkeypatch.setattr(backends, "gpu_present", lambda: True)
    assert flag(serve.server_argv(ServeConfig(model=str(directory)), directory), "--dtype") == "auto"
    assert flag(serve.server_argv(ServeConfig(served_model_name="x"), directory), "--served-model-name") == "x"
    assert flag(serve.server_argv(ServeConfig(), directory), "--served-model-name") == DEFAULT_MODEL_NAME


def test_server_argv_lora(tmp_path: Path) -> None:
    directory = model_dir(tmp_path, {})
    config = ServeConfig(model=str(directory), lora=["a=/x", "b=/y"], max_lora_rank=8)
    argv = serve.server_argv(config, directory)
    assert flag(argv, "--max-lora-rank") == "8" and "--enable-lora" in argv
    assert argv[argv.index("--lora-modules") + 1:argv.index("--lora-modules") + 3] == ["a=/x", "b=/y"]
    runtime = serve.server_argv(ServeConfig(model=str(directory), runtime_lora=True), directory)
    assert "--enable-lora" in runtime and "--lora-modules" not in runtime
    assert serve.server_env(ServeConfig(runtime_lora=True))["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


@pytest.mark.parametrize(("config", "asked", "expected"), [
    ({"max_position_embeddings": 2048}, 4096, 2048),  # capped at the model's limit
    ({"max_position_embeddings": 8192}, 1024, 1024),  # the asked length when below it
    ({"hidden_size": 64}, 4096, 4096),  # no limit given
    (None, 4096, 4096),  # no config.json
    ("{not json", 3000, 3000),  # unreadable config.json
])
def test_max_model_len_capped_at_max_position_embeddings(tmp_path: Path, config: object, asked: int,
                                                         expected: int) -> None:
    directory = model_dir(tmp_path, config)
    argv = serve.server_argv(ServeConfig(model=str(directory), max_model_len=asked), directory)
    assert flag(argv, "--max-model-len") == str(expected)


# --- backends.make_backend ------------------------------------------------------------------------------------------


def test_make_backend_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown backend 'nope'; choose one of auto, openai, vllm, transformers"):
        backends.make_backend("nope", "m")
    with pytest.raises(ConfigError, match="the openai backend needs --url"):
        backends.make_backend("openai", "m")
    monkeypatch.setattr(backends, "installed", lambda module: False)
    with pytest.raises(ConfigError, match="the vllm backend needs vllm, which is not installed"):
        backends.make_backend("vllm", "m")
    # auto without a URL and without vllm falls back to transformers
    with pytest.raises(ConfigError, match="the transformers backend needs transformers"):
        backends.make_backend("auto", "m")


def test_make_backend_auto_with_a_url_is_openai() -> None:
    backend = backends.make_backend("auto", "served", url="http://127.0.0.1:9/v1", timeout_s=5.0)
    assert isinstance(backend, backends.OpenAIBackend)
    assert backend.describe() == "openai:served@http://127.0.0.1:9/v1"
    assert backend.client.timeout_s == 5.0 and backend.count_tokens() is None


SIGTERM_SERVE = """
import sys
from pathlib import Path

import inference.serve as serve
from perfforge.cli import main

serve.server_argv = lambda config, model_dir: [sys.executable, "-m", "http.server", str(config.port),
                                               "--bind", "127.0.0.1"]
serve.Server.wait_ready = lambda self: print(f"child {self.process.pid}", flush=True)
raise SystemExit(main(["serve", "--model", sys.argv[1], "--port", sys.argv[2]]))
"""


def test_a_killed_perfforge_serve_stops_its_server(tiny_model: Path, tmp_path: Path) -> None:
    """The server runs in a session of its own: SIGTERM to `perfforge serve` must stop it, not orphan it."""
    import signal
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = tmp_path / "serve.py"
    script.write_text(SIGTERM_SERVE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    serving = subprocess.Popen([sys.executable, str(script), str(tiny_model), str(port)], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, text=True)
    child = int(next(line for line in serving.stdout if line.startswith("child ")).split()[1])
    serving.send_signal(signal.SIGTERM)
    assert serving.wait(timeout=60) == 130
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # stop() waited for it; a zombie reaped by init may linger a moment
            os.kill(child, 0)
            time.sleep(0.05)


# --- what a user is told --------------------------------------------------------------------------------------------


def test_a_url_without_v1_is_said_to_lack_it(openai_endpoint: OpenAIEndpoint) -> None:
    """A base URL without /v1 reaches no OpenAI route: every model "does not exist", which misled; say the URL."""
    bare = openai_endpoint.base_url.removesuffix("/v1")
    with pytest.raises(BackendError, match=rf"the URL {re.escape(bare)} probably lacks /v1 \(an OpenAI-compatible"):
        ChatClient(bare, openai_endpoint.model).chat([{"role": "user", "content": "hi"}])
    with pytest.raises(BackendError, match="does not serve model 'other'"):  # with /v1, the name is what is wrong
        ChatClient(openai_endpoint.base_url, "other").chat([{"role": "user", "content": "hi"}])


def test_serve_on_a_port_in_use_says_so_before_starting(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """It once printed "serving ... at" (the other server answered the readiness check), then a screen of NUL
    bytes from the other server's log, which it had truncated."""
    monkeypatch.chdir(tmp_path)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert main(["serve", "--model", str(tmp_path / "no-model-needed"), "--port", str(port)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"perfforge: error: cannot listen on 127.0.0.1:{port} (Address already in "
                                         "use); is a server already running there? Stop it, use it (--url), or give "
                                         "another --port"]
    assert not (tmp_path / "perfforge-out").exists()


def test_a_running_servers_log_is_never_truncated(tmp_path: Path) -> None:
    """The log is locked by the server that writes it (through its inherited descriptor): a second server given
    the same log stops with one line and leaves the text as it was."""
    model = model_dir(tmp_path, {"max_position_embeddings": 512})
    log = tmp_path / "vllm.log"
    log.write_text("the running server's lines\n")
    with log.open("a") as running:
        fcntl.flock(running, fcntl.LOCK_EX)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with pytest.raises(BackendError, match=f"{re.escape(str(log))} is the log of a vLLM server still running"):
            serve.Server(ServeConfig(model=str(model), port=port), log).start()
    assert log.read_text() == "the running server's lines\n"


def test_the_in_process_engine_runs_as_serve_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """optimize without --url ran bf16 (vLLM's own auto) while serve ran float32, and asked for a context longer than
    the model's, which vLLM refuses: both now come from one place."""
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    assert backends.engine_dtype("auto") == "float32" and backends.engine_dtype("bfloat16") == "bfloat16"
    monkeypatch.setattr(backends, "gpu_present", lambda: True)
    assert backends.engine_dtype("auto") == "auto"
    assert backends.capped_model_len(4096, model_dir(tmp_path, {"max_position_embeddings": 2048})) == 2048
    assert backends.capped_model_len(1024, tmp_path / "no-config") == 1024


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM with a request in flight waits for its generation before exiting: stop() kills it after the grace
    instead of waiting (an interrupted eval once took 30 s to stop)."""
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); " \
               "time.sleep(120)"
    monkeypatch.setattr(serve, "server_argv", lambda config, model_dir: [sys.executable, "-c", ignoring])
    monkeypatch.setattr(serve.Server, "wait_ready", lambda self: None)
    monkeypatch.setattr(serve, "STOP_GRACE_S", 0.5)
    server = serve.Server(ServeConfig(model=str(model_dir(tmp_path, {})), port=0), tmp_path / "vllm.log")
    server.start()
    deadline = time.monotonic() + 30
    while "up" not in server.log_tail() and time.monotonic() < deadline:  # its handler is in place
        time.sleep(0.05)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    assert server.process is not None and server.process.returncode == -9


def test_a_server_eval_starts_is_no_runs_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval --parallel-runs starts its vLLM server in whichever run first asks, while other threads judge. The
    server runs in a session of its own: untracked, a sandboxed run that began before it killed and reaped it when
    it ended (the server cut short, its poll() reading 0), and a served verdict in flight counted it as the
    candidate's process (a fair candidate rejected as a deviation). Started tracked, it is neither; stop() untracks
    it."""
    import threading

    from profiling import sandbox

    monkeypatch.setattr(serve, "server_argv", lambda config, model_dir: [sys.executable, "-c",
                                                                          "import time; time.sleep(60)"])
    monkeypatch.setattr(serve.Server, "wait_ready", lambda self: None)
    (tmp_path / "kernel").mkdir()
    kernel = sandbox.spawn(["sleep", "30"], cwd=tmp_path / "kernel")  # a served verdict in flight
    ran: list[object] = []
    other = threading.Thread(target=lambda: ran.append(sandbox.run(["sleep", "1.5"], cwd=tmp_path / "run")))
    other.start()
    time.sleep(0.3)  # the other thread's run is under way: the server is none of the children it had before
    server = serve.Server(ServeConfig(model=str(model_dir(tmp_path, {})), port=0), tmp_path / "vllm.log")
    try:
        server.start()
        assert server.process is not None and server.process.pid not in kernel.others()
        other.join()
        assert ran and server.process.poll() is None, "the other run's sweep took the server"
    finally:
        server.stop()
        kernel.close()
    assert server.process.pid not in sandbox._running


# --- per-candidate token counts ------------------------------------------------------------------------------------


def test_a_usage_total_is_shared_by_text_length() -> None:
    from perfforge.llm_client import token_shares

    assert token_shares(100, ["a" * 30, "b" * 10]) == [75, 25]
    assert sum(token_shares(7, ["x" * 3, "y" * 3, "z"])) == 7
    assert token_shares(5, ["", ""]) == [3, 2]
    assert token_shares(0, []) == []
    assert token_shares(30, ["a" * 90, "b" * 10], cap=16) == [16, 14]  # no share above max_tokens
