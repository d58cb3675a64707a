"""`python train.py evaluate`: a checkpoint (the newest, the best, or a path) scored on the
validation data in a new process, reproducing the values its run logged; a reader of the run
directory that writes no checkpoint, works beside other readers and not while a run trains."""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import data
import numpy as np
import pytest
from helpers import TWO_CPUS, npz, records, render_into, run_python, script_env
from test_predict import SMALL_VGG, assert_served, predict, predictions, run_script

EXAMPLE = "shapes_plateau"  # validation, checkpoints every epoch, the best model kept


def train_plateau(folder: Path) -> None:
    """One small shapes_plateau run (4 epochs) in `folder`: train.py and its run/."""
    overrides = [*data.small_data_overrides(EXAMPLE, folder), "checkpoint.keep=5"]
    script = render_into(folder / "train.py", EXAMPLE, *overrides)
    out = folder / "run"
    run_python(script, "--epochs", "4", "--deterministic", "--output-dir", str(out), cwd=folder)


@pytest.fixture
def trained(shared, tmp_path):
    """The script and output directory of one small shapes_plateau run, trained once for the
    whole test run (shared) and copied for each test: evaluate writes evaluations.jsonl."""
    copy = tmp_path / "trained"
    shutil.copytree(shared("evaluate_shapes_plateau", train_plateau), copy)
    return copy / "train.py", copy / "run"


