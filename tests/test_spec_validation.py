"""The spec language accepts the examples and rejects bad specs with messages that say where and
how to fix: the `field.path` of the problem, and a phrase of the fix.

Bad specs are a valid example's `model_dump()` with one thing changed. Each is checked twice: by
pydantic (`Spec.model_validate` raises `ValidationError`) and the way users meet it, through
`load_spec` on a spec file (raises `SpecError` with `field.path: message` lines)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLES, run_cli
from loopgen import dsl
from loopgen.dsl import Spec
from loopgen.dsl.loader import apply_override, load_spec
from loopgen.errors import SpecError
from pydantic import ValidationError

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.py"))


def dumped(example: str) -> dict[str, Any]:
    """A valid example's spec as a plain (deep-copied) dict, ready to be broken."""
    return copy.deepcopy(load_spec(EXAMPLES / f"{example}.py").model_dump())


def reject(tmp_path: Path, data: dict[str, Any], errors: int = 1) -> str:
    """Asserts that `data` is not a valid spec, both for pydantic and for `load_spec` on a
    spec file binding it, and returns the loader's message."""
    with pytest.raises(ValidationError):
        Spec.model_validate(data)
    path = tmp_path / "bad_spec.py"
    path.write_text(f"spec = {data!r}\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    plural = "error" if errors == 1 else "errors"
    assert f"the spec has {errors} {plural}:" in message, message
    return message


def reject_set(example: str, *overrides: str, errors: int = 1) -> str:
    """Asserts that the example with `--set` overrides does not load; returns the message."""
    with pytest.raises(SpecError) as info:
        load_spec(EXAMPLES / f"{example}.py", overrides=list(overrides))
    message = str(info.value)
    if errors:
        plural = "error" if errors == 1 else "errors"
        assert f"the spec has {errors} {plural}:" in message, message
    return message


def line_for(message: str, path: str) -> str:
    """The error line about the field `path` (e.g. `spec.data.batch_size`)."""
    lines = [line.strip() for line in message.splitlines() if line.strip().startswith(f"{path}:")]
    assert lines, f"no error line for {path!r} in:\n{message}"
    return lines[0]


def accept(data: dict[str, Any]) -> Spec:
    return Spec.model_validate(data)


# --- good specs ------------------------------------------------------------------------------


def test_there_are_examples():
    assert len(EXAMPLE_FILES) >= 5, EXAMPLE_FILES


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_loads(path: Path):
    spec = load_spec(path)
    assert isinstance(spec, Spec)
    assert spec.name == path.stem
    # The dump of a valid spec is itself a valid spec, and the same one.
    assert Spec.model_validate(spec.model_dump()) == spec
    assert Spec.model_validate(spec.model_dump(mode="json")) == spec


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_validates_with_the_cli(path: Path):
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0, proc.stderr
    assert f"{path}: ok" in proc.stdout
    assert proc.stderr == ""


def test_valid_override_applies():
    spec = load_spec(EXAMPLES / "mnist_mlp.py", overrides=["data.batch_size=32", "loop.epochs=5"])
    assert spec.data.batch_size == 32
    assert spec.loop.epochs == 5
    # JSON values: objects replace whole sections.
    spec = load_spec(
        EXAMPLES / "mnist_mlp.py",
        overrides=['checkpoint={"every_steps": 500}', "loop.log_every_steps=10"],
    )
    assert spec.checkpoint is not None
    assert (spec.checkpoint.every_steps, spec.checkpoint.every_epochs) == (500, None)


# --- wrong types and unknown fields ----------------------------------------------------------


def test_wrong_type(tmp_path):
    data = dumped("mnist_mlp")
    data["data"]["batch_size"] = "big"
    line = line_for(reject(tmp_path, data), "spec.data.batch_size")
    assert "valid integer" in line


def test_wrong_type_through_set():
    message = reject_set("mnist_mlp", "data.batch_size=big")
    assert "--set data.batch_size=big" in message
    assert "valid integer" in line_for(message, "spec.data.batch_size")


def test_wrong_type_of_a_union_field_is_one_line_naming_what_fits(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][1]["units"] = "wide"
    line = line_for(reject(tmp_path, data), "spec.model.layers[1].units")
    assert "should be an integer, not 'wide'" in line


def test_constraint_inside_a_union_field_is_reported_alone(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][1]["units"] = 0
    line = line_for(reject(tmp_path, data), "spec.model.layers[1].units")
    assert "0 is out of range: it is a size of at least 1" in line


@pytest.mark.parametrize(
    ("section", "typo", "path", "fix"),
    [
        ("data", "bach_size", "spec.data.bach_size", "did you mean 'batch_size'?"),
        (None, "naem", "spec.naem", "did you mean 'name'?"),
        ("loop", "epoch", "spec.loop.epoch", "did you mean 'epochs'?"),
        ("loop", "colour", "spec.loop.colour", "remove it or check its spelling"),
        # A field that lives elsewhere: Keras' name, or a section of the Spec given to another.
        ("data", "validation_split", "spec.data.validation_split",
         "Keras' validation_split is data.validation=Split(fraction=0.2) in a spec"),
        ("loop", "early_stopping", "spec.loop.early_stopping",
         "it is Spec.early_stopping, not a field of Loop: move it into Spec(early_stopping=...)"),
        ("loop", "seed", "spec.loop.seed", "remove it or check its spelling"),  # not a section
    ],
)  # fmt: skip
def test_unknown_field(tmp_path, section, typo, path, fix):
    """An unknown field's message names the field it was likely meant to be (as a Keras
    argument's does), or where it lives."""
    data = dumped("mnist_mlp")
    (data[section] if section else data)[typo] = 0.2
    line = line_for(reject(tmp_path, data), path)
    assert f"{path}: unknown field; {fix}" in line, line


def test_unknown_field_in_a_layer(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][1]["unit"] = 64
    line = line_for(reject(tmp_path, data), "spec.model.layers[1].unit")
    assert "Dense has no argument 'unit'; did you mean 'units'?" in line


def test_unknown_field_through_set():
    message = reject_set("mnist_mlp", "data.bach_size=32")
    assert "unknown field" in line_for(message, "spec.data.bach_size")


def test_missing_required_field(tmp_path):
    data = dumped("mnist_mlp")
    del data["loss"]
    assert "loss is missing" in line_for(reject(tmp_path, data), "spec")


# --- discriminated unions: unknown kinds -----------------------------------------------------


def test_unknown_layer_kind(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][1]["kind"] = "dense_layer"
    # The path is the user's: no `sequential` tag in it.
    line = line_for(reject(tmp_path, data), "spec.model.layers[1]")
    assert "kind='dense_layer' is not a Keras layer; did you mean 'dense'" in line


def test_unknown_layer_kind_inside_a_repeat(tmp_path):
    data = dumped("pets_unet")
    data["model"]["layers"][0]["layers"][1]["kind"] = "batchnorm"
    line = line_for(reject(tmp_path, data), "spec.model.layers[0].layers[1]")
    assert "'batchnorm'" in line and "'batch_normalization'" in line


def test_unknown_optimizer_kind(tmp_path):
    data = dumped("mnist_mlp")
    data["optimizer"]["kind"] = "adamm"
    line = line_for(reject(tmp_path, data), "spec.optimizer")
    assert "kind='adamm' is not a Keras optimizer; did you mean 'adam'" in line


def test_unknown_loss_kind(tmp_path):
    data = dumped("mnist_mlp")
    data["loss"]["kind"] = "cross_entropy"
    line = line_for(reject(tmp_path, data), "spec.loss")
    assert "kind='cross_entropy' is not a Keras loss; did you mean" in line
    assert "'categorical_crossentropy'" in line


def test_unknown_schedule_kind(tmp_path):
    # learning_rate is a number or a schedule: only the schedule's problem is reported.
    data = dumped("cifar10_vgg")
    data["optimizer"]["learning_rate"]["kind"] = "step_decay"
    line = line_for(reject(tmp_path, data), "spec.optimizer.learning_rate")
    assert "'step_decay'" in line and "'piecewise_constant'" in line


def test_missing_kind(tmp_path):
    data = dumped("mnist_mlp")
    del data["model"]["layers"][1]["kind"]
    line = line_for(reject(tmp_path, data), "spec.model.layers[1].kind")
    assert "required field is missing" in line


def test_unknown_data_source_kind(tmp_path):
    data = dumped("mnist_mlp")
    data["data"]["train"]["kind"] = "parquet"
    line = line_for(reject(tmp_path, data), "spec.data.train")
    assert "'parquet'" in line and "'npz'" in line and "'csv'" in line


# --- cadences ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -5])
@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("loop", "log_every_steps"),
        ("loop", "validate_every_epochs"),
        ("loop", "epochs"),
        ("checkpoint", "every_epochs"),
        ("checkpoint", "keep"),
    ],
)
def test_zero_or_negative_cadence(tmp_path, section, field, value):
    data = dumped("mnist_mlp")
    data[section][field] = value
    line = line_for(reject(tmp_path, data), f"spec.{section}.{field}")
    assert "greater than 0" in line


