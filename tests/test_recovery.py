"""The run directory after faults in its bookkeeping files (issue 32: a fault is a message or a
correct resume, never a silent restart): a damaged checkpoint state file, the temporary copy
of it that a killed save leaves, and a runs.jsonl whose last line a full disk or a kill cut."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from data import classification_npz
from helpers import npz, run_python, script_env, tf_check

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
    """One run into `out`; its exit status is the caller's to check. limits: setrlimit's."""

    def limit() -> None:
        for name, value in limits.items():
            resource.setrlimit(getattr(resource, name), (value, value))

    return subprocess.run(
        [sys.executable, str(script), "--epochs", str(epochs), "--output-dir", str(out),
         "--deterministic", *args],
        cwd=script.parent, env=script_env(), capture_output=True, text=True, timeout=600,
        preexec_fn=limit,
    )  # fmt: skip


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
    for form, spoil in damage.items():
        out = tmp_path / form
        shutil.copytree(stopped, out)
        checkpoints = out / "checkpoints"
        spoil(checkpoints / "checkpoint")
        newest = "ckpt-8"
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
        result = tf_check("compare_checkpoints", str(straight / "checkpoints"), str(checkpoints),
                          cwd=tmp_path)  # fmt: skip
        assert result["same_keys"] and result["step"] == 4 * EPOCHS, (form, result)
        assert result["max_diff"] == 0.0, (form, result)


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
