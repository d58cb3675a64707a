"""Your own step and your own optimizer: the spec rules, and real runs where loopgen writes the
tape, the averaging, checkpoints and logging around a function of yours. An own step that
returns the supervised loss trains exactly what the supervised loop trains; the losses and
extras it returns are logged by name; your optimizer class takes the steps."""

from __future__ import annotations

import json

import data
import pytest
from helpers import records, run_preloaded, run_python, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (['loss={"kind": "mean_squared_error"}'],
         ["loss is set, and training is your own step (own_steps:confidence_penalty)",
          "remove loss"]),
        (["training.losses=[]"], ["training.losses is empty"]),
        (['training.extras=["cross_entropy"]'], ["names 'cross_entropy' more than once"]),
        (['training.extras=["loss"]'], ["a loss or extra 'loss'", "call it something else"]),
        (['training.target="own_steps.confidence_penalty"'],
         ["'package.module:function'"]),
        (['optimizer={"kind": "import", "target": "own_steps"}'],
         ["'package.module:class'"]),
    ],
)  # fmt: skip
def test_own_step_mistakes_are_named(overrides, phrases):
    message = reject_set("mnist_own_step", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


PLAIN_STEP = """
import keras


def cross_entropy(model, inputs, labels, training):
    logits = model(inputs, training=training)
    losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return logits, {"loss": losses}


def wrong_names(model, inputs, labels, training):
    logits = model(inputs, training=training)
    return logits, {"ce": keras.losses.sparse_categorical_crossentropy(labels, logits, True)}
"""


@pytest.mark.slow
def test_an_own_step_of_the_supervised_loss_trains_what_the_supervised_loop_trains(
    render, tmp_path
):
    (tmp_path / "plain_step.py").write_text(PLAIN_STEP)
    small = [*data.small_data_overrides("mnist_mlp", tmp_path), "data.batch_size=16",
             "optimizer.momentum=0.9", "performance.xla=off"]  # fmt: skip
    supervised = render("mnist_mlp", *small, name="supervised.py")
    step = 'training={"kind": "own_step", "target": "plain_step:cross_entropy"}'
    own = render("mnist_mlp", *small, "loss=null", step, name="own.py")
    for script in (supervised, own):
        run_python(script, "--epochs", "2", "--deterministic", "--output-dir",
                   str(tmp_path / script.stem), cwd=tmp_path)  # fmt: skip
    result = tf_check("compare_checkpoints", str(tmp_path / "supervised" / "checkpoints"),
                      str(tmp_path / "own" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 12 and result["max_diff"] <= 1e-6, result
    logged = lambda out: [r["loss"] for r in records(out) if "loss" in r]  # noqa: E731
    assert logged(tmp_path / "own") == pytest.approx(logged(tmp_path / "supervised"), abs=1e-6)


@pytest.mark.slow
def test_your_losses_and_extras_are_logged_and_your_optimizer_takes_the_steps(render, tmp_path):
    small = data.small_data_overrides("mnist_own_step", tmp_path)
    script = render("mnist_own_step", *small, "loop.log_every_steps=1",
                    'checkpoint={"every_steps": 1, "keep": 5}')  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    logged = [r for r in records(out) if "cross_entropy" in r]
    assert [r["step"] for r in logged] == [1, 2, 3]
    for record in logged:  # beta = 0.1: the penalty is minus a tenth of the entropy
        assert record["confidence_penalty"] == pytest.approx(-0.1 * record["entropy"], rel=1e-5)
        total = record["cross_entropy"] + record["confidence_penalty"]
        assert record["loss"] == pytest.approx(total, rel=1e-5)
    validated = next(r for r in records(out) if "val_loss" in r)
    assert {"val_cross_entropy", "val_confidence_penalty", "val_entropy", "val_accuracy"} <= set(
        validated
    )
    # SignSGD moved every weight by the learning rate, or not at all (a zero gradient).
    moves = tf_check("weight_steps", str(out / "checkpoints" / "ckpt-1"),
                     str(out / "checkpoints" / "ckpt-2"), cwd=tmp_path)  # fmt: skip
    assert set(moves["sizes"]) <= {0.0, 0.001} and 0.001 in moves["sizes"], moves


@pytest.mark.slow
def test_a_step_that_returns_other_losses_is_named_when_it_is_traced(render, tmp_path):
    (tmp_path / "plain_step.py").write_text(PLAIN_STEP)
    overrides = [*data.small_data_overrides("mnist_mlp", tmp_path), "loss=null",
                 'training={"kind": "own_step", "target": "plain_step:wrong_names"}']  # fmt: skip
    script = render("mnist_mlp", *overrides)
    proc = run_preloaded(str(script), "--output-dir", str(tmp_path / "run"), cwd=tmp_path,
                         check=False)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "training.target plain_step:wrong_names must return (predictions, losses)" in (
        proc.stderr
    )
    assert "losses ['loss']" in proc.stderr
    end = json.loads((tmp_path / "run" / "runs.jsonl").read_text().splitlines()[-1])
    assert end["exit"] == "error"