def test_zero_checkpoint_steps(tmp_path):
    data = dumped("mnist_mlp")
    data["checkpoint"].update(every_epochs=None, every_steps=0)
    assert "greater than 0" in line_for(reject(tmp_path, data), "spec.checkpoint.every_steps")


def test_zero_cadence_through_set():
    message = reject_set("mnist_mlp", "loop.log_every_steps=0")
    assert "greater than 0" in line_for(message, "spec.loop.log_every_steps")
    message = reject_set("mnist_mlp", "checkpoint.every_epochs=0")
    assert "greater than 0" in line_for(message, "spec.checkpoint.every_epochs")


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"loop": {"log_every_steps": 2.5}}, "spec.loop.log_every_steps"),
        ({"loop": {"epochs": None, "steps": 2.5}}, "spec.loop.steps"),
        ({"checkpoint": {"every_epochs": None, "every_steps": 2.5}}, "spec.checkpoint.every_steps"),
        ({"data": {"batch_size": 2.5}}, "spec.data.batch_size"),
    ],
)
def test_fractional_count(tmp_path, changes, path):
    data = dumped("mnist_mlp")
    for section, fields in changes.items():
        data[section].update(fields)
    line = line_for(reject(tmp_path, data), path)
    assert "fractional part" in line


def test_both_checkpoint_cadences(tmp_path):
    data = dumped("mnist_mlp")
    data["checkpoint"]["every_steps"] = 500
    line = line_for(reject(tmp_path, data), "spec.checkpoint")
    assert "checkpoint.every_epochs" in line and "checkpoint.every_steps" in line
    assert "keep one" in line


def test_no_checkpoint_cadence(tmp_path):
    data = dumped("mnist_mlp")
    data["checkpoint"]["every_epochs"] = None
    line = line_for(reject(tmp_path, data), "spec.checkpoint")
    assert "checkpoint.every_epochs or checkpoint.every_steps" in line


def test_no_checkpoint_at_all_is_fine():
    data = dumped("mnist_mlp")
    data["checkpoint"] = None
    assert accept(data).checkpoint is None


@pytest.mark.parametrize(("epochs", "steps"), [(None, None), (2, 1000)])
def test_loop_needs_exactly_one_of_epochs_and_steps(tmp_path, epochs, steps):
    data = dumped("mnist_mlp")
    data["loop"].update(epochs=epochs, steps=steps)
    line = line_for(reject(tmp_path, data), "spec.loop")
    assert "exactly one of loop.epochs and loop.steps" in line


