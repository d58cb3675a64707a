"""Knowledge distillation: the spec rules, and real runs where the student learns from the
labels and a frozen teacher. With alpha = 1 it trains exactly what the supervised loop trains;
the teacher's weights and BatchNormalization statistics never change; a teacher saved as a
.keras file or exported as a SavedModel teaches what its weights teach."""

from __future__ import annotations

import json

import data
import pytest
from helpers import records, run_preloaded, run_python, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (["training.teacher.model.layers[3].units=5"],
         ["training.teacher.model outputs shape (5,)", "the student) outputs (10,)"]),
        (["loss.from_logits=false"], ["loss.from_logits=False", "from_logits=True"]),
        (["training.temperature=0"], ["training.temperature", "greater than 0"]),
        (["training.alpha=1.5"], ["training.alpha", "less than or equal to 1"]),
        (['training.teacher={"kind": "saved_model"}'], ["training.teacher.path: required"]),
    ],
)  # fmt: skip
def test_distillation_mistakes_are_named(overrides, phrases):
    message = reject_set("mnist_distillation", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


# The teacher with BatchNormalization and Dropout: in training mode the first would update its
# statistics and the second drop units at random. (Momentum 0.5: the few steps that train it
# give it statistics of its data.)
TEACHER = [
    {"kind": "flatten"},
    {"kind": "dense", "units": 64},
    {"kind": "batch_normalization", "momentum": 0.5},
    {"kind": "activation", "activation": "relu"},
    {"kind": "dropout", "rate": 0.5},
    {"kind": "dense", "units": 10},
]


@pytest.mark.slow
def test_a_teachers_shape_with_a_size_left_open_is_compared_where_both_know_it():
    """A sequence teacher's length is open (None): its rank and its known sizes still differ
    from a student of another width or rank, and agree with one of its own."""
    from loopgen.dsl.rules.ways import same_shape

    assert not same_shape((None, 10), (None, 5))
    assert not same_shape((10,), (None, 10))
    assert same_shape((None, 10), (7, 10)) and same_shape((10,), (10,))


@pytest.mark.slow  # trains a script: the quick tier trains none
def test_the_teacher_stays_frozen_in_inference_mode_while_the_student_learns(render, tmp_path):
    small = data.small_data_overrides("mnist_distillation", tmp_path)
    teacher = f"training.teacher.model.layers={json.dumps(TEACHER)}"
    script = render("mnist_distillation", *small, teacher, "optimizer.learning_rate=0.01")
    data.runnable("mnist_distillation", script)  # trains the teacher
    out = tmp_path / "run"
    result = tf_check("frozen_teacher", str(script), str(out), "--epochs", "10", cwd=tmp_path)
    assert len(result["statistics"]) == 2 and result["count"] == 8, result
    assert result["max_moved"] == 0.0, result
    # Called in inference mode, every time: its Dropout off, its statistics its own.
    assert result["training"] and set(result["training"]) == {False}, result
    # The student comes closer to the teacher, and its validation accuracy rises.
    distances = [r["distillation_loss"] for r in records(out) if "distillation_loss" in r]
    assert all(d >= 0 for d in distances) and distances[-1] < 0.5 * distances[0], distances
    validated = [r["val_accuracy"] for r in records(out) if "val_accuracy" in r]
    assert validated[-1] > validated[0] + 0.2, validated


@pytest.mark.slow
def test_distillation_with_alpha_1_trains_what_the_supervised_loop_trains(render, tmp_path):
    small = data.small_data_overrides("mnist_distillation", tmp_path)
    distilled = render("mnist_distillation", *small, "training.alpha=1.0", name="distil.py")
    data.runnable("mnist_distillation", distilled)
    supervised = render("mnist_distillation", *small, 'training={"kind": "supervised"}',
                        name="supervised.py")  # fmt: skip
    for script in (distilled, supervised):
        run_python(script, "--epochs", "2", "--deterministic", "--output-dir",
                   str(tmp_path / script.stem), cwd=tmp_path)  # fmt: skip
    result = tf_check("compare_checkpoints", str(tmp_path / "distil" / "checkpoints"),
                      str(tmp_path / "supervised" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 12 and result["max_diff"] <= 1e-6, result


@pytest.mark.slow
def test_a_teacher_file_or_export_teaches_what_its_weights_teach(render, tmp_path):
    small = [*data.small_data_overrides("mnist_distillation", tmp_path), "loop.log_every_steps=1"]
    trained = render("mnist_distillation", *small, name="trained.py")
    data.runnable("mnist_distillation", trained)
    saved = tf_check("save_teacher", str(trained), str(tmp_path / "teacher.keras"),
                     str(tmp_path / "teacher_export"), cwd=tmp_path)  # fmt: skip
    teachers = {
        "keras_file": {"kind": "keras_file", "path": saved["keras_file"]},
        "saved_model": {"kind": "saved_model", "path": saved["saved_model"]},
    }
    first = {}
    for name, script in {"trained": trained, **{
        kind: render("mnist_distillation", *small, f"training.teacher={json.dumps(teacher)}",
                     name=f"{kind}.py")
        for kind, teacher in teachers.items()
    }}.items():  # fmt: skip
        out = tmp_path / name
        run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
        first[name] = records(out)[0]["distillation_loss"]
    assert first["keras_file"] == pytest.approx(first["trained"], abs=1e-6), first
    assert first["saved_model"] == pytest.approx(first["trained"], abs=1e-5), first


# A teacher of another output shape (5 classes; the student has 10), saved whole and exported.
WRONG_TEACHER = """
import sys

import keras

teacher = keras.Sequential(
    [keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(8, activation="relu"),
     keras.layers.Dense(5), keras.layers.Activation("softmax")]
)
teacher.save(sys.argv[1])
teacher.export(sys.argv[2], verbose=False)
"""


def teacher_set(kind, path):
    return f"training.teacher={json.dumps({'kind': kind, 'path': str(path)})}"


def run_failing(script, out, cwd):
    """A run that must stop before step 0: exit 1, one line on stderr, no traceback."""
    proc = run_preloaded(str(script), "--max-steps", "1", "--output-dir", str(out), cwd=cwd,
                         check=False)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not (out / "metrics.jsonl").exists() or not records(out), records(out)
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_missing_teacher_or_one_of_another_shape_stops_before_step_0(render, tmp_path):
    small = data.small_data_overrides("mnist_distillation", tmp_path)
    keras_file, export = tmp_path / "teacher.keras", tmp_path / "teacher_export"
    teachers = {"keras_file": keras_file, "saved_model": export}
    scripts = {
        kind: render("mnist_distillation", *small, teacher_set(kind, path), name=f"{kind}.py")
        for kind, path in teachers.items()
    }  # rendered while the files are not there: nothing to check yet
    # Not there when the script starts: said in one line.
    line = run_failing(scripts["keras_file"], tmp_path / "missing", tmp_path)
    assert line == f"training.teacher.path: {keras_file}: no such file or directory", line

    maker = tmp_path / "make_teacher.py"
    maker.write_text(WRONG_TEACHER)
    run_python(maker, str(keras_file), str(export), cwd=tmp_path)
    # The output shape of the .keras file (its config) and of the export (its serving
    # signature), read by validate without TensorFlow.
    for kind, path in teachers.items():
        message = reject_set("mnist_distillation", teacher_set(kind, path))
        assert f"training.teacher: {path} outputs shape (5,)" in message, message
        assert "the model (the student) outputs (10,)" in message, message
    # And by the script when it loads either teacher, before step 0.
    for kind, path in teachers.items():
        line = run_failing(scripts[kind], tmp_path / kind, tmp_path)
        assert line.startswith(f"training.teacher: {path} outputs shape (5,)"), line
        assert "the model (the student) outputs (10,)" in line, line
