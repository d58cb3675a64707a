"""Shared helpers: the repository root, running the CLI, and running generated scripts.

Imported by tests as `from helpers import ...` (pytest puts tests/ on sys.path)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ACTING = (
    "breakout_dqn", "breakout_ppo", "cartpole_a2c", "cartpole_dqn", "cartpole_ppo",
    "corridor_ppo", "pendulum_ppo", "pendulum_sac", "pendulum_td3",
)  # fmt: skip
"""The examples that learn by acting in an environment (reinforcement learning): no epochs, one
(test_golden checks the list against the specs)."""


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m loopgen ARGS` in a process of its own, forked from one that has imported
    loopgen's command (tests/preloaded.py), in this process's environment."""
    return _CLI.run(["-m", "loopgen", *args], cwd or ROOT, 120, env=dict(os.environ))


def render_into(
    out: Path, example: str, *overrides: str, variant: str | None = None, cwd: Path | None = None
) -> Path:
    """`loopgen render examples/EXAMPLE.py -o OUT --set ...` (and --variant), run in `cwd` (a
    module of yours the spec names is found there); returns OUT."""
    args = ["render", str(EXAMPLES / f"{example}.py"), "-o", str(out)]
    args += ["--variant", variant] if variant else []
    for override in overrides:
        args += ["--set", override]
    proc = run_cli(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return out


def script_env(**extra: str) -> dict[str, str]:
    """The environment generated scripts run in: quiet TF logs, a fixed hash seed."""
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONHASHSEED": "0",
        **COMET_OFFLINE,
        **extra,
    }


COMET_OFFLINE = {
    # comet_ml, even offline, probes cloud metadata and DNS for its environment details, and
    # reports its own errors to Sentry: none of that in tests (no network at run time).
    **{f"COMET_AUTO_LOG_{what}": "false" for what in (
        "ENV_DETAILS", "ENV_HOST", "ENV_CPU", "ENV_GPU", "ENV_DISK", "ENV_NETWORK",
        "GIT_METADATA", "GIT_PATCH", "CODE",
    )},
    "COMET_ERROR_TRACKING_ENABLE": "false",
    "COMET_LOGGING_CONSOLE": "ERROR",
}  # fmt: skip


