"""One trial: a folder holding its script (the spec with the trial's values, rendered), a
record of its values, its run directory and its output; its script run as a subprocess whose
metrics.jsonl is read as it grows."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import LoopgenError
from . import early
from .space import LoadedSweep


def trial_folder(loaded: LoadedSweep, number: int) -> Path:
    return loaded.output / "trials" / f"{number:03d}"


def claim(folder: Path) -> int | None:
    """Locks the trial's claim file: the process that holds it runs the trial (its script
    inherits the lock and holds it until it exits). None if another process holds it."""
    fd = os.open(folder / "claim", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def create(loaded: LoadedSweep, number: int, values: dict[str, Any], **more: Any) -> int:
    """Makes a new trial's folder, claimed, with its record (its values, and `more`): built
    aside and renamed into place, so that no other process ever sees it unclaimed."""
    folder = trial_folder(loaded, number)
    if folder.exists():
        raise LoopgenError(
            f"{folder} exists, but trial {number} is new to the study {loaded.name!r}: it is "
            "an earlier study's; move it away, or give this sweep another name or output_dir"
        )
    partial = folder.with_name(f".{folder.name}.new")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    fd = claim(partial)
    assert fd is not None  # nobody else knows the partial folder
    record = {"number": number, "values": values, "overrides": loaded.overrides(values), **more}
    (partial / "trial.json").write_text(json.dumps(record, indent=2) + "\n")
    os.replace(partial, folder)
    return fd


LAUNCHER = """\
import ctypes, os, signal, sys
# A SIGTERM when the sweep dies (even by SIGKILL), so that the trial saves a checkpoint and
# stops rather than train on unwatched; kept across the exec below.
ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):  # the sweep died before that
    sys.exit(128 + signal.SIGTERM)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""
"""Starts a trial's script as a child that dies with the sweep: set in the child itself,
not in a preexec_fn (unsafe where threads run, and MLflow's do)."""


class Launcher:
    """launcher.py, the process the trials are forked from (early.py starts it): it imports
    TensorFlow while the sweep makes its study; each trial then starts in a fraction of a
    second instead of several seconds.
    `start()` returns None where it cannot start one (no TensorFlow there; a CUDA device to
    pick, which TensorFlow, imported, might have taken already): the sweep starts the script
    itself then."""

    def __init__(self) -> None:
        self.process, self.sock = early.take()  # started with the command, where it could be
        self.ready: dict | None = None
        self.returncodes: dict[int, int] = {}
        self.requests = 0
        self.started: dict = {}

    def _receive(self, timeout: float | None) -> bool:
        """Reads one reply (waiting up to `timeout` seconds); False if none came."""
        if not select.select([self.sock], [], [], timeout)[0]:
            return False
        message = self.sock.recv(1 << 16)
        if not message:
            raise LoopgenError(
                "the process the trials start from ended (killed?); the trials it ran stop "
                "and save: run `loopgen sweep` again to resume them"
            )
        reply = json.loads(message)
        if "ready" in reply:
            self.ready = reply
        elif "returncode" in reply:
            self.returncodes[reply["pid"]] = reply["returncode"]
        else:
            self.started = reply
        return True

    def pump(self) -> None:
        """Reads the replies that arrived: the trials that ended."""
        while self._receive(0):
            pass

    def start(self, request: dict, claim: int, log: int, device: str | None) -> int | None:
        """Forks a trial's process; its pid, or None where the sweep starts it itself."""
        while self.ready is None:
            self._receive(None)
        if not self.ready["ready"] or (device is not None and self.ready["cuda"]):
            return None
        self.requests += 1
        request = {**request, "start": self.requests}
        socket.send_fds(self.sock, [json.dumps(request).encode()], [claim, log])
        while self.started.get("started") != self.requests:
            self._receive(None)
        return self.started["pid"]

    def wait(self, timeout: float) -> None:
        """Waits up to `timeout` seconds for a reply (a trial's end), reading those that came;
        sleeps where the launcher starts no trial (its end says nothing then)."""
        if not (self.ready and self.ready["ready"]):
            time.sleep(timeout)
        elif self._receive(timeout):
            self.pump()

    def close(self) -> None:
        self.sock.close()  # the server ends when it reads the end of its socket
        self.process.wait()

    def abort(self) -> None:
        """Ends it at once (the sweep stopped before its first trial): it may still be
        importing TensorFlow, and would read the socket's end only then."""
        self.sock.close()
        self.process.kill()
        self.process.wait()


