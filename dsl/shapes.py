"""Shape checking at render time: runs the model's input shapes through its layers the way
Keras would (channels last) and reports the first layer that cannot take its input, by its path
in the spec. A wrong UNet skip, a Conv2D on flat inputs, an Add of tensors of different shapes
is caught before TensorFlow starts.

The rules cover the common layers (dense, convolutions, pooling, recurrent, attention,
embeddings, merges, reshaping, normalization, dropout, augmentation); after a layer without a
rule the shape is unknown and checking stops along that path (`loopgen validate --build` builds
the model with Keras for the rest)."""

from __future__ import annotations

import math
from typing import Any

from .base import Var
from .layers import Custom, CustomLayerClass, KerasLayer

Shape = tuple[int | None, ...]
"""Shape of one example, without the batch dimension; None for a size known only at run time."""


class ShapeError(ValueError):
    pass


# --- chains (Sequential, Functional) -----------------------------------------------------------


def check_shapes(
    input_shape: Shape,
    layers: list[Any],
    classes: dict[str, CustomLayerClass],
    path: str = "model.layers",
) -> Shape | None:
    """Raises ShapeError naming `model.layers[...]` (or `path[...]`) where a layer does not fit
    its input; returns the output shape (without the batch dimension), None when unknown."""
    skips: list[tuple[Shape | None, str]] = []
    return _run(tuple(input_shape), layers, path, {}, classes, skips)


def _run(shape, items, path, env, classes, skips) -> Shape | None:
    for i, item in enumerate(items):
        here = f"{path}[{i}]"
        if item.kind == "repeat":
            for values in zip(*item.over.values(), strict=True):
                bound = {**env, **dict(zip(item.over, values, strict=True))}
                shape = _run(shape, item.layers, f"{here}.layers", bound, classes, skips)
        elif item.kind == "save_skip":
            skips.append((shape, here))
        elif item.kind == "concatenate":
            skip, saved_at = skips.pop()
            shape = _join_skip(skip, saved_at, shape, value(item.arg("axis"), env), here)
        else:
            shape = apply(item, [shape], here, env, classes)
    return shape


def apply(
    layer: Any, shapes: list[Shape | None], here: str, env: dict[str, Any], classes: dict
) -> Shape | None:
    """The output shape of `layer` (a KerasLayer or a custom layer) on inputs of `shapes`."""
    if isinstance(layer, Custom):
        cls = classes[layer.cls]
        params = {**cls.params, **{k: value(v, env) for k, v in layer.args.items()}}
        shape = shapes[0]
        for j, sublayer in enumerate(cls.layers):
            shape = apply(sublayer, [shape], f"{here} ({cls.name}.layers[{j}])", params, classes)
        return shape
    if getattr(layer, "kind", None) == "position_embedding":
        shape = shapes[0]
        if shape is not None and len(shape) != 2:
            raise ShapeError(
                f"{here}: PositionEmbedding adds a vector per position of a (steps, features) "
                f"sequence, but gets shape {shape}; put it after an Embedding"
            )
        if shape is not None and shape[0] is not None and shape[0] > layer.sequence_length:
            raise ShapeError(
                f"{here}: PositionEmbedding(sequence_length={layer.sequence_length}) gets "
                f"sequences of {shape[0]} steps; make sequence_length at least {shape[0]}"
            )
        return shape
    if not isinstance(layer, KerasLayer):
        return None  # a backbone: its output is known when Keras builds it
    if any(s is None for s in shapes):
        return None
    rule = RULES.get(layer.kind)
    if rule is None:
        return _family_rule(layer, shapes, here, env)
    return rule(layer, shapes if len(shapes) > 1 else shapes[0], here, env)


def value(v: Any, env: dict[str, Any]) -> Any:
    """A constant, or the value a loop or a parameter gives a `Var`."""
    if isinstance(v, Var):
        return env.get(v.var, v)
    if isinstance(v, tuple | list):
        return type(v)(value(x, env) for x in v)
    return v


