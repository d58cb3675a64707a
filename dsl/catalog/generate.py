"""Writes `keras.json`, the catalog of the installed Keras: every public layer, loss, metric,
optimizer and application, with its constructor's arguments, defaults and kinds of value.

    python dsl/catalog/generate.py           # rewrite keras.json (needs TensorFlow installed)
    python dsl/catalog/generate.py --check   # exit 1 when keras.json differs from the install
    python -m loopgen.dsl.catalog.api        # then the Python names of the vocabulary

What is read and what is inferred:
- classes, aliases, signatures and defaults: read from Keras (`inspect`);
- string choices: probed. Each string argument is constructed with a value no Keras accepts;
  only if that raises does the catalog record choices, the candidates of CHOICES that Keras
  then accepts (Keras checks some strings only when the layer is built: those get none);
- kinds of value (int, tuple, activation, ...): from the default's type, the argument's name
  (`*_initializer`, `kernel_size`, ...) and the short KINDS table below where neither says;
- whether an augmentation layer honours an explicit seed, and the example each layer is built
  with (EXAMPLES, INPUTS): probed, by building it on `keras.Input` (an example that fails to
  build stops the generator);
- exclusions and why: EXCLUDED, by hand.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("keras.json")

# --- hand tables -------------------------------------------------------------------------------

EXCLUDED = {
    "layers": {
        "Layer": "the abstract base of all layers; subclass it with custom_layers",
        "Wrapper": "an abstract base (use Bidirectional or TimeDistributed)",
        "InputLayer": "a model's inputs are declared in its `inputs` (Graph) or `input_shape`",
        "Lambda": "it wraps Python code; write a custom layer class or import your model",
        "JaxLayer": "it wraps a JAX function: another backend",
        "FlaxLayer": "it wraps a Flax module: another backend",
        "TorchModuleWrapper": "it wraps a PyTorch module: another backend",
        "TFSMLayer": "it loads a SavedModel from a path at build time; import your model "
        "(Imported) to use one",
        "Pipeline": "it takes layer objects built in Python; list the layers in the model",
        "StackedRNNCells": "it takes cell objects built in Python; stack RNN layers instead",
        "MaxNumBoundingBoxes": "it pads bounding boxes, which loopgen's data does not carry",
        "STFTSpectrogram": "it needs scipy, which the generated scripts do not depend on",
    },
    "losses": {
        "Loss": "the abstract base of losses; use ImportedLoss for your own",
        "CTC": "it needs label and prediction lengths, which loopgen's step does not pass",
        "Circle": "it needs embeddings and labels of a metric-learning batch, not a classifier's",
    },
    "metrics": {
        "Metric": "the abstract base of metrics; use ImportedMetric for your own",
        "Mean": "it averages one value, not labels and predictions",
        "Sum": "it sums one value, not labels and predictions",
        "MeanMetricWrapper": "it wraps a Python function; use ImportedMetric",
    },
    "optimizers": {
        "Optimizer": "the abstract base of optimizers",
        "LossScaleOptimizer": "set performance.precision='mixed_float16': the script wraps "
        "the optimizer itself",
        "MultiOptimizer": "it takes optimizer objects per variable; loopgen builds one",
        "OptimizerMap": "it takes optimizer objects per variable; loopgen builds one",
    },
}
"""What a spec cannot offer, and why."""

KIND_NAMES = {
    "AdamW": "adamw",
    "RMSprop": "rmsprop",
    "ScheduleFreeAdamW": "schedule_free_adamw",
    "MeanIoU": "mean_iou",
    "BinaryIoU": "binary_iou",
    "IoU": "iou",
    "OneHotIoU": "one_hot_iou",
    "OneHotMeanIoU": "one_hot_mean_iou",
    "FBetaScore": "fbeta_score",
    "F1Score": "f1_score",
    "KLDivergence": "kl_divergence",
    "AUC": "auc",
    "R2Score": "r2_score",
    "CTC": "ctc",
}
"""Kinds that `to_snake_case` splits at acronyms (`mean_io_u`, `adam_w`): named as Keras users
write them, and as loopgen's earlier specs did."""

