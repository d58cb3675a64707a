"""Rules of what the script exports: `export.tflite` converts the model to serve (a GAN's
generator) with TFLite's builtin ops alone, which a spec must make possible.

Builtin ops only, because the `tf.lite.Interpreter` of the tensorflow pip package does not run
TF Select ops (measured on TF 2.21: "Select TensorFlow op(s) ... not supported by this
interpreter"), nor does TFLite on a phone without the Flex delegate. What does not convert was
measured on TF 2.21 by converting each layer (tests/tf_checks.py `tflite_layers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..layers import KerasLayer
from ..model import OPAQUE
from ..ways.vae import DRAWING_KINDS

if TYPE_CHECKING:
    from ..spec import Spec

ARRAY_SOURCES = ("npz", "keras_dataset", "shapes")
"""Training sources whose model to serve takes the arrays they hold (render/context.py,
serving_context): what TFLite can take as they are."""

LOOPING = frozenset(
    {"lstm", "gru", "simple_rnn", "rnn", "conv_lstm1d", "conv_lstm2d", "conv_lstm3d"}
)
"""Recurrent layers: a loop over the time steps (TensorList ops) unless `unroll=True`."""

NOT_BUILTIN = {
    "integer_lookup": "a hash table (HashTableV2)",
    "hashing": "string hashing (StringToHashBucketFast)",
    "hashed_crossing": "a sparse cross (SparseCross)",
    "category_encoding": "a bincount (DenseBincount)",
    "text_vectorization": "string splitting and ragged tensors (StringSplitV2)",
}
"""Preprocessing layers whose ops TFLite's builtin set lacks, and what they need."""


def check_tflite(spec: Spec) -> None:
    if not spec.export.tflite:
        return
    if spec.training.kind in DRAWING_KINDS:
        raise ValueError(
            f"export.tflite=True, and training is {spec.training.kind}, whose export is its "
            "sampler's or decoder's SavedModel, not one network to convert; remove export.tflite"
        )
    if not spec.export.saved_model:
        raise ValueError(
            "export.tflite=True but export.saved_model=False: model.tflite is converted from "
            "the exported SavedModel (export/saved_model/1, a GAN's export/generator); set "
            "export.saved_model=True or remove export.tflite"
        )
    if spec.gan is None:
        _check_served_data(spec)
    precision = spec.performance.precision
    if precision != "float32":
        raise ValueError(
            f"export.tflite=True but performance.precision={precision!r}: the exported network "
            f"computes in {precision.removeprefix('mixed_')} (MatMul, BiasAdd, Relu), which "
            "TFLite's builtin ops do not take; set performance.precision='float32' or remove "
            "export.tflite"
        )
    if isinstance(spec.model, OPAQUE):
        return  # its layers are not visible here: the converter tells at export
    # A GAN's export is its generator (noise in, images out): only its layers are converted.
    converted = "training.generator." if spec.gan is not None else ""
    for path, layer in _layers(spec.layers_with_paths()):
        if path.startswith(converted):
            _check_layer(path, layer)


def _check_served_data(spec: Spec) -> None:
    """The model to serve takes the training source's raw examples: they must be arrays."""
    kind = spec.data.train.kind
    if kind == "image_directory":
        raise ValueError(
            "export.tflite=True but data.train is an image_directory: the model to serve takes "
            "the image files' bytes and decodes them (DecodeImage), which TFLite's builtin ops "
            "cannot do, and the tf.lite.Interpreter of the tensorflow package cannot run the "
            "TensorFlow op. Train from arrays of the decoded images (data.train=Npz(...)), or "
            "remove export.tflite"
        )
    if kind in ("csv", "tfrecord", "text"):
        # Measured on TF 2.21: houses_tabular's model to serve (CSV columns by name) converts,
        # and the interpreter then fails (RESHAPE: 4 != 16 elements); TFRecord images need
        # DecodeImage, texts a TextVectorization.
        takes = {
            "csv": "CSV columns by name",
            "tfrecord": "TFRecord features by name (images as their encoded bytes)",
            "text": "strings",
        }[kind]
        raise ValueError(
            f"export.tflite=True but data.train is a {kind} source: its model to serve takes "
            f"{takes}, which TFLite's builtin ops do not run as served (only the arrays "
            "of Npz, KerasDataset and Shapes data convert); remove export.tflite"
        )
    if kind == "tfds":
        raise ValueError(
            "export.tflite=True but data.train is a tfds source: its model to serve takes "
            "images as TFDS decodes them, of any size where data.train.image_size resizes them, "
            "and loopgen converts only the model to serve of arrays of one shape (Npz, "
            "KerasDataset and Shapes data); remove export.tflite"
        )
    if kind not in ARRAY_SOURCES:
        raise ValueError(
            f"export.tflite=True but data.train is a {kind} source, whose export has no model "
            "to serve raw examples (only Npz, KerasDataset and Shapes arrays convert), which "
            "is what export.tflite converts; remove export.tflite"
        )


def _layers(found: list[tuple[str, Any]]) -> list[tuple[str, KerasLayer]]:
    """Every Keras layer, with the layers passed as arguments (what Bidirectional wraps)."""
    layers = []
    for path, layer in found:
        if not isinstance(layer, KerasLayer):
            continue
        layers.append((path, layer))
        given = layer.given().items()
        layers += _layers([(f"{path}.{k}", v) for k, v in given if isinstance(v, KerasLayer)])
    return layers


def random_in_graph(entry: Any) -> bool:
    """Whether a layer of the catalog is one of Keras' random preprocessing layers (those
    taking a seed), whose random ops stay in the graph even where they pass the images through
    unchanged: ops TFLite's builtins lack (StatelessRandomUniformV2). Dropout and noise layers
    take a seed too, but leave no op behind outside training."""
    return entry.get("group") == "preprocessing" and "seed" in entry.args


def _check_layer(path: str, layer: KerasLayer) -> None:
    if layer.kind in LOOPING and not layer.arg("unroll"):
        raise ValueError(
            f"export.tflite=True but {path} is {_a(layer.keras_class)}, whose loop over the time "
            "steps (TensorList ops) TFLite's builtin ops cannot run: set "
            f"{path}.unroll=True (short sequences of a fixed length), or remove export.tflite"
        )
    if layer.kind in NOT_BUILTIN:
        raise ValueError(
            f"export.tflite=True but {path} is {_a(layer.keras_class)}, which needs "
            f"{NOT_BUILTIN[layer.kind]}: not among TFLite's builtin ops. Do that in the data "
            "before training, or remove export.tflite"
        )
    if random_in_graph(layer.entry):
        fix = (
            'set data.augment_in="pipeline"'
            if path.startswith("data.augmentation")
            else "move it into data.augmentation"
        )
        raise ValueError(
            f"export.tflite=True but {path} is {_a(layer.keras_class)} in the model, whose random "
            f"ops stay in the served graph and are not among TFLite's builtin ops: {fix} (the "
            "input pipeline augments, the exported model does not), or remove export.tflite"
        )


def _a(name: str) -> str:
    """The class name with its article, as said: an IntegerLookup, an LSTM, a GRU."""
    return f"an {name}" if name[0] in "AEIOU" or name.startswith("LSTM") else f"a {name}"
