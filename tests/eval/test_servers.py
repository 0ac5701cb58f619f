"""eval's own servers with --servers N: one per GPU (server i sees only GPU i), and every request's candidates shared
among them. The vLLM program is replaced by a small real HTTP server that answers as an OpenAI endpoint and says
which GPU its environment gave it; everything else (ports, environment, start, readiness, stop, the pool) is
eval's own code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import inference.serve as serve
from eval.configurations import BASE, Endpoints, ModelConfiguration

FAKE_VLLM = r'''
import http.server, json, os, sys

GPU = os.environ.get("CUDA_VISIBLE_DEVICES", "none")
NAME = sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"data": [{"id": NAME}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send({"choices": [{"index": i, "message": {"role": "assistant", "content": f"gpu {GPU}"},
                                 "finish_reason": "stop"} for i in range(body["n"])],
                    "usage": {"prompt_tokens": 1, "completion_tokens": body["n"]}})

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''


def test_eval_starts_one_server_per_gpu_and_shares_each_request(tiny_model: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake_vllm.py"
    script.write_text(FAKE_VLLM)
    monkeypatch.setattr(serve, "server_argv", lambda config, model_dir: [
        sys.executable, str(script), str(config.port), serve.served_name(config, model_dir)])
    with Endpoints([ModelConfiguration(BASE)], base_model=str(tiny_model), url=None, timeout_s=10,
                   log_dir=tmp_path / "serve", servers=2, log=lambda _: None) as endpoints:
        backend = endpoints.backend(BASE)
        completions = backend.generate([{"role": "user", "content": "hi"}], n=4, max_tokens=4, temperature=0.8,
                                       seed=0)
    assert sorted(c.text for c in completions) == ["gpu 0", "gpu 0", "gpu 1", "gpu 1"]
    assert sorted(p.name for p in (tmp_path / "serve").iterdir()) == ["vllm_0.log", "vllm_1.log"]


def test_servers_follow_the_gpus_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.configurations import _gpu
    from perfforge.errors import ConfigError

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert [_gpu(i) for i in range(2)] == ["0", "1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert [_gpu(i) for i in range(2)] == ["2", "3"]
    with pytest.raises(ConfigError, match="GPU 3 of 2 visible"):
        _gpu(2)
