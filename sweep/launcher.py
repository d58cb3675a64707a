"""Starts a sweep's trial scripts in processes forked from this one, which has imported
TensorFlow (and Keras and NumPy) and run no TensorFlow op: each trial is still a process of
its own, running its script as `python train.py` would, with its own TensorFlow runtime, but
it starts in a fraction of a second instead of the seconds an import of TensorFlow takes.

early.py starts this file as a script (it imports nothing of loopgen) with one end of a
Unix socket pair. Requests, one JSON object a message: {"start": id, "argv", "cwd", "env"}
with the trial's claim and log files' descriptors attached, and {"signal": number, "pid"}.
Replies: {"ready": true, "cuda": bool} once imported, {"started": id, "pid"}, and {"pid",
"returncode"} when a trial's process ends. The server dies with the sweep (PR_SET_PDEATHSIG),
and its trials then get the SIGTERM they get when the sweep dies: they save and stop."""

from __future__ import annotations

import atexit
import ctypes
import gc
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
import traceback

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int) -> None:
    """`sig` when the parent process dies; an exit at once if it died already."""
    parent = os.getppid()
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:
        os._exit(128 + sig)


def run(argv: list[str]) -> int:
    """Runs `python ARGV` in this (forked) process; returns its exit status."""
    try:
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def child(request: dict, log: int, sock: socket.socket, server: int) -> None:
    """The trial's process: its session, environment, output and Python path as `python
    train.py` started by the sweep has them; runs the script and exits as Python does."""
    try:
        sock.close()
        os.setsid()  # a Ctrl-C in the terminal reaches the sweep alone, which stops the trial
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        # A SIGTERM when the sweep dies (the server dies with it), so that the trial saves a
        # checkpoint and stops rather than train on unwatched.
        if os.getppid() != server:
            os._exit(128 + signal.SIGTERM)
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != server:
            os._exit(128 + signal.SIGTERM)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(devnull)
        os.close(log)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        # As `python FILE` sets its path: the script's folder, then PYTHONPATH, then the rest.
        given = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        rest = [p for p in sys.path[1:] if p not in given]
        sys.path[:] = [os.path.dirname(os.path.abspath(request["argv"][0])), *given, *rest]
    except BaseException:
        os._exit(70)
    code = run(request["argv"])
    # Ends as Python ends a program: its threads joined, its atexit handlers run, its output
    # flushed (less the teardown of every object, which changes nothing a trial leaves).
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())


def serve(sock: socket.socket) -> None:
    children: set[int] = set()
    while True:
        if select.select([sock], [], [], 0.05)[0]:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
            if not message:  # the sweep closed its end: it is done
                return
            request = json.loads(message)
            if "signal" in request:
                if request["pid"] in children:
                    os.kill(request["pid"], request["signal"])
            else:
                claim, log = fds
                sys.stdout.flush()
                sys.stderr.flush()
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    child(request, log, sock, server)
                # The trial holds them now (its claim stays locked while it runs).
                os.close(claim)
                os.close(log)
                children.add(pid)
                send(sock, {"started": request["start"], "pid": pid})
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            send(sock, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    die_with_parent(signal.SIGKILL)
    try:
        import keras  # noqa: F401
        import numpy  # noqa: F401
        import tensorflow
    except BaseException as error:  # no TensorFlow here: the sweep starts its trials itself
        send(sock, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return
    gc.freeze()  # what was imported stays shared with the trials, not copied by the collector
    send(sock, {"ready": True, "cuda": bool(tensorflow.test.is_built_with_cuda())})
    serve(sock)
    # Done, its trials ended: the teardown of TensorFlow's modules would only delay the
    # sweep, which waits for this exit.
    os._exit(0)


if __name__ == "__main__":
    main()
