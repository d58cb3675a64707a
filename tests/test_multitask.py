"""Multi-task models: one head, loss, weight and metrics per task. The spec rules, and real runs
where the step follows the weighted sum of the task losses (checked against a step computed by
hand), every task's loss and metrics are logged, and the distributed and accumulating steps
train what one device trains."""

from __future__ import annotations

import math
from pathlib import Path

import data
import pytest
from helpers import TWO_CPUS, records, run_python, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (['loss={"kind": "mean_squared_error"}'], ["loss is set and training is MultiTask"]),
        (['model.heads={"mask": [{"kind": "conv2d", "filters": 4, "kernel_size": 1}]}'],
         ["training.tasks ['mask', 'shape'] and model.heads ['mask'] differ"]),
        (['metrics=[{"kind": "sparse_categorical_accuracy"}]'], ["training.tasks.<name>.metrics"]),
        (["data.train.task=segmentation", "data.validation.task=segmentation"],
         ["training.tasks ['mask', 'shape'] need one label each", "one label per example"]),
        (["data.validation.task=segmentation"], ["data.validation", "data.train"]),
        (['best_model.monitor="val_shape_iou"'],
         ["val_shape_iou", "val_mask_loss", "val_shape_accuracy"]),
        (["training.tasks.shape.loss.from_logits=false"],
         ["training.tasks.shape.loss.from_logits=False", "model.heads.shape[4]"]),
    ],
)  # fmt: skip
def test_multitask_mistakes_are_named(overrides, phrases):
    message = reject_set("shapes_multitask", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


def test_monitor_of_a_task_loss_is_minimized():
    from helpers import EXAMPLES
    from loopgen.dsl.loader import load_spec

    spec = load_spec(
        EXAMPLES / "shapes_multitask.py", overrides=['best_model.monitor="val_mask_loss"']
    )
    assert spec.best_model.direction == "min"
    assert spec.log_names() == [
        "loss",
        "mask_loss",
        "shape_loss",
        "mask_mean_iou",
        "shape_accuracy",
    ]


def multitask_overrides(tmp_path: Path) -> list[str]:
    """Small data, a log a step, no export (test_runs serves the example's heads)."""
    return [*data.small_data_overrides("shapes_multitask", tmp_path), "loop.log_every_steps=1",
            "export.saved_model=false"]  # fmt: skip


@pytest.mark.slow
def test_the_step_follows_the_weighted_sum_and_every_task_is_logged(render, tmp_path):
    script = render(
        "shapes_multitask",
        *multitask_overrides(tmp_path),
        'optimizer={"kind": "sgd", "learning_rate": 0.5}',
        "training.tasks.shape.weight=3.0",
        'checkpoint={"every_steps": 1, "keep": 10}',
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    step = tf_check("multitask_first_step", str(script), str(out), "0.5", cwd=tmp_path)
    assert step["weights"] == {"mask": 1.0, "shape": 3.0}
    assert step["moved"] > 1e-3 and step["max_diff"] <= 1e-5, step

    logged = records(out)
    train = [r for r in logged if "loss" in r]
    validation = [r for r in logged if "val_loss" in r]
    assert len(validation) == 2
    for r in train:
        assert {"mask_loss", "shape_loss", "mask_mean_iou", "shape_accuracy"} <= set(r)
        assert r["loss"] == pytest.approx(r["mask_loss"] + 3.0 * r["shape_loss"], rel=1e-5)
    for r in validation:
        assert r["val_loss"] == pytest.approx(r["val_mask_loss"] + 3.0 * r["val_shape_loss"])
        assert 0 <= r["val_shape_accuracy"] <= 1 and 0 <= r["val_mask_mean_iou"] <= 1
    tags = tf_check("scalar_tags", str(out / "logs" / "validation"), cwd=tmp_path)
    assert {"loss", "mask_loss", "shape_loss", "mask_mean_iou", "shape_accuracy"} <= set(tags)


@pytest.mark.slow
def test_multitask_on_two_replicas_with_accumulation_trains_like_one_device(render, tmp_path):
    overrides = [*multitask_overrides(tmp_path), "data.shuffle_buffer=0", "best_model=null"]
    single = render("shapes_multitask", *overrides)
    other = render("shapes_multitask", *overrides, TWO_CPUS, "gradients.accumulate_steps=2",
                   variant="mirrored", name="mirrored.py")  # fmt: skip
    a, b = tmp_path / "single", tmp_path / "mirrored"
    for script, out in ((single, a), (other, b)):
        run_python(script, "--epochs", "2", "--output-dir", str(out), "--deterministic",
                   cwd=tmp_path)  # fmt: skip
    result = tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"),
                      cwd=tmp_path)  # fmt: skip
    assert result["step"] == 6 and result["max_diff"] <= 1e-5, result
    for key in ("loss", "mask_loss", "shape_accuracy", "val_shape_loss"):
        mine = {r["step"]: r[key] for r in records(a) if key in r}
        theirs = {r["step"]: r[key] for r in records(b) if key in r}
        assert mine and all(math.isclose(mine[s], theirs[s], rel_tol=1e-4) for s in mine), key


@pytest.mark.slow
def test_npz_labels_per_task(render, tmp_path):
    """An .npz source with one label array per task (y_key as a dict)."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.uniform(size=(40, 24, 24, 3)).astype(np.float32)
    path = tmp_path / "multi.npz"
    np.savez(path, x=x, cls=rng.integers(0, 3, 40), seg=rng.integers(0, 4, (40, 24, 24)))
    source = f'{{"kind": "npz", "path": "{path}", "y_key": {{"shape": "cls", "mask": "seg"}}}}'
    script = render("shapes_multitask", f"data.train={source}", "data.validation=null",
                    "best_model=null", "loop.log_every_steps=1")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    assert [r["step"] for r in records(out)] == [1, 2]
    assert all(r["shape_loss"] > 0 and r["mask_loss"] > 0 for r in records(out))