def test_loop_by_steps_is_fine():
    data = dumped("mnist_mlp")
    data["loop"].update(epochs=None, steps=1000)
    assert accept(data).loop.steps == 1000


# --- labels and losses ------------------------------------------------------------------------


def test_sparse_loss_with_one_hot_labels(tmp_path):
    data = dumped("mnist_mlp")
    data["data"].update(labels="one_hot", num_classes=10)
    message = reject(tmp_path, data)
    line = line_for(message, "spec")
    assert "loss.kind='sparse_categorical_crossentropy'" in line
    assert "data.labels='one_hot'" in line
    # The fix, both ways.
    assert 'use data.labels="sparse"' in line and "categorical_crossentropy" in line


def test_categorical_loss_with_sparse_labels(tmp_path):
    data = dumped("mnist_mlp")
    data["loss"]["kind"] = "categorical_crossentropy"
    line = line_for(reject(tmp_path, data), "spec")
    assert "loss.kind='categorical_crossentropy'" in line
    assert "data.labels='sparse'" in line
    assert 'use data.labels="one_hot"' in line and "sparse_categorical_crossentropy" in line


def test_sparse_metric_with_one_hot_labels(tmp_path):
    data = dumped("mnist_mlp")
    data["data"].update(labels="one_hot", num_classes=10)
    data["loss"]["kind"] = "categorical_crossentropy"
    line = line_for(reject(tmp_path, data), "spec")
    assert "metrics[0].kind='sparse_categorical_accuracy'" in line
    assert "data.labels='one_hot'" in line


def test_one_hot_labels_with_matching_loss_and_metric_are_fine():
    data = dumped("mnist_mlp")
    data["data"].update(labels="one_hot", num_classes=10)
    data["loss"]["kind"] = "categorical_crossentropy"
    data["metrics"] = [{"kind": "categorical_accuracy"}]
    assert accept(data).data.labels == "one_hot"


def test_one_hot_labels_need_num_classes(tmp_path):
    data = dumped("mnist_mlp")
    data["data"]["labels"] = "one_hot"
    data["loss"]["kind"] = "categorical_crossentropy"
    data["metrics"] = [{"kind": "categorical_accuracy"}]
    line = line_for(reject(tmp_path, data), "spec.data")
    assert "one_hot" in line and "data.num_classes" in line


def test_from_logits_after_softmax(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][3]["activation"] = "softmax"
    line = line_for(reject(tmp_path, data), "spec")
    assert "loss.from_logits=True" in line
    assert "model.layers[3].activation='softmax'" in line
    assert "set loss.from_logits=False" in line and "Remove the activation" in line


def test_from_logits_after_softmax_names_the_nested_layer(tmp_path):
    # The last layer of the model is the last layer of a trailing Repeat.
    data = dumped("mnist_mlp")
    last = data["model"]["layers"].pop()
    last["activation"] = "softmax"
    data["model"]["layers"].append({"kind": "repeat", "over": {"i": [1]}, "layers": [last]})
    line = line_for(reject(tmp_path, data), "spec")
    assert "model.layers[3].layers[0].activation='softmax'" in line