def evaluate(
    script: Path, out: Path, *args: str, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT evaluate --deterministic --output-dir OUT ARGS`, forked from the preloaded
    server; `fresh`: in a new interpreter, as a user runs it (the locks are checked on that)."""
    argv = [str(script), "evaluate", "--deterministic", "--output-dir", str(out), *args]
    return run_script(argv, script.parent, fresh)


def snapshot(out: Path) -> dict[str, float]:
    """Every file of the run directory but evaluations.jsonl, with its modification time."""
    return {
        str(p.relative_to(out)): p.stat().st_mtime
        for p in out.rglob("*")
        if p.is_file() and p.name != "evaluations.jsonl"
    }


def validation_at(out: Path, step: int) -> dict[str, float]:
    (record,) = [r for r in records(out) if "val_loss" in r and r["step"] == step]
    return {k: v for k, v in record.items() if k.startswith("val_")}


@pytest.mark.slow
def test_evaluate_reproduces_the_logged_validation_and_writes_no_checkpoint(trained):
    script, out = trained
    before = snapshot(out)
    proc = evaluate(script, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])
    last = max(r["step"] for r in records(out))
    assert evaluated["step"] == last and evaluated["checkpoint"].endswith(f"ckpt-{last}")
    logged = validation_at(out, last)
    assert set(logged) == {k for k in evaluated if k.startswith("val_")}
    for name, value in logged.items():
        assert abs(evaluated[name] - value) <= 1e-6, (name, evaluated, logged)
    assert f"val_loss: {logged['val_loss']:.4f}" in proc.stdout
    # A reader: no checkpoint, run record or log written or touched.
    assert snapshot(out) == before


@pytest.mark.slow
def test_evaluate_the_best_checkpoint_and_an_older_one_by_path(trained):
    script, out = trained
    validated = [r for r in records(out) if "val_loss" in r]
    best = max(validated, key=lambda r: r["val_accuracy"])  # the first of equals: min_delta 0
    proc = evaluate(script, out, "--checkpoint", "best")
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])
    assert evaluated["step"] == best["step"], (evaluated, validated)
    assert abs(evaluated["val_accuracy"] - best["val_accuracy"]) <= 1e-6
    assert abs(evaluated["val_loss"] - best["val_loss"]) <= 1e-6

    older = validated[1]["step"]
    proc = evaluate(script, out, "--checkpoint", str(out / "checkpoints" / f"ckpt-{older}"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])
    assert evaluated["step"] == older
    assert abs(evaluated["val_loss"] - validation_at(out, older)["val_loss"]) <= 1e-6


@pytest.mark.slow
def test_evaluate_waits_for_no_reader_but_refuses_while_a_run_trains(trained, tmp_path):
    script, out = trained
    with open(out / "run.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another evaluate reading
        assert evaluate(script, out, fresh=True).returncode == 0
        # A run to train waits for the readers; run.lock names the last run that trained.
        command = [sys.executable, str(script), "--output-dir", str(out)]
        proc = subprocess.run(command, cwd=script.parent, env=script_env(), capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert "is in use by another run (evaluate or predict or replay reads it)" in proc.stderr
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run training
        proc = evaluate(script, out, fresh=True)
    assert proc.returncode == 1 and "is in use by another run" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr

    # Nothing to evaluate: said so, and no directory made.
    empty = tmp_path / "never_trained"
    proc = evaluate(script, empty)
    assert proc.returncode == 1 and "holds no checkpoints" in proc.stderr, proc.stderr[-2000:]
    assert not empty.exists()
    proc = evaluate(script, out, "--checkpoint", str(tmp_path / "no_such_ckpt-3"))
    assert proc.returncode == 1 and "--checkpoint: cannot restore" in proc.stderr
    assert "Traceback" not in proc.stderr

    # A script edited into another setup does not score these checkpoints.
    edited = tmp_path / "edited.py"
    edited.write_text(script.read_text().replace("BATCH_SIZE = 32", "BATCH_SIZE = 16"))
    shutil.copy(script.with_name("loopgen_runtime.py"), tmp_path)  # the runtime beside it
    proc = evaluate(edited, out)
    assert proc.returncode == 1 and "Refusing to evaluate" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow
def test_evaluate_and_predict_on_two_replicas(render, tmp_path):
    script = render(EXAMPLE, *data.small_data_overrides(EXAMPLE, tmp_path), TWO_CPUS,
                    variant="mirrored")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "2", "--deterministic", "--output-dir", str(out), cwd=tmp_path)
    proc = evaluate(script, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])
    for name, value in validation_at(out, evaluated["step"]).items():
        assert abs(evaluated[name] - value) <= 1e-6, (name, evaluated)

    # predict, on two replicas too: what the exported model serves (test_predict).
    examples = np.random.default_rng(0).random((5, 24, 24, 3), dtype=np.float32)
    np.save(tmp_path / "five.npy", examples)
    proc = predict(script, out, str(tmp_path / "five.npy"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["input"] for r in records] == [f"{tmp_path / 'five.npy'}[{i}]" for i in range(5)]
    assert_served(records, out, [["npy", str(tmp_path / "five.npy")]], tmp_path)


@pytest.mark.slow
def test_an_npz_split_evaluates_a_held_out_file_and_predicts_image_files(render, tmp_path):
    """Issue 63, item 20: mnist_mlp trained from an .npz file of uint8 digits, a quarter held
    out. `evaluate --data FILE` takes another .npz file of the training file's arrays: the
    held-out quarter written to a file of its own gives the values the run logged, a test
    file its own, and arrays of another shape stop the script naming --data. predict decodes
    a PNG of an example to the pixels the .npy of it holds ("not an .npy or .npz file"
    before)."""
    train = data.classification_npz(tmp_path / "train.npz", 40, (28, 28))
    split = '{"kind": "split", "fraction": 0.25}'
    script = render("mnist_mlp", f"data.train={npz(train)}", f"data.validation={split}")
    out = tmp_path / "run"
    run_python(script, "--epochs", "2", "--deterministic", "--output-dir", str(out), cwd=tmp_path)
    logged = validation_at(out, max(r["step"] for r in records(out)))
    with np.load(train) as arrays:
        x, y = arrays["x"], arrays["y"]
    np.savez(tmp_path / "held.npz", x=x[30:], y=y[30:])  # int(40 * 0.25) = 10, the last
    test = data.classification_npz(tmp_path / "test.npz", 12, (28, 28), seed=3)
    np.savez(tmp_path / "small.npz", x=x[:4, :16, :16], y=y[:4])

    def evaluated(path: str) -> dict:
        proc = evaluate(script, out, "--data", path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])

    same = evaluated(str(tmp_path / "held.npz"))
    assert all(abs(same[name] - value) <= 1e-6 for name, value in logged.items()), same
    other = evaluated(test)
    assert other["data"] == test and abs(other["val_loss"] - logged["val_loss"]) > 1e-6
    proc = evaluate(script, out, "--data", str(tmp_path / "small.npz"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"--data: the examples of {tmp_path / 'small.npz'} have the shape (16, 16)" in (
        proc.stderr
    )
    # A file without the training file's arrays names the flag, not a field of the spec.
    np.savez(tmp_path / "other.npz", images=np.zeros((4, 28, 28)))
    proc = evaluate(script, out, "--data", str(tmp_path / "other.npz"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"--data: {tmp_path / 'other.npz'} has no array 'x'" in proc.stderr, proc.stderr

    np.save(tmp_path / "digit.npy", x[5])
    data._write_png(tmp_path / "digit.png", np.repeat(x[5][..., None], 3, axis=2))
    target = tmp_path / "preds.jsonl"
    paths = [str(tmp_path / "digit.png"), str(tmp_path / "digit.npy")]
    proc = predict(script, out, *paths, "--predictions", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    image, array = predictions(target)
    assert image["input"] == paths[0] and {**image, "input": None} == {**array, "input": None}


@pytest.mark.slow
def test_evaluate_on_a_test_split_of_the_validation_kind(render, tmp_path):
    """--data: other files of the validation source's kind. The validation directory itself
    gives the values the run logged; a test directory its own, recorded with its path; a
    directory with a class the training data lacks stops the script, naming --data."""
    validation = data.image_directory(tmp_path / "validation", per_class=4, size=32)
    test = data.image_directory(tmp_path / "test", per_class=6, size=32)
    extra = data.image_directory(tmp_path / "extra", per_class=2, size=32, classes=4)
    source = {"kind": "image_directory", "path": validation, "image_size": [32, 32]}
    script = render("cifar10_vgg", *data.small_data_overrides("cifar10_vgg", tmp_path),
                    f"data.validation={json.dumps(source)}", *SMALL_VGG)  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--deterministic", "--output-dir", str(out), cwd=tmp_path)
    logged = validation_at(out, max(r["step"] for r in records(out)))

    def evaluated(path: str) -> dict:
        proc = evaluate(script, out, "--data", path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])

    same = evaluated(validation)
    assert same["data"] == validation
    assert all(abs(same[name] - value) <= 1e-6 for name, value in logged.items()), same
    other = evaluated(test)
    assert other["data"] == test and abs(other["val_loss"] - logged["val_loss"]) > 1e-6
    proc = evaluate(script, out, "--data", extra)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "--data: " in proc.stderr and "['class_3'] that are not classes" in proc.stderr


@pytest.mark.slow
def test_evaluate_on_another_tfds_split_and_predict_image_files(render, tmp_path):
    """--data SPLIT for a TFDS validation source (pets_unet, TFDS served by its test double):
    the validation's own split gives the logged values, another split its own, and a split
    the dataset does not have stops the script, naming --data. predict takes image files of
    any size (issue 63, item 20: no predict for TFDS before), decoded as TFDS decodes the
    dataset's images: what the export serves for their pixels."""
    script = render(
        "pets_unet", *data.small_data_overrides("pets_unet", tmp_path), *data.SMALL_UNET
    )
    launcher = data.runnable("pets_unet", script)
    out = tmp_path / "run"
    run_python(launcher, "--epochs", "1", "--deterministic", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip
    logged = validation_at(out, max(r["step"] for r in records(out)))

    def evaluated(split: str) -> dict:
        proc = evaluate(launcher, out, "--data", split)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])

    same = evaluated("test")
    assert all(abs(same[name] - value) <= 1e-6 for name, value in logged.items()), same
    other = evaluated("train")
    assert other["data"] == "train" and abs(other["val_loss"] - logged["val_loss"]) > 1e-6
    proc = evaluate(launcher, out, "--data", "validation")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "--data: " in proc.stderr and "'validation'" in proc.stderr, proc.stderr[-2000:]

    rng = np.random.default_rng(7)
    pixels = [rng.integers(0, 256, size).astype(np.uint8) for size in ((40, 56, 3), (64, 48, 3))]
    paths = [str(tmp_path / "wide.png"), str(tmp_path / "tall.png")]
    for path, image in zip(paths, pixels, strict=True):
        data._write_png(Path(path), image)
        np.save(path.replace(".png", ".npy"), image[None])
    target = tmp_path / "preds.jsonl"
    proc = predict(launcher, out, *paths, "--predictions", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    served = predictions(target)
    assert [r["input"] for r in served] == paths
    assert_served(served, out, [["npy", p.replace(".png", ".npy")] for p in paths], tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("a cat")
    proc = predict(launcher, out, paths[0], str(notes), "--predictions", str(target))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"predict: {notes} is not a PNG, JPEG, BMP or GIF image" in proc.stderr
    assert predictions(target) == served  # the last predictions, left whole
    # --fast-dev-run's predict stage writes an image file of its own and predicts it.
    proc = run_python(launcher, "--fast-dev-run", "--output-dir", str(out), cwd=tmp_path)
    assert re.search(r"--fast-dev-run: predict.*: OK \(", proc.stdout), proc.stdout[-3000:]
