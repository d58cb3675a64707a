"""The process a sweep's trials fork from (launcher.py), started by `loopgen sweep FILE` before
the command loads anything of loopgen's: its import of TensorFlow, seconds long, then overlaps
the command's own imports, the sweep file's checks and the making of the study, which the first
trial would otherwise wait for in turn. This module imports only the standard library."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

_started: tuple[subprocess.Popen, socket.socket] | None = None


def spawn() -> tuple[subprocess.Popen, socket.socket]:
    """Starts launcher.py, in its own session (a Ctrl-C reaches the sweep alone); the process
    and this end of the socket pair it serves."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    argv = [sys.executable, str(Path(__file__).with_name("launcher.py")), str(theirs.fileno())]
    process = subprocess.Popen(
        argv,
        pass_fds=(theirs.fileno(),),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    theirs.close()
    return process, ours


def start(argv: list[str]) -> None:
    """Spawns it now if `argv`, the arguments of `loopgen sweep`, run the sweep (not
    `status`, not `--help`)."""
    global _started
    if argv[:1] != ["status"] and "--help" not in argv:
        _started = spawn()


def take() -> tuple[subprocess.Popen, socket.socket]:
    """The one started early, else one spawned now."""
    global _started
    started, _started = _started, None
    return started or spawn()


def discard() -> None:
    """Ends one started early that no sweep took (a bad sweep file, preload=False)."""
    global _started
    if _started is not None:
        process, sock = _started
        _started = None
        sock.close()
        process.kill()
        process.wait()