KINDS = {
    "kernel_size": ["int", "int_tuple"],
    "strides": ["int", "int_tuple"],
    "pool_size": ["int", "int_tuple"],
    "dilation_rate": ["int", "int_tuple"],
    "size": ["int", "int_tuple"],
    "output_size": ["int", "int_tuple"],
    "cropping": ["int", "int_tuple", "any"],
    "target_shape": ["int_tuple"],
    "dims": ["int_tuple"],
    "axis": ["int", "int_tuple"],
    "axes": ["int", "int_tuple"],
    "layer": ["layer"],
    "backward_layer": ["layer"],
    "cell": ["layer"],
    "factor": ["float", "float_tuple"],
    "height_factor": ["float", "float_tuple"],
    "width_factor": ["float", "float_tuple"],
    "value_range": ["float_tuple"],
    "vocabulary": ["str_list", "int_tuple", "str"],
    "equation": ["str"],
    "scale": ["float", "float_tuple"],
    "offset": ["float", "float_tuple"],
    "seed": ["int"],
    "dtype": ["dtype"],
    "data_format": ["str"],
    "weights": ["str"],
    "pooling": ["str"],
}
"""Kinds of value by argument name, where neither the default nor the name's suffix says."""

INTEGERS = {
    "units", "filters", "num_heads", "key_dim", "value_dim", "input_dim", "output_dim", "n",
    "num_bins", "max_tokens", "num_oov_indices", "num_tokens", "height", "width", "groups",
    "depth_multiplier", "num_classes", "num_thresholds", "k", "top_k", "class_id",
    "output_sequence_length", "max_number", "num_regressors", "sequence_length",
}  # fmt: skip
FLOATS = {"rate", "stddev", "epsilon", "momentum", "threshold", "recall", "precision",
          "specificity", "sensitivity", "beta", "alpha", "gamma", "delta", "dropout"}  # fmt: skip

CHOICES = {
    "padding": ["valid", "same", "causal"],
    "data_format": ["channels_last", "channels_first"],
    "interpolation": ["nearest", "bilinear", "bicubic", "area", "lanczos3", "lanczos5",
                      "gaussian", "mitchellcubic"],
    "fill_mode": ["reflect", "wrap", "constant", "nearest", "crop"],
    "mode": ["horizontal", "vertical", "horizontal_and_vertical", "nearest", "linear"],
    "merge_mode": ["sum", "mul", "concat", "ave"],
    "output_mode": ["int", "one_hot", "multi_hot", "count", "tf_idf", "binary", "tf-idf"],
    "curve": ["ROC", "PR"],
    "summation_method": ["interpolation", "minoring", "majoring"],
    "average": ["micro", "macro", "weighted"],
    "class_aggregation": ["uniform_average", "variance_weighted_average"],
    "split": ["whitespace", "character"],
    "standardize": ["lower_and_strip_punctuation", "lower", "strip_punctuation"],
    "score_mode": ["dot", "concat"],
}  # fmt: skip
"""Candidate strings, by argument name, of the arguments whose choices Keras checks."""

IMAGE = {"shape": [12, 12, 3], "dtype": "float32"}
SEQUENCE = {"shape": [6, 4], "dtype": "float32"}
VOLUME = {"shape": [6, 6, 6, 2], "dtype": "float32"}