def test_from_logits_after_a_standalone_softmax_activation_layer(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"].append({"kind": "activation", "activation": "softmax"})
    line = line_for(reject(tmp_path, data), "spec")
    assert "model.layers[4].activation='softmax'" in line


def test_from_logits_after_sigmoid_names_sigmoid(tmp_path):
    data = dumped("mnist_mlp")
    data["loss"] = {"kind": "binary_crossentropy", "from_logits": True}
    data["model"]["layers"][3]["activation"] = "sigmoid"
    line = line_for(reject(tmp_path, data), "spec")
    assert "model.layers[3].activation='sigmoid'" in line
    assert "apply sigmoid a second time" in line


@pytest.mark.parametrize("activation", [None, "linear"])
def test_probabilities_expected_from_a_linear_layer(tmp_path, activation):
    data = dumped("mnist_mlp")
    data["loss"]["from_logits"] = False
    data["model"]["layers"][3]["activation"] = activation
    line = line_for(reject(tmp_path, data), "spec")
    assert "loss.from_logits=False" in line
    assert "model.layers[3] outputs logits" in line
    assert "set loss.from_logits=True" in line


def test_probabilities_from_softmax_are_fine():
    data = dumped("mnist_mlp")
    data["loss"]["from_logits"] = False
    data["model"]["layers"][3]["activation"] = "softmax"
    assert accept(data).loss.from_logits is False


# --- learning-rate schedules ------------------------------------------------------------------


def _cosine(warmup_steps: int) -> dict[str, Any]:
    return {
        "kind": "cosine_decay",
        "initial_learning_rate": 0.0,
        "warmup_target": 0.01,
        "warmup_steps": warmup_steps,
        "decay_steps": 1000,
    }


@pytest.mark.parametrize("warmup_steps", [500, 501, 10_000])
def test_cosine_warmup_not_below_loop_steps(tmp_path, warmup_steps):
    data = dumped("mnist_mlp")
    data["optimizer"]["learning_rate"] = _cosine(warmup_steps)
    data["loop"].update(epochs=None, steps=500)
    line = line_for(reject(tmp_path, data), "spec")
    assert f"optimizer.learning_rate.warmup_steps={warmup_steps}" in line
    assert "loop.steps=500" in line
    assert "shorten the warmup or train longer" in line


def test_cosine_warmup_below_loop_steps_is_fine():
    data = dumped("mnist_mlp")
    data["optimizer"]["learning_rate"] = _cosine(499)
    data["loop"].update(epochs=None, steps=500)
    assert accept(data).optimizer.learning_rate.warmup_steps == 499


def test_cosine_warmup_steps_without_target(tmp_path):
    data = dumped("shapes_unet")
    data["optimizer"]["learning_rate"]["warmup_target"] = None
    line = line_for(reject(tmp_path, data), "spec.optimizer.learning_rate")
    assert "warmup_steps and warmup_target go together" in line


@pytest.mark.parametrize("values", [[0.1, 0.01], [0.1, 0.01, 0.001, 0.0001]])
def test_piecewise_values_and_boundaries_mismatch(tmp_path, values):
    data = dumped("cifar10_vgg")  # boundaries [7820, 15640]
    data["optimizer"]["learning_rate"]["values"] = values
    # One error, at the schedule: not a second one saying it is not a number either.
    line = line_for(reject(tmp_path, data), "spec.optimizer.learning_rate")
    assert f"values has {len(values)} entries and boundaries 2" in line
    assert "one more entry than boundaries" in line


def test_piecewise_boundaries_not_increasing(tmp_path):
    data = dumped("cifar10_vgg")
    data["optimizer"]["learning_rate"]["boundaries"] = [15640, 7820]
    line = line_for(reject(tmp_path, data), "spec.optimizer.learning_rate")
    assert "strictly increasing" in line


# --- model structure --------------------------------------------------------------------------


def test_var_outside_a_repeat(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][1]["units"] = {"var": "width"}
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "layers[1] refers to Var 'width'" in line
    assert "no enclosing Repeat defines it" in line and "over" in line


def test_var_not_defined_by_the_enclosing_repeat(tmp_path):
    data = dumped("cifar10_vgg")
    data["model"]["layers"][0]["layers"][0]["args"]["filters"] = {"var": "channels"}
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "layers[0].layers[0] refers to Var 'channels'" in line
    assert "in scope: ['filters']" in line


def test_var_in_a_custom_layer_that_is_not_a_parameter(tmp_path):
    data = dumped("cifar10_vgg")
    data["custom_layers"][0]["layers"][0]["filters"] = {"var": "width"}
    line = line_for(reject(tmp_path, data), "spec.custom_layers[0]")
    assert "layers[0] refers to Var 'width'" in line and "add it to params" in line


def test_custom_layer_class_not_declared(tmp_path):
    data = dumped("cifar10_vgg")
    data["model"]["layers"][0]["layers"][0]["cls"] = "VGGBlok"
    line = line_for(reject(tmp_path, data), "spec")
    assert "model.layers[0].layers[0].cls is 'VGGBlok'" in line
    assert "['VGGBlock']" in line and "declare it in custom_layers" in line


def test_custom_layer_without_any_classes(tmp_path):
    data = dumped("cifar10_vgg")
    data["custom_layers"] = []
    line = line_for(reject(tmp_path, data), "spec")
    assert "model.layers[0].layers[0].cls is 'VGGBlock'" in line and "no classes" in line


def test_concatenate_without_saveskip(tmp_path):
    data = dumped("shapes_unet")
    encoder = data["model"]["layers"][0]["layers"]
    assert encoder[1] == {"kind": "save_skip"}
    del encoder[1]
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "layers[2].layers[1]: Concatenate has no saved skip" in line
    assert "SaveSkip()" in line


def test_saveskip_without_concatenate(tmp_path):
    data = dumped("shapes_unet")
    decoder = data["model"]["layers"][2]["layers"]
    assert decoder[1]["kind"] == "concatenate"
    del decoder[1]
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "2 SaveSkip() never joined by a Concatenate" in line


@pytest.mark.parametrize("kind", ["save_skip", "concatenate"])
def test_skip_connections_in_a_sequential_model(tmp_path, kind):
    data = dumped("mnist_mlp")
    data["model"]["layers"].insert(1, {"kind": kind})
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "layers[1]: skip connections need a functional model" in line
    assert "Functional(" in line


def test_concatenate_in_a_custom_layer(tmp_path):
    data = dumped("shapes_unet")
    data["custom_layers"][0]["layers"].append({"kind": "concatenate"})
    line = line_for(reject(tmp_path, data), "spec.custom_layers[0]")
    assert "Concatenate needs several inputs" in line and "functional or graph model" in line


def test_repeat_lists_of_different_lengths(tmp_path):
    data = dumped("pets_unet")
    data["model"]["layers"][0]["over"]["extra"] = [1, 2]
    line = line_for(reject(tmp_path, data), "spec.model.layers[0]")
    assert "same, non-zero number of values" in line


def test_empty_model(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"] = []
    assert "at least one layer" in line_for(reject(tmp_path, data), "spec.model")


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["my-run", 'my"run', "my'run", 'x"""; import os; """', "1st_run", "class", "", "über"]
)
def test_run_name_must_be_an_identifier(tmp_path, name):
    data = dumped("mnist_mlp")
    data["name"] = name
    line = line_for(reject(tmp_path, data), "spec.name")
    assert "not a valid Python identifier" in line
    assert "ASCII letters, digits and underscores" in line


def test_run_name_with_dunder(tmp_path):
    data = dumped("mnist_mlp")
    data["name"] = "__main__"
    assert "reserved" in line_for(reject(tmp_path, data), "spec.name")


def test_run_name_through_set():
    message = reject_set("mnist_mlp", "name=my-run")
    assert "'my-run' is not a valid Python identifier" in line_for(message, "spec.name")


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (("model", "layers", 3, "name"), "spec.model.layers[3].name"),
        (("metrics", 0, "name"), "spec.metrics[0].name"),
        (("custom_layers", 0, "name"), "spec.custom_layers[0].name"),
    ],
)
def test_other_names_must_be_identifiers(tmp_path, where, path):
    data = dumped("cifar10_vgg" if where[0] == "custom_layers" else "mnist_mlp")
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = 'pred"s'
    line = line_for(reject(tmp_path, data), path)
    assert "not a valid Python identifier" in line


