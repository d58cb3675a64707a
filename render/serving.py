"""What the exported model to serve needs (templates/partials/export.jinja): the raw inputs
its signature takes, as the training source holds them, and the outputs it names."""

from __future__ import annotations

import re
from typing import Any

from ..dsl.spec import Spec
from ..dsl.ways import DRAWING_KINDS, LM_KINDS
from . import code
from .data import input_dtypes

SERVED_INPUTS = {
    "npz": "arrays",
    "keras_dataset": "arrays",
    "shapes": "arrays",
    "image_directory": "files",
    "csv": "columns",
    "tfrecord": "features",
    "text": "texts",
    "text_records": "texts",
    "tfds": "tfds",
}
"""Training sources whose raw examples the exported model's serving signature takes, and what
it takes of them: arrays held in memory (their dtype and shape), image files (their encoded
contents), a CSV file's columns, a TFRecord's features (encoded images as bytes), texts, a TFDS
feature as TFDS decodes it (its dtype and shape in the dataset's info)."""
CLASS_SCORES = {
    "sparse_categorical_crossentropy": "softmax",
    "categorical_crossentropy": "softmax",
    "categorical_focal_crossentropy": "softmax",
    "binary_crossentropy": "sigmoid",
    "binary_focal_crossentropy": "sigmoid",
}
"""Classification losses, and the function from the network's scores to class probabilities."""


def serving_context(spec: Spec) -> dict[str, Any] | None:
    """What the exported model's serving signature takes and returns (export.jinja), or None
    where the script exports the bare network alone: a GAN's generator, a source whose raw
    examples it does not take yet (generators, text directories)."""
    train = spec.data.train
    if (
        not spec.export.saved_model
        or spec.gan
        or spec.training.kind in DRAWING_KINDS
        or train.kind not in SERVED_INPUTS
    ):
        return None
    if spec.training.kind in LM_KINDS:
        # A causal LM serves prompts and answers them with text.
        return {
            "inputs": "prompts",
            "columns": {},
            "features": [],
            "heads": [],
            **dict.fromkeys(("renamed", "prepared", "classify", "probabilities"), False),
            **dict.fromkeys(("class_names", "info_classes"), False),
        }
    loss = spec.loss
    classify = None
    # A contrastive run exports its encoder: its outputs are features, not class scores. A
    # meta-learnt network's outputs are places in a task yet to adapt to, not classes.
    scores_classes = spec.training.kind not in ("contrastive", "reptile", "maml")
    if loss is not None and loss.kind != "import" and scores_classes:
        classify = CLASS_SCORES.get(loss.kind)
    # A multi-task network: each head's outputs, named <task>_scores, <task>_probabilities...
    heads = [
        {
            "name": name,
            "classify": CLASS_SCORES.get(task.loss.kind) if task.loss.kind != "import" else None,
            "probabilities": task.loss.kind != "import" and not task.loss.from_logits,
        }
        for name, task in spec.tasks.items()
    ]
    columns = input_names(train.feature_columns()) if train.kind == "csv" else {}
    return {
        "inputs": SERVED_INPUTS[train.kind],
        # CSV: the columns the model's inputs are made of, in the order the spec reads them,
        # each with the name of its input.
        "columns": columns,
        # Some column's name is no signature input's name.
        "renamed": any(column != name for column, name in columns.items()),
        # TFRecord: (name, dtype, shape) of each feature the model reads, as records hold it
        # (an image as its encoded bytes), the batch dimension first.
        "features": [
            (name, feature.dtype, code.literal((None, *feature.shape)))
            for name, feature in train.inputs.items()
        ]
        if train.kind == "tfrecord"
        else [],
        # Whether the pipeline prepares the inputs (prepare_inputs: a cast, data.rescale):
        # strings go to the model as they are.
        "prepared": input_dtypes(spec) != "string" or spec.model.kind == "keras_hub",
        # softmax, sigmoid, or None: the network's scores alone.
        "classify": classify,
        "heads": heads,
        # Scores that are already probabilities (a loss with from_logits=False).
        "probabilities": classify is not None and not loss.from_logits,
        # Class names: the training directory's sub-directories, or a text file's labels
        # where they are names (known only once the script reads the file).
        "class_names": classify is not None and train.kind in ("image_directory", "text"),
        # TFDS: the label feature's class names, where it is a ClassLabel (known from the
        # dataset's info once the script runs) whose ids are the class ids.
        "info_classes": classify is not None
        and train.kind == "tfds"
        and not train.label_is_mask
        and train.label_offset == 0,
    }


def input_names(columns: list[str]) -> dict[str, str]:
    """The serving signature's name of each column: the column's own where it is an ASCII
    identifier, which a SavedModel signature requires ("sq ft" would fail the export), else
    the column's with every other character an underscore (sq_ft), unique."""
    names: dict[str, str] = {}
    for column in columns:
        name = re.sub(r"\W", "_", column, flags=re.ASCII)
        name = name if name[:1].isalpha() else f"column_{name}"
        while name in names.values():
            name += "_"
        names[column] = name
    return names
