"""What the data partials (templates/partials/data/) need: how each source is read (arrays
gathered by index, image files decoded when picked, streams of records), the pipeline's
augmentation, and the names the batches go by."""

from __future__ import annotations

from typing import Any

from ..dsl.rules.data import SPLIT_BY_CLASS
from ..dsl.spec import Spec
from . import code

IMAGE_SOURCES = {"keras_dataset", "image_directory", "shapes"}
OTHER_DATA = {"npz", "image_directory", "text", "text_directory", "tfrecord", "csv", "tfds"}
"""Validation sources `evaluate --data` takes another of (a test split)."""
STREAMING = {"tfds", "tfrecord", "csv", "generator"}
"""Sources read as a stream of records (no random access): shuffled by a buffer, seeked by
skipping inside an epoch."""
RECORDS = {"tfrecord", "csv", "generator"}
"""Streams whose files or generator the script checks and counts when it loads them
(`Records`)."""


def data_context(spec: Spec) -> dict[str, Any]:
    x_name = "images" if is_image_data(spec) else "features"
    features = spec.data.feature_names
    hub = spec.model is not None and spec.model.kind == "keras_hub"
    sources = [spec.data.train, spec.data.validation]
    real_sources = [s for s in sources if s is not None and s.kind != "split"]
    split = getattr(spec.data.validation, "kind", None) == "split"
    shapes = [s for s in sources if s is not None and s.kind == "shapes"]
    return {
        # evaluate --data PATH: another source of the validation data's kind (a test split),
        # or for an .npz file's split, another .npz file of its arrays.
        "other_data": bool(spec.checkpoint)
        and (
            getattr(spec.data.validation, "kind", None) in OTHER_DATA
            or (split and spec.data.train.kind == "npz")
        ),
        "x_name": x_name,
        "input_dtypes": input_dtypes(spec),
        # How each source is read: image files decoded when picked, arrays gathered, streams.
        "image_directories": any(s.kind == "image_directory" for s in real_sources),
        "image_size": next(
            (s.image_size for s in real_sources if s.kind == "image_directory"), None
        ),
        "image_channels": 1
        if any(getattr(s, "color_mode", "") == "grayscale" for s in real_sources)
        else 3,
        "streaming": any(s.kind in STREAMING for s in real_sources),
        "kinds": {s.kind for s in real_sources},
        # Augmentation in the input pipeline: per example, then the batch-level ones (MixUp).
        "pipeline_augmentation": pipeline_augmentation(spec),
        # Training arrays of an .npz file, checked against the model's input when the model
        # is built: the examples fed to it are the arrays as preprocessed (no pipeline
        # augmentation, which may crop, nor views of a contrastive way).
        "input_check": spec.data.train.kind == "npz"
        and not features
        and not pipeline_augmentation(spec)
        and spec.training.kind in ("supervised", "adversarial", "distillation", "reptile", "maml")
        # A model of your own (a subclassed keras.Model) may declare no input shape.
        and spec.model.kind not in ("import", "keras_hub"),
        "per_example_augmentation": sum(
            not x.entry.get("batch_level") for x in spec.data.augmentation
        ),
        "batch_augmentation": any(x.entry.get("batch_level") for x in spec.data.augmentation),
        "class_directories": any(
            s.kind in ("image_directory", "text_directory") for s in real_sources
        ),
        # Validation labels numbered by the training data's classes (class names, folders).
        "shared_classes": getattr(spec.data.validation, "kind", None) == spec.data.train.kind
        and spec.data.train.kind in ("image_directory", "text_directory", "text"),
        "streamed_files": any(s.kind in RECORDS for s in real_sources),
        "only_streams": all(s.kind in STREAMING for s in real_sources),
        "only_records": all(s.kind in RECORDS for s in real_sources),
        # TFRecord and CSV files: compressed (counted by reading them through), plain, or both.
        "compressed": any(getattr(s, "compression", None) for s in real_sources),
        "plain_tfrecords": any(s.kind == "tfrecord" and not s.compression for s in real_sources),
        **source_context(real_sources),
        "train_streaming": spec.data.train.kind in STREAMING,
        "validation_streaming": getattr(spec.data.validation, "kind", None) in STREAMING,
        # A split of an image or text directory: some files of each class held out.
        "split_by_class": split and spec.data.train.kind in SPLIT_BY_CLASS,
        # The source whose examples the validation batches read (the training data's, split).
        "validation_source": spec.data.train if split else spec.data.validation,
        "array_reader": any(
            s.kind not in STREAMING and (s.kind != "image_directory" or spec.data.cache)
            for s in real_sources
        ),
        # An expression of the batch's inputs whose first dimension is the batch size, and the
        # inputs of a micro-batch (several named inputs: a dict of tensors).
        # A KerasHub model's inputs are the preprocessor's dict (token ids, padding mask, ...).
        "batch_of": f"{x_name}[{code.literal(features[0])}]"
        if features
        else 'labels["weights"]'
        if spec.training.kind in ("sft", "dpo")
        else "labels"
        if hub
        else x_name,
        "micro_inputs": (
            f"{{name: tensor[micro_batch] for name, tensor in {x_name}.items()}}"
            if features or hub
            else f"{x_name}[micro_batch]"
        ),
        "shapes_task": shapes[0].task if shapes else None,
        # SFT's packing: each training batch's examples packed into rows (pack_examples).
        "packing": spec.training.kind == "sft" and spec.training.packing,
    }