EXAMPLES: dict[str, dict[str, Any]] = {
    "Activation": {"activation": "relu"},
    "AdaptiveAveragePooling1D": {"output_size": 2},
    "AdaptiveAveragePooling2D": {"output_size": 2},
    "AdaptiveAveragePooling3D": {"output_size": 2},
    "AdaptiveMaxPooling1D": {"output_size": 2},
    "AdaptiveMaxPooling2D": {"output_size": 2},
    "AdaptiveMaxPooling3D": {"output_size": 2},
    "AlphaDropout": {"rate": 0.1},
    "AveragePooling1D": {"pool_size": 2},
    "AveragePooling2D": {"pool_size": 2},
    "AveragePooling3D": {"pool_size": 2},
    "Bidirectional": {"layer": {"kind": "lstm", "units": 4}},
    "CategoryEncoding": {"num_tokens": 8, "output_mode": "one_hot"},
    "CenterCrop": {"height": 8, "width": 8},
    "Conv1D": {"filters": 4, "kernel_size": 3},
    "Conv1DTranspose": {"filters": 4, "kernel_size": 3},
    "Conv2D": {"filters": 4, "kernel_size": 3},
    "Conv2DTranspose": {"filters": 4, "kernel_size": 3},
    "Conv3D": {"filters": 4, "kernel_size": 3},
    "Conv3DTranspose": {"filters": 4, "kernel_size": 3},
    "ConvLSTM1D": {"filters": 4, "kernel_size": 3},
    "ConvLSTM2D": {"filters": 4, "kernel_size": 3},
    "ConvLSTM3D": {"filters": 4, "kernel_size": 3},
    "Dense": {"units": 4},
    "DepthwiseConv1D": {"kernel_size": 3},
    "DepthwiseConv2D": {"kernel_size": 3},
    "Discretization": {"bin_boundaries": [0.0, 0.5]},
    "Dot": {"axes": 1},
    "Dropout": {"rate": 0.1},
    "EinsumDense": {"equation": "ab,bc->ac", "output_shape": 4},
    "Embedding": {"input_dim": 10, "output_dim": 4},
    "GRU": {"units": 4},
    "GRUCell": {"units": 4},
    "GaussianDropout": {"rate": 0.1},
    "GaussianNoise": {"stddev": 0.1},
    "HashedCrossing": {"num_bins": 8},
    "Hashing": {"num_bins": 8},
    "IntegerLookup": {"vocabulary": [1, 2, 3]},
    "LSTM": {"units": 4},
    "LSTMCell": {"units": 4},
    "MultiHeadAttention": {"num_heads": 2, "key_dim": 4},
    "GroupQueryAttention": {"head_dim": 4, "num_query_heads": 2, "num_key_value_heads": 1},
    "GroupNormalization": {"groups": 3},
    "Normalization": {"mean": 0.0, "variance": 1.0},
    "Permute": {"dims": [2, 1]},
    "RNN": {"cell": {"kind": "simple_rnn_cell", "units": 4}},
    "RandomBrightness": {"factor": 0.1},
    "RandomColorDegeneration": {"factor": 0.5},
    "RandomContrast": {"factor": 0.1},
    "RandomCrop": {"height": 8, "width": 8},
    "RandomHue": {"factor": 0.1, "value_range": [0, 1]},
    "RandomPosterization": {"factor": [1, 4]},
    "RandomRotation": {"factor": 0.1},
    "RandomSaturation": {"factor": 0.5},
    "RandomSharpness": {"factor": 0.5},
    "RandomTranslation": {"height_factor": 0.1, "width_factor": 0.1},
    "RandomZoom": {"height_factor": 0.1},
    "RepeatVector": {"n": 3},
    "Rescaling": {"scale": 0.5},
    "Reshape": {"target_shape": [72, 6]},
    "Resizing": {"height": 8, "width": 8},
    "ReversibleEmbedding": {"input_dim": 10, "output_dim": 4},
    "SeparableConv1D": {"filters": 4, "kernel_size": 3},
    "SeparableConv2D": {"filters": 4, "kernel_size": 3},
    "SimpleRNN": {"units": 4},
    "SimpleRNNCell": {"units": 4},
    "SpatialDropout1D": {"rate": 0.1},
    "SpatialDropout2D": {"rate": 0.1},
    "SpatialDropout3D": {"rate": 0.1},
    "SpectralNormalization": {"layer": {"kind": "dense", "units": 4}},
    "StringLookup": {"vocabulary": ["a", "b", "c"]},
    "TextVectorization": {"vocabulary": ["a", "b", "c"], "output_sequence_length": 4},
    "TimeDistributed": {"layer": {"kind": "dense", "units": 4}},
}
"""Constructor arguments each layer is built with in its example (the required ones)."""

