"""Shape checking at render time: runs `model.input_shape` through the layers the way Keras
would (channels last) and reports the first layer that cannot take its input, by its path in
the spec. A wrong UNet skip or a Conv2D on flat inputs is caught before TensorFlow starts."""

from __future__ import annotations

import math
from typing import Any

from .base import Var
from .layers import (
    ActivationLayer,
    BatchNormalization,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    Custom,
    CustomLayerClass,
    Dense,
    Dropout,
    Flatten,
    MaxPooling2D,
    Repeat,
    Reshape,
    SaveSkip,
    UpSampling2D,
)

Shape = tuple[int, ...]


class ShapeError(ValueError):
    pass


def check_shapes(
    input_shape: Shape,
    layers: list[Any],
    classes: dict[str, CustomLayerClass],
    path: str = "model.layers",
):
    """Raises ShapeError naming `model.layers[...]` (or `path[...]`) where a layer does not fit
    its input; returns the output shape (without the batch dimension)."""
    skips: list[tuple[Shape, str]] = []
    return _run(tuple(input_shape), layers, path, {}, classes, skips)


def _run(shape, items, path, env, classes, skips) -> Shape:
    for i, item in enumerate(items):
        here = f"{path}[{i}]"
        if isinstance(item, Repeat):
            for values in zip(*item.over.values(), strict=True):
                bound = {**env, **dict(zip(item.over, values, strict=True))}
                shape = _run(shape, item.layers, f"{here}.layers", bound, classes, skips)
        elif isinstance(item, SaveSkip):
            skips.append((shape, here))
        elif isinstance(item, Concatenate):
            skip, saved_at = skips.pop()
            shape = _concatenate(skip, saved_at, shape, item.axis, here)
        elif isinstance(item, Custom):
            cls = classes[item.cls]
            params = {**cls.params, **{k: _value(v, env) for k, v in item.args.items()}}
            for j, layer in enumerate(cls.layers):
                where = f"{here} ({cls.name}.layers[{j}])"
                shape = _layer(shape, layer, where, params)
        else:
            shape = _layer(shape, item, here, env)
    return shape


def _value(value: Any, env: dict[str, Any]) -> Any:
    return env.get(value.var, value) if isinstance(value, Var) else value


def _pair(value: Any, env: dict[str, Any]) -> tuple[int, int]:
    value = _value(value, env)
    return (value, value) if isinstance(value, int) else tuple(value)


def _layer(shape: Shape, layer: Any, here: str, env: dict[str, Any]) -> Shape:
    name = type(layer).__name__
    if isinstance(layer, Dropout | BatchNormalization | ActivationLayer):
        return shape
    if isinstance(layer, Flatten):
        return (math.prod(shape),)
    if isinstance(layer, Reshape):
        if math.prod(layer.target_shape) != math.prod(shape):
            raise ShapeError(
                f"{here}: Reshape to {layer.target_shape} ({math.prod(layer.target_shape)} "
                f"values) gets inputs of shape {shape} ({math.prod(shape)} values); choose a "
                f"target_shape with {math.prod(shape)} values"
            )
        return tuple(layer.target_shape)
    if isinstance(layer, Dense):
        return (*shape[:-1], _value(layer.units, env))
    if len(shape) != 3:
        raise ShapeError(
            f"{here}: {name} takes (height, width, channels) inputs, but gets shape {shape}; "
            + (
                f"set model.input_shape=({shape[0]}, {shape[1]}, 1) for one channel"
                if len(shape) == 2
                else "add a Reshape(target_shape=(height, width, channels)) before it"
            )
        )
    height, width, channels = shape
    if isinstance(layer, UpSampling2D):
        size = _pair(layer.size, env)
        return (height * size[0], width * size[1], channels)
    if isinstance(layer, MaxPooling2D):
        window = _pair(layer.pool_size, env)
        strides = _pair(layer.strides, env) if layer.strides is not None else window
        out = _spatial((height, width), window, strides, layer.padding, here, name)
        return (*out, channels)
    if isinstance(layer, Conv2DTranspose):
        kernel, strides = _pair(layer.kernel_size, env), _pair(layer.strides, env)
        grow = [
            size * s if layer.padding == "same" else (size - 1) * s + k
            for size, k, s in zip((height, width), kernel, strides, strict=True)
        ]
        return (*grow, _value(layer.filters, env))
    if isinstance(layer, Conv2D):
        kernel, strides = _pair(layer.kernel_size, env), _pair(layer.strides, env)
        out = _spatial((height, width), kernel, strides, layer.padding, here, name)
        return (*out, _value(layer.filters, env))
    return shape  # a layer this checker does not model: assume it keeps the shape


def _spatial(size, window, strides, padding, here, name) -> tuple[int, int]:
    if padding == "same":
        return tuple(math.ceil(n / s) for n, s in zip(size, strides, strict=True))
    out = tuple((n - k) // s + 1 for n, k, s in zip(size, window, strides, strict=True))
    if min(out) < 1:
        raise ShapeError(
            f"{here}: {name} with a {window[0]}x{window[1]} window and padding='valid' needs "
            f"inputs of at least that size, but gets {size[0]}x{size[1]}; use padding='same', "
            "a smaller window, or fewer downsampling layers before it"
        )
    return out


def _concatenate(skip: Shape, saved_at: str, shape: Shape, axis: int, here: str) -> Shape:
    if len(skip) != len(shape):
        raise ShapeError(
            f"{here}: Concatenate joins the skip saved at {saved_at} (shape {skip}) with a "
            f"tensor of shape {shape}: their ranks differ"
        )
    axis = axis % len(shape)
    for d, (a, b) in enumerate(zip(skip, shape, strict=True)):
        if d != axis and a != b:
            raise ShapeError(
                f"{here}: Concatenate joins the skip saved at {saved_at} (shape {skip}) with "
                f"the decoder's tensor of shape {shape}: all sizes but the concatenated axis "
                "must match. Upsample as often as the encoder downsamples between the two, "
                "and use padding='same' so that convolutions keep the size"
            )
    joined = zip(skip, shape, strict=True)
    return tuple(a + b if d == axis else a for d, (a, b) in enumerate(joined))