@pytest.mark.parametrize("name", ["preprocess", "keras", "print", "SEED"])
def test_custom_layer_class_name_clashes_with_the_script(tmp_path, name):
    # A class named `preprocess` replaced the script's preprocess() and broke the data map.
    data = dumped("cifar10_vgg")
    data["custom_layers"][0]["name"] = name
    data["model"]["layers"][0]["layers"][0]["cls"] = name
    line = line_for(reject(tmp_path, data), "spec")
    assert f"custom_layers[0].name: class name {name!r} would shadow" in line
    assert "rename it" in line


# --- imported models --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["pkg.mod.build", "pkg/mod:build", "pkg.mod:", ":build", "pkg.mod:build:x", "pkg mod:build",
     "pkg..mod:build", "1pkg.mod:build", "pkg.mod:build()"],
)  # fmt: skip
def test_imported_target_form(tmp_path, target):
    data = dumped("mnist_mlp")
    data["model"] = {"kind": "import", "target": target}
    line = line_for(reject(tmp_path, data), "spec.model.target")
    assert "'package.module:function'" in line


@pytest.mark.parametrize("target", ["pkg.mod:build", "models:build_unet", "a.b.c:_make"])
def test_imported_target_valid(target):
    data = dumped("mnist_mlp")
    data["model"] = {"kind": "import", "target": target, "kwargs": {"width": 64}}
    spec = accept(data)
    assert spec.model.target == target


# --- metrics ----------------------------------------------------------------------------------


def test_duplicate_metric_names(tmp_path):
    data = dumped("mnist_mlp")
    data["metrics"] = [
        {"kind": "sparse_categorical_accuracy"},
        {"kind": "sparse_categorical_accuracy"},
    ]
    line = line_for(reject(tmp_path, data), "spec")
    assert "metrics: names ['accuracy', 'accuracy']" in line
    assert "unique name" in line


def test_metric_named_loss(tmp_path):
    data = dumped("mnist_mlp")
    data["metrics"][0]["name"] = "loss"
    line = line_for(reject(tmp_path, data), "spec")
    assert "metrics" in line and "'loss'" in line


def test_distinct_metric_names_are_fine():
    data = dumped("mnist_mlp")
    data["metrics"] = [
        {"kind": "sparse_categorical_accuracy"},
        {"kind": "sparse_categorical_accuracy", "name": "acc2"},
        {"kind": "sparse_top_k_categorical_accuracy", "k": 3},
    ]
    assert [m.metric_name for m in accept(data).metrics] == ["accuracy", "acc2", "top_k_accuracy"]


# Keras gives these names to a loss and to a metric; `from loopgen.dsl import *` binds the loss.
SHARED_NAMES = [name for name in dsl.losses.__all__ if hasattr(dsl.metrics, name)]


def test_the_names_of_both_a_loss_and_a_metric_are_known():
    assert "MeanAbsoluteError" in SHARED_NAMES and "MeanSquaredError" in SHARED_NAMES
    assert "Huber" not in SHARED_NAMES and "AUC" not in SHARED_NAMES


def _regression_spec(tmp_path: Path, loss: str, metric: str) -> Path:
    path = tmp_path / "spec.py"
    path.write_text(
        "from loopgen.dsl import *\n\n"
        "spec = Spec(\n"
        '    name="regression",\n'
        '    data=Data(train=Npz(path="train.npz"), batch_size=32),\n'
        "    model=Sequential(input_shape=(8,), layers=[Dense(1)]),\n"
        f"    loss={loss},\n"
        "    optimizer=Adam(),\n"
        f"    metrics=[{metric}],\n"
        "    loop=Loop(epochs=1),\n"
        ")\n"
    )
    return path


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_the_loss_of_a_metric_name_given_as_a_metric_names_the_metric(tmp_path, name):
    path = _regression_spec(tmp_path, "MeanSquaredError()", f"{name}()")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    line = line_for(str(info.value), "spec.metrics[0]")
    assert f"{name}() is the loss of that name (keras.losses.{name})" in line
    assert line.endswith(f"the metric is metrics.{name}()"), line


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_the_metric_of_a_loss_name_given_as_the_loss_names_the_loss(tmp_path, name):
    path = _regression_spec(tmp_path, f"metrics.{name}()", "metrics.MeanAbsoluteError()")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    line = line_for(str(info.value), "spec.loss")
    assert f"metrics.{name}() is the metric of that name (keras.metrics.{name})" in line
    assert line.endswith(f"the loss is {name}()"), line


def test_a_loss_or_metric_of_the_other_section_only(tmp_path):
    path = _regression_spec(tmp_path, "AUC()", "Huber()")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "AUC() is a metric (keras.metrics.AUC), not a loss" in line_for(message, "spec.loss")
    assert "Huber() is a loss (keras.losses.Huber), not a metric" in line_for(
        message, "spec.metrics[0]"
    )


def test_the_metric_of_a_shared_name_is_metrics_dot_name(tmp_path):
    spec = load_spec(
        _regression_spec(tmp_path, "MeanSquaredError()", "metrics.MeanAbsoluteError()")
    )
    assert spec.metrics[0].section == "metrics" and spec.metrics[0].kind == "mean_absolute_error"


# --- several problems at once, and --set paths ------------------------------------------------


def test_every_problem_is_listed(tmp_path):
    data = dumped("mnist_mlp")
    data["data"]["batch_size"] = 0
    data["loop"]["log_every_steps"] = "often"
    data["data"]["bach_size"] = 3
    message = reject(tmp_path, data, errors=3)
    assert "greater than 0" in line_for(message, "spec.data.batch_size")
    assert "valid integer" in line_for(message, "spec.loop.log_every_steps")
    assert "unknown field" in line_for(message, "spec.data.bach_size")