INPUTS: dict[str, list[dict[str, Any]]] = {
    **{name: [SEQUENCE] for name in (
        "Conv1D", "Conv1DTranspose", "DepthwiseConv1D", "SeparableConv1D", "AveragePooling1D",
        "MaxPooling1D", "GlobalAveragePooling1D", "GlobalMaxPooling1D", "AdaptiveAveragePooling1D",
        "AdaptiveMaxPooling1D", "UpSampling1D", "ZeroPadding1D", "Cropping1D", "SpatialDropout1D",
        "LSTM", "GRU", "SimpleRNN", "Bidirectional", "RNN", "TimeDistributed", "Permute",
        "MultiHeadAttention", "GroupQueryAttention", "LayerNormalization", "RMSNormalization",
        "Masking", "Softmax",
    )},
    **{name: [VOLUME] for name in (
        "Conv3D", "Conv3DTranspose", "AveragePooling3D", "MaxPooling3D", "GlobalAveragePooling3D",
        "GlobalMaxPooling3D", "AdaptiveAveragePooling3D", "AdaptiveMaxPooling3D", "UpSampling3D",
        "ZeroPadding3D", "Cropping3D", "SpatialDropout3D", "ConvLSTM2D",
    )},
    "ConvLSTM1D": [{"shape": [4, 6, 2], "dtype": "float32"}],
    "ConvLSTM3D": [{"shape": [3, 4, 4, 4, 2], "dtype": "float32"}],
    "Dense": [{"shape": [5], "dtype": "float32"}],
    "EinsumDense": [{"shape": [5], "dtype": "float32"}],
    "RepeatVector": [{"shape": [5], "dtype": "float32"}],
    "Discretization": [{"shape": [5], "dtype": "float32"}],
    "Embedding": [{"shape": [6], "dtype": "int32"}],
    "ReversibleEmbedding": [{"shape": [6], "dtype": "int32"}],
    "CategoryEncoding": [{"shape": [1], "dtype": "int32"}],
    "Hashing": [{"shape": [1], "dtype": "string"}],
    "HashedCrossing": [{"shape": [1], "dtype": "int32"}, {"shape": [1], "dtype": "int32"}],
    "IntegerLookup": [{"shape": [1], "dtype": "int64"}],
    "StringLookup": [{"shape": [1], "dtype": "string"}],
    "TextVectorization": [{"shape": [1], "dtype": "string"}],
    "Add": [IMAGE, IMAGE], "Subtract": [IMAGE, IMAGE], "Multiply": [IMAGE, IMAGE],
    "Average": [IMAGE, IMAGE], "Maximum": [IMAGE, IMAGE], "Minimum": [IMAGE, IMAGE],
    "Concatenate": [IMAGE, IMAGE],
    "Dot": [{"shape": [5], "dtype": "float32"}, {"shape": [5], "dtype": "float32"}],
    "Attention": [SEQUENCE, SEQUENCE], "AdditiveAttention": [SEQUENCE, SEQUENCE],
    "GRUCell": None, "LSTMCell": None, "SimpleRNNCell": None,
    "MelSpectrogram": [{"shape": [256], "dtype": "float32"}],
    "STFTSpectrogram": [{"shape": [256, 1], "dtype": "float32"}],
}  # fmt: skip
"""Input shapes (without the batch axis) of each layer's example; images otherwise. None: a
cell, used inside RNN, not called on a tensor."""

FAILURES: list[str] = []
"""Examples that did not build (the generator stops after listing them all)."""

BATCH_LEVEL = {"MixUp", "CutMix"}
"""Augmentations that mix the examples of a batch: they need a batch, and one-hot labels."""


# --- reading Keras -----------------------------------------------------------------------------


def kind_of(name: str) -> str:
    from keras.src.utils.naming import to_snake_case

    return KIND_NAMES.get(name, to_snake_case(name))


def json_default(value: Any) -> tuple[Any, str | None]:
    """(a JSON form of a default, or None, and its repr when it has no JSON form)."""
    if isinstance(value, tuple):
        value = list(value)
    try:
        json.dumps(value)
        return value, None
    except TypeError:
        return None, repr(value)


