"""The judge's own L2 flush for interpreted GPU kernel processes: a trusted helper process with a CUDA context.

A C kernel process flushes the device's L2 in its harness, whose object the binary policy protects. An interpreted
one (a Triton candidate) can rewrite its harness, so a flush there could be skipped, or replaced by a prefetch of
its inputs into the L2, to make its kernel look faster. The L2 is shared by every context on the device, so the
judge flushes it from a process of its own, between the kernel process's "staged" and its "call":

    judge (paired.py)                         flusher (this module run as a script: our code only)
    DeviceFlusher.start()      ->             import torch; a buffer of twice the L2; "ready"
    flush()  "flush\\n"         ->             fill the buffer, synchronise, "ok"

It runs outside the sandbox (nothing of a candidate's is in it), with the judge's environment. Where no GPU is
visible it says "none" and the judge goes on without it (the CPU interpreter has no L2 to flush).
"""

from __future__ import annotations

import select
import subprocess
import sys
import time

from profiling import sandbox

START_TIMEOUT_S = 180.0  # importing torch and making a context on a cold machine
FLUSH_TIMEOUT_S = 10.0  # a fill of twice the L2 takes well under a millisecond

_SCRIPT = """
import sys
import torch
if not torch.cuda.is_available():
    print("none", flush=True)
    raise SystemExit(0)
device = torch.device("cuda")
l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or (64 << 20)
buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device=device)
print("ready", flush=True)
count = 0
for line in sys.stdin:
    count += 1
    buffer.fill_(count & 0xFF)
    torch.cuda.synchronize(device)
    print("ok", flush=True)
"""


class FlusherError(Exception):
    """The flusher did not start or did not answer: a failure of the judge's machine, not of a candidate."""


class DeviceFlusher:
    """One flusher process; start() spawns it, wait_ready() waits for its context, flush() flushes the L2."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> DeviceFlusher:
        # the judge's own, tracked from its start: not an orphan a kernel process left
        self._process = sandbox.start_tracked([sys.executable, "-c", _SCRIPT], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return self

    def wait_ready(self) -> bool:
        """Whether it has a GPU to flush (False: no GPU visible; it has exited)."""
        answer = self._read(START_TIMEOUT_S, "starting")
        if answer not in ("ready", "none"):
            raise FlusherError(f"the judge's L2 flusher said {answer[:80]!r} while starting")
        return answer == "ready"

    def flush(self) -> float:
        """Flush the L2; returns how long it took by the judge's clock (ms). The fill is a kernel of the
        flusher's context: it waits while another context still has work on the device (contexts take turns), so
        the flush right after a call measures what that call left running (validate._device_busy_after)."""
        assert self._process is not None and self._process.stdin is not None
        started = time.perf_counter()
        try:
            self._process.stdin.write("flush\n")
            self._process.stdin.flush()
        except OSError as error:
            raise FlusherError(f"the judge's L2 flusher is gone ({error})") from None
        if self._read(FLUSH_TIMEOUT_S, "a flush") != "ok":
            raise FlusherError("the judge's L2 flusher did not flush")
        return (time.perf_counter() - started) * 1e3

    def _read(self, timeout_s: float, during: str) -> str:
        assert self._process is not None and self._process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._process.stdout], [], [], min(0.5, deadline - time.monotonic()))
            if ready:
                line = self._process.stdout.readline()
                if not line:
                    raise FlusherError(f"the judge's L2 flusher exited during {during}")
                return line.strip()
        raise FlusherError(f"the judge's L2 flusher did not answer within {timeout_s:.0f} s during {during}")

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            sandbox.untrack(self._process.pid)
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
            self._process = None