@pytest.mark.parametrize(
    ("override", "phrase"),
    [
        ("data.batch_size", "expected FIELD.PATH=VALUE"),
        ("data..batch_size=3", "empty field name"),
        ("model.layers[9].units=3", "model.layers[9] is out of range: model.layers has 4 entries"),
        ("data[0]=3", "data is not a list"),
        ("model.layers[1].units.x=3", "model.layers[1].units is 64, not an object"),
    ],
)
def test_bad_override_path(override, phrase):
    message = reject_set("mnist_mlp", override, errors=0)
    assert message.startswith("--set ")
    assert phrase in message


def test_override_does_not_change_the_input():
    data = dumped("mnist_mlp")
    before = copy.deepcopy(data)
    changed = apply_override(data, "data.batch_size=7")
    assert data == before
    assert changed["data"]["batch_size"] == 7


def test_override_values_are_json_or_strings():
    data = dumped("mnist_mlp")
    assert apply_override(data, "loop.epochs=3")["loop"]["epochs"] == 3
    assert apply_override(data, "data.rescale=null")["data"]["rescale"] is None
    assert apply_override(data, "data.cache=false")["data"]["cache"] is False
    assert apply_override(data, "name=run_2")["name"] == "run_2"
    assert apply_override(data, 'name="3"')["name"] == "3"
    assert apply_override(data, "output_dir=a=b")["output_dir"] == "a=b"


# --- names and wiring that render but would fail at run time -----------------------------------


def _functional(layers: list[dict]) -> dict:
    data = dumped("mnist_mlp")
    data["model"] = {"kind": "functional", "input_shape": [28, 28], "layers": layers}
    return data


@pytest.mark.parametrize("name", ["x", "layers", "model", "skips"])
def test_repeat_variable_must_not_shadow_script_names(tmp_path, name):
    # `for x in (4, 5): x = layers.Dense(x)(x)` fails at run time.
    data = _functional(
        [
            {"kind": "flatten"},
            {"kind": "repeat", "over": {name: [4, 5]},
             "layers": [{"kind": "dense", "units": {"var": name}}]},
            {"kind": "dense", "units": 10},
        ]
    )  # fmt: skip
    line = line_for(reject(tmp_path, data), "spec.model.layers[1]")
    assert f"loop variable {name!r} would shadow" in line


def test_nested_repeat_must_not_reuse_the_outer_variable(tmp_path):
    inner = {"kind": "repeat", "over": {"units": [3]}, "layers": [{"kind": "dense", "units": 2}]}
    outer = {"kind": "repeat", "over": {"units": [8, 16]},
             "layers": [inner, {"kind": "dense", "units": {"var": "units"}}]}  # fmt: skip
    data = _functional([{"kind": "flatten"}, outer, {"kind": "dense", "units": 10}])
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "layers[1].layers[0].over reuses the loop variable 'units'" in line


def test_named_layer_inside_a_repeat_or_twice_is_rejected(tmp_path):
    named = {"kind": "dense", "units": 4, "name": "hidden"}
    data = _functional(
        [{"kind": "flatten"}, {"kind": "repeat", "over": {"i": [1, 2]}, "layers": [named]},
         {"kind": "dense", "units": 10}]
    )  # fmt: skip
    line = line_for(reject(tmp_path, data), "spec.model")
    assert "'hidden' is used more than once" in line and "in a Repeat" in line
    twice = _functional([{"kind": "flatten"}, named, named, {"kind": "dense", "units": 10}])
    line = line_for(reject(tmp_path, twice), "spec.model")
    assert "layers[1] and layers[2]" in line
    once = _functional([{"kind": "flatten"}, named, {"kind": "dense", "units": 10}])
    assert accept(once)


@pytest.mark.parametrize(
    ("params", "phrase"),
    [({"kwargs": 8}, "parameter 'kwargs' would shadow"),
     ({"self": 8}, "parameter 'self' would shadow"),
     ({"name": 8}, "'name' is an attribute every Keras layer has"),
     ({"trainable": 8}, "'trainable' is an attribute every Keras layer has")],
)  # fmt: skip
def test_custom_layer_params_must_not_clash(tmp_path, params, phrase):
    data = dumped("cifar10_vgg")
    data["custom_layers"][0]["params"] = {"filters": 32, **params}
    line = line_for(reject(tmp_path, data), "spec.custom_layers[0]")
    assert phrase in line


@pytest.mark.parametrize(
    ("names", "phrase"),
    [(["fc", "fc"], "'fc' is used twice"),
     (["filters", None], "clashes with a parameter"),
     (["output", None], "clashes with a Keras layer attribute")],
)  # fmt: skip
def test_custom_sublayer_names_must_be_unique_attributes(tmp_path, names, phrase):
    data = dumped("cifar10_vgg")
    for layer, name in zip(data["custom_layers"][0]["layers"], names, strict=False):
        layer["name"] = name
    line = line_for(reject(tmp_path, data), "spec.custom_layers[0]")
    assert phrase in line


def _with_inner_class(data: dict, inner_cls: str) -> dict:
    data["custom_layers"].append(
        {"name": "Outer", "params": {}, "layers": [{"kind": "custom", "cls": inner_cls}]}
    )
    return data


def test_custom_layer_inside_a_class_must_be_declared(tmp_path):
    data = _with_inner_class(dumped("cifar10_vgg"), "Nope")
    line = line_for(reject(tmp_path, data), "spec")
    assert "custom_layers[1].layers[0].cls is 'Nope'" in line


def test_custom_layer_classes_must_not_contain_themselves(tmp_path):
    data = _with_inner_class(dumped("cifar10_vgg"), "Outer")
    line = line_for(reject(tmp_path, data), "spec")
    assert "Outer -> Outer contains itself" in line


