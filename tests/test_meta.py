"""Meta-learning (training=Reptile / MAML): the rules, the first meta-step against one written
out here (Reptile with one task and a meta step of 1.0 is plain SGD; MAML's meta-gradient is a
nested-tape reference's, the first-order one differs), tasks that are a function of (seed,
step, task), and a real run whose few-shot accuracy improves. Exact resume and replicas equal
to one device are in test_faults.py and test_distributed.py."""

from __future__ import annotations

import data
import pytest
from helpers import records, run_preloaded, run_python, serving_matches, tf_check
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (["training.test_classes=[8, 9]"], ["holds 2 classes, fewer than training.ways=5"]),
        (["training.test_classes=[5, 6, 7, 8, 12]"], ["holds [12]", "classes 0 to 9"]),
        (["training.shots=5000", "training.queries=500"],
         ["5500, more examples than mnist's smallest class has (5421)"]),
        (["training.test_classes=[1, 2, 3, 4, 5, 6, 7]"], ["3 are left for training"]),
        (['data.validation={"kind": "keras_dataset", "name": "mnist", "split": "test"}'],
         ["remove data.validation"]),
        (['data.augmentation=[{"kind": "random_translation", "height_factor": 0.1, '
          '"width_factor": 0.1}]'], ["data.augmentation is set for reptile"]),
        (["model.layers[6].units=10"], ["outputs shape (10,), but training.ways=5"]),
        (['model.layers[5]={"kind": "dropout", "rate": 0.5}'], ["a dropout layer"]),
        (["training.test_classes=[5, 5, 6, 7, 8]"], ["lists a class twice"]),
        (['loss={"kind": "mean_squared_error"}'], ["SparseCategoricalCrossentropy"]),
        (['loss={"kind": "binary_crossentropy", "from_logits": true}'],
         ["SparseCategoricalCrossentropy"]),
        (['model.layers[2]={"kind": "batch_normalization"}'], ["batch_normalization layer"]),
        (['model.layers[2]={"kind": "random_translation", "height_factor": 0.1, '
          '"width_factor": 0.1}'], ["random_translation layer"]),
        (['model.layers[6].kernel_regularizer={"kind": "l2", "l2": 0.01}'],
         ["weight regularizers"]),
        (['data.train={"kind": "keras_dataset", "name": "imdb", "maxlen": 20}'],
         ["data.train.name is 'imdb'"]),
    ],
)  # fmt: skip
def test_meta_learning_mistakes_are_named(overrides, phrases):
    message = reject_set("mnist_reptile", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


def meta_overrides(tmp_path, tasks: int) -> list[str]:
    """Small data, a network the MAML reference writes out as matrix products, an outer SGD
    and a checkpoint after every step."""
    return [
        *data.small_data_overrides("mnist_maml", tmp_path),
        'model.layers=[{"kind": "flatten"}, {"kind": "dense", "units": 8, "activation": "tanh"},'
        ' {"kind": "dense", "units": 3}]',
        f"training.tasks_per_step={tasks}",
        'checkpoint={"every_steps": 1, "keep": 10}',
    ]


def first_meta_step(render, tmp_path, example, rate, *overrides) -> dict:
    script = render(example, *overrides, f'optimizer={{"kind": "sgd", "learning_rate": {rate}}}')
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    return tf_check("meta_step", str(script), str(out), str(rate), cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("tasks", [1, 2])
def test_reptile_with_a_meta_step_of_one_is_sgd_on_the_task(tasks, render, tmp_path):
    """One task and a meta step of 1.0: the weights become the task's, adapted by plain SGD (a
    Keras SGD optimizer here). Two tasks: the mean of the two adapted from the same weights;
    it fails when a task starts from the one before's adapted weights."""
    result = first_meta_step(render, tmp_path, "mnist_reptile", 1.0,
                             *meta_overrides(tmp_path, tasks))  # fmt: skip
    assert result["tasks"] == tasks, result
    assert result["moved"] > 1e-3 and result["max_diff"] <= 1e-6, result


@pytest.mark.slow
@pytest.mark.parametrize("first_order", [False, True])
def test_maml_meta_gradient_is_the_nested_tape_reference(first_order, render, tmp_path):
    """Two tasks of 3 classes, 5 inner steps: the script's meta-gradient equals the one written
    out here with nested tapes (second order) within 1e-6; first-order MAML equals the
    reference with the inner gradients held constant, and differs from the second-order one."""
    result = first_meta_step(render, tmp_path, "mnist_maml", 1.0, *meta_overrides(tmp_path, 2),
                             f"training.first_order={first_order}")  # fmt: skip
    assert result["tasks"] == 2 and result["orders_apart"] > 1e-4, result
    if first_order:
        assert result["to_first_order"] <= 1e-6 < result["to_second_order"], result
    else:
        assert result["to_second_order"] <= 1e-6 < result["to_first_order"], result


@pytest.mark.slow
def test_tasks_are_a_function_of_seed_step_and_task(render, tmp_path):
    script = render("mnist_maml", *data.small_data_overrides("mnist_maml", tmp_path))
    result = tf_check("meta_tasks", str(script), cwd=tmp_path)
    # 4 tasks of 3 classes, 1 support and 5 query images of each.
    assert result["shapes"] == [[4, 3, 28, 28], [4, 3], [4, 15, 28, 28], [4, 15]], result
    assert result["resumed_diff"] == 0.0 and result["rerun_diff"] == 0.0, result
    assert result["distinct_classes"] and result["disjoint_sets"], result
    assert result["train_classes"] == [0, 1, 2, 3, 4, 5, 6], result
    assert result["test_classes"] == [7, 8, 9], result
    assert result["tasks_differ"], result


@pytest.mark.slow
@pytest.mark.parametrize("example", ["mnist_reptile", "mnist_maml"])
def test_meta_learning_trains_and_its_tasks_are_learnt(example, render, tmp_path):
    """The loss logged (Reptile: the support loss after the inner steps; MAML: the query loss
    of the adapted networks, its meta-objective) falls, and held-out classes are told apart
    after adaptation far above chance (1/3)."""
    script = render(example, *data.small_data_overrides(example, tmp_path),
                    "training.evaluation_tasks=30", "loop.log_every_steps=5")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "6", "--output-dir", str(out), cwd=tmp_path)
    losses = [r["loss"] for r in records(out) if "loss" in r]
    assert sum(losses[-3:]) < 0.95 * sum(losses[:3]), losses
    validated = [r["val_accuracy"] for r in records(out) if "val_loss" in r]
    assert len(validated) == 6 and validated[-1] > 0.6, validated
    # The exported network serves raw images, prepared as the tasks' were.
    served = serving_matches(script, out, tmp_path)
    assert served["scores"] <= 1e-6 and set(served["outputs"]) == {"scores"}, served


@pytest.mark.slow
def test_a_class_with_too_few_examples_stops_the_script_at_its_start(render, tmp_path):
    """An .npz source's classes are known only when the script loads it: 30 images a class
    cannot give 40 shots and 5 queries. Exit 1, the fields named, no traceback."""
    script = render("mnist_maml", *data.small_data_overrides("mnist_maml", tmp_path),
                    "training.shots=40")  # fmt: skip
    proc = run_preloaded(str(script), "--output-dir", str(tmp_path / "run"), cwd=tmp_path,
                         check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "a class has 30 examples, fewer than training.shots + training.queries = 45" in (
        proc.stderr
    ), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
