"""What a hand-written loop usually gets wrong, checked on real runs of generated scripts:
resuming (step, data position, dropout state, LR schedule), export fidelity, equality with
model.fit, and regularization penalties that actually reach the gradients."""

from __future__ import annotations

import json

import data
import numpy as np
import pytest
from helpers import npz, records, run_python, tf_check

pytestmark = pytest.mark.slow


@pytest.fixture
def vgg_script(render, tmp_path):
    """The CIFAR-10 VGG example (custom layer, L2, dropout, SGD with momentum and a piecewise
    schedule) on 80 small images, batch 16: 5 steps per epoch, the LR drops after step 7. No
    export: the tests compare checkpoints (test_runs exports the example)."""
    return render(
        "cifar10_vgg",
        f"data.train={npz(data.classification_npz(tmp_path / 'train.npz', 80, (32, 32, 3)))}",
        "data.validation=null",
        "data.batch_size=16",
        "optimizer.learning_rate.boundaries=[7, 100]",
        "optimizer.learning_rate.values=[0.01, 0.002, 0.001]",
        "loop.log_every_steps=1",
        "export.saved_model=false",
    )


def test_resume_continues_exactly(vgg_script, tmp_path):
    """2 epochs straight == 1 epoch, new process, 1 more epoch == 3 steps, new process, the
    rest: same weights, slots, step and dropout state, and the LR schedule continues."""
    flags = ["--deterministic"]
    straight, split, mid = tmp_path / "straight", tmp_path / "split", tmp_path / "mid"
    run_python(vgg_script, "--epochs", "2", "--output-dir", str(straight), *flags, cwd=tmp_path)
    run_python(vgg_script, "--epochs", "1", "--output-dir", str(split), *flags, cwd=tmp_path)
    resumed = run_python(
        vgg_script, "--epochs", "2", "--output-dir", str(split), *flags, cwd=tmp_path
    )
    assert "Resumed from" in resumed.stdout and "at step 5" in resumed.stdout
    # Mid-epoch: the data iterator's position must come back from the checkpoint.
    run_python(vgg_script, "--max-steps", "3", "--output-dir", str(mid), *flags, cwd=tmp_path)
    run_python(vgg_script, "--epochs", "2", "--output-dir", str(mid), *flags, cwd=tmp_path)

    for other in (split, mid):
        result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                          str(other / "checkpoints"), cwd=tmp_path)  # fmt: skip
        assert result["same_keys"] and result["step"] == 10
        assert result["max_diff"] == 0.0, result
        # Dropout's state is in the checkpoint (it is what drifts when it is missing).
        assert result["count"] >= 20

    # The second process continued the step counter and the schedule instead of restarting.
    logged = [(r["step"], r["learning_rate"]) for r in records(split) if "learning_rate" in r]
    assert [s for s, _ in logged] == list(range(1, 11))
    uninterrupted = {r["step"]: r["learning_rate"] for r in records(straight) if "loss" in r}
    assert dict(logged) == uninterrupted
    assert dict(logged)[6] == pytest.approx(0.01) and dict(logged)[9] == pytest.approx(0.002)


