"""Debugging a run (issue 46): the script's flags that change how it runs, never what it trains
(--eager, --check-numerics, --dump-debug-info, --profile, --fast-dev-run, --overfit-batches),
the batch a diverged step trained on (debug/step-N/), and `replay --step N`, which trains step N
again from the checkpoint before it. Real runs of mnist_mlp on small arrays; the references
are Keras' and NumPy's (debug_checks.py), from the files the runs wrote."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import data
import numpy as np
import pytest
from data import pattern_npz
from helpers import (
    ROOT,
    TWO_CPUS,
    npz,
    records,
    render_into,
    run_preloaded,
    run_python,
    tf_check,
    tree,
)

CHECKS = ROOT / "tests" / "debug_checks.py"


def debug_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mnist(render, tmp_path: Path, *overrides: str, name: str = "train.py", **kw) -> Path:
    """mnist_mlp on 128 examples of 10 patterns (a batch of 64 sees them all), every step
    logged, so that a replayed step's loss can be compared with the logged one."""
    data = tmp_path / "train.npz"
    if not data.exists():
        pattern_npz(data, 128, (28, 28))
    return render(
        "mnist_mlp", f"data.train={npz(str(data))}", "loop.log_every_steps=1", *overrides,
        name=name, **kw,
    )  # fmt: skip


