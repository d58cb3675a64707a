"""What `python train.py predict PATH...` reads (templates/partials/predict.jinja): the raw
inputs the served model takes, from files named on the command line."""

from __future__ import annotations

from typing import Any

from ..dsl.spec import Spec

KERAS_IMAGES = {"mnist", "fashion_mnist", "cifar10", "cifar100"}
"""keras.datasets whose examples are uint8 images, as PNG or JPEG files hold them."""


def prediction_context(spec: Spec, serving: dict[str, Any] | None) -> dict[str, Any] | None:
    """None where the script has no predict command: no checkpoints to predict with, or a
    served model that takes no raw examples (export/network alone)."""
    if serving is None or not spec.checkpoint:
        return None
    train = spec.data.train
    if serving["inputs"] == "files":
        return {"inputs": "files"}
    if spec.data.feature_names:
        return None  # several named inputs: not read from files yet
    # Arrays: .npy files, .npz files under the training file's array name, and for the image
    # datasets of keras.datasets, image files of their size.
    return {
        "inputs": "arrays",
        "npz_key": train.x_key if train.kind == "npz" else "x",
        "image_files": train.kind == "keras_dataset" and train.name in KERAS_IMAGES,
    }