def test_custom_layer_args_must_be_parameters(tmp_path):
    data = dumped("cifar10_vgg")
    data["model"]["layers"][0]["layers"][0]["args"] = {"filter": 3}
    line = line_for(reject(tmp_path, data), "spec")
    assert "passes 'filter', which is not a parameter of VGGBlock" in line
    assert "['filters']" in line


def test_binary_accuracy_on_logits_needs_threshold_zero(tmp_path):
    data = dumped("mnist_mlp")
    data["model"]["layers"][-1]["units"] = 1
    data["loss"] = {"kind": "binary_crossentropy", "from_logits": True}
    data["metrics"] = [{"kind": "binary_accuracy"}]
    line = line_for(reject(tmp_path, data), "spec")
    assert "metrics[0].threshold=0.5 but loss.from_logits=True" in line
    assert "set threshold=0.0" in line
    data["metrics"] = [{"kind": "binary_accuracy", "threshold": 0.0}]
    assert accept(data)


@pytest.mark.parametrize(
    ("example", "source"),
    [
        ("cifar10_vgg", {"kind": "image_directory", "path": "imgs", "image_size": [32, 32]}),
        ("reviews_text", {"kind": "text_directory", "path": "texts"}),
    ],
)
def test_split_of_a_directory_is_per_class_and_seeded(example, source):
    data = dumped(example)
    data["data"]["train"] = source
    data["data"]["validation"] = {"kind": "split", "fraction": 0.2, "seed": 1337}
    assert accept(data).data.validation.seed == 1337
    data["data"]["validation"] = {"kind": "split", "fraction": 0.2}
    assert accept(data).data.validation.seed is None  # the spec's seed


def test_split_of_arrays_takes_no_seed(tmp_path):
    data = dumped("mnist_mlp")
    data["data"]["validation"] = {"kind": "split", "fraction": 0.2, "seed": 1337}
    line = line_for(reject(tmp_path, data), "spec")
    assert "data.validation.seed is set but data.train is a keras_dataset source" in line
    assert "its last examples" in line and "Remove the seed" in line


def test_fine_tune_top_layers_is_a_positive_count_instead_of_from_layer(tmp_path):
    data = dumped("flowers_finetune")
    data["fine_tune"]["top_layers"] = 20
    line = line_for(reject(tmp_path, data), "spec.fine_tune")
    assert "from_layer='block_13_expand' and fine_tune.top_layers=20 both say" in line
    data["fine_tune"]["from_layer"] = None
    assert accept(data).fine_tune.top_layers == 20
    data["fine_tune"]["top_layers"] = 0
    assert "greater than 0" in line_for(reject(tmp_path, data), "spec.fine_tune.top_layers")
    data["fine_tune"]["top_layers"] = None
    data["fine_tune"]["from_layer"] = 20
    line = line_for(reject(tmp_path, data), "spec.fine_tune.from_layer")
    assert "20 is not a layer's name" in line and "set top_layers=20 instead" in line


def test_imported_package_must_not_shadow_script_names_but_keras_is_fine(tmp_path):
    data = dumped("mnist_mlp")
    data["model"] = {"kind": "import", "target": "layers.zoo:build"}
    line = line_for(reject(tmp_path, data), "spec.model.target")
    assert "imported package 'layers' would shadow" in line
    data["model"] = {"kind": "import", "target": "keras.applications:MobileNetV3Small"}
    assert accept(data)


def test_shapes_validation_task_must_match_training(tmp_path):
    data = dumped("shapes_unet")
    data["data"]["validation"]["task"] = "classification"
    line = line_for(reject(tmp_path, data), "spec.data")
    assert "data.validation.task='classification' but data.train.task='segmentation'" in line


@pytest.mark.parametrize(
    "override, path",
    [
        ("optimizer.learning_rate=1e309", "spec.optimizer.learning_rate"),  # parses as inf
        ("optimizer.learning_rate=NaN", "spec.optimizer.learning_rate"),
        ("data.rescale=-Infinity", "spec.data.rescale"),
        ('gradients={"clip_norm": 1e999}', "spec.gradients.clip_norm"),
        (
            'optimizer.learning_rate={"kind": "exponential_decay", "initial_learning_rate": '
            'Infinity, "decay_steps": 10, "decay_rate": 0.5}',
            "spec.optimizer.learning_rate.initial_learning_rate",
        ),
        (
            'model.layers[1].kernel_regularizer={"kind": "l2", "l2": 1e400}',
            "spec.model.layers[1].kernel_regularizer.l2",
        ),
    ],
)
def test_nan_and_infinity_are_refused_with_the_field_path(override, path):
    """Before, these reached the code generator and crashed `render` with a traceback."""
    message = reject_set("mnist_mlp", override)
    assert "NaN and ±inf are not allowed here; give a finite number" in line_for(message, path)
    proc = run_cli("render", str(EXAMPLES / "mnist_mlp.py"), "--set", override)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert path in proc.stderr


# --- values that validate as numbers but that the script cannot take ---------------------------


@pytest.mark.parametrize(
    "changes, path, phrase",
    [
        ({"seed": -1}, "spec.seed", "-1 is out of range: a seed is from 0 to 4294967295"),
        ({"seed": 2**32}, "spec.seed", "a seed is from 0 to 4294967295 (2**32 - 1)"),
        ({"data": {"train": {"kind": "shapes", "seed": -7}}}, "spec.data.train.seed", "a seed"),
        (
            {"data": {"validation": {"kind": "split", "seed": 2**40}}},
            "spec.data.validation.seed",
            "a seed is from 0 to 4294967295",
        ),
        (
            {"data": {"batch_size": 2**31}},
            "spec.data.batch_size",
            "a batch size is from 1 to 2147483647 (2**31 - 1)",
        ),
        ({"loop": {"epochs": 10**12}}, "spec.loop.epochs", "epochs are from 1 to 2147483647"),
        (
            {"loop": {"epochs": None, "steps": 2**63}},
            "spec.loop.steps",
            "steps are from 1 to 9223372036854775807 (2**63 - 1)",
        ),
    ],
    ids=[
        "seed_negative",
        "seed_2**32",
        "shapes_seed",
        "split_seed",
        "batch_size",
        "epochs",
        "steps",
    ],
)
def test_numbers_out_of_the_scripts_range_are_refused(tmp_path, changes, path, phrase):
    """Before, these validated and the script failed (NumPy's seeds are 0 to 2**32 - 1) or
    counted wrong (a batch's examples are counted in an int32, steps in an int64)."""
    data = dumped("mnist_mlp")
    for key, value in changes.items():
        if isinstance(value, dict):
            data[key].update(value)
        else:
            data[key] = value
    line = line_for(reject(tmp_path, data), path)
    assert phrase in line
    assert "out of range" in line


