"""What issue 14's models need beyond the loop's usual guarantees, on real runs: a backbone
that stays frozen (its BatchNormalization statistics too) until it unfreezes, and a run resumed
on either side of the unfreeze; augmentation that is reproducible, resumable and training-only;
your own loss and metric in a run on two replicas."""

from __future__ import annotations

import shutil
from pathlib import Path

import data
import pytest
from helpers import TWO_CPUS, records, render_into, run_python, saved_models, tf_check

pytestmark = pytest.mark.slow


FINETUNE = ["data.validation=null", "loop.log_every_steps=1",
            'checkpoint={"every_steps": 1, "keep": 20}']  # fmt: skip
"""flowers_finetune on 48 small JPEGs at batch 16: 3 steps an epoch, the backbone (its layers
from block_13_expand on) unfreezing when epoch 3 starts, at step 6."""

FLAGS = ["--epochs", "4", "--deterministic"]


@pytest.fixture
def finetuned(shared) -> tuple[Path, Path]:
    """The script of FINETUNE and its run of 4 epochs (12 steps), made once for the tests that
    read it."""

    def make(folder: Path) -> None:
        overrides = [*data.small_data_overrides("flowers_finetune", folder), *FINETUNE]
        render_into(folder / "train.py", "flowers_finetune", *overrides)
        # Its twin without the export, for the tests that read only checkpoints.
        render_into(folder / "no_export.py", "flowers_finetune", *overrides,
                    "export.saved_model=false")  # fmt: skip
        # The mirrored twins, on the same data and weights file.
        render_into(folder / "mirrored.py", "flowers_finetune", *overrides, TWO_CPUS,
                    variant="mirrored")  # fmt: skip
        render_into(folder / "mirrored_no_export.py", "flowers_finetune", *overrides, TWO_CPUS,
                    "export.saved_model=false", variant="mirrored")  # fmt: skip
        # No test reads its export (test_runs serves the example's).
        proc = run_python(folder / "no_export.py", *FLAGS, "--output-dir", str(folder / "run"),
                          cwd=folder)  # fmt: skip
        (folder / "run" / "stdout.txt").write_text(proc.stdout)

    folder = shared("finetuned", make)
    return folder / "train.py", folder / "run"


def test_the_backbone_starts_from_the_weights_file_the_spec_names(finetuned, tmp_path):
    """`Backbone(weights=PATH)`: the script's backbone holds the file's weights, every one (the
    file's seed is not the script's, so weights the script made itself would differ)."""
    finetune, _ = finetuned
    path = finetune.parent / "mobilenet_v2_0.35_no_top.weights.h5"
    assert str(path) in finetune.read_text()
    result = tf_check("backbone_from_file", str(finetune), "features", "MobileNetV2",
                      data.BACKBONE_ARGS, str(path), cwd=tmp_path)  # fmt: skip
    assert result["weights"] > 100 and result["max_diff"] == 0.0, result


def test_a_frozen_backbone_and_its_statistics_stay_put_until_it_unfreezes(finetuned, tmp_path):
    finetune, out = finetuned
    assert "Step 6: the backbone unfreezes" in (out / "stdout.txt").read_text()

    def state(step):
        return tf_check("backbone_state", str(finetune), str(out / "checkpoints" / f"ckpt-{step}"),
                        "features", "block_13_expand", cwd=tmp_path)  # fmt: skip

    frozen, tuned = state(6), state(12)
    # Frozen phase: only the new head learned; the backbone, statistics included, did not.
    assert frozen["head"] > 1e-4 and frozen["before"] == frozen["from"] == 0.0, frozen
    assert frozen["statistics"] == 0.0, frozen
    # After the unfreeze: the backbone's last blocks learn, its first ones stay frozen, and its
    # BatchNormalization layers stay frozen, statistics included (Keras 3 passes the train
    # step's training=True to a nested model whatever it was called with).
    # (Random weights from a file, as the tests download nothing, behind BatchNormalization
    # layers that keep their initial statistics: the convolutions' gradients are tiny, but not
    # zero.)
    assert tuned["from"] > 0.0 and tuned["before"] == 0.0, tuned
    assert tuned["statistics"] == 0.0, tuned
    # The learning rate changed at the unfreeze.
    rates = {r["step"]: r["learning_rate"] for r in records(out) if "learning_rate" in r}
    assert rates[5] == pytest.approx(1e-3) and rates[7] == pytest.approx(1e-4)