def _known(*values: Any) -> bool:
    return all(not isinstance(v, Var) and v is not None for v in values)


def _tuple(v: Any, n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


# --- rules -------------------------------------------------------------------------------------


def _same(layer, shape, here, env):
    return shape


def _flatten(layer, shape, here, env):
    return (None,) if None in shape else (math.prod(shape),)


def _permute(layer, shape, here, env):
    dims = value(layer.arg("dims"), env)
    if not _known(*dims):
        return None
    if sorted(dims) != list(range(1, len(shape) + 1)):
        raise ShapeError(
            f"{here}: Permute(dims={tuple(dims)}) must order the axes 1 to {len(shape)} of inputs "
            f"of shape {shape} (the batch axis, 0, stays first), each once"
        )
    return tuple(shape[d - 1] for d in dims)


def _reshape(layer, shape, here, env):
    target = value(layer.arg("target_shape"), env)
    if not _known(*target) or None in shape:
        return tuple(target) if _known(*target) and -1 not in target else None
    size = math.prod(shape)
    if -1 in target:
        rest = math.prod(t for t in target if t != -1)
        if size % rest:
            raise ShapeError(
                f"{here}: Reshape to {tuple(target)} cannot hold inputs of shape {shape} ({size} "
                f"values): {size} is not a multiple of {rest}"
            )
        return tuple(size // rest if t == -1 else t for t in target)
    if math.prod(target) != size:
        raise ShapeError(
            f"{here}: Reshape to {tuple(target)} ({math.prod(target)} "
            f"values) gets inputs of shape {shape} ({size} values); choose a "
            f"target_shape with {size} values"
        )
    return tuple(target)


def _dense(layer, shape, here, env):
    units = value(layer.arg("units"), env)
    return (*shape[:-1], units if _known(units) else None)


def _embedding(layer, shape, here, env):
    dim = value(layer.arg("output_dim"), env)
    return (*shape, dim if _known(dim) else None)


def _spatial_rank(layer, shape, here, rank: int) -> None:
    """Raises unless `shape` is (spatial..., channels) with `rank` spatial axes."""
    name = layer.keras_class
    if len(shape) == rank + 1:
        return
    axes = {1: "(steps, channels)", 2: "(height, width, channels)", 3: "(depth, height, width, "
            "channels)"}[rank]  # fmt: skip
    if rank == 2 and len(shape) == 2:
        fix = f"set model.input_shape=({shape[0]}, {shape[1]}, 1) for one channel"
    elif rank == 1 and len(shape) == 1:
        fix = f"add a Reshape(target_shape=({shape[0]}, 1)) before it for one channel"
    else:
        fix = f"add a Reshape(target_shape={axes}) before it"
    raise ShapeError(f"{here}: {name} takes {axes} inputs, but gets shape {shape}; {fix}")


def _conv(rank: int, transpose: bool = False, depthwise: bool = False):
    def rule(layer, shape, here, env):
        _spatial_rank(layer, shape, here, rank)
        kernel = value(layer.arg("kernel_size"), env)
        strides = value(layer.arg("strides"), env)
        padding = value(layer.arg("padding"), env)
        if depthwise:
            channels = shape[-1] * value(layer.arg("depth_multiplier"), env)
            if layer.kind.startswith("separable"):
                channels = value(layer.arg("filters"), env)
        else:
            channels = value(layer.arg("filters"), env)
        if not _known(kernel, strides, padding, channels) or value(
            layer.arg("dilation_rate"), env
        ) not in (1, (1,) * rank, [1] * rank):
            return (*(None,) * rank, channels if _known(channels) else None)
        kernel, strides = _tuple(kernel, rank), _tuple(strides, rank)
        if transpose:
            grow = [
                None if n is None else n * s if padding == "same" else (n - 1) * s + k
                for n, k, s in zip(shape[:-1], kernel, strides, strict=True)
            ]
            return (*grow, channels)
        out = _window(shape[:-1], kernel, strides, padding, here, layer.keras_class)
        return (*out, channels)

    return rule


def _pool(rank: int):
    def rule(layer, shape, here, env):
        _spatial_rank(layer, shape, here, rank)
        window = value(layer.arg("pool_size"), env)
        strides = value(layer.arg("strides"), env)
        padding = value(layer.arg("padding"), env)
        if not _known(window, padding):
            return None
        window = _tuple(window, rank)
        strides = window if strides is None else _tuple(strides, rank)
        out = _window(shape[:-1], window, strides, padding, here, layer.keras_class)
        return (*out, shape[-1])

    return rule


def _global_pool(rank: int):
    def rule(layer, shape, here, env):
        _spatial_rank(layer, shape, here, rank)
        if layer.arg("keepdims"):
            return (*(1,) * rank, shape[-1])
        return (shape[-1],)

    return rule


def _upsample(rank: int):
    def rule(layer, shape, here, env):
        _spatial_rank(layer, shape, here, rank)
        size = value(layer.arg("size"), env)
        if not _known(size):
            return None
        size = _tuple(size, rank)
        return (*(None if n is None else n * s for n, s in zip(shape[:-1], size, strict=True)),
                shape[-1])  # fmt: skip

    return rule


def _window(size, window, strides, padding, here, name) -> tuple:
    if padding == "same":
        return tuple(
            None if n is None else math.ceil(n / s) for n, s in zip(size, strides, strict=False)
        )
    out = tuple(
        None if n is None else (n - k) // s + 1
        for n, k, s in zip(size, window, strides, strict=False)
    )
    if any(o is not None and o < 1 for o in out):
        shown = "x".join(str(w) for w in window)
        got = "x".join(str(n) for n in size)
        raise ShapeError(
            f"{here}: {name} with a {shown} window and padding='valid' needs "
            f"inputs of at least that size, but gets {got}; use padding='same', "
            "a smaller window, or fewer downsampling layers before it"
        )
    return out


def _recurrent(layer, shape, here, env):
    if len(shape) != 2:
        raise ShapeError(
            f"{here}: {layer.keras_class} takes (steps, features) inputs, but gets shape "
            f"{shape}; an Embedding before it gives token ids that shape, or add a Reshape"
        )
    units = value(layer.arg("units"), env)
    units = units if _known(units) else None
    return (shape[0], units) if layer.arg("return_sequences") else (units,)


def _bidirectional(layer, shape, here, env):
    inner = layer.arg("layer")
    out = apply(inner, [shape], f"{here}.layer", env, {})
    if out is None:
        return None
    merge = layer.arg("merge_mode")
    if merge == "concat" and out[-1] is not None:
        return (*out[:-1], out[-1] * 2)
    return out


def _attention(layer, shapes, here, env):
    query, value_shape = shapes[0], shapes[1]
    if len(query) < 2 or len(value_shape) < 2:
        raise ShapeError(
            f"{here}: MultiHeadAttention takes (steps, features) query and value, but gets "
            f"{query} and {value_shape}"
        )
    if len(shapes) > 2 and shapes[2][:-1] != value_shape[:-1]:
        raise ShapeError(
            f"{here}: MultiHeadAttention's key {shapes[2]} and value {value_shape} must have "
            "the same steps"
        )
    output_shape = value(layer.arg("output_shape"), env)
    if output_shape is not None:
        return None
    return query


def _merge(layer, shapes, here, env):
    if not isinstance(shapes, list):
        return shapes
    first = shapes[0]
    for other in shapes[1:]:
        if len(other) != len(first) or any(
            a is not None and b is not None and a != b and 1 not in (a, b)
            for a, b in zip(first, other, strict=True)
        ):
            raise ShapeError(
                f"{here}: {layer.keras_class} combines tensors element by element, but gets "
                f"shapes {' and '.join(str(s) for s in shapes)}; give them the same shape (e.g. "
                "a Dense or a 1x1 Conv to match the channels, or the same strides)"
            )
    return tuple(
        next((d for d in dims if d not in (None, 1)), dims[0]) for dims in zip(*shapes, strict=True)
    )


def _concatenate(layer, shapes, here, env):
    if not isinstance(shapes, list):
        return shapes
    axis = value(layer.arg("axis"), env)
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes) or not -rank <= axis < rank:
        raise ShapeError(
            f"{here}: Concatenate joins tensors of shapes "
            f"{' and '.join(str(s) for s in shapes)}: their ranks differ"
        )
    axis %= rank
    for d in range(rank):
        sizes = {s[d] for s in shapes} - {None}
        if d != axis and len(sizes) > 1:
            raise ShapeError(
                f"{here}: Concatenate joins tensors of shapes "
                f"{' and '.join(str(s) for s in shapes)}: all sizes but axis {axis} must match"
            )
    joined = [s[axis] for s in shapes]
    total = None if None in joined else sum(joined)
    return tuple(total if d == axis else shapes[0][d] for d in range(rank))


def _random_crop(layer, shape, here, env):
    if len(shape) != 3:
        raise ShapeError(
            f"{here}: {layer.keras_class} takes (height, width, channels) images, but gets "
            f"shape {shape}; it augments images only"
        )
    height, width = value(layer.arg("height"), env), value(layer.arg("width"), env)
    for size, axis, name in ((height, 0, "height"), (width, 1, "width")):
        if _known(size) and shape[axis] is not None and size > shape[axis]:
            raise ShapeError(
                f"{here}: {layer.keras_class} crops {name} {size} out of images of {name} "
                f"{shape[axis]}; crop at most the image (pad first with ZeroPadding2D)"
            )
    return (height, width, shape[-1])


def _image_only(layer, shape, here, env):
    if len(shape) != 3:
        raise ShapeError(
            f"{here}: {layer.keras_class} augments images, (height, width, channels), but "
            f"gets shape {shape}; apply it to an image input"
        )
    return shape


def _zero_padding2d(layer, shape, here, env):
    _spatial_rank(layer, shape, here, 2)
    padding = value(layer.arg("padding"), env)
    if not _known(padding):
        return None
    if isinstance(padding, int):
        rows = cols = (padding, padding)
    else:
        rows, cols = (_tuple(p, 2) for p in padding)
    height = None if shape[0] is None else shape[0] + sum(rows)
    width = None if shape[1] is None else shape[1] + sum(cols)
    return (height, width, shape[2])


RULES = {
    "flatten": _flatten,
    "reshape": _reshape,
    "permute": _permute,
    "dense": _dense,
    "embedding": _embedding,
    "conv1d": _conv(1),
    "conv2d": _conv(2),
    "conv3d": _conv(3),
    "conv1d_transpose": _conv(1, transpose=True),
    "conv2d_transpose": _conv(2, transpose=True),
    "conv3d_transpose": _conv(3, transpose=True),
    "depthwise_conv1d": _conv(1, depthwise=True),
    "depthwise_conv2d": _conv(2, depthwise=True),
    "separable_conv1d": _conv(1, depthwise=True),
    "separable_conv2d": _conv(2, depthwise=True),
    "max_pooling1d": _pool(1),
    "max_pooling2d": _pool(2),
    "max_pooling3d": _pool(3),
    "average_pooling1d": _pool(1),
    "average_pooling2d": _pool(2),
    "average_pooling3d": _pool(3),
    "global_average_pooling1d": _global_pool(1),
    "global_average_pooling2d": _global_pool(2),
    "global_average_pooling3d": _global_pool(3),
    "global_max_pooling1d": _global_pool(1),
    "global_max_pooling2d": _global_pool(2),
    "global_max_pooling3d": _global_pool(3),
    "up_sampling1d": _upsample(1),
    "up_sampling2d": _upsample(2),
    "up_sampling3d": _upsample(3),
    "zero_padding2d": _zero_padding2d,
    "lstm": _recurrent,
    "gru": _recurrent,
    "simple_rnn": _recurrent,
    "bidirectional": _bidirectional,
    "multi_head_attention": _attention,
    "add": _merge,
    "subtract": _merge,
    "multiply": _merge,
    "average": _merge,
    "maximum": _merge,
    "minimum": _merge,
    "concatenate": _concatenate,
    "random_crop": _random_crop,
    "center_crop": _random_crop,
}
"""Output shape by layer kind, for the layers whose shape a spec can get wrong."""

SAME_SHAPE = frozenset({
    "dropout", "spatial_dropout1d", "spatial_dropout2d", "spatial_dropout3d", "alpha_dropout",
    "gaussian_dropout", "gaussian_noise", "batch_normalization", "layer_normalization",
    "group_normalization", "unit_normalization", "rms_normalization", "activation", "re_lu",
    "leaky_re_lu", "elu", "p_re_lu", "softmax", "rescaling", "normalization",
    "activity_regularization", "masking", "identity",
})  # fmt: skip
"""Layers whose output has the shape of their input."""


def _family_rule(layer: KerasLayer, shapes, here, env) -> Shape | None:
    if layer.kind in SAME_SHAPE:
        return shapes[0]
    if layer.entry.get("augmentation") and layer.kind not in ("resizing",):
        return _image_only(layer, shapes[0], here, env) if not layer.entry.get("batch_level") \
            else shapes[0]  # fmt: skip
    return None


# --- graphs ------------------------------------------------------------------------------------


def check_graph_shapes(graph: Any, classes: dict, root: str = "model") -> dict[str, Shape | None]:
    """Runs the graph's input shapes through its nodes (blocks expanded with their arguments);
    returns the shape of every tensor by name."""
    shapes: dict[str, Shape | None] = {n: tuple(i.shape) for n, i in graph.inputs.items()}
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    for node in graph.ordered_nodes():
        here = f"{root}.nodes[{index[id(node)]}]"
        shapes[node.name] = _node(graph, node, here, shapes, {}, classes, root)
    return shapes


def _node(graph, node, here, shapes, env, classes, root) -> Shape | None:
    inputs = [shapes.get(name) for name in node.inputs]
    if node.layer is not None:
        return apply(node.layer, inputs, here, env, classes)
    if node.shared is not None:
        return apply(graph.shared[node.shared], inputs, here, env, classes)
    block = graph.block(node.block)
    args = {**block.params, **{k: value(v, env) for k, v in node.args.items()}}
    for bound, steps in block_calls(graph, node, here, args, root):
        local = dict(zip(block.inputs, inputs, strict=True))
        for inner, where in steps:
            if inner.exists(bound):
                local[inner.name] = _node(graph, inner, where, local, bound, classes, root)
            else:  # this call leaves the node out: its name is its input
                local[inner.name] = local[inner.inputs[0]]
        inputs = [local[block.output]]
    return inputs[0]


def block_calls(graph: Any, node: Any, here: str, args: dict[str, Any], root: str = "model"):
    """What a node that calls a block does, repetition after repetition: yields the block's
    arguments for that repetition (`args`, with the `over` values of it) and its nodes in build
    order, each with its spec path (a node whose `when` these arguments do not meet is left out
    of that call: `inner.exists(args)`)."""
    from .rules.graph import topological

    b = next(i for i, x in enumerate(graph.blocks) if x.name == node.block)
    block = graph.blocks[b]
    order = {id(n): j for j, n in enumerate(block.nodes)}
    ordered = topological(block.nodes)
    for r in range(node.repetitions):
        bound = {**args, **{k: values[r] for k, values in node.over.items()}}
        called = f"called by {here}" + (f", repetition {r + 1}" if node.repetitions > 1 else "")
        yield (
            bound,
            [
                (inner, f"{root}.blocks[{b}].nodes[{order[id(inner)]}] ({called})")
                for inner in ordered
            ],
        )


# --- the UNet skip of a Functional chain -------------------------------------------------------


def _join_skip(skip, saved_at: str, shape, axis: int, here: str) -> Shape | None:
    if skip is None or shape is None:
        return None
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