def arg_kinds(name: str, default: Any, has_default: bool) -> list[str]:
    kinds: list[str]
    if name.endswith("activation"):
        kinds = ["activation"]
    elif name.endswith("_initializer"):
        kinds = ["initializer"]
    elif name.endswith("_regularizer"):
        kinds = ["regularizer"]
    elif name.endswith("_constraint"):
        kinds = ["constraint"]
    elif name in KINDS:
        kinds = list(KINDS[name])
        if name == "padding" or (name == "cropping" and isinstance(default, str)):
            kinds = ["str"]
    elif isinstance(default, bool):
        kinds = ["bool"]
    elif isinstance(default, int):
        kinds = ["int"]
    elif isinstance(default, float):
        kinds = ["float"]
    elif isinstance(default, str):
        kinds = ["str"]
    elif isinstance(default, (tuple, list)):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in default):
            kinds = ["int_tuple"]
        elif all(isinstance(v, (int, float)) for v in default):
            kinds = ["float_tuple"]
        else:
            kinds = ["any"]
    elif name in INTEGERS:
        kinds = ["int"]
    elif name in FLOATS:
        kinds = ["float"]
    elif name == "padding":
        kinds = ["int", "int_tuple", "any"]
    else:
        kinds = ["any"]
    if name == "padding" and not isinstance(default, str) and has_default:
        kinds = ["int", "int_tuple", "any"]
    if has_default and default is None and "none" not in kinds and kinds != ["any"]:
        kinds.append("none")
    return kinds