def test_top_layers_unfreezes_the_backbone_s_last_layers_but_batch_normalization(render, tmp_path):
    """`FineTune(top_layers=20)`, the Keras guide's "unfreeze the top 20 layers": after the
    unfreeze exactly the backbone's last 20 layers train, BatchNormalization ones excepted."""
    script = render(
        "flowers_finetune", *data.small_data_overrides("flowers_finetune", tmp_path),
        "fine_tune.from_layer=null", "fine_tune.top_layers=20",
    )  # fmt: skip
    found = tf_check("unfrozen_layers", str(script), "features", cwd=tmp_path)
    top = found["names"][-20:]
    expected = [name for name in top if name not in found["batch_norm"]]
    assert found["trainable"] == expected and len(expected) == 13, found
    assert set(found["with_trainable_weights"]) <= set(expected), found
    assert "Conv_1" in found["with_trainable_weights"], found
    names = len(found["names"])
    assert found["too_many"] == (
        f"fine_tune.top_layers={names + 1} but features has {names} layers; unfreeze fewer, "
        "or all (no top_layers)"
    )


def test_a_run_resumed_on_either_side_of_the_unfreeze_is_exact(finetuned, tmp_path):
    """Stopped at step 4 (before the unfreeze at 6), resumed and stopped again at step 8 (after
    it), resumed to the end: the weights of the run that never stopped.

    The straight run saved a checkpoint at every step: the split run is its checkpoints up to
    step 4 (its state file cut there, as a run stopped at step 4 leaves it), not a first run
    that trains those 4 steps again. Its two legs run the script's twin without the export,
    which this test does not read (the export is no part of the setup a resume checks)."""
    script, straight = finetuned
    split = tmp_path / "split"
    stopped_at(straight / "checkpoints", split / "checkpoints", 4)
    for stop, resumed_at in ((8, 4), (None, 8)):
        until = ["--max-steps", str(stop)] if stop else []
        resumed = run_python(script.with_name("no_export.py"), *FLAGS, *until,
                             "--output-dir", str(split), cwd=tmp_path)  # fmt: skip
        assert f"Resumed from {split / 'checkpoints' / f'ckpt-{resumed_at}'}" in resumed.stdout
        assert f"at step {resumed_at}" in resumed.stdout
        assert ("the backbone unfreezes" in resumed.stdout) == (resumed_at < 6)
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(split / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 12, result
    assert result["max_diff"] == 0.0, result


def test_the_unfreeze_on_two_replicas_trains_as_one_device_and_resumes_exactly(finetuned, tmp_path):
    """The mirrored twin on two replicas: its run crosses the unfreeze, ends with the weights of
    one device's run (<= 1e-5) and writes its export (a MobileNetV2 and TFRecord files saved
    from the strategy's scope); stopped at step 8 (after the unfreeze) and resumed, it ends
    with exactly the weights of its uninterrupted run."""
    script, one_device = finetuned
    straight, split = tmp_path / "straight", tmp_path / "split"
    mirrored = script.with_name("mirrored.py")
    proc = run_python(mirrored, *FLAGS, "--output-dir", str(straight), cwd=tmp_path)
    assert "2 replica(s) on this machine" in proc.stdout
    assert "Step 6: the backbone unfreezes" in proc.stdout
    exported = saved_models(straight / "export", mirrored)
    assert exported and all((model / "saved_model.pb").is_file() for model in exported)
    result = tf_check("compare_checkpoints", str(one_device / "checkpoints"),
                      str(straight / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 12, result
    assert result["max_diff"] <= 1e-5, result
    stopped_at(straight / "checkpoints", split / "checkpoints", 8)
    resumed = run_python(script.with_name("mirrored_no_export.py"), *FLAGS,
                         "--output-dir", str(split), cwd=tmp_path)  # fmt: skip
    assert f"Resumed from {split / 'checkpoints' / 'ckpt-8'}" in resumed.stdout
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(split / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 12, result
    assert result["max_diff"] == 0.0, result


def stopped_at(source: Path, target: Path, step: int) -> None:
    """`target`: the checkpoints folder `source` was at `step`, as a run stopped there leaves
    it: setup.json, the checkpoints up to `step`, and a state file listing them (their save
    times kept). `source` keeps the checkpoint of `step`."""
    target.mkdir(parents=True)
    shutil.copy2(source / "setup.json", target)
    lines = (source / "checkpoint").read_text().splitlines()
    names = [line.split('"')[1] for line in lines if line.startswith("all_model_checkpoint_paths:")]
    times = [line for line in lines if line.startswith("all_model_checkpoint_timestamps:")]
    kept = [(name, time) for name, time in zip(names, times, strict=True)
            if int(name.removeprefix("ckpt-")) <= step]  # fmt: skip
    assert kept and kept[-1][0] == f"ckpt-{step}", lines
    for name, _ in kept:
        for file in source.glob(f"{name}.*"):
            shutil.copy2(file, target)
    rest = [line for line in lines if line.startswith("last_preserved_timestamp:")]
    state = [f'model_checkpoint_path: "ckpt-{step}"',
             *(f'all_model_checkpoint_paths: "{name}"' for name, _ in kept),
             *(time for _, time in kept), *rest]  # fmt: skip
    (target / "checkpoint").write_text("\n".join(state) + "\n")


def test_augmentation_is_reproducible_resumable_and_training_only(render, tmp_path):
    """cifar10_resnet's pad-crop-flip, unshuffled so that an example keeps its position."""
    script = render(
        "cifar10_resnet", *data.small_data_overrides("cifar10_resnet", tmp_path),
        "data.shuffle_buffer=0",
    )  # fmt: skip
    result = tf_check("augmented_batches", str(script), cwd=tmp_path)
    assert result["repeatable"] == 0.0 and result["resumed"] == 0.0, result
    assert result["augmented"] > 0.1, result  # the images did change
    assert result["epochs_differ"] > 0.1, result  # each epoch draws anew
    assert result["validation"] == 0.0, result  # validation images are not augmented


def test_augmentation_of_a_stream_resumes_at_its_position(render, tmp_path):
    """flowers_finetune's TFRecord stream, flipped at random, in shuffle windows of 8 records
    at batch 4: a run resumed at step 5 (the third window) augments its first batch as an
    uninterrupted run augments its step 5, each record by its position in the epoch, not its
    position since the resume."""
    script = render(
        "flowers_finetune",
        *data.small_data_overrides("flowers_finetune", tmp_path, backbone=False),
        "data.batch_size=4", "data.shuffle_buffer=8",
        'data.augmentation=[{"kind": "random_flip", "mode": "horizontal"}]',
    )  # fmt: skip
    result = tf_check("resumed_batch", str(script), "5", cwd=tmp_path)
    assert result["augmented"] > 0.1, result  # some images flipped
    assert result["resumed"] == 0.0, result


def test_own_loss_and_metric_on_two_replicas_equal_one_device(render, tmp_path):
    """ImportedLoss gives per-example losses: the replicas' sums over the global batch make
    the single device's mean, so two replicas train alike (and the metric is logged)."""
    (tmp_path / "own.py").write_text(OWN)
    overrides = [
        *data.small_data_overrides("mnist_mlp", tmp_path), "data.batch_size=16",
        'loss={"kind": "import", "target": "own:squared_hinge_ids", "kwargs": {"margin": 1.0}}',
        'metrics=[{"kind": "import", "target": "own:Top1", "name": "top1"}]',
        "loop.log_every_steps=1", "data.shuffle_buffer=0",
    ]  # fmt: skip
    single = render("mnist_mlp", *overrides)
    mirrored = render("mnist_mlp", *overrides, TWO_CPUS, variant="mirrored", name="mirrored.py")
    one, two = tmp_path / "one", tmp_path / "two"
    run_python(single, "--epochs", "2", "--deterministic", "--output-dir", str(one), cwd=tmp_path)
    run_python(mirrored, "--epochs", "2", "--deterministic", "--output-dir", str(two), cwd=tmp_path)
    result = tf_check("compare_checkpoints", str(one / "checkpoints"), str(two / "checkpoints"),
                      cwd=tmp_path)  # fmt: skip
    assert result["max_diff"] <= 1e-5, result
    logged = [r for r in records(one) if "top1" in r]
    assert logged and all(0.0 <= r["top1"] <= 1.0 for r in logged)


OWN = '''"""A loss and a metric of one's own, as a user would write them."""

import keras
import tensorflow as tf


def squared_hinge_ids(labels, predictions, margin=1.0):
    """Multi-class squared hinge on logits: one value per example."""
    labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
    true = tf.gather(predictions, labels, axis=1, batch_dims=1)
    others = predictions + margin - true[:, None]
    mask = 1.0 - tf.one_hot(labels, tf.shape(predictions)[-1])
    return tf.reduce_sum(tf.square(tf.nn.relu(others)) * mask, axis=-1)


class Top1(keras.metrics.Mean):
    """The share of examples whose top logit is their class."""

    def update_state(self, labels, predictions, sample_weight=None):
        labels = tf.reshape(tf.cast(labels, tf.int64), [-1])
        hits = tf.cast(tf.equal(tf.argmax(predictions, axis=-1), labels), tf.float32)
        return super().update_state(hits)
'''
