"""Rules of the data that need the rest of the spec (the data section's own rules are in
`Data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ways.vae import DRAWING_KINDS

if TYPE_CHECKING:
    from ..spec import Spec


SPLITTABLE = ("npz", "keras_dataset", "shapes", "text", "text_records")
"""Sources held in memory as arrays, whose last examples a Split can hold out."""
SPLIT_BY_CLASS = ("image_directory", "text_directory")
"""Sources listed class by class, whose files a Split picks from each class by a seeded
permutation."""


def check_split(spec: Spec) -> None:
    validation = spec.data.validation
    if validation is None or validation.kind != "split":
        return
    kind = spec.data.train.kind
    if kind in SPLITTABLE and validation.seed is not None:
        raise ValueError(
            f"data.validation.seed is set but data.train is a {kind} source, whose split is its "
            "last examples, as model.fit's validation_split: nothing is drawn at random. "
            "Remove the seed"
        )
    if kind not in SPLITTABLE + SPLIT_BY_CLASS:
        raise ValueError(
            f"data.validation is a split of data.train, a {kind} source, which is streamed: "
            "there is no end of it to hold out. Give data.validation its own files instead"
        )


def check_sources_agree(spec: Spec) -> None:
    """Training and validation sources of one kind are read by the same code: they must give
    the same features (images of one size, records of one layout)."""
    train, validation = spec.data.train, spec.data.validation
    if validation is None or validation.kind != train.kind:
        return
    shared = {
        "image_directory": ("image_size", "color_mode"),
        "tfrecord": ("features", "label"),
        "csv": ("features", "label", "dtypes", "delimiter"),
        "generator": ("features", "label"),
    }.get(train.kind, ())
    for field in shared:
        if getattr(train, field) != getattr(validation, field):
            raise ValueError(
                f"data.validation.{field} differs from data.train.{field}: the script reads "
                f"both {train.kind} sources the same way; give them the same {field}"
            )


def check_input_types(spec: Spec) -> None:
    """data.rescale multiplies numbers the model takes as floats: text inputs have none, and
    an integer input (token ids, category ids) cannot hold the scaled values."""
    if spec.data.rescale is None:
        return
    if spec.data.train.kind in ("text", "text_directory", "text_records"):
        raise ValueError(
            f"data.rescale is set but data.train ({spec.data.train.kind}) gives text; remove "
            "data.rescale"
        )
    model = spec.model
    if model is not None and model.kind == "graph" and len(model.inputs) == 1:
        ((name, given),) = model.inputs.items()
        if given.dtype in ("int32", "int64", "uint8", "bool"):
            raise ValueError(
                f"data.rescale is set but model.inputs.{name} is {given.dtype} (ids, not "
                "measurements): scaled values would not fit it; remove data.rescale or make "
                "the input a float dtype"
            )


def check_features(spec: Spec) -> None:
    """The data's named features are the model's named inputs: a graph model with several
    inputs takes a dict of features with exactly those names; a model with one input, one
    tensor (or a dict of that one name)."""
    features = spec.data.feature_names
    model = spec.model
    if model is None or model.kind in ("import", "keras_hub"):
        return
    if spec.training.kind in DRAWING_KINDS:
        return  # the network's inputs are the way's (rules/ways.py)
    inputs = sorted(model.inputs) if model.kind == "graph" else None
    if features is None:
        if inputs is not None and len(inputs) > 1:
            raise ValueError(
                f"model.inputs are {inputs} but data.train gives one input per example; give "
                "it a feature per input (e.g. Npz(x_key={"
                + ", ".join(f'"{name}": "<array>"' for name in inputs)
                + "}))"
            )
        return
    if inputs is None:
        raise ValueError(
            f"data.train gives the named features {sorted(features)} but model.kind="
            f"{model.kind!r} takes one input; use a Graph model with inputs of those names "
            "(or give data.train one input)"
        )
    if sorted(features) != inputs:
        missing = sorted(set(inputs) - set(features))
        extra = sorted(set(features) - set(inputs))
        raise ValueError(
            f"data.train gives the features {sorted(features)} but model.inputs are {inputs}: "
            + (f"no feature feeds {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"{extra} feed no input" if extra else "")
            + "; name the features after the model's inputs"
        )
    if spec.data.rescale is not None:
        raise ValueError(
            "data.rescale is set but the data gives several named features: it would scale "
            "all of them; put a Rescaling layer on the input that needs it and remove "
            "data.rescale"
        )