def signature_args(function: Any, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    found = []
    for p in inspect.signature(function).parameters.values():
        if p.name in ("self", *skip) or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        has_default = p.default is not inspect.Parameter.empty
        arg: dict[str, Any] = {"name": p.name}
        if has_default:
            arg["default"], shown = json_default(p.default)
            if shown is not None:
                arg["default_repr"] = shown
        else:
            arg["required"] = True
        arg["kinds"] = arg_kinds(p.name, p.default if has_default else None, has_default)
        found.append(arg)
    return found


def summary(cls: Any) -> str:
    doc = inspect.getdoc(cls) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    return first[:200]


def public_classes(module: Any, base: type) -> dict[str, type]:
    return {
        name: getattr(module, name)
        for name in sorted(dir(module))
        if isinstance(getattr(module, name), type) and issubclass(getattr(module, name), base)
    }


def canonical_names(classes: dict[str, type]) -> dict[str, str]:
    """Name -> the name of the same class that is its own (`Convolution2D` -> `Conv2D`)."""
    own = {cls: name for name, cls in classes.items() if cls.__name__ == name}
    for name, cls in classes.items():
        own.setdefault(cls, name)
    return {name: own[cls] for name, cls in classes.items()}


def section(module: Any, base: type, what: str, extra: Any = None) -> dict[str, Any]:
    classes = public_classes(module, base)
    canonical = canonical_names(classes)
    entries: dict[str, Any] = {}
    for name, cls in classes.items():
        if canonical[name] != name:
            entries[name] = {"kind": kind_of(name), "alias_of": canonical[name]}
            continue
        # A layer's name is a field of the spec's layer, not one of its arguments.
        skip = ("name",) if what == "layers" else ()
        entry: dict[str, Any] = {
            "kind": kind_of(name),
            "doc": summary(cls),
            "args": signature_args(cls.__init__, skip),
            "base_kwargs": "kwargs" in inspect.signature(cls.__init__).parameters,
        }
        if name in EXCLUDED.get(what, {}):
            entry["excluded"] = EXCLUDED[what][name]
        if extra is not None:
            entry.update(extra(name, cls, entry))
        entries[name] = entry
    kinds = [e["kind"] for e in entries.values()]
    clashes = sorted({k for k in kinds if kinds.count(k) > 1})
    if clashes:
        raise SystemExit(f"{what}: two classes have the kind {clashes}; add them to KIND_NAMES")
    return entries


# --- layers ------------------------------------------------------------------------------------


def layer_details(name: str, cls: Any, entry: dict[str, Any]) -> dict[str, Any]:
    import keras
    from keras.src.layers.merging.base_merge import Merge
    from keras.src.layers.preprocessing.image_preprocessing.base_image_preprocessing_layer import (
        BaseImagePreprocessingLayer,
    )

    module = cls.__module__
    group = module.split(".")[3] if module.startswith("keras.src.layers.") else module
    call = inspect.signature(cls.call).parameters
    if issubclass(cls, Merge) or name in ("Concatenate", "Dot", "Attention", "AdditiveAttention",
                                          "HashedCrossing"):  # fmt: skip
        inputs: dict[str, Any] = {"inputs": "list"}
    elif name in ("MultiHeadAttention", "GroupQueryAttention"):
        inputs = {"inputs": "positional", "args": ["query", "value", "key"], "required": 2}
    else:
        inputs = {"inputs": "single"}
    details: dict[str, Any] = {
        "group": group,
        "call": {**inputs, "training": "training" in call, "mask": "mask" in call},
        "augmentation": issubclass(cls, BaseImagePreprocessingLayer),
    }
    if details["augmentation"]:
        details["batch_level"] = name in BATCH_LEVEL
    if entry.get("excluded"):
        return details
    _probe_choices(name, cls, entry)
    example = {"args": EXAMPLES.get(name, {}), "inputs": INPUTS.get(name, [IMAGE])}
    if example["inputs"] is not None:
        _build(name, example)
    details["example"] = example
    if details["augmentation"]:
        # Random ones (those that take a seed): whether an explicit seed decides them.
        random = "seed" in inspect.signature(cls.__init__).parameters
        details["seeded"] = _honours_seed(cls, example) if random else None
    del keras
    return details


def _construct(cls: Any, args: dict[str, Any]) -> Any:
    import keras

    def value(v: Any) -> Any:
        if isinstance(v, dict) and "kind" in v:
            inner = {k: x for k, x in v.items() if k != "kind"}
            target = next(
                c for n, c in public_classes(keras.layers, keras.layers.Layer).items()
                if kind_of(n) == v["kind"]
            )  # fmt: skip
            return target(**inner)
        return v

    return cls(**{k: value(v) for k, v in args.items()})


def _build(name: str, example: dict[str, Any]) -> None:
    import keras

    cls = getattr(keras.layers, name)
    try:
        layer = _construct(cls, example["args"])
        tensors = [keras.Input(shape=i["shape"], dtype=i["dtype"]) for i in example["inputs"]]
        if name in ("MultiHeadAttention", "GroupQueryAttention"):
            layer(tensors[0], tensors[0])
        elif len(tensors) > 1 or name in ("Attention", "AdditiveAttention"):
            layer(tensors)
        else:
            layer(tensors[0])
    except Exception as error:
        FAILURES.append(f"the example of {name} does not build: {error}")


def _probe_choices(name: str, cls: Any, entry: dict[str, Any]) -> None:
    required = EXAMPLES.get(name, {})
    for arg in entry["args"]:
        if "str" not in arg["kinds"] or arg["name"] not in CHOICES:
            continue
        try:
            _construct(cls, {**required, arg["name"]: "not-a-keras-choice"})
            continue  # Keras does not check it here: no choices
        except Exception:
            pass
        accepted = []
        for candidate in CHOICES[arg["name"]]:
            try:
                _construct(cls, {**required, arg["name"]: candidate})
                accepted.append(candidate)
            except Exception:
                pass
        if accepted:
            arg["choices"] = sorted(accepted)


def _honours_seed(cls: Any, example: dict[str, Any]) -> bool:
    """Whether get_random_transformation draws from the seed it is given (two calls with equal
    fresh SeedGenerators give equal transformations, another seed another)."""
    import keras
    import numpy as np

    layer = _construct(cls, example["args"])
    images = np.random.default_rng(0).uniform(size=(4, 12, 12, 3)).astype("float32")
    mixes = cls.__name__ in BATCH_LEVEL
    data = {"images": images, "labels": np.eye(4, dtype="float32")} if mixes else images

    def draw(seed: int) -> list[np.ndarray]:
        t = layer.get_random_transformation(data, training=True,
                                            seed=keras.random.SeedGenerator(seed))  # fmt: skip
        return [np.asarray(v) for v in _leaves(t)]

    try:
        first, again, other = draw(3), draw(3), draw(4)
    except Exception:
        return False  # it could not be probed: not offered where the seed must decide
    same = all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    differs = any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    return bool(same and differs)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if value is None or isinstance(value, (str, bool, int, float)):
        return []
    return [value]


# --- the rest ----------------------------------------------------------------------------------


def applications() -> dict[str, Any]:
    import keras

    entries = {}
    apps = keras.applications
    for name in sorted(dir(apps)):
        function = getattr(apps, name)
        if not (name[0].isupper() and callable(function)):
            continue
        # The submodule that has its preprocess_input (mobilenet_v3 exports only that).
        module = next(
            (m for m in sorted(dir(apps))
             if not m[0].isupper() and not m.startswith("_") and hasattr(getattr(apps, m), name)),
            function.__module__.rsplit(".", 1)[-1],
        )  # fmt: skip
        preprocess = getattr(getattr(apps, module), "preprocess_input", None)
        entries[name] = {
            "kind": name.lower(),
            "module": module,
            "doc": summary(function),
            "preprocess_input": f"keras.applications.{module}.preprocess_input"
            if preprocess is not None
            else None,
            "args": signature_args(function),
        }
        for arg in entries[name]["args"]:
            if arg["name"] == "pooling":
                arg["choices"] = ["avg", "max"]  # checked when the model is built
    return entries


def names_accepted(get: Any, candidates: list[str]) -> list[str]:
    accepted = []
    for name in candidates:
        try:
            if get(name) is not None:
                accepted.append(name)
        except Exception:
            pass
    return sorted(set(accepted))


def vocabulary_lists() -> dict[str, list[str]]:
    import keras

    def public(module: Any) -> list[str]:
        return [n for n in dir(module) if not n.startswith("_")]

    activations = [
        n for n in public(keras.activations)
        if callable(getattr(keras.activations, n)) and n not in ("get", "serialize", "deserialize")
    ]  # fmt: skip
    initializer_names = [kind_of(n) for n in public(keras.initializers)] + public(
        keras.initializers
    )
    regularizer_names = [kind_of(n) for n in public(keras.regularizers)] + public(
        keras.regularizers
    )
    constraint_names = [kind_of(n) for n in public(keras.constraints)] + public(keras.constraints)
    return {
        "activations": names_accepted(keras.activations.get, [*activations, "linear"]),
        "initializers": names_accepted(
            keras.initializers.get,
            [
                n
                for n in initializer_names
                if n not in ("get", "serialize", "deserialize", "Initializer", "initializer")
                # Built only where SciPy is installed (MLflow's extra brings it): the catalog
                # must not depend on what else is installed.
                and n.lower() not in ("stft", "stftinitializer", "stft_initializer")
            ],
        ),
        "regularizers": names_accepted(
            keras.regularizers.get,
            [
                n
                for n in regularizer_names
                if n not in ("get", "serialize", "deserialize", "Regularizer", "regularizer")
            ],
        ),
        "constraints": names_accepted(
            keras.constraints.get,
            [
                n
                for n in constraint_names
                if n not in ("get", "serialize", "deserialize", "Constraint", "constraint")
            ],
        ),
        "dtypes": [
            "bfloat16",
            "bool",
            "float16",
            "float32",
            "float64",
            "int16",
            "int32",
            "int64",
            "int8",
            "string",
            "uint8",
        ],
    }


def build_catalog() -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    return {
        "keras_version": keras.__version__,
        "layers": section(keras.layers, keras.layers.Layer, "layers", layer_details),
        "losses": section(keras.losses, keras.losses.Loss, "losses"),
        "metrics": section(keras.metrics, keras.metrics.Metric, "metrics"),
        "optimizers": section(keras.optimizers, keras.optimizers.Optimizer, "optimizers"),
        "applications": applications(),
        **vocabulary_lists(),
    }


def dumped(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    text = dumped(build_catalog())
    if FAILURES:
        raise SystemExit("\n".join(FAILURES) + "\nfix EXAMPLES or INPUTS in generate.py")
    if args.check:
        if not PATH.is_file() or PATH.read_text() != text:
            old = json.loads(PATH.read_text()) if PATH.is_file() else {}
            new = json.loads(text)
            changed = sorted(
                f"{s}.{n}" for s in new if isinstance(new[s], dict)
                for n in set(new[s]) | set(old.get(s, {}))
                if new[s].get(n) != old.get(s, {}).get(n)
            )  # fmt: skip
            print(
                f"{PATH} differs from the installed Keras ({len(changed)} entries, e.g. "
                f"{changed[:5]}); run: python dsl/catalog/generate.py",
                file=sys.stderr,
            )
            raise SystemExit(1)
        return
    PATH.write_text(text)
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
