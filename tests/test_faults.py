"""The generated script under faults, driven in subprocesses: killed with SIGKILL at a random
step, stopped by SIGTERM (preemption), a loss that turns NaN, a damaged newest checkpoint."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import data
import pytest
from data import classification_npz
from helpers import (
    TWO_CPUS,
    finish_workers,
    launch_workers,
    npz,
    records,
    run_python,
    script_env,
    tf_check,
)

pytestmark = pytest.mark.slow

# The MNIST MLP with Dropout (whose random state must survive a restart), momentum, 320
# examples at batch 16: 20 steps an epoch, a checkpoint every 7 steps (mid-epoch), a log line
# every step.
LAYERS = [
    {"kind": "flatten"},
    {"kind": "dense", "units": 32, "activation": "relu"},
    {"kind": "dropout", "rate": 0.3},
    {"kind": "dense", "units": 10, "name": "predictions"},
]
EPOCHS = 3
STEPS = 20 * EPOCHS


@pytest.fixture
def script(render, tmp_path):
    return render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        f"model.layers={json.dumps(LAYERS)}",
        "optimizer.momentum=0.9",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 7, "keep": 3}',
    )


def run(script: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        script, "--epochs", str(EPOCHS), "--output-dir", str(out), "--deterministic", *args,
        cwd=script.parent,
    )  # fmt: skip


def start(script: Path, out: Path) -> subprocess.Popen[str]:
    env = script_env()
    return subprocess.Popen(
        [sys.executable, str(script), "--epochs", str(EPOCHS), "--output-dir", str(out),
         "--deterministic"],
        cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_step(proc: subprocess.Popen[str], out: Path, step: int) -> None:
    """Returns once the run has logged `step` (it may be a few steps further by then)."""
    log = out / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("\n") >= step:
            return
        time.sleep(0.002)
    raise AssertionError(f"the run ended or stalled before step {step}: {proc.communicate()}")


def signal_at_step(proc: subprocess.Popen[str], out: Path, step: int, sig: int) -> None:
    wait_for_step(proc, out, step)
    proc.send_signal(sig)


def same_weights(a: Path, b: Path) -> dict:
    result = tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"),
                      cwd=a.parent)  # fmt: skip
    assert result["same_keys"] and result["step"] == STEPS, result
    return result


def test_sigkill_at_a_random_step_then_resume_ends_like_an_uninterrupted_run(script, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run(script, straight)
    at = random.Random().randint(9, STEPS - 10)  # after the first checkpoint, before the end
    proc = start(script, killed)
    signal_at_step(proc, killed, at, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"killed at step {at}"
    # It held the output directory's lock: the file still names it, but the lock died with
    # the process, so the next run takes it (no stale lock).
    assert (killed / "run.lock").read_text().startswith(f"pid {proc.pid} on ")

    resumed = run(script, killed)
    assert "Resumed from" in resumed.stdout, f"killed at step {at}"
    # runs.jsonl: the killed run started and never ended; the resumed one did both.
    lines = (killed / "runs.jsonl").read_text().splitlines()
    killed_start, resumed_start, resumed_end = map(json.loads, lines)
    assert killed_start["event"] == "start" and killed_start["pid"] == proc.pid
    assert resumed_start["event"] == "start" and resumed_end["run"] == resumed_start["run"]
    assert resumed_end["exit"] == "finished" and resumed_end["step"] == STEPS
    result = same_weights(straight, killed)
    # Weights, momentum slots, the step and Dropout's random state: all exactly as if the run
    # had never stopped.
    assert result["max_diff"] == 0.0, (at, result)


def test_sigterm_saves_a_checkpoint_and_the_next_run_resumes_from_it(script, tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run(script, straight)
    at = random.Random().randint(2, STEPS - 10)
    proc = start(script, stopped)
    signal_at_step(proc, stopped, at, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "Traceback" not in stderr
    # It stopped after the step it was in, and saved exactly there (not at the last cadence).
    step = int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0])
    assert at <= step < STEPS
    assert f"saved {stopped / 'checkpoints' / f'ckpt-{step}'}" in stdout
    assert not (stopped / "export").exists()  # an interrupted run does not export

    resumed = run(script, stopped)
    assert f"ckpt-{step} at step {step}" in resumed.stdout
    assert same_weights(straight, stopped)["max_diff"] == 0.0


def test_nan_loss_stops_the_run_naming_the_step_and_keeps_the_good_checkpoint(render, tmp_path):
    # From step 5 on the learning rate is absurd: the weights blow up within a few steps.
    script = render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 2, "keep": 2}',
        'optimizer.learning_rate={"kind": "piecewise_constant", "boundaries": [4], '
        '"values": [0.001, 1e12]}',
    )
    out = tmp_path / "run"
    env = script_env()
    proc = subprocess.run(
        [sys.executable, str(script), "--output-dir", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    bad = int(proc.stderr.split("NaN or Inf at step ")[1].split(":")[0])
    # The step named is the first with a non-finite loss: the logged running mean (one record
    # per step) is finite before it and not at it.
    losses = {r["step"]: r["loss"] for r in records(out) if "loss" in r}
    assert max(losses) == bad
    assert all(abs(losses[s]) < float("inf") for s in range(1, bad)), losses
    assert losses[bad] != losses[bad] or abs(losses[bad]) == float("inf")
    # The newest checkpoint is from before that step, and holds finite weights.
    result = tf_check("finite_checkpoint", str(out / "checkpoints"), cwd=tmp_path)
    assert result["all_finite"] and result["count"] >= 6, result
    assert result["step"] < bad and result["step"] >= bad - 2, (bad, result)
    assert f"ckpt-{result['step']}" in proc.stderr
    assert not (out / "export").exists()


def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(script, tmp_path):
    straight, damaged = tmp_path / "straight", tmp_path / "damaged"
    run(script, straight)
    run_python(script, "--epochs", "2", "--output-dir", str(damaged), "--deterministic",
               cwd=tmp_path)  # fmt: skip
    checkpoints = damaged / "checkpoints"
    # Saved at 28 and 35 on the cadence, 40 at the end of epoch 2: cut the newest short.
    data = checkpoints / "ckpt-40.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])

    resumed = run(script, damaged)
    assert f"Cannot restore {checkpoints / 'ckpt-40'}" in resumed.stdout
    assert f"Resumed from {checkpoints / 'ckpt-35'} at step 35" in resumed.stdout
    assert same_weights(straight, damaged)["max_diff"] == 0.0


def test_when_no_checkpoint_restores_the_run_stops_instead_of_starting_over(script, tmp_path):
    out = tmp_path / "run"
    run_python(script, "--max-steps", "14", "--output-dir", str(out), cwd=tmp_path)
    for index in (out / "checkpoints").glob("*.index"):
        index.write_bytes(b"not a checkpoint index")
    env = script_env()
    proc = subprocess.run(
        [sys.executable, str(script), "--output-dir", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "None of the checkpoints restores" in proc.stderr
    assert "Move them away" in proc.stderr
    assert len(records(out)) == 14  # it did not train on from step 0


def test_sigterm_to_one_worker_stops_every_worker_after_the_same_step(render, tmp_path):
    """Preemption of one machine in a multi-worker job: the workers agree (in the train step)
    to stop after the same step, save together, and a restarted job resumes there."""
    script = render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 7, "keep": 3}',
        variant="multi_worker",
    )
    args = ["--epochs", str(EPOCHS), "--deterministic"]
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"

    def job(out: Path) -> list[subprocess.Popen[str]]:
        return launch_workers(script, *args, "--output-dir", str(out), cwd=tmp_path)

    for proc, _, stderr in finish_workers(job(straight)):
        assert proc.returncode == 0, stderr[-3000:]

    procs = job(stopped)
    at = random.Random().randint(2, STEPS - 15)
    wait_for_step(procs[0], stopped, at)  # the chief writes the log
    procs[1].send_signal(signal.SIGTERM)  # only worker 1 is preempted
    results = finish_workers(procs)
    steps = set()
    for proc, stdout, stderr in results:
        assert proc.returncode == 128 + signal.SIGTERM, (at, stderr[-3000:])
        steps.add(int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0]))
    (step,) = steps  # the same step on both
    assert at <= step < STEPS
    assert (stopped / "checkpoints" / f"ckpt-{step}.index").is_file()

    resumed = finish_workers(
        launch_workers(script, *args, "--output-dir", str(stopped), cwd=tmp_path)
    )
    for proc, stdout, stderr in resumed:
        assert proc.returncode == 0, stderr[-3000:]
        assert f"ckpt-{step} at step {step}" in stdout
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(stopped / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["step"] == STEPS and result["max_diff"] <= 1e-5, result


# --- every source, on one device and on two replicas -------------------------------------------

SOURCE_RUNS = {
    # source: (example, epochs, extra overrides); checkpoints every 2 steps, a log line a step.
    "image_directory": ("cifar10_vgg", 3, ["data.validation=null", "data.batch_size=8"]),
    "tfrecord": ("flowers_finetune", 4, ["data.validation=null", "fine_tune.at_epoch=3"]),
    "csv": ("houses_tabular", 4, ["data.validation=null", "data.batch_size=16"]),
    "text": ("reviews_text", 3, ["data.validation=null", "data.batch_size=16"]),
    "generator": ("signals_generator", 3, ["data.batch_size=16"]),
    "tfds": ("pets_unet", 3, ["data.validation=null"]),
}


@pytest.mark.parametrize("variant", ["single_device", "mirrored"])
@pytest.mark.parametrize("source", sorted(SOURCE_RUNS))
def test_sigkill_then_resume_is_exact_for_every_source(source, variant, render, tmp_path):
    """The data position is a function of the step for every source (index-shuffled arrays and
    files, streamed records, a generator, TFDS): a run killed at a random step and resumed ends
    with exactly the weights of one that never stopped, on one device and on two replicas."""
    example, epochs, extra = SOURCE_RUNS[source]
    overrides = [*data.small_data_overrides(example, tmp_path), *extra,
                 "loop.log_every_steps=1", 'checkpoint={"every_steps": 2, "keep": 3}']  # fmt: skip
    if variant == "mirrored":
        overrides.append(TWO_CPUS)
    script = render(example, *overrides, variant=None if variant == "single_device" else variant)
    script = data.runnable(example, script)
    flags = ["--epochs", str(epochs), "--deterministic"]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_python(script, *flags, "--output-dir", str(straight), cwd=tmp_path)
    steps = max(r["step"] for r in records(straight))
    at = random.Random().randint(3, steps - 3)
    proc = subprocess.Popen(
        [sys.executable, str(script), *flags, "--output-dir", str(killed)],
        cwd=tmp_path, env=script_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    signal_at_step(proc, killed, at, signal.SIGKILL)
    proc.communicate(timeout=60)
    resumed = run_python(script, *flags, "--output-dir", str(killed), cwd=tmp_path)
    assert "Resumed from" in resumed.stdout, (source, at)
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(killed / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == steps, result
    assert result["max_diff"] == 0.0, (source, variant, at, result)