class Forked:
    """A trial's process that the launcher forked: poll(), wait(), send_signal() as a
    subprocess.Popen's."""

    def __init__(self, launcher: Launcher, pid: int):
        self.launcher, self.pid = launcher, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.launcher.pump()
            self.returncode = self.launcher.returncodes.pop(self.pid, None)
        return self.returncode

    def wait(self) -> int:
        while self.poll() is None:
            self.launcher._receive(None)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, number: int) -> None:
        if self.poll() is None:  # the launcher signals its own child: never a reused pid
            message = {"signal": int(number), "pid": self.pid}
            self.launcher.sock.send(json.dumps(message).encode())


class RunningTrial:
    """A trial's script, running. `poll()` returns the objective's new (step, value) pairs
    and whether the script has exited."""

    def __init__(self, loaded: LoadedSweep, number: int, fd: int, device: str | None):
        self.loaded, self.number, self.fd = loaded, number, fd
        self.folder = trial_folder(loaded, number)
        self.run_dir = self.folder / "run"
        self.record = json.loads((self.folder / "trial.json").read_text())
        self.values = self.record["values"]
        self.device = device
        self.process: subprocess.Popen | Forked | None = None
        self.offset = 0
        self.last: tuple[int, float] | None = None
        self.pruned = self.resumed = False
        self.reported: set[int] = set()
        """The steps (or epochs) of the objective told to Optuna's pruner."""

    def render(self) -> None:
        """Writes the trial's script (once: a resumed trial runs the script it started with).
        A LoopgenError when its values do not validate."""
        from ..output import write_rendered
        from ..render import render_runtime, render_script

        script = self.folder / "train.py"
        if script.exists():
            return
        spec = self.loaded.trial_spec(self.values)
        source = render_script(
            spec,
            spec_file=os.path.relpath(self.loaded.spec_path, self.loaded.folder),
            overrides=self.loaded.overrides(self.values),
        )
        write_rendered(script, source, render_runtime())  # the runtime beside it

    def start(self, launcher: Launcher | None = None, **more_env: str) -> None:
        """Starts the trial's script: forked by the `launcher` where it can, else as `python
        train.py`, in the sweep file's folder, its output appended to train.log."""
        env = {**os.environ, **more_env}
        # The script is in the trial's folder: the modules of yours its spec names (an
        # environment, your own step) are found where validating the spec found them, beside
        # the spec, else where the sweep was started.
        importable = [str(self.loaded.spec_path.parent.resolve()), str(self.loaded.started_in)]
        if env.get("PYTHONPATH"):
            importable.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(importable)
        if self.device is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.device
        self.resumed = (self.run_dir / "runs.jsonl").exists()
        log = open(self.folder / "train.log", "a")
        with log:
            device = f" on CUDA_VISIBLE_DEVICES={self.device}" if self.device is not None else ""
            again = " resumed" if self.resumed else ""
            log.write(f"# loopgen sweep: trial {self.number}{again}{device}\n")
            log.flush()
            script = [str(self.folder / "train.py"), "--output-dir", str(self.run_dir)]
            if launcher is not None:
                request = {"argv": script, "cwd": str(self.loaded.folder), "env": env}
                pid = launcher.start(request, self.fd, log.fileno(), self.device)
                if pid is not None:
                    self.process = Forked(launcher, pid)
                    return
            self.process = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(os.getpid()), *script],
                cwd=self.loaded.folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(self.fd,),
                # Its own session: a Ctrl-C in the terminal reaches the sweep alone, which
                # stops the trial by SIGTERM (a KeyboardInterrupt would save no checkpoint).
                start_new_session=True,
            )

    def poll(self) -> tuple[list[tuple[int, float]], int | None]:
        """The objective values logged since the last poll, by epoch (a validation value) or
        step, and the script's exit status (None while it runs)."""
        assert self.process is not None
        status = self.process.poll()  # before reading: every line written is then read
        reported = []
        at = "epoch" if self.loaded.per_epoch else "step"
        for record in self._new_records():
            value = record.get(self.loaded.sweep.objective)
            if isinstance(value, int | float) and at in record:
                self.last = (int(record[at]), float(value))
                reported.append(self.last)
        return reported, status

    def _new_records(self) -> list[dict]:
        path = self.run_dir / "metrics.jsonl"
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        if self.offset > 0 and os.path.getsize(path) < self.offset:
            # A resumed run rewrites the file without the records past its checkpoint.
            self.offset = 0
            return self._new_records()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        records = []
        for line in complete.splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return records

    def terminate(self) -> None:
        """SIGTERM: the script saves a checkpoint and exits."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def close(self) -> None:
        os.close(self.fd)

    def error(self) -> str:
        """The end of the script's output, for a failed trial."""
        lines = (self.folder / "train.log").read_text(errors="replace").strip().splitlines()
        return (lines or ["no output"])[-1][-500:]