def pipeline_augmentation(spec: Spec) -> bool:
    """Whether the input pipeline augments (each example carries the seed of its own)."""
    return bool(spec.data.augmentation) and spec.data.augment_in == "pipeline"


def partial_readers(spec: Spec) -> bool:
    """Whether data/batches.jinja maps a reader over batches of indices as
    `functools.partial(reader, examples)`: for sources read by index (not streamed), in the
    training batches (unless augmentation carries seeds along), the validation batches and
    the inputs adapted layers learn from. Meta-learning reads tasks in batches of its own."""
    if spec.training.kind in ("reptile", "maml"):
        return False
    train = spec.data.train.kind not in STREAMING
    validation = spec.data.validation
    adapted = spec.model is not None and spec.model.kind == "graph"
    adapted = adapted and any(node.adapt for node in spec.model.nodes)
    return (train and (not pipeline_augmentation(spec) or adapted)) or (
        validation is not None and validation.kind not in STREAMING
    )


def source_context(sources: list[Any]) -> dict[str, Any]:
    """What the templates of the TFRecord, CSV and generator sources need. Training and
    validation sources of one of these kinds share their features (a rule checks it)."""
    found: dict[str, Any] = {"tfrecord": None, "csv": None, "generator": None}
    for field, source in zip(("train", "validation"), sources, strict=False):
        if source.kind not in found or found[source.kind] is not None:
            continue
        found[source.kind] = source
        if source.kind == "tfrecord":
            found["tfrecord_field"] = f"data.{field}.features"
            found["tfrecord_images"] = any(f.image for f in source.features.values())
        elif source.kind == "csv":
            dtypes = [source.dtypes.get(c, "float32") for c in source.columns()]
            found["csv_dtypes"] = "[" + ", ".join(f"tf.{d}" for d in dtypes) + "]"
            fields = {}
            for name, columns in source.features.items():
                for column in [columns] if isinstance(columns, str) else columns:
                    fields.setdefault(column, f"data.{field}.features.{name}")
            labels = {"": source.label} if isinstance(source.label, str) else source.label
            for task, column in labels.items():
                fields.setdefault(column, f"data.{field}.label" + (f".{task}" if task else ""))
            found["csv_fields"] = fields
            found["csv_dtypes_field"] = f"data.{field}.dtypes"
        elif source.kind == "generator":
            found["generator_signature"] = generator_signature(source)
    return found


def generator_signature(source: Any) -> str:
    """`(features, label)` as tf.TensorSpec expressions (dicts where the spec names several)."""

    def spec(feature: Any) -> str:
        return f"tf.TensorSpec(shape={code.literal(feature.shape)}, dtype=tf.{feature.dtype})"

    def structure(value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{code.literal(k)}: {spec(v)}" for k, v in value.items()) + "}"
        return spec(value)

    return f"({structure(source.features)}, {structure(source.label)})"


def input_dtypes(spec: Spec) -> str | dict[str, str]:
    """The dtype the pipeline casts the inputs to: the graph model's inputs' (a dict for
    several named inputs), float32 otherwise."""
    model = spec.model
    if model is None or model.kind != "graph":
        return "float32"
    if spec.data.feature_names is None:
        return next(iter(model.inputs.values())).dtype
    return {name: given.dtype for name, given in model.inputs.items()}


def is_image_data(spec: Spec) -> bool:
    train = spec.data.train
    if train.kind == "keras_dataset":  # imdb and reuters hold word ids
        return train.name not in ("imdb", "reuters")
    return train.kind in IMAGE_SOURCES or (train.kind == "tfds" and train.image_size is not None)