def run_python(
    script: Path, *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Runs a generated script (or a test helper) in a process of its own, forked from one that
    has imported TensorFlow (run_preloaded); fails with its output."""
    return run_preloaded(str(script), *args, cwd=cwd, timeout=timeout)


def run_fresh(
    script: Path, *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS` in a new interpreter, as a user runs it; fails with its output."""
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(),
    )
    if proc.returncode != 0:
        pytest.fail(
            f"{script.name} {' '.join(args)} exited {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


def without(*packages: str) -> str:
    """Code for `python -c CODE SCRIPT ARGS`: `python SCRIPT ARGS` in a new interpreter where
    `packages` cannot be imported (an import of one fails naming it)."""
    return f"""
import os, runpy, sys

class Refused:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {packages!r}:
            raise ImportError(f"{{name}}: the script imported it")

sys.meta_path.insert(0, Refused())
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT` has it
runpy.run_path(sys.argv[0], run_name="__main__")
"""


WITHOUT_LOOPGEN = without("loopgen")
"""`python SCRIPT ARGS` where the loopgen package cannot be imported (its editable install is
on this venv's path)."""


def run_without_loopgen(
    script: Path, *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS` in a new interpreter with loopgen not importable, as on a machine
    that has only TensorFlow; fails with its output."""
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_LOOPGEN, str(script), *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=script_env(),
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail(
            f"{script.name} {' '.join(args)} exited {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


def write_rendered(path: Path, source: str) -> Path:
    """Writes a script render_script() made, and the runtime beside it, as `loopgen render -o`
    does; returns the script's path."""
    from loopgen.render import render_runtime

    path.write_text(source)
    (path.parent / "loopgen_runtime.py").write_text(render_runtime())
    return path


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones included), by relative path, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


CHECKS = ROOT / "tests" / "tf_checks.py"

TWO_CPUS = 'distribute.devices=["/cpu:0", "/cpu:1"]'
"""A `--set` that splits the CPU into two logical devices for the mirrored variant."""


def tf_check(check: str, *args: str, cwd: Path) -> dict:
    """Runs one check of tf_checks.py in a fresh process and returns its JSON result."""
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


class _Preloaded:
    """A preloaded.py server of this test process, started on first use: TensorFlow's (one
    for the test's programs, one per multi-worker worker running at once), or with `cli`
    loopgen's command's."""

    def __init__(self, *mode: str) -> None:
        self.mode = list(mode)
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.pending = b""

    def start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.pending = b""
            self.proc = subprocess.Popen(
                [sys.executable, str(ROOT / "tests" / "preloaded.py"), *self.mode],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=dict(os.environ) if self.mode else script_env(), cwd=ROOT,
            )  # fmt: skip
        return self.proc

    def reply(self, deadline: float | None) -> dict | None:
        """The server's next reply line, or None once `deadline` (time.monotonic) passes."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("tests/preloaded.py ended; run the check alone to see why")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def run(
        self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        with self.lock, tempfile.TemporaryDirectory() as folder:
            proc = self.start()
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            request = {"argv": argv, "cwd": str(cwd), "stdout": str(out), "stderr": str(err)}
            if env is not None:
                request["env"] = env
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            pid = self.reply(None)["pid"]
            done = self.reply(time.monotonic() + timeout)
            if done is None:
                os.killpg(pid, signal.SIGKILL)
                self.reply(None)
                raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text())
            return subprocess.CompletedProcess(
                argv, done["returncode"], out.read_text(), err.read_text()
            )

    def spawn(
        self, argv: list[str], cwd: Path, env: dict[str, str] | None = None
    ) -> PreloadedProcess:
        """Starts `python ARGV` as run() does, without waiting for it: the server is this
        program's until it ends (PreloadedProcess.communicate)."""
        self.lock.acquire()
        try:
            folder = tempfile.TemporaryDirectory()
            out, err = Path(folder.name) / "stdout", Path(folder.name) / "stderr"
            request = {"argv": argv, "cwd": str(cwd), "stdout": str(out), "stderr": str(err)}
            if env is not None:
                request["env"] = env
            proc = self.start()
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            pid = self.reply(None)["pid"]
        except BaseException:
            self.lock.release()
            raise
        return PreloadedProcess(self, pid, folder)


class PreloadedProcess:
    """A program _Preloaded.spawn started: its pid, poll(), send_signal() and communicate(), as
    a subprocess.Popen's."""

    def __init__(self, server: _Preloaded, pid: int, folder: tempfile.TemporaryDirectory) -> None:
        self.server, self.pid, self.folder = server, pid, folder
        self.returncode: int | None = None
        self.output: tuple[str, str] | None = None

    def _finish(self, deadline: float | None) -> bool:
        if self.returncode is None:
            done = self.server.reply(deadline)
            if done is None:
                return False
            self.returncode = done["returncode"]
            folder = Path(self.folder.name)
            self.output = ((folder / "stdout").read_text(), (folder / "stderr").read_text())
            self.folder.cleanup()
            self.server.lock.release()
        return True

    def poll(self) -> int | None:
        self._finish(time.monotonic())
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._finish(deadline):
            os.killpg(self.pid, signal.SIGKILL)
            self._finish(None)
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0, *self.output)
        assert self.output is not None
        return self.output


_PRELOADED = _Preloaded()
_CLI = _Preloaded("cli")
_WORKERS: list[_Preloaded] = []
"""The servers of the workers of multi-worker jobs, which run at once: as many as a test has
run at the same time."""


def _idle_worker_server() -> _Preloaded:
    for server in _WORKERS:
        if not server.lock.locked():  # a test process runs one test at a time, in one thread
            return server
    _WORKERS.append(_Preloaded())
    return _WORKERS[-1]


def start_preloaded(*argv: str, cwd: Path) -> PreloadedProcess:
    """Starts `python ARGV` as run_preloaded does (a process forked from one that has imported
    TensorFlow) and returns at once, with a Popen-like handle; communicate() it in the end (a
    test's server runs one program at a time)."""
    return _PRELOADED.spawn(list(argv), cwd)


def run_preloaded(
    *argv: str, cwd: Path, timeout: float = 600, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs `python ARGV` (a file, or `-c CODE`) in a process of its own forked from one that has
    imported TensorFlow (tests/preloaded.py): it runs as a fresh `python ARGV` would, 2.5 s
    sooner. Fails the test with its output unless it exits 0 (or `check` is off: the test
    looks at how it ended)."""
    proc = _PRELOADED.run(list(argv), cwd, timeout)
    if check and proc.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)[:200]} exited {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


def npz(path: str) -> str:
    """A `--set` value pointing a data source at an .npz file."""
    return json.dumps({"kind": "npz", "path": path})


def records(out: Path) -> list[dict]:
    """The JSON records of a run's metrics.jsonl, read as strict JSON (a bare NaN or Infinity,
    which jq and JavaScript refuse, fails the test)."""
    return [
        json.loads(line, parse_constant=_not_json)
        for line in (out / "metrics.jsonl").read_text().splitlines()
    ]


def _not_json(constant: str) -> None:
    raise AssertionError(f"metrics.jsonl holds {constant}, which strict JSON has not")


def saved_models(export: Path, script: Path) -> list[Path]:
    """The SavedModels a run of `script` writes into an export directory (<run>/export, or its
    best/): a GAN's generator; otherwise the bare network and, where the script has a serving
    signature for its source, the model to serve (saved_model/1); a VAE's decoder and encoder;
    a denoiser's sampler beside it."""
    source = script.read_text()
    if "def export(generator" in source:
        return [export / "generator"]
    if 'decoder = model.get_layer("decoder")' in source:  # a VAE's two halves
        return [export / "decoder", export / "encoder"]
    if '"sampler"), verbose=False)' in source:  # a denoiser's sampler, and the network
        return [export / "sampler", export / "network"]
    served = [export / "saved_model" / "1"] if "def serving_function(" in source else []
    return [export / "network", *served]


SERVING_PROBE = """
import json, re, sys

import numpy as np
import tensorflow as tf

try:  # a KerasHub tokenizer's ops, which a server of such a model imports too
    import tensorflow_text  # noqa: F401
except ImportError:
    pass

saved_model, reference = sys.argv[1:]
reference = np.load(reference, allow_pickle=True)  # strings are bytes objects
serve = tf.saved_model.load(saved_model).signatures["serving_default"]
signature = serve.structured_input_signature[1]
raw = {key.partition(":")[2]: reference[key] for key in reference.files if key.startswith("input")}
if list(raw) == [""]:  # the one input, whatever the signature names it
    ((name, _),) = signature.items()
    raw = {name: raw[""]}
# A CSV column whose name is no ASCII identifier is served under one made of it: sq ft, sq_ft.
for key in list(raw):
    name = re.sub(r"\\W", "_", key, flags=re.ASCII)
    raw[name if name[:1].isalpha() else f"column_{name}"] = raw.pop(key)
missing = sorted(set(signature) - set(raw))
assert not missing, f"the signature takes {missing}, which the examples do not hold"
# Each input the signature names, in its shape (a record's scalar feature is a list of one),
# or as it is where the signature leaves sizes open (images of any size).
feed = {
    name: tf.reshape(tf.constant(raw[name]), [-1, *spec.shape[1:]])
    if spec.shape[1:].is_fully_defined() else tf.constant(raw[name])
    for name, spec in signature.items()
}
outputs = {key: value.numpy() for key, value in serve(**feed).items()}
# A multi-task network's heads: its outputs are "<task>_scores", ..., beside "expected:<task>".
heads = [key.partition(":")[2] for key in reference.files if key.startswith("expected:")]
result = {
    "inputs": {name: [spec.dtype.name, spec.shape.as_list()] for name, spec in signature.items()},
    # What the examples hold that the signature does not take (a CSV's or record's label).
    "not_inputs": sorted(set(raw) - set(signature)),
    "outputs": sorted(outputs),
}
for head in heads or [""]:
    prefix, suffix = (f"{head}_", f":{head}") if head else ("", "")
    expected, scores = reference["expected" + suffix], outputs[prefix + "scores"]
    # Differences relative to the scores' magnitude (at least 1): float32 keeps 7 digits of
    # a diverged network's scores of 1e8 too.
    scale = max(1.0, float(np.max(np.abs(expected))))
    found = {"scores": float(np.max(np.abs(scores - expected))) / scale}
    if "unprepared" + suffix in reference:
        unprepared = reference["unprepared" + suffix]
        found["unprepared"] = float(np.max(np.abs(scores - unprepared))) / scale
    if prefix + "probabilities" in outputs:
        if scores.shape[-1] == 1:
            probabilities = tf.sigmoid(expected).numpy()
            class_ids = (probabilities[:, 0] > 0.5).astype(np.int64)  # one id an example
        else:
            probabilities = tf.nn.softmax(expected).numpy()
            class_ids = np.argmax(probabilities, axis=-1)
        served = outputs[prefix + "probabilities"]
        found["probabilities"] = float(np.max(np.abs(served - probabilities)))
        found["class_ids"] = bool(np.array_equal(outputs[prefix + "class_ids"], class_ids))
    # The worst of the heads.
    for key, value in found.items():
        worst = min if key == "class_ids" else max
        result[key] = worst(result.get(key, value), value)
if "class_names" in outputs:
    result["class_names"] = bool(
        [name.decode() for name in outputs["class_names"]]
        == [reference["class_names"][i] for i in outputs["class_ids"]]
    )
print(json.dumps(result))
"""


def serving_matches(script: Path, out: Path, cwd: Path) -> dict:
    """Raw training examples (arrays, image files' bytes, a CSV file's columns, TFRecord
    features, texts) fed to the run's model to serve, export/saved_model/1, in a fresh process
    that imports neither the script nor loopgen, against the script's network on the same
    examples as its training pipeline prepares them (tf_checks.serving_reference). Returns the
    probe's findings: its inputs, what the examples hold that it does not take, output names
    and the largest differences, relative to the scores' magnitude where it exceeds 1."""
    reference = cwd / "serving_reference.npz"
    tf_check("serving_reference", str(script), str(out), str(reference), cwd=cwd)
    saved_model = out / "export" / "saved_model" / "1"
    proc = run_preloaded("-c", SERVING_PROBE, str(saved_model), str(reference), cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wait_for_step(proc: subprocess.Popen[str], out: Path, step: int) -> None:
    """Returns once the run has logged `step` (it may be a few steps further by then). A run
    that stalls is killed, and the test fails with its output."""
    log = out / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("\n") >= step:
            return
        time.sleep(0.002)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # it may have just ended
            proc.kill()
    raise AssertionError(f"the run ended or stalled before step {step}: {proc.communicate(60)}")


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch_workers(
    script: Path, *args: str, cwd: Path, workers: int = 2, extra=None, fresh: bool = False
) -> list:
    """Starts the multi-worker script as `workers` processes on 127.0.0.1, each with its
    TF_CONFIG (and `extra(index)` arguments): forked from servers that have imported
    TensorFlow (as run_preloaded's programs), or with `fresh` new interpreters, as users
    start them. Each has a Popen's pid, poll(), send_signal(), kill() and communicate()."""
    cluster = [f"127.0.0.1:{port}" for port in free_ports(workers)]
    procs = []
    for index in range(workers):
        config = {"cluster": {"worker": cluster}, "task": {"type": "worker", "index": index}}
        argv = [str(script), *args, *(extra(index) if extra else [])]
        env = script_env(TF_CONFIG=json.dumps(config))
        if fresh:
            procs.append(subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))  # fmt: skip
        else:
            procs.append(_idle_worker_server().spawn(argv, cwd, env))
    return procs


@contextlib.contextmanager
def workers_running(procs: list[subprocess.Popen[str]]) -> Iterator[list[subprocess.Popen[str]]]:
    """`with workers_running(launch_workers(...)) as procs:` kills every worker of the job if
    the block fails, so that none is left waiting on its peer (and holding its server)."""
    try:
        yield procs
    except BaseException:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):  # it may have just ended
                proc.kill()
        finish_workers(procs, timeout=60)
        raise


def finish_workers(procs: list[subprocess.Popen[str]], timeout: float = 180) -> list:
    """Waits for every worker: (process, stdout, stderr) each. A worker whose peer died waits
    forever, so after `timeout` seconds all are killed."""
    finished = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            stdout, stderr = proc.communicate()
        finished.append((proc, stdout, stderr))
    return finished