def run_seconds(run_dir: Path, running: bool) -> tuple[float | None, bool]:
    """How long a trial's script ran, from its runs.jsonl: each run from its start record to
    its end record, the downtime between a stop and its resume left out; the run that is
    running (`running`) up to now. A run killed outright left no end record: its time is not
    known, and the second value is False. None when the script never started a run."""
    import datetime

    def moment(record: dict) -> float:
        return datetime.datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S%z").timestamp()

    try:
        lines = (run_dir / "runs.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return None, True
    starts: dict[str, float] = {}
    total, known, started = 0.0, True, False
    for line in lines:
        try:
            record = json.loads(line)
            at = moment(record)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # a line cut short
        if record.get("event") == "start":
            starts[record.get("run")], started = at, True
        elif record.get("event") == "end" and record.get("run") in starts:
            total += at - starts.pop(record.get("run"))
    if not started:
        return None, True
    for index, at in enumerate(starts.values()):
        if running and index == len(starts) - 1:  # the newest start: the run going on
            total += max(0.0, datetime.datetime.now().timestamp() - at)
        else:
            known = False
    return total, known


def claimed(folder: Path) -> bool:
    """Whether a process runs the trial of `folder`: the sweep that claimed it, or its script
    (which holds the claim until it exits)."""
    try:
        fd = os.open(folder / "claim", os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and its shared lock with it
    return False


def run_steps(run_dir: Path) -> int | None:
    """The step a trial's run reached, from its runs.jsonl."""
    try:
        lines = (run_dir / "runs.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return None
    steps = []
    for line in lines:
        try:
            steps.append(int(json.loads(line).get("step")))
        except (json.JSONDecodeError, TypeError, ValueError):
            continue
    return max(steps) if steps else None


def check_runnable() -> None:
    if not sys.platform.startswith("linux"):
        raise LoopgenError("loopgen sweep runs trials on Linux (it needs prctl and flock)")


class SweepLock:
    """An flock on the sweep's folder, held briefly by a process that creates the study,
    asks for a trial and makes its folder: no two processes on it (or on a shared file
    system) ask at once, so a study never holds more than `trials` trials, nor a trial
    without its folder but from a process that died in between."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ".lock"
        self.fd: int | None = None

    def __enter__(self) -> SweepLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.fd is not None
        os.close(self.fd)
        self.fd = None


def alive(host: str | None, pid: int | None) -> bool:
    """Whether the process that asked for a trial may still run it: True unless it ran on
    this machine and is gone."""
    if host != socket.gethostname() or pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
