"""What `python train.py predict PATH...` reads (templates/partials/predict.jinja): the raw
inputs the served model takes, from files named on the command line, read as the training
source's files are."""

from __future__ import annotations

from typing import Any

from ..dsl.spec import Spec
from . import code

KERAS_IMAGES = {"mnist", "fashion_mnist", "cifar10", "cifar100"}
"""keras.datasets whose examples are uint8 images, as PNG or JPEG files hold them."""


def prediction_context(spec: Spec, serving: dict[str, Any] | None) -> dict[str, Any] | None:
    """None where the script has no predict command: no checkpoints to predict with, or a
    served model that takes no raw examples (export/network alone)."""
    if serving is None or not spec.checkpoint:
        return None
    train = spec.data.train
    inputs = serving["inputs"]
    if inputs == "tfds":
        # A TFDS dataset's images (resized as training's were): image files, decoded as TFDS
        # decodes them. Another feature: no files to read it from.
        return {"inputs": "tfds_images"} if train.image_size else None
    if inputs == "arrays":
        if spec.data.feature_names:
            return None  # several named arrays: not read from files yet
        # .npy files, .npz files under the training file's array name, and for the image
        # datasets of keras.datasets, image files of their size; for an .npz file's or the
        # shapes' examples, image files where the examples are uint8 pixels (known when the
        # script has read them: the runtime's reader decides, and says why it refuses).
        keras_images = train.kind == "keras_dataset" and train.name in KERAS_IMAGES
        return {
            "inputs": inputs,
            "npz_key": train.x_key if train.kind == "npz" else "x",
            "image_files": keras_images or train.kind in ("npz", "shapes"),
        }
    if inputs == "columns":  # CSV files with a header: the columns the inputs are made of
        return {"inputs": inputs, "columns": list(serving["columns"])}
    if inputs == "features":  # TFRecord files: each input feature as the records hold it
        parsed = {
            name: f"tf.io.FixedLenFeature({code.literal(tuple(f.shape))}, tf.{f.dtype})"
            for name, f in train.inputs.items()
        }
        return {"inputs": inputs, "parsed": parsed, "compression": train.compression}
    if inputs == "prompts" or train.kind == "text_records":
        return None  # records of fields: not read from files on the command line yet
    if inputs == "texts":  # files of lines as the training file's, the text in its column
        return {"inputs": inputs, "delimiter": train.delimiter, "column": train.text_column}
    return {"inputs": inputs}  # image files
