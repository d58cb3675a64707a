"""The run directory after faults in its bookkeeping files (issue 32: a fault is a message or a
correct resume, never a silent restart): a damaged checkpoint state file, the temporary copy
of it that a killed save leaves, and a runs.jsonl whose last line a full disk or a kill cut."""

from __future__ import annotations

import csv
import json
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from data import classification_npz
from helpers import (
    PreloadedProcess,
    npz,
    records,
    run_preloaded,
    run_python,
    saved_models,
    script_env,
    start_preloaded,
    tree,
)

pytestmark = pytest.mark.slow

# 64 examples at batch 16: 4 steps an epoch, a checkpoint every 2 steps.
EPOCHS = 3


@pytest.fixture
def script(render, tmp_path):
    return render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 64, (28, 28)))}",
        "data.batch_size=16",
        'checkpoint={"every_steps": 2}',
    )


def run(script: Path, out: Path, *args: str, epochs: int = EPOCHS, **limits: int):
    """One run into `out`; its exit status is the caller's to check. limits: setrlimit's, in a
    new interpreter; without them, in a process forked from the preloaded server."""
    argv = [str(script), "--epochs", str(epochs), "--output-dir", str(out), "--deterministic",
            *args]  # fmt: skip
    if not limits:
        return communicated(start_preloaded(*argv, cwd=script.parent), argv)

    def limit() -> None:
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, name), (value, value))

    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=script.parent, env=script_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=limit,
    )  # fmt: skip
    stdout, stderr = proc.communicate(timeout=600)
    done = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    done.pid = proc.pid  # run.lock names it
    return done


