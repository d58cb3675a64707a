"""Rules of data augmentation: only image augmentation (and the padding or resizing between),
on an image input, with labels it can handle, reproducible where it runs, and giving back images
of the model's input shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import shapes

if TYPE_CHECKING:
    from ..spec import Spec

PREPARING = frozenset({"zero_padding2d", "cropping2d", "resizing", "center_crop", "rescaling"})
"""Deterministic image layers allowed between augmentations (pad before a random crop)."""


def check_augmentation(spec: Spec) -> None:
    layers = spec.data.augmentation
    if not layers:
        return
    if spec.gan is not None:
        raise ValueError(
            "data.augmentation is set for a GAN, whose step loopgen writes without it; remove it"
        )
    for i, layer in enumerate(layers):
        path = f"data.augmentation[{i}]"
        entry = layer.entry
        if not entry.get("augmentation") and layer.kind not in PREPARING:
            raise ValueError(
                f"{path} is {layer.keras_class}, not an image augmentation layer (RandomFlip, "
                "RandomCrop, MixUp, ...) nor padding or resizing; put it in the model"
            )
        if spec.data.augment_in == "pipeline" and entry.get("seeded") is False:
            raise ValueError(
                f"{path}: {layer.keras_class} ignores the seed it is given (Keras "
                "3.15): in the pipeline its choices would depend on hidden state, not on the "
                "example, and a resumed run would differ. Set data.augment_in='model' (its "
                "state is checkpointed there) or use other layers"
            )
        if entry.get("batch_level") and any(
            not x.entry.get("batch_level") for x in layers[i + 1 :]
        ):
            raise ValueError(
                f"{path}: {layer.keras_class} mixes whole batches and comes before "
                "augmentations of single images; put MixUp and CutMix last"
            )
        if entry.get("batch_level") and spec.data.labels != "one_hot":
            raise ValueError(
                f"{path}: {layer.keras_class} mixes the labels of two examples too, "
                "which needs one-hot labels: set data.labels='one_hot' (and data.num_classes, "
                "and a categorical loss)"
            )
    masks = getattr(spec.data.train, "task", "") in ("segmentation", "multitask") or getattr(
        spec.data.train, "label_is_mask", False
    )
    if masks:
        raise ValueError(
            "data.augmentation with per-pixel mask labels: loopgen moves the images but not "
            "their masks; remove data.augmentation (or hand-edit the script to transform the "
            "masks too)"
        )
    image = _image_input(spec)
    shape = image
    for i, layer in enumerate(layers):
        shape = shapes.apply(layer, [shape], f"data.augmentation[{i}]", {}, {})
    if shape is not None and tuple(shape) != tuple(image):
        raise ValueError(
            f"data.augmentation turns images of shape {tuple(image)} into {tuple(shape)}, but "
            "the model takes the first: crop to the input size (e.g. ZeroPadding2D(4) then "
            "RandomCrop(height, width) of the original size)"
        )


def _image_input(spec: Spec) -> tuple:
    # A VAE's model is its decoder, of codes: the images go into its encoder.
    model = spec.training.encoder if spec.training.kind == "vae" else spec.model
    if model is None or model.kind in ("import", "keras_hub"):
        shape = getattr(model, "input_shape", None)
        if shape is None:
            raise ValueError(
                "data.augmentation needs the model's input shape: set model.input_shape"
            )
    elif model.kind == "graph":
        if len(model.inputs) != 1:
            raise ValueError(
                f"data.augmentation transforms one image input, but the model has the inputs "
                f"{sorted(model.inputs)}; augment inside the model's graph instead"
            )
        shape = next(iter(model.inputs.values())).shape
    else:
        shape = model.input_shape
    if len(shape) != 3:
        raise ValueError(
            f"data.augmentation transforms images, (height, width, channels), but the model's "
            f"input has shape {tuple(shape)}; remove data.augmentation"
        )
    return tuple(shape)