def test_resume_without_dropout_state_would_differ(vgg_script, tmp_path):
    """Guards the test above: dropping the Dropout RNG state from the checkpoint (the classic
    omission) makes the resumed run diverge, so equality there is not an accident."""
    source = vgg_script.read_text()
    assert "rng_states=" in source
    broken = tmp_path / "broken.py"
    broken.write_text(
        "\n".join(line for line in source.splitlines() if "rng_states=" not in line) + "\n"
    )
    straight, split = tmp_path / "straight", tmp_path / "split"
    flags = ["--deterministic"]
    run_python(broken, "--epochs", "2", "--output-dir", str(straight), *flags, cwd=tmp_path)
    run_python(broken, "--epochs", "1", "--output-dir", str(split), *flags, cwd=tmp_path)
    run_python(broken, "--epochs", "2", "--output-dir", str(split), *flags, cwd=tmp_path)
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(split / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["max_diff"] > 1e-4, result


def test_export_matches_the_trained_model_in_a_new_process(render, tmp_path):
    """SavedModel and .keras exports, loaded in a new process, predict what the model
    restored from the training checkpoint predicts (the UNet with its custom layer class)."""
    val = data.segmentation_npz(tmp_path / "x.npz", 8, 32, classes=4)
    script = render("shapes_unet", "data.train.count=64", "data.validation.count=16")
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("export_matches", str(script), str(out), val, cwd=tmp_path)
    assert result["spread"] > 1e-3  # the predictions are not trivially constant
    assert result["saved_model"] <= 1e-5 and result["keras"] <= 1e-5, result


@pytest.mark.parametrize(
    ("example", "overrides", "compile_args"),
    [
        (
            "mnist_mlp",
            [],
            {
                "optimizer": {"class_name": "SGD", "config": {"learning_rate": 0.001}},
                "loss": {"class_name": "SparseCategoricalCrossentropy",
                         "config": {"from_logits": True}},
            },
        ),
        (
            # L2 penalties, dropout, momentum and a schedule: the places fit and a hand-written
            # loop part ways when the loop is wrong.
            "cifar10_vgg",
            ["data.validation=null", "optimizer.learning_rate.boundaries=[2, 100]"],
            {
                "optimizer": {"class_name": "SGD", "config": {
                    "momentum": 0.9,
                    "learning_rate": {"module": "keras.optimizers.schedules",
                                      "class_name": "PiecewiseConstantDecay", "config": {
                        "boundaries": [2, 100], "values": [0.01, 0.001, 0.0001]}}}},
                "loss": {"class_name": "SparseCategoricalCrossentropy",
                         "config": {"from_logits": True}},
            },
        ),
        (
            # A graph with residual blocks and BatchNormalization, L2, Nesterov momentum and a
            # cosine schedule (augmentation off: fit would not get the same images). At 0.01:
            # at the example's 0.1 a fresh BatchNormalization ResNet is chaotic in its first
            # steps, and a rounding difference of 5e-7 at step 2 grows to 1e-2 by step 4.
            "cifar10_resnet",
            ["data.validation=null", "data.augmentation=[]",
             "optimizer.learning_rate.initial_learning_rate=0.01"],
            {
                "optimizer": {"class_name": "SGD", "config": {
                    "momentum": 0.9, "nesterov": True,
                    "learning_rate": {"module": "keras.optimizers.schedules",
                                      "class_name": "CosineDecay", "config": {
                        "initial_learning_rate": 0.01, "decay_steps": 15600}}}},
                "loss": {"class_name": "SparseCategoricalCrossentropy",
                         "config": {"from_logits": True}},
            },
        ),
        (
            # Embedding, Conv1D, a bidirectional LSTM, Dropout, Adam, a binary loss on logits.
            "imdb_bilstm",
            ["data.validation=null"],
            {
                "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
                "loss": {"class_name": "BinaryCrossentropy", "config": {"from_logits": True}},
            },
        ),
    ],
)  # fmt: skip
def test_one_epoch_equals_model_fit(example, overrides, compile_args, render, tmp_path):
    # 100 examples at batch 64 (mnist) or 32: a smaller last batch is included.
    if example == "imdb_bilstm":
        train = npz(data.tokens_npz(tmp_path / "train.npz", 100, 200))
    else:
        shape = (28, 28) if example == "mnist_mlp" else (32, 32, 3)
        train = npz(data.classification_npz(tmp_path / "train.npz", 100, shape))
    batch = "64" if example == "mnist_mlp" else "32"
    script = render(
        example, f"data.train={train}", "data.shuffle_buffer=0", f"data.batch_size={batch}",
        *overrides, "export.saved_model=false",  # the weights are compared, not the export
    )  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--deterministic", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip
    result = tf_check("fit_equivalence", str(script), str(out), json.dumps(compile_args),
                      cwd=tmp_path)  # fmt: skip
    assert result["moved"] > 1e-4, "training did not change the weights: nothing was compared"
    assert result["max_diff"] <= 1e-6, result


def test_regularization_penalty_shrinks_weights(render, tmp_path):
    """A strong L2 penalty in the spec must reach the gradients (model.losses in the step)."""
    train = npz(data.classification_npz(tmp_path / "train.npz", 256, (28, 28)))
    common = [f"data.train={train}", "optimizer.learning_rate=0.1", "data.batch_size=32",
              "export.saved_model=false"]  # fmt: skip
    l2 = json.dumps({"kind": "l2", "l2": 0.5})
    plain = render("mnist_mlp", *common, name="plain.py")
    penalized = render(
        "mnist_mlp", *common, *(f"model.layers[{i}].kernel_regularizer={l2}" for i in (1, 2, 3)),
        name="penalized.py",
    )  # fmt: skip
    assert "model.losses" not in plain.read_text() and "model.losses" in penalized.read_text()
    norms = {}
    for script in (plain, penalized):
        out = tmp_path / script.stem
        run_python(script, "--epochs", "3", "--output-dir", str(out), cwd=tmp_path)
        norms[script.stem] = tf_check("kernel_norm", str(script), str(out), cwd=tmp_path)["norm"]
    assert norms["penalized"] < 0.5 * norms["plain"], norms


def test_each_epoch_reads_every_example_once_in_an_order_of_its_own(render, tmp_path):
    """The training pipeline (training_batches) on 64 examples whose labels number them, batch
    16: each epoch reads every example once, shuffled, and in another order than the epoch
    before (an order seeded without the epoch would repeat itself); a resumed run's epoch
    reads the rest of the same order."""
    path = tmp_path / "numbered.npz"
    x = np.random.default_rng(0).integers(0, 255, (64, 28, 28)).astype(np.uint8)
    np.savez(path, x=x, y=np.arange(64))
    script = render("mnist_mlp", f"data.train={npz(str(path))}", "data.batch_size=16")
    found = tf_check("epoch_labels", str(script), "3", cwd=tmp_path)
    epochs = found["epochs"]
    assert found["steps_per_epoch"] == 4 and len(epochs) == 3
    assert all(sorted(order) == list(range(64)) for order in epochs), epochs
    assert epochs[0] != list(range(64)), epochs  # shuffled
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2] and epochs[0] != epochs[2], epochs
    resumed = tf_check("epoch_labels", str(script), "3", "6", cwd=tmp_path)["epochs"]
    assert resumed == [epochs[1][32:], epochs[2]], resumed