def failing(script: Path, *args: str, cwd: Path):
    """Runs a script that must stop with a message: no traceback, exit 1 or 2."""
    proc = run_preloaded(str(script), *args, cwd=cwd, check=False)
    assert proc.returncode in (1, 2), (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def with_line_in_step(script: Path, line: str) -> Path:
    """A copy of `script` with `line` at the top of train_step, as a user debugging it adds."""
    text = script.read_text()
    found = re.search(r"\n    def train_step\((.*)\):\n", text)
    assert found, "no train_step in the script"
    edited = script.with_name(f"edited_{script.name}")
    edited.write_text(text[: found.end()] + f"        {line}\n" + text[found.end() :])
    return edited


@pytest.mark.slow
def test_eager_runs_the_step_as_python_each_step_and_trains_as_compiled(render, tmp_path):
    """--eager: a line in the step runs once per step (traced, once in all), and three steps
    end with the weights of the compiled (XLA) run's within 1e-5."""
    script = mnist(render, tmp_path, 'checkpoint={"every_steps": 1}')
    edited = with_line_in_step(script, 'open("ran.txt", "a").write("ran\\n")')
    compiled, eager = tmp_path / "compiled", tmp_path / "eager"
    run_python(edited, "--max-steps", "3", "--output-dir", str(compiled), cwd=tmp_path)
    assert (tmp_path / "ran.txt").read_text().count("ran") == 1  # traced once
    (tmp_path / "ran.txt").unlink()
    proc = run_python(
        edited, "--eager", "--max-steps", "3", "--output-dir", str(eager), cwd=tmp_path
    )
    assert "--eager" in proc.stdout
    assert (tmp_path / "ran.txt").read_text().count("ran") == 3  # each step, as Python
    result = tf_check(
        "compare_checkpoints", str(compiled / "checkpoints"), str(eager / "checkpoints"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result["step"] == 3 and result["max_diff"] <= 1e-5, result


LOG_LOSS = '''"""A loss of one's own that takes the log of the batch's largest label: 0 for a batch
whose labels are all 0."""

import tensorflow as tf


def log_of_labels(labels, predictions):
    largest = tf.cast(tf.reduce_max(labels), tf.float32)
    scale = tf.reduce_mean(tf.nn.softmax(predictions), axis=-1)
    return -tf.math.log(largest * scale)
'''


@pytest.mark.slow
def test_check_numerics_names_the_op_and_its_line_and_keeps_the_checkpoints(render, tmp_path):
    """--check-numerics: the loss takes the log of 0 at step 4 (the fourth batch, in order, has
    only labels 0; a checkpoint every 2 steps, so that steps 3 and 4 would share a call): the
    run stops with exit 1 at step 4, naming the op (Log), its line in the loss module and the
    script's line that called it; checkpoint 2 is intact and finite, none after; runs.jsonl
    ends with exit nan at step 4; the batch goes to debug/step-4."""
    (tmp_path / "own_loss.py").write_text(LOG_LOSS)
    labels = np.array([1] * 16 + [2] * 8 + [0] * 8 + [2] * 8)
    x = np.random.default_rng(0).integers(0, 255, (40, 28, 28)).astype(np.uint8)
    np.savez(tmp_path / "logs.npz", x=x, y=labels)
    script = render(
        "mnist_mlp", f"data.train={npz(str(tmp_path / 'logs.npz'))}", "data.batch_size=8",
        "data.shuffle_buffer=0", 'checkpoint={"every_steps": 2}',
        'loss={"kind": "import", "target": "own_loss:log_of_labels"}',
    )  # fmt: skip
    out = tmp_path / "out"
    proc = failing(script, "--check-numerics", "--output-dir", str(out), cwd=tmp_path)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert 'op "Log"' in said, said[-3000:]
    log_line = LOG_LOSS.splitlines().index("    return -tf.math.log(largest * scale)") + 1
    assert f"own_loss.py:{log_line}, in log_of_labels" in said, said[-3000:]
    assert re.search(r"train\.py:\d+, in train_step: ", said), said[-3000:]
    assert "at step 4:" in said, said[-3000:]
    saved = sorted(p.name for p in (out / "checkpoints").glob("ckpt-*.index"))
    assert saved == ["ckpt-2.index"], saved
    newest = tf_check("finite_checkpoint", str(out / "checkpoints"), cwd=tmp_path)
    assert newest["all_finite"] and newest["step"] == 2, newest
    end = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    assert end["exit"] == "nan" and end["nan_step"] == 4, end
    with np.load(out / "debug" / "step-4" / "batch.npz") as batch:
        assert (batch["labels"] == 0).all()


def wrapped(units: int, **more: str) -> dict:
    """A Dense layer inside a TimeDistributed: a layer that calls another."""
    return {"kind": "time_distributed", "layer": {"kind": "dense", "units": units, **more}}


WRAPPED = "model.layers=" + json.dumps([
    {"kind": "reshape", "target_shape": [1, 784]},  # one time step of 784 values
    wrapped(64, activation="relu"), wrapped(64, activation="relu"), wrapped(10),
    {"kind": "flatten"},
])  # fmt: skip
"""mnist_mlp's network, each Dense wrapped in a TimeDistributed (over a single time step)."""


@pytest.mark.slow
def test_replay_names_the_first_nonfinite_layer_of_a_diverged_step(render, tmp_path):
    """A learning rate of 1e12 on 1,000 examples of noise makes the loss NaN at some step k
    (found by the plain run, which writes debug/step-k/ and prints the command that replays
    it). `replay --step k` in a new process names the layer whose output first is not finite:
    the one a Keras forward pass of the checkpoint before k, on debug/step-k's batch, finds.
    Each Dense is wrapped in a TimeDistributed, so the layer named is the innermost one, the
    Dense inside the wrapper being called (the outermost would name the wrapper). It reports,
    never crashes, though the weights (near 1e35) overflow float32 in any norm of theirs; it
    prints the loss of each step before k (finite), step k's (not finite: the check stops the
    step before its loss, which a run of it unchecked computes, NaN where the run's was NaN,
    inf where inf), and counts up to the run's 20 epochs.
    metrics.jsonl stays strict JSON: the NaN loss is null, named in "nonfinite". The batch in
    debug/step-k is the one step k received: a run with a line in the step that saves each
    batch, eagerly, saved the same (the batches do not depend on the learning rate). An
    --overfit-batches 1 run diverges too: its debug batch is the one it trained on (the first),
    and its replay reports as well."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1000, 28, 28)).astype(np.uint8)
    np.savez(tmp_path / "train.npz", x=x, y=rng.integers(0, 10, 1000))
    overrides = ['checkpoint={"every_steps": 1}', WRAPPED]
    script = mnist(render, tmp_path, *overrides, "optimizer.learning_rate=1e12")
    out = tmp_path / "out"
    proc = failing(script, "--epochs", "20", "--output-dir", str(out), cwd=tmp_path)
    end = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    assert end["exit"] == "nan", end
    k = end["nan_step"]
    assert f"replay --step {k} --output-dir {out}" in proc.stderr, proc.stderr[-2000:]
    last = records(out)[-1]  # strict JSON (records)
    assert last["step"] == k and last["loss"] is None, last
    assert last["nonfinite"]["loss"] in ("NaN", "Infinity", "-Infinity"), last
    batch = out / "debug" / f"step-{k}" / "batch.npz"
    before = tree(out)

    replayed = failing(script, "replay", "--step", str(k), "--output-dir", str(out), cwd=tmp_path)
    reference = debug_check(
        "first_nonfinite_layer", str(script), str(out / "checkpoints" / f"ckpt-{k - 1}"),
        str(batch), cwd=tmp_path,
    )  # fmt: skip
    assert reference["layer"] and reference["layer"].startswith("dense"), reference
    assert f"The first NaN or Inf: layer {reference['layer']} (" in replayed.stdout, (
        replayed.stdout[-3000:]
    )
    assert tree(out) == before  # replay only reads the run's directory
    assert f"Epoch {(k - 1) // 16 + 1}/20" in replayed.stdout, replayed.stdout[-3000:]
    assert same_nonfinite(checked_loss(replayed, k), last["nonfinite"]["loss"])
    # Each layer's weight norm, computed in float64 (float32 overflows): finite, near 1e35.
    norms = [float(n) for n in re.findall(r"^  model/\w+ +(\S+) ", replayed.stdout, re.M)]
    assert len(norms) == 3 and np.isfinite(norms).all(), replayed.stdout[-3000:]

    # The batches a healthy run's step received, saved by the step itself (eagerly).
    healthy = mnist(render, tmp_path, *overrides, name="healthy.py")
    edited = with_line_in_step(
        healthy, 'np.save(f"seen-{int(step.numpy()) + 1}.npy", features.numpy())'
    )
    run_python(edited, "--eager", "--max-steps", str(k), "--output-dir",
               str(tmp_path / "seen"), cwd=tmp_path)  # fmt: skip
    with np.load(batch) as arrays:
        assert np.array_equal(arrays["features"], np.load(tmp_path / f"seen-{k}.npy"))

    # --overfit-batches 1 (a checkpoint an epoch: none before the NaN): every step trains on
    # the first batch, which its debug folder keeps; the replay, from the initial weights,
    # prints each step's loss before j, finite, and reports.
    plain = mnist(render, tmp_path, "optimizer.learning_rate=1e12", name="plain.py")
    failing(plain, "--overfit-batches", "1", "--epochs", "20", "--output-dir", str(out),
            cwd=tmp_path)  # fmt: skip
    overfit = tmp_path / "out-overfit-1"
    j = json.loads((overfit / "runs.jsonl").read_text().splitlines()[-1])["nan_step"]
    assert 1 < j <= 16, j
    with np.load(overfit / "debug" / f"step-{j}" / "batch.npz") as arrays:
        assert np.array_equal(arrays["features"], np.load(tmp_path / "seen-1.npy"))
    replayed = failing(plain, "replay", "--step", str(j), "--output-dir", str(overfit),
                       cwd=tmp_path)  # fmt: skip
    assert "The first NaN or Inf: layer " in replayed.stdout, replayed.stdout[-3000:]
    losses = dict(re.findall(r"^Step (\d+): loss: (\S+)", replayed.stdout, re.M))
    assert sorted(map(int, losses)) == list(range(1, j)), losses
    assert np.isfinite([float(v) for v in losses.values()]).all(), losses
    logged = records(overfit)[-1]
    assert logged["step"] == j, logged
    assert same_nonfinite(checked_loss(replayed, j), logged["nonfinite"]["loss"])


def checked_loss(proc, step: int) -> str:
    """The loss replay printed for step `step`, the one it ran eagerly, every op checked."""
    header = f"Step {step}, eagerly, every op checked:"
    found = re.search(rf"^{header}\n  loss: (\S+)$", proc.stdout, re.M)
    assert found, proc.stdout[-3000:]
    return found[1]


def same_nonfinite(printed: str, logged: str) -> bool:
    """Whether a loss replay printed (nan, inf, -inf) is the non-finite value a run logged
    (metrics.jsonl's "NaN", "Infinity", "-Infinity"; the epoch's mean is NaN where the step's
    loss is, and an infinity of its sign where the step's is infinite)."""
    assert not np.isfinite(float(printed)), printed
    return str(float(printed)) == str(float(logged))


def logged_loss(out: Path, step: int) -> float:
    return next(r["loss"] for r in records(out) if r["step"] == step)


def replayed_loss(proc) -> float:
    found = re.search(r"as logged \([^)]*\): (?:.*  )?loss: (\S+)", proc.stdout)
    assert found, proc.stdout[-3000:]
    return float(found[1])


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["single_device", "mirrored"])
def test_replay_of_a_healthy_step_prints_the_loss_the_run_logged(render, tmp_path, variant):
    """A run of 5 steps (an epoch is 2), a checkpoint every 2: replaying step 5 (from ckpt-4),
    step 4 (from ckpt-2, step 3 as the run took it) and step 1 (from the initial weights)
    prints the loss the run logged at that step within 1e-6. The steps before it print their
    own loss (step 3's, the first of its epoch, is the one logged), the epochs count up to the
    run's 3, and each layer's weight norm is the one after the step (ckpt-4's, for step 4, as
    logging.inspect's). A mirrored run on two replicas is replayed on one device by its own
    script."""
    extra = [TWO_CPUS] if variant == "mirrored" else []
    script = mnist(
        render, tmp_path, 'checkpoint={"every_steps": 2}', "data.batch_size=64", *extra,
        variant=None if variant == "single_device" else variant,
    )  # fmt: skip
    out = tmp_path / "out"
    run_python(script, "--epochs", "3", "--max-steps", "5", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip
    before = tree(out)
    for step in (5, 4, 1):
        proc = run_python(script, "replay", "--step", str(step), "--output-dir", str(out),
                          cwd=tmp_path)  # fmt: skip
        assert "Every op's outputs were finite." in proc.stdout
        if variant == "mirrored":  # the run trained on two
            assert "1 replica(s) on this machine" in proc.stdout
        assert replayed_loss(proc) == pytest.approx(logged_loss(out, step), rel=1e-6, abs=1e-6)
        assert f"Epoch {(step + 1) // 2}/3" in proc.stdout, proc.stdout[-3000:]
        if step == 4:
            found = re.search(r"^Step 3: loss: (\S+)", proc.stdout, re.M)
            assert found, proc.stdout[-3000:]
            assert float(found[1]) == pytest.approx(logged_loss(out, 3), rel=1e-6, abs=1e-6)
            norms = dict(re.findall(r"^  model/(\w+) +(\S+) ", proc.stdout, re.M))
            after = debug_check(
                "restored_weights", str(script), str(out / "checkpoints" / "ckpt-4"), cwd=tmp_path
            )
            assert norms.keys() == after.keys(), (norms, after)
            for layer, norm in after.items():
                assert float(norms[layer]) == pytest.approx(norm, rel=1e-5), layer
    assert tree(out) == before


@pytest.mark.slow
@pytest.mark.parametrize("example", ["shapes_flow", "shapes_vae"])
def test_replay_of_a_generative_step_redraws_its_noise_and_prints_the_loss_logged(
    render, tmp_path, example
):
    """The generative ways draw their noise (times, dropped labels; the codes' noise) inside
    the step from (seed, step, position): replaying step 5 (from ckpt-4) and step 4 (from
    ckpt-2, step 3 taken first) draws them again and prints the loss the run logged within
    1e-6."""
    script = render(example, *data.small_data_overrides(example, tmp_path), "data.batch_size=48",
                    "data.validation=null", 'checkpoint={"every_steps": 2, "keep": 5}',
                    "loop.log_every_steps=1")  # fmt: skip
    out = tmp_path / "out"
    run_python(script, "--epochs", "3", "--max-steps", "5", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip
    for step in (5, 4):
        proc = run_python(script, "replay", "--step", str(step), "--output-dir", str(out),
                          cwd=tmp_path)  # fmt: skip
        assert "Every op's outputs were finite." in proc.stdout
        assert replayed_loss(proc) == pytest.approx(logged_loss(out, step), rel=1e-6, abs=1e-6)


@pytest.mark.slow
def test_profile_traces_the_steps_it_names(render, tmp_path):
    """--profile 3:5 writes the profiler's trace (an .xplane.pb file) under logs/profile, each
    step marked as a step of its own (the Profile tab's step time and input-bound verdict need
    them), though the run's train_loop calls take 2 steps (a log every 2); its closing line is a
    line of its own, not glued to the progress bar, which step 4's log left without a newline."""
    script = mnist(render, tmp_path, "data.batch_size=16", "loop.log_every_steps=2")
    out = tmp_path / "out"
    proc = run_python(script, "--profile", "3:5", "--epochs", "1", "--output-dir", str(out),
                      cwd=tmp_path)  # fmt: skip
    assert re.search(r"^--profile: steps 3 to 5 traced", proc.stdout, re.M), proc.stdout[-2000:]
    traces = list((out / "logs" / "profile").rglob("*.xplane.pb"))
    assert traces and traces[0].stat().st_size > 0, traces
    marked = debug_check("profiled_steps", str(out / "logs" / "profile"), cwd=tmp_path)
    assert marked["steps"] == [3, 4, 5], marked


@pytest.mark.slow
def test_dump_debug_info_records_the_train_step_for_debugger_v2(render, tmp_path):
    """--dump-debug-info writes tfdbg_events.* files holding the train step's graph (read as
    TensorBoard's Debugger V2 plugin reads them)."""
    script = mnist(render, tmp_path)
    out = tmp_path / "out"
    run_python(script, "--dump-debug-info", "--max-steps", "2", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip
    dump = out / "logs" / "debugger"
    assert list(dump.glob("tfdbg_events.*"))
    found = debug_check("debugger_graphs", str(dump), cwd=tmp_path)
    assert any("train_step" in name for name in found["graphs"]), found


@pytest.mark.slow
@pytest.mark.parametrize(
    "example", ["mnist_mlp", "shapes_dcgan", "cartpole_ppo", "shapes_flow", "shapes_vae"]
)
def test_fast_dev_run_runs_every_stage_and_leaves_the_run_directory_alone(
    render, tmp_path, example
):
    """--fast-dev-run: each stage (train, resume, evaluate/predict where the script offers
    them, serve the export) says OK, in a temporary directory; the run directory it was given
    (a real run's) is byte for byte as it was. It says nothing of --no-lock, which it was not
    given, and shows the networks' summaries once (in its first stage), not at each stage."""
    if example == "mnist_mlp":
        script = mnist(render, tmp_path)
    elif example == "cartpole_ppo":
        script = render(example, *RL_SMALL[example][0])
    elif example in ("shapes_flow", "shapes_vae"):  # the sampler's, the decoder's export
        # Validated (and sampled) twice in the 64 steps, not at each of the 32 epochs.
        fewer = ["training.sample_steps=4"] if example == "shapes_flow" else []
        script = render(example, *data.small_data_overrides(example, tmp_path),
                        "loop.validate_every_epochs=16", *fewer)  # fmt: skip
    else:
        script = render(example, "data.train.count=64", "data.batch_size=32")
    out = tmp_path / "out"
    run_python(script, "--max-steps", "64", "--output-dir", str(out), cwd=tmp_path)
    before = tree(out)
    proc = run_python(script, "--fast-dev-run", "--output-dir", str(out), cwd=tmp_path)
    stages = re.findall(r"--fast-dev-run: (.+): OK \(", proc.stdout)
    unit = "updates" if example == "cartpole_ppo" else "steps"
    wanted = [f"train 2 {unit}", "resume from the checkpoint", "serve the export"]
    wanted += {"mnist_mlp": ["predict"], "cartpole_ppo": ["evaluate"], "shapes_flow": ["evaluate"],
               "shapes_vae": ["evaluate"]}.get(example, [])  # fmt: skip
    for stage in wanted:
        assert any(found.startswith(stage) for found in stages), (stage, stages)
    assert "every stage ran" in proc.stdout
    assert "Not locking" not in proc.stdout, proc.stdout[-3000:]
    first, later = proc.stdout.split("--fast-dev-run: resume from the checkpoint", 1)
    assert "Total params" in first and "Total params" not in later, proc.stdout[-3000:]
    assert tree(out) == before
    scratch = re.search(r"every stage ran \(in (\S+), removed\)", proc.stdout)[1]
    assert not Path(scratch).exists()


@pytest.mark.slow
def test_overfit_batches_drives_the_loss_towards_zero_in_a_directory_of_its_own(render, tmp_path):
    """--overfit-batches 2 on 512 images of noise with random labels: the same two batches
    again and again are memorized (training loss below 0.05 after 200 steps, in
    <output-dir>-overfit-2, and the verdict says so), where the same 200 steps on all 512
    are not (above 0.1): the flag trains on its batches alone. Its replay does too: step 200
    (from ckpt-192, a checkpoint an epoch of 8 steps) prints the loss the run logged; step 197,
    never logged, says so rather than "as logged"."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (512, 28, 28)).astype(np.uint8)
    np.savez(tmp_path / "noise.npz", x=x, y=rng.integers(0, 10, 512))
    script = render(
        "mnist_mlp", f"data.train={npz(str(tmp_path / 'noise.npz'))}",
        'optimizer={"kind": "adam", "learning_rate": 0.003}', "loop.log_every_steps=8",
    )  # fmt: skip
    out = tmp_path / "out"
    proc = run_python(script, "--overfit-batches", "2", "--epochs", "25", "--output-dir",
                      str(out), cwd=tmp_path)  # fmt: skip
    assert not out.exists()
    memorized = [r["loss"] for r in records(tmp_path / "out-overfit-2")]
    assert memorized[-1] < 0.05 < memorized[0], memorized[::5]
    assert "it falls towards 0" in proc.stdout
    overfit = tmp_path / "out-overfit-2"
    proc = run_python(script, "replay", "--step", "200", "--output-dir", str(overfit),
                      cwd=tmp_path)  # fmt: skip
    assert replayed_loss(proc) == pytest.approx(logged_loss(overfit, 200), rel=1e-6, abs=1e-6)
    # Steps 193 to 199 (a log every 8: one call of the run's), each replayed alone, its loss.
    before = re.findall(r"^Step (\d+): loss: \S+", proc.stdout, re.M)
    assert before == [str(s) for s in range(193, 200)], proc.stdout[-3000:]
    proc = run_python(script, "replay", "--step", "197", "--output-dir", str(overfit),
                      cwd=tmp_path)  # fmt: skip
    assert "as logged" not in proc.stdout and "(this step was not logged)" in proc.stdout
    run_python(script, "--epochs", "25", "--output-dir", str(out), cwd=tmp_path)
    assert records(out)[-1]["loss"] > 0.1, records(out)[-1]


@pytest.mark.slow
def test_overfit_batches_n_trains_on_exactly_its_first_n_batches_again_and_again(render, tmp_path):
    """--overfit-batches 2, six steps (a line in the step saves each batch it receives,
    eagerly): steps 1, 3, 5 receive one batch and steps 2, 4, 6 another (128 examples in
    batches of 32: four batches an epoch, so that a third batch would be the epoch's next,
    not the first again). Its replay of step 5 starts from ckpt-3 (a checkpoint every 3 steps),
    a step that is not a multiple of 2: its steps 4 and 5 receive the run's batches of steps 4
    and 5, not the first two again, and step 5's loss is the one logged."""
    script = mnist(render, tmp_path, "data.batch_size=32", 'checkpoint={"every_steps": 3}')
    edited = with_line_in_step(
        script, 'np.save(f"seen-{int(step.numpy()) + 1}.npy", features.numpy())'
    )
    run_python(edited, "--eager", "--overfit-batches", "2", "--max-steps", "6",
               "--output-dir", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    seen = [np.load(tmp_path / f"seen-{step}.npy") for step in range(1, 7)]
    for step in range(2, 6):
        assert np.array_equal(seen[step], seen[step - 2]), step + 1
    assert not np.array_equal(seen[0], seen[1])
    for step in range(1, 7):
        (tmp_path / f"seen-{step}.npy").unlink()
    overfit = tmp_path / "out-overfit-2"
    proc = run_python(edited, "replay", "--eager", "--step", "5", "--output-dir", str(overfit),
                      cwd=tmp_path)  # fmt: skip
    assert "from ckpt-3 (step 3)" in proc.stdout, proc.stdout[-3000:]
    replayed = sorted(path.name for path in tmp_path.glob("seen-*.npy"))
    assert replayed == ["seen-4.npy", "seen-5.npy"], replayed
    assert np.array_equal(np.load(tmp_path / "seen-4.npy"), seen[3])
    assert np.array_equal(np.load(tmp_path / "seen-5.npy"), seen[4])
    assert replayed_loss(proc) == pytest.approx(logged_loss(overfit, 5), rel=1e-6, abs=1e-6)


@pytest.mark.slow
def test_overfit_batches_of_a_spec_without_checkpoints_repeats_its_first_n_batches(
    render, tmp_path
):
    """--overfit-batches 2 where the spec has no checkpoints (overfit() takes the run's
    batches, not the pipeline from step 0): steps 1 and 3 receive one batch, 2 and 4 another
    (four batches an epoch: a third would be the epoch's next)."""
    script = mnist(render, tmp_path, "data.batch_size=32", "checkpoint=null")
    edited = with_line_in_step(
        script, 'np.save(f"seen-{int(step.numpy()) + 1}.npy", features.numpy())'
    )
    run_python(edited, "--eager", "--overfit-batches", "2", "--max-steps", "4",
               "--output-dir", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    seen = [np.load(tmp_path / f"seen-{step}.npy") for step in range(1, 5)]
    assert np.array_equal(seen[2], seen[0]) and np.array_equal(seen[3], seen[1])
    assert not np.array_equal(seen[0], seen[1])


@pytest.fixture
def finished_run(shared, tmp_path) -> tuple[Path, Path]:
    """A short finished run (4 steps, checkpoints at 2 and 4) to refuse things in, trained once
    for the session: each test gets a copy of its output directory (and of its data, in its
    own folder as before). The script stays in the shared folder, only ever run."""

    def make(folder: Path) -> None:
        def render(example: str, *overrides: str, name: str) -> Path:
            return render_into(folder / name, example, *overrides)

        script = mnist(render, folder, 'checkpoint={"every_steps": 2}')
        run_python(script, "--max-steps", "4", "--output-dir", str(folder / "out"), cwd=folder)

    folder = shared("finished-run", make)
    shutil.copytree(folder / "out", tmp_path / "out")
    shutil.copy2(folder / "train.npz", tmp_path)
    return folder / "train.py", tmp_path / "out"


BAD = [
    (["--profile", "30:10"], "give the first and last step"),
    (["--profile", "5:9", "--epochs", "5", "--max-steps", "6"], "this run trains steps 5 to 6"),
    (["--profile", "1:2"], "this run is at step 4 of 4"),
    (["--fast-dev-run", "0"], "--fast-dev-run 0: give a whole number, 1 or more"),
    (["replay", "--step", "9"], "can replay steps 1 to 4"),
    (["replay", "--step", "0"], "--step 0: give a whole number, 1 or more"),
    (["replay"], "replay takes --step N"),
    (["--check-numerics", "--dump-debug-info"], "do not combine"),
    (["predict", "train.npz", "--profile", "1:2"], "for training, not predict"),
]


@pytest.mark.slow
@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_mistaken_debugging_flag_stops_with_the_fix_and_changes_nothing(
    finished_run, tmp_path, args, message
):
    """Exit 1 or 2 with the fix, no traceback, and the run directory as it was, run.lock too
    (a --profile range is checked against the run's steps, known once the run holds the
    directory: a refused run leaves it as it found it)."""
    script, out = finished_run
    before = tree(out)
    proc = failing(script, *args, "--output-dir", str(out), cwd=tmp_path)
    assert message in proc.stdout + proc.stderr, (proc.stdout[-1500:], proc.stderr[-1500:])
    assert tree(out) == before


@pytest.mark.slow
def test_a_refused_run_leaves_nothing_in_a_new_directory(render, tmp_path):
    """--profile 10:9999 on a new output directory is refused once the run knows its steps,
    after it took the directory: no run.lock, no checkpoints/setup.json, no directory is
    left."""
    script = mnist(render, tmp_path)
    out = tmp_path / "new"
    proc = failing(script, "--profile", "10:9999", "--output-dir", str(out), cwd=tmp_path)
    assert "give START:STOP within them" in proc.stdout + proc.stderr, proc.stderr[-1500:]
    assert not out.exists(), tree(out)


EARLY = [
    (["--profile", "30:10"], "give the first and last"),
    (["--fast-dev-run", "0"], "--fast-dev-run 0: give a whole number, 1 or more"),
    (["replay", "--step", "0"], "--step 0: give a whole number, 1 or more"),
    (["replay"], "replay takes --step N"),
    (["--check-numerics", "--dump-debug-info"], "do not combine"),
    # Combined, the check stopped every sparse cross-entropy's first step at a NaN of TensorFlow's.
    (["--check-numerics", "--deterministic"], "--check-numerics and --deterministic do not"),
]


@pytest.mark.parametrize("example", ["mnist_mlp", "cartpole_ppo"])
@pytest.mark.parametrize("args, message", EARLY, ids=[" ".join(a) for a, _ in EARLY])
def test_a_mistaken_debugging_flag_is_refused_before_tensorflow_loads(
    shared, tmp_path, example, args, message
):
    """The flags are checked in parse_args, before the script imports TensorFlow (seconds; 20
    to 30 on a busy machine), as --help is answered: here Keras and TensorFlow cannot even be
    imported (modules of those names that stop the script), and the mistake is still named,
    with nothing written. The scripts are rendered once for the session (a render, not the
    golden file: the templates are what is tested)."""
    folder = shared(f"early-{example}", lambda folder: render_into(folder / "train.py", example))
    for module in ("keras", "tensorflow", "numpy", "gymnasium"):
        (tmp_path / f"{module}.py").write_text("raise SystemExit('imported ' + __name__)\n")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(folder / "train.py"), *args, "--output-dir", str(out)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    said = proc.stdout + proc.stderr
    assert proc.returncode in (1, 2) and message in said, (proc.returncode, said[-1500:])
    assert "imported" not in said and not out.exists(), said[-1500:]


@pytest.mark.slow
def test_replay_refuses_a_directory_without_a_run_or_of_another_setup(
    finished_run, render, tmp_path
):
    script, out = finished_run
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = failing(script, "replay", "--step", "2", "--output-dir", str(empty), cwd=tmp_path)
    assert "Nothing to replay" in proc.stdout + proc.stderr
    assert not any(empty.iterdir())
    # The finished run's data file: only the batch size differs.
    other = mnist(render, script.parent, 'checkpoint={"every_steps": 2}', "data.batch_size=32",
                  name="other.py")  # fmt: skip
    before = tree(out)
    proc = failing(other, "replay", "--step", "2", "--output-dir", str(out), cwd=tmp_path)
    assert "Refusing to replay" in proc.stdout + proc.stderr
    assert "data.batch_size" in proc.stdout + proc.stderr
    assert tree(out) == before


@pytest.mark.slow
def test_overfit_batches_refuses_to_resume_its_own_directory(finished_run, tmp_path):
    script, out = finished_run
    overfit = tmp_path / "out-overfit-2"
    shutil.copytree(out, overfit)
    before = tree(overfit)
    proc = failing(script, "--overfit-batches", "2", "--output-dir", str(out), cwd=tmp_path)
    assert "holds a run already" in proc.stdout + proc.stderr
    assert tree(overfit) == before


@pytest.mark.slow
def test_inspect_reports_what_keras_computes_from_the_same_weights_and_batch(render, tmp_path):
    """logging.inspect every 2 steps: the statistics logged at step 2 (dead ReLUs, activation
    means, gradient norms, weight norms, update ratios) equal those Keras and NumPy compute
    from checkpoint 1's weights, step 2's batch (unshuffled: examples 64 to 127, rescaled) and
    checkpoint 2's weights; TensorBoard has them as scalars."""
    script = mnist(render, tmp_path, 'logging.inspect={"every_steps": 2}',
                   'checkpoint={"every_steps": 1}', "data.shuffle_buffer=0")  # fmt: skip
    out = tmp_path / "out"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    with np.load(tmp_path / "train.npz") as arrays:
        x = arrays["x"][64:128].astype(np.float32) * np.float32(1 / 255)
        np.savez(tmp_path / "batch.npz", x=x, labels=arrays["y"][64:128])
    reference = debug_check(
        "inspection_reference", str(script), str(out / "checkpoints" / "ckpt-1"),
        str(out / "checkpoints" / "ckpt-2"), str(tmp_path / "batch.npz"), cwd=tmp_path,
    )  # fmt: skip
    inspected = [r for r in records(out) if "inspect/model/dense/weight_norm" in r]
    assert [r["step"] for r in inspected] == [2], inspected  # its steps only
    logged = inspected[0]
    assert 0.1 < reference["model/dense/zero_fraction"] < 0.9, reference  # some ReLUs are off
    for key, value in reference.items():
        assert logged[f"inspect/{key}"] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    tags = tf_check("scalar_tags", str(out / "logs" / "train"), cwd=tmp_path)
    assert "inspect/model/dense/gradient_norm" in str(tags), tags


def test_a_spec_without_inspect_renders_no_inspection_code():
    """Inspection is code only where the spec asks for it (the runtime beside the scripts holds
    make_inspected_step for the scripts that do)."""
    scripts = [p for p in (ROOT / "generated").rglob("*.py") if p.name != "loopgen_runtime.py"]
    assert len(scripts) > 30
    for script in scripts:
        text = script.read_text()
        assert "inspected_step" not in text and "INSPECT_EVERY_STEPS" not in text, script


DROPOUT_MLP = (
    'model.layers=[{"kind": "flatten"}, {"kind": "dense", "units": 64, "activation": "relu"}, '
    '{"kind": "dropout", "rate": 0.5}, {"kind": "dense", "units": 10}]'
)


@pytest.mark.slow
def test_an_inspected_run_trains_exactly_as_an_uninspected_one(render, tmp_path):
    """logging.inspect reads the layers' outputs in inference mode: no dropout mask drawn, no
    statistics updated. Six steps with dropout, inspected every 2, end with exactly the
    weights, slots and dropout state of the run without inspection (max abs diff 0.0)."""
    plain = mnist(render, tmp_path, DROPOUT_MLP, name="plain.py")
    inspected = mnist(render, tmp_path, DROPOUT_MLP, 'logging.inspect={"every_steps": 2}',
                      name="inspected.py")  # fmt: skip
    for script in (plain, inspected):
        run_python(script, "--epochs", "3", "--max-steps", "6", "--output-dir",
                   str(tmp_path / script.stem), cwd=tmp_path)  # fmt: skip
    assert [
        r["step"]
        for r in records(tmp_path / "inspected")
        if "inspect/model/dense/zero_fraction" in r
    ] == [2, 4, 6]
    result = tf_check("compare_checkpoints", str(tmp_path / "plain" / "checkpoints"),
                      str(tmp_path / "inspected" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["step"] == 6 and result["max_diff"] == 0.0, result


RL_SMALL = {
    # ROLLOUT_SIZE 64: an update a log and a checkpoint; update 3 ends at step 192.
    "cartpole_ppo": (
        ["data.num_envs=2", "training.rollout_steps=32", "training.update_epochs=1",
         "training.minibatches=2", "loop.log_every_steps=64", 'checkpoint={"every_steps": 64}'],
        256, 192,
    ),
    # A gradient step every 10 steps past step 50: update 3 at step 80, one a log.
    "cartpole_dqn": (
        ["training.learning_starts=50", "training.batch_size=32", "loop.log_every_steps=10",
         'checkpoint={"every_steps": 20}'],
        100, 80,
    ),
    # A gradient step every step past step 50 (critics, policy, alpha): update 3 at step 53.
    "pendulum_sac": (
        ["training.learning_starts=50", "training.batch_size=32", "loop.log_every_steps=1",
         'checkpoint={"every_steps": 20}'],
        70, 53,
    ),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("example", list(RL_SMALL))
def test_replay_of_an_update_prints_what_the_run_logged(render, tmp_path, example):
    """Reinforcement learning replays an update: the checkpoint before it holds the
    environments (and the replay buffer), so the run acts and updates again as it did. Update
    3 (from a checkpoint, or from the start where none is left before it) and update 1 print
    the losses the run logged for them (each log holds one update) within 1e-6; the run's
    directory is only read."""
    overrides, steps, third = RL_SMALL[example]
    script = render(example, *overrides)
    out = tmp_path / "out"
    run_python(script, "--max-steps", str(steps), "--output-dir", str(out), cwd=tmp_path)
    before = tree(out)
    logged = {r["step"]: r for r in records(out)}
    for update, step in ((3, third), (1, None)):
        proc = run_python(script, "replay", "--step", str(update), "--output-dir", str(out),
                          cwd=tmp_path)  # fmt: skip
        assert f"Update {update}, eagerly, every op checked:" in proc.stdout, proc.stdout[-3000:]
        assert "Every op's outputs were finite." in proc.stdout
        found = re.search(r"as logged \([^)]*\): (.*)", proc.stdout)
        assert found, proc.stdout[-3000:]
        replayed = dict(re.findall(r"(\w+): (\S+)", found[1]))
        if step is None:  # the first update's log step
            step = min(s for s, r in logged.items() if set(replayed) <= set(r))
        for name, value in replayed.items():
            assert float(value) == pytest.approx(logged[step][name], rel=1e-6, abs=1e-6), name
    assert tree(out) == before
    proc = failing(script, "replay", "--step", "99", "--output-dir", str(out), cwd=tmp_path)
    assert "can replay updates 1 to" in proc.stdout + proc.stderr


INSPECTED = {
    "shapes_dcgan": (["generator", "discriminator"], []),
    "shapes_simclr": (["model", "projection"], []),
    "shapes_multitask": (["model"], []),
    "mnist_maml": (["model"], ["logging.inspect.activations=false"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("example", list(INSPECTED))
def test_each_way_inspects_its_networks(render, tmp_path, example):
    """logging.inspect on the other ways of training: a GAN's two networks, a contrastive
    run's encoder and projection, a multi-task model (its heads' outputs a dict), MAML's
    meta-learned model (gradients and weights: its adapted weights' outputs are not the
    model's). Every layer with weights has its gradient norm and update ratio, at step 2."""
    networks, extra = INSPECTED[example]
    script = render(
        example, *data.small_data_overrides(example, tmp_path),
        'logging.inspect={"every_steps": 2}', *extra,
    )  # fmt: skip
    script = data.runnable(example, script)
    out = tmp_path / "out"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    inspected = [r for r in records(out) if any(k.startswith("inspect/") for k in r)]
    assert [r["step"] for r in inspected] == [2], inspected
    keys = {k.split("/")[1] for k in inspected[0] if k.startswith("inspect/")}
    assert keys == set(networks), keys
    for network in networks:
        ratios = [v for k, v in inspected[0].items() if k.startswith(f"inspect/{network}/")
                  and k.endswith("/update_ratio")]  # fmt: skip
        assert ratios and all(np.isfinite(ratios)), (network, ratios)
        assert any(k.startswith(f"inspect/{network}/") and k.endswith("/gradient_norm")
                   for k in inspected[0]), network  # fmt: skip