def test_the_largest_numbers_the_script_takes_are_fine():
    data = dumped("mnist_mlp")
    data["seed"] = 2**32 - 1
    data["data"]["batch_size"] = 2**31 - 1
    data["loop"]["epochs"] = 2**31 - 1
    spec = accept(data)
    assert (spec.seed, spec.data.batch_size, spec.loop.epochs) == (2**32 - 1, 2**31 - 1, 2**31 - 1)
    data["loop"].update(epochs=None, steps=2**63 - 1)
    assert accept(data).loop.steps == 2**63 - 1


def test_the_schema_tells_editors_the_ranges():
    from loopgen.dsl.schema import spec_schema

    schema = spec_schema()
    assert schema["properties"]["seed"]["minimum"] == 0
    assert schema["properties"]["seed"]["maximum"] == 2**32 - 1
    assert schema["$defs"]["Data"]["properties"]["batch_size"]["maximum"] == 2**31 - 1


# --- specs nested too deeply for Python to read --------------------------------------------------

DEEP = 100_000
DEEP_SPECS = {
    "lists.json": '{"name": "deep", "seed": ' + "[" * DEEP + "]" * DEEP + "}",
    "objects.json": '{"name": "deep", "seed": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}",
    "brackets.py": "spec = " + "[" * DEEP + "]" * DEEP + "\n",
    "subscripts.py": "spec = x" + "[0]" * DEEP + "\n",
    "signs.py": "spec = " + "-" * DEEP + "1\n",
    "sum.py": "spec = " + " + ".join(["1"] * DEEP) + "\n",
    "data.py": f"seed = 1\nfor _ in range({DEEP}):\n    seed = [seed]\nspec = {{'seed': seed}}\n",
}
"""Spec files nested 100,000 levels deep: as JSON, as Python source, as data the file builds."""


@pytest.mark.parametrize("name", DEEP_SPECS)
@pytest.mark.parametrize("command", ["render", "validate"])
def test_a_spec_nested_100000_levels_deep_is_one_line_of_error(tmp_path, command, name):
    """Before, a RecursionError traceback (JSON, data), a message with the 200,000-character
    line (brackets) or a bare `MemoryError:` (signs)."""
    spec_file = tmp_path / name
    spec_file.write_text(DEEP_SPECS[name])
    out = tmp_path / "out" / "train.py"
    proc = run_cli(command, str(spec_file), *(["-o", str(out)] if command == "render" else []))
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"error: {spec_file}"), proc.stderr[:2000]
    assert proc.stderr.count("\n") == 1 and len(proc.stderr) < 300, proc.stderr[:2000]
    assert "nested" in proc.stderr and "a spec needs a few levels" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_data_nested_too_deeply_names_the_field(tmp_path):
    data = dumped("mnist_mlp")
    value: Any = 3
    for _ in range(150):  # within what Python reads, beyond what a spec needs
        value = [value]
    data["model"]["layers"][1]["units"] = value
    path = tmp_path / "deep.py"
    path.write_text(f"spec = {data!r}\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value).startswith(
        f"{path}: spec.model.layers[1].units[0][0][0][0]...: lists and dicts nested more than "
        "100 levels deep"
    )


@pytest.mark.parametrize("depth", [150, 5000])
def test_a_value_nested_too_deeply_through_set(depth):
    message = reject_set("mnist_mlp", "seed=" + "[" * depth + "]" * depth, errors=0)
    assert "nested more than 100 levels deep" in message


def test_a_spec_object_built_from_a_value_nested_too_deeply(tmp_path):
    """The spec's own classes validate it as the file runs: Python's stack ends first."""
    spec_file = tmp_path / "spec.py"
    spec_file.write_text(
        "from loopgen.dsl import Reshape\n"
        "shape = (7, 7, 16)\n"
        f"for _ in range({DEEP}):\n"
        "    shape = [shape]\n"
        "layer = Reshape(target_shape=shape)\n"
    )
    proc = run_cli("validate", str(spec_file))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"error: {spec_file}:5: the spec raised RecursionError")
    assert "a value nested too deeply" in proc.stderr


def test_a_vae_takes_pipeline_augmentation_of_its_encoders_images_and_refuses_heads(tmp_path):
    """A VAE's model is its decoder, of codes: the augmentation's images are checked against the
    encoder's input, so a pipeline augmentation of the shapes is valid; an encoder with heads
    (a dict, which the mean and log-variance split cannot take) is refused, naming the field."""
    data = dumped("shapes_vae")
    data["data"]["augmentation"] = [{"kind": "random_flip", "mode": "horizontal"}]
    assert Spec.model_validate(data).data.augmentation
    data = dumped("shapes_vae")
    data["training"]["encoder"]["kind"] = "functional"
    data["training"]["encoder"]["heads"] = {"mean": [{"kind": "dense", "units": 8}]}
    message = reject(tmp_path, data)
    assert "training.encoder has heads" in message and "remove heads" in message, message
