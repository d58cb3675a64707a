"""Contrastive self-supervised learning (training=Contrastive, SimCLR): the rules, the NT-Xent
loss against the paper's formula, two views of each image that are a function of (seed, epoch,
position, view), and a real run whose loss falls and whose linear probe is scored. Exact resume
and replicas equal to one device (with the negatives gathered across replicas) are in
test_faults.py and test_distributed.py."""

from __future__ import annotations

import data
import pytest
from helpers import records, run_python, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (["data.augmentation=[]"], ["data.augmentation is empty", "two augmented views"]),
        (["data.augment_in=model"], ["data.augment_in='pipeline'"]),
        (["gradients.accumulate_steps=2"], ["gradients is set for contrastive training"]),
        (['model.layers[3]={"kind": "max_pooling2d"}'],
         ["outputs shape (8, 8, 64)", "GlobalAveragePooling2D()"]),
        (['loss={"kind": "mean_squared_error"}'], ["loss is the linear probe's"]),
    ],
)  # fmt: skip
def test_contrastive_mistakes_are_named(overrides, phrases):
    message = reject_set("shapes_simclr", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


@pytest.mark.slow
def test_nt_xent_is_the_papers(render, tmp_path):
    script = render("shapes_simclr")
    result = tf_check("nt_xent_reference", str(script), cwd=tmp_path)
    assert result["max_diff"] <= 1e-5 and result["mean"] > 0, result


@pytest.mark.slow
def test_two_views_are_a_function_of_seed_epoch_position_and_view(render, tmp_path):
    script = render("shapes_simclr", *data.small_data_overrides("shapes_simclr", tmp_path),
                    "data.batch_size=16")  # fmt: skip
    result = tf_check("contrastive_views", str(script), cwd=tmp_path)
    assert result["shapes"] == [[16, 32, 32, 3], [16, 32, 32, 3], [16]], result
    assert result["resumed_diff"] == 0.0 and result["rerun_diff"] == 0.0, result
    assert result["views_apart"] > 0.01, result  # two views, not one image twice


@pytest.mark.slow
def test_simclr_trains_its_encoder_and_scores_the_probe(render, tmp_path):
    script = render("shapes_simclr", "data.train.count=256", "data.validation.count=64",
                    "data.batch_size=32", "loop.log_every_steps=8")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "4", "--output-dir", str(out), cwd=tmp_path)
    logged = [r for r in records(out) if "probe_loss" in r]
    assert logged[-1]["loss"] < logged[0]["loss"] - 0.1, [r["loss"] for r in logged]
    validated = [r for r in records(out) if "val_accuracy" in r]
    assert len(validated) == 4 and all(0 <= r["val_accuracy"] <= 1 for r in validated)
    # The encoder, to serve (raw images in) and bare.
    assert (out / "export" / "saved_model" / "1" / "saved_model.pb").is_file()
    assert (out / "export" / "network" / "saved_model.pb").is_file()
