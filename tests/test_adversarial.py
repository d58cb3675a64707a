"""Adversarial training: the spec rules, and real runs where each step attacks its batch with a
GradientTape of its own (checked against the attack written out by hand), the attack leaves
the BatchNormalization statistics alone, and validation measures robustness."""

from __future__ import annotations

import json

import data
import pytest
from helpers import records, run_python, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (["gradients.accumulate_steps=2"], ["gradients.accumulate_steps is set for adversarial"]),
        (["training.attack.epsilon=1.5"], ["attack.epsilon=1.5 is as large as the whole"]),
        (["training.input_range=[1, 0]"], ["input_range=(1.0, 0.0)", "below the second"]),
        (['model.layers[0]={"kind": "embedding", "input_dim": 256, "output_dim": 4}'],
         ["training is adversarial, but the model reads text or integer ids"]),
        (['best_model.monitor="val_robust_auc"'], ["val_robust_auc", "val_robust_accuracy"]),
    ],
)  # fmt: skip
def test_adversarial_mistakes_are_named(overrides, phrases):
    message = reject_set("mnist_adversarial", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


@pytest.mark.slow
def test_the_attack_is_pgd_and_validation_measures_robustness(render, tmp_path):
    small = data.small_data_overrides("mnist_adversarial", tmp_path)
    script = render("mnist_adversarial", *small, "optimizer.learning_rate=0.01")
    out = tmp_path / "run"
    run_python(script, "--epochs", "6", "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("attack_reference", str(script), str(out / "checkpoints"), cwd=tmp_path)
    # The script's attack is the one written out here, moved every pixel it could by at most
    # epsilon, and raised the loss.
    assert result["max_diff"] <= 1e-6, result
    assert 0.09 < result["moved"] <= 0.1 + 1e-6 and result["loss_after"] > result["loss_before"]
    validated = [r for r in records(out) if "val_robust_accuracy" in r]
    assert len(validated) == 6 and all("val_robust_loss" in r for r in validated)
    # Attacked examples are harder: the robust loss is above the clean one. And it learns.
    assert all(r["val_robust_loss"] > r["val_loss"] for r in validated), validated
    assert validated[-1]["val_loss"] < 0.5 * validated[0]["val_loss"], validated
    assert validated[-1]["val_accuracy"] > validated[0]["val_accuracy"], validated


BATCH_NORMALIZED = [
    {"kind": "flatten"},
    {"kind": "dense", "units": 32},
    {"kind": "batch_normalization"},
    {"kind": "activation", "activation": "relu"},
    {"kind": "dense", "units": 10, "name": "logits"},
]


@pytest.mark.slow
def test_the_attack_leaves_the_batch_normalization_statistics_alone(render, tmp_path):
    """The attack runs the model five times per step: in training mode it would move the
    statistics five more times than the step's one training pass does."""
    overrides = [*data.small_data_overrides("mnist_adversarial", tmp_path),
                 f"model.layers={json.dumps(BATCH_NORMALIZED)}", "best_model=null",
                 'checkpoint={"every_steps": 1}']  # fmt: skip
    script = render("mnist_adversarial", *overrides)
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    checkpoints = out / "checkpoints"
    result = tf_check("attack_statistics", str(script), str(checkpoints / "ckpt-0"),
                      str(checkpoints / "ckpt-1"), cwd=tmp_path)  # fmt: skip
    assert result["count"] == 2 and result["max_diff"] <= 1e-6, result