def communicated(proc: PreloadedProcess, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The ended program's exit status and output, as subprocess.run returns them."""
    stdout, stderr = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def test_a_damaged_checkpoint_state_file_is_rebuilt_and_the_run_resumes_exactly(script, tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run_python(script, "--epochs", str(EPOCHS), "--output-dir", str(straight), "--deterministic",
               cwd=tmp_path)  # fmt: skip
    run_python(script, "--epochs", "2", "--output-dir", str(stopped), "--deterministic",
               cwd=tmp_path)  # fmt: skip
    # Saved at steps 4, 6 and 8. Each form of damage to a copy of that run.
    damage = {
        "text": lambda state: state.write_text("model_checkpoint_path: ckpt-8\n{{{\n"),
        "binary": lambda state: state.write_bytes(bytes(range(128, 256)) * 3),
        "empty": lambda state: state.write_bytes(b""),
    }
    resumed = []
    for form, spoil in damage.items():
        out = tmp_path / form
        shutil.copytree(stopped, out)
        checkpoints = out / "checkpoints"
        spoil(checkpoints / "checkpoint")
        newest = "ckpt-8"
        if form == "text":
            # The rebuilt state file written aside, then renamed: a write refused midway (a
            # file size limit below its size, 300 bytes or so; a full disk alike) leaves the
            # file as it was, never half of the new one, and the next run rebuilds it.
            damaged = (checkpoints / "checkpoint").read_bytes()
            refused = run(script, out, RLIMIT_FSIZE=200)
            said = refused.stderr[-3000:]
            assert refused.returncode == 1 and "File too large" in said, said
            # It took the lock (its one write before the rebuild), then failed to rebuild.
            assert (out / "run.lock").read_text().startswith(f"pid {refused.pid} on "), said
            assert (checkpoints / "checkpoint").read_bytes() == damaged
        if form == "binary":  # and the newest checkpoint cut short: the one before it is used
            data = checkpoints / "ckpt-8.data-00000-of-00001"
            data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
            newest = "ckpt-6"

        proc = run(script, out)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (form, proc.stderr[-3000:])
        assert f"{checkpoints / 'checkpoint'} was damaged: rebuilt" in proc.stdout, form
        step = int(newest.split("-")[1])
        assert f"Resumed from {checkpoints / newest} at step {step}" in proc.stdout, form
        # The state file was written anew and lists the checkpoints this run saved on.
        state = (checkpoints / "checkpoint").read_text()
        assert state.startswith('model_checkpoint_path: "ckpt-12"\n'), (form, state)
        assert len(state) > 200, state  # above the limit of the refused write
        resumed.append(str(checkpoints))
    # Each resumed run's checkpoints against the straight run's, in one process.
    compared = run_preloaded("-c", COMPARE, str(straight / "checkpoints"), *resumed, cwd=tmp_path)
    results = json.loads(compared.stdout.splitlines()[-1])
    for form, result in zip(damage, results, strict=True):
        assert result["same_keys"] and result["step"] == 4 * EPOCHS, (form, result)
        assert result["max_diff"] == 0.0, (form, result)


COMPARE = """
import json, sys

import tf_checks

straight, *others = sys.argv[1:]
print(json.dumps([tf_checks.compare_checkpoints(straight, other) for other in others]))
"""
"""tf_checks.compare_checkpoints of a run's checkpoints (argv[1]) and each other run's."""


def test_a_state_file_copy_left_by_a_killed_save_is_removed(script, tmp_path):
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    # What TensorFlow's atomic write of the state file leaves when the process dies between
    # writing checkpoint.tmp<uuid hex> and renaming it.
    left = out / "checkpoints" / "checkpoint.tmp0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    left.write_text('model_checkpoint_path: "ckpt-')

    proc = run(script, out, epochs=2)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"Removed {left}" in proc.stdout
    assert "Resumed from" in proc.stdout
    assert not list(left.parent.glob("checkpoint.tmp*"))


def test_runs_jsonl_records_are_whole_and_each_starts_on_a_line_of_its_own(script, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    # A file-size limit (a full disk for this process) that leaves room in runs.jsonl for the
    # start record (about 800 bytes) but not for the end record with its traceback; the first
    # checkpoint (200 KiB) does not fit either, which ends the run.
    limit = 100 * 1024
    runs = out / "runs.jsonl"
    runs.write_text(json.dumps({"padding": "x" * (limit - 1500 - 16)}) + "\n")
    proc = run(script, out, RLIMIT_FSIZE=limit)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"Cannot write the end record to {runs}: File too large" in proc.stderr
    # No part of the end record: the start record is the last line, whole.
    lines = runs.read_text().splitlines(keepends=True)
    assert len(lines) == 2 and lines[-1].endswith("\n"), lines[-1][-200:]
    assert json.loads(lines[-1])["event"] == "start"

    # A line cut short (a kill mid-write, an older script on a full disk): the next run's
    # records go on lines of their own, and a reader skips the cut one.
    runs.write_text(runs.read_text()[:-300])
    proc = run(script, out, epochs=1)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = runs.read_text().splitlines()
    assert len(lines) == 4, [line[-100:] for line in lines]
    start, end = map(json.loads, lines[2:])
    assert start["event"] == "start" and end["event"] == "end" and end["exit"] == "finished"
    assert readable(lines) == [json.loads(lines[0]), start, end]


def readable(lines: list[str]) -> list[dict]:
    """The records of runs.jsonl, as `jq -R 'fromjson?'` reads them: a cut line is skipped."""
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


# Runs a generated script (argv[2]) in this process and SIGKILLs it at a point of its run,
# from the outside of the script: after it logs step KILL_AT_STEP, or as it swaps in a new
# export (KILL_AT_SWAP: the export directory), once the two are exchanged, or (NO_EXCHANGE: as
# on a file system that cannot exchange them) once the old one is renamed aside or partly
# removed (argv[1]: a JSON object of those given).
KILLER = """
import importlib.util, json, os, shutil, signal, sys

sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[2]))  # as `python SCRIPT`: its runtime
spec = importlib.util.spec_from_file_location("train", sys.argv[2])
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
kill_at = json.loads(sys.argv[1])
step, swap = kill_at.get("KILL_AT_STEP"), kill_at.get("KILL_AT_SWAP")
runtime = sys.modules["loopgen_runtime"]  # the machinery beside the script
log, rename, rmtree = script.RunDirectory.log, os.rename, shutil.rmtree
exchange = runtime.exchange

def log_then_die(self, split, at, values, epoch=None):
    log(self, split, at, values, epoch)
    if str(at) == step:
        die()

def rename_then_die(source, target):
    rename(source, target)
    if os.path.abspath(source) == swap:
        die()

def remove_part_then_die(path, *args, **kwargs):
    if os.path.abspath(path) != swap:
        return rmtree(path, *args, **kwargs)
    rmtree(os.path.join(path, sorted(os.listdir(path))[-1]))
    die()

def exchange_then_die(a, b):
    exchanged = exchange(a, b)
    if exchanged and os.path.abspath(b) == swap:
        die()
    return exchanged

script.RunDirectory.log = log_then_die
os.rename, shutil.rmtree = rename_then_die, remove_part_then_die
runtime.exchange = (lambda a, b: False) if kill_at.get("NO_EXCHANGE") else exchange_then_die
script.main(sys.argv[3:])
"""


def killed(script: Path, out: Path, *args: str, epochs: int = EPOCHS, **kill_at: str):
    """A run into `out` that KILLER ends with SIGKILL (kill_at: KILL_AT_STEP or KILL_AT_SWAP), in
    a process forked from the preloaded server."""
    argv = ["-c", KILLER, json.dumps(kill_at), str(script), "--epochs", str(epochs),
            "--output-dir", str(out), "--deterministic", *args]  # fmt: skip
    proc = communicated(start_preloaded(*argv, cwd=script.parent), argv)
    assert proc.returncode == -signal.SIGKILL, (kill_at, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


def finished(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def small_script(render, tmp_path: Path, *overrides: str) -> Path:
    return render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 64, (28, 28)))}",
        "data.batch_size=16",
        'checkpoint={"every_steps": 2}',
        *overrides,
    )


# The logged values that depend on wall time, not on the training.
WALL_TIME = {"steps_per_second"}


def logged(out: Path) -> tuple[list[dict], list[dict]]:
    """metrics.jsonl's and metrics.csv's records, without the values of WALL_TIME."""
    with open(out / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return [
        [{key: value for key, value in record.items() if key not in WALL_TIME} for record in found]
        for found in (records(out), rows)
    ]


def test_a_run_killed_between_checkpoints_logs_each_step_once_after_its_resume(render, tmp_path):
    script = small_script(render, tmp_path, "loop.log_every_steps=1", "logging.csv=true")
    straight, out = tmp_path / "straight", tmp_path / "run"
    finished(run(script, straight))
    jsonl, rows = logged(straight)
    assert set(records(straight)[0]) == {"step", "epoch", "loss", "accuracy", "learning_rate",
                                         *WALL_TIME}  # fmt: skip
    assert [r["step"] for r in jsonl] == [int(r["step"]) for r in rows] == list(range(1, 13))

    # Killed after logging step 5 (saved at 4, an epoch's end), then after step 7 (saved at 6,
    # the middle of epoch 2): each resume logs again the steps the killed run logged after its
    # last checkpoint, and the second continues the epoch's running means (loss, accuracy)
    # from the checkpoint's, not from zero.
    killed(script, out, KILL_AT_STEP="5")
    assert [r["step"] for r in records(out)] == [1, 2, 3, 4, 5]
    resumed = killed(script, out, KILL_AT_STEP="7").stdout
    assert f"Resumed from {out / 'checkpoints' / 'ckpt-4'} at step 4" in resumed
    stdout = finished(run(script, out))
    assert f"Resumed from {out / 'checkpoints' / 'ckpt-6'} at step 6" in stdout
    # Each step once, with the values of the uninterrupted run (--deterministic: exactly).
    assert [r["step"] for r in records(out)] == list(range(1, 13))
    assert logged(out) == [jsonl, rows]
    assert f"Dropped from {out / 'metrics.jsonl'} its 1 records after step 4" in resumed
    assert f"Dropped from {out / 'metrics.csv'} its 1 records after step 6" in stdout
    lines = (out / "metrics.csv").read_text().splitlines()
    assert lines[0].startswith("step,") and len(lines) == 13
    assert not list(out.glob("metrics.*.tmp"))


def test_checkpoints_without_the_running_means_still_resume(render, tmp_path):
    """An older script's checkpoints lack the epoch's running means: the run resumes from them
    (the means start at zero, and it says so) instead of refusing every checkpoint."""
    script = small_script(render, tmp_path)
    older = tmp_path / "older.py"
    lines = script.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.strip().startswith("train_values=")]
    older.write_text("".join(kept))
    assert len(older.read_text()) < len(script.read_text())
    out = tmp_path / "run"
    finished(run(older, out, epochs=1))
    stdout = finished(run(script, out, epochs=2))
    assert f"Resumed from {out / 'checkpoints' / 'ckpt-4'} at step 4" in stdout, stdout
    assert "holds no running means (an older script's): they start at 0" in stdout


def whole(export: Path, script: Path) -> bool:
    """Whether `export` holds each SavedModel of the script's export, and nothing else."""
    models = saved_models(export, script)
    return {path.name for path in export.iterdir()} == {"network", "saved_model"} and all(
        (model / "saved_model.pb").is_file() and (model / "variables" / "variables.index").is_file()
        for model in models
    )


@pytest.mark.parametrize("swap", ["exchange", "renames"])
def test_an_export_killed_as_it_is_swapped_in_is_whole_and_the_next_run_settles_it(
    render, tmp_path, swap
):
    """The new export is exchanged with the old one in one step (renameat2), so export/ is
    never missing; where the file system cannot, two renames, the old one aside between."""
    script = small_script(render, tmp_path)
    out = tmp_path / "run"
    export = out / "export"
    finished(run(script, out, epochs=1))
    assert whole(export, script)
    first = tree(export)

    # Killed as the new export replaces the old one: export/ is whole, the new one (exchanged)
    # or the old one (in export/ or aside); never a part of it in export/.
    renames = {"NO_EXCHANGE": "1"} if swap == "renames" else {}
    killed(script, out, epochs=2, KILL_AT_SWAP=str(export), **renames)
    aside = out / "export.old"
    if swap == "exchange":  # killed after the exchange, not after a rename aside
        assert whole(export, script) and tree(export) != first
        assert not aside.exists()
        second = tree(export)
    else:
        assert whole(export, script) if export.exists() else whole(aside, script), sorted(
            str(path.relative_to(out)) for path in out.glob("export*/*")
        )
    # The next run settles it before it trains: killed before it exports (after logging its
    # last step, 12), it leaves the export it found whole.
    stdout = killed(script, out, epochs=3, KILL_AT_STEP="12").stdout
    if swap == "exchange":  # the old one, exchanged into export.partial, is removed
        assert f"Removed {out / 'export.partial'}" in stdout
        assert tree(export) == second
    else:
        assert f"Put back {export}" in stdout
        assert tree(export) == first
    assert sorted(path.name for path in out.glob("export*")) == ["export"]

    # A finished run, and one that only exports again: a whole export, nothing beside it.
    for epochs in (3, 3):
        finished(run(script, out, epochs=epochs))
        assert whole(export, script)
        assert sorted(path.name for path in out.glob("export*")) == ["export"]


def test_the_first_write_of_a_new_run_that_the_disk_refuses_is_named(script, tmp_path):
    out = tmp_path / "new"
    # 16 bytes: less than run.lock's line, the first file a new run writes.
    proc = run(script, out, RLIMIT_FSIZE=16)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"Stopped: cannot write {out / 'run.lock'} (File too large)." in proc.stderr
    assert "cannot write None" not in proc.stderr
