"""Pieces of attack candidates that the Python red teams share (tests/profiling/test_served_python.py on the CPU,
test_judge_adversary_triton.py on a GPU), as source text to paste into a candidate."""

# Finds the judge's channel among the process's descriptors (a SOCK_SEQPACKET socket) through a socket module
# reached by an attribute path the static check's import patterns miss, without try/except (which it flags).
CHANNEL_FINDER = '''
import contextlib

_socket_module = torch.multiprocessing.get_context().reducer.socket
_channel = []


def _find_channel():
    for fd in range(3, 256):
        found = []
        with contextlib.suppress(OSError):
            found.append(_socket_module.socket(fileno=fd))
        if found and found[0].type == _socket_module.SOCK_SEQPACKET:
            _channel.append(found[0])
            return
        if found:
            found[0].detach()
'''

# torch.cuda.synchronize disabled through an alias (the static check flags `torch.x = ...` only), a side stream,
# and a scratch buffer for a spin kernel: `_spin_buffer(x)` gives it on x's device.
NEUTERED_SYNC = '''

_cuda = torch.cuda
_cuda.synchronize = lambda *args, **kwargs: None
_side = _cuda.Stream()
_scratch = []


def _spin_buffer(x):
    if not _scratch:
        _scratch.append(torch.empty(132, device=x.device))
    return _scratch[0]
'''
