"""Layers, layer blocks and custom layer classes: the vocabulary of the `model` section."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field, model_validator

from .base import (
    Identifier,
    PositiveFloat,
    PositiveInt,
    Probability,
    StrictModel,
    Var,
    check_not_reserved,
)

Scalar = int | float | str | bool
"""A constant that a repeat loop or a custom layer parameter can take."""

IntOrVar = Annotated[int, Field(gt=0)] | Var
SizeOrVar = PositiveInt | tuple[PositiveInt, PositiveInt] | Var

Activation = Literal[
    "relu", "sigmoid", "softmax", "tanh", "gelu", "elu", "selu", "swish", "silu",
    "leaky_relu", "softplus", "linear",
]  # fmt: skip
"""Keras activation names."""


class L1(StrictModel):
    """L1 weight penalty: `l1 * sum(|w|)` added to the loss through `model.losses`."""

    kind: Literal["l1"] = "l1"
    l1: PositiveFloat = 0.01
    """Penalty factor."""


class L2(StrictModel):
    """L2 weight penalty: `l2 * sum(w**2)` added to the loss through `model.losses`."""

    kind: Literal["l2"] = "l2"
    l2: PositiveFloat = 0.01
    """Penalty factor."""


class L1L2(StrictModel):
    """Both penalties at once."""

    kind: Literal["l1_l2"] = "l1_l2"
    l1: PositiveFloat = 0.01
    """L1 penalty factor."""
    l2: PositiveFloat = 0.01
    """L2 penalty factor."""


Regularizer = Annotated[L1 | L2 | L1L2, Field(discriminator="kind")]
"""A weight regularizer; its penalty is part of the loss the train step differentiates."""


class LayerBase(StrictModel):
    """Fields and rendering hooks shared by every layer."""

    keras_class: ClassVar[str]
    """The `keras.layers` class this layer renders to."""
    positional: ClassVar[tuple[str, ...]] = ()
    """Arguments rendered positionally, in this order (as a TF user would write them)."""

    name: Identifier | None = None
    """Layer name in the Keras model (and the attribute name inside a custom layer)."""

    def arguments(self) -> list[tuple[str | None, Any]]:
        """Constructor arguments as (keyword or None for positional, value); defaults omitted."""
        args: list[tuple[str | None, Any]] = [(None, getattr(self, f)) for f in self.positional]
        fields = type(self).model_fields
        # The layer's own options first, then the shared ones (activation, initializers,
        # regularizers), then the name: the order a person writes them in.
        shared = [f for f in _Kernel.model_fields if f != "name"]
        own = [f for f in fields if f not in shared and f not in ("kind", "name")]
        for field in [*own, *shared, "name"]:
            if field in fields and field not in self.positional:
                value = getattr(self, field)
                if value != fields[field].default:
                    args.append((field, value))
        return args

    @property
    def regularized(self) -> bool:
        return any(
            getattr(self, f, None) is not None for f in ("kernel_regularizer", "bias_regularizer")
        )

    @property
    def takes_training(self) -> bool:
        """Whether `training=` must be passed when calling it (behaves differently in training)."""
        return False


class _Kernel(LayerBase):
    activation: Activation | None = None
    """Activation applied to the output; None is linear."""
    use_bias: bool = True
    """Whether the layer has a bias vector."""
    kernel_initializer: str = "glorot_uniform"
    """Keras initializer name for the kernel."""
    kernel_regularizer: Regularizer | None = None
    """Penalty on the kernel, added to the loss."""
    bias_regularizer: Regularizer | None = None
    """Penalty on the bias, added to the loss."""


class Dense(_Kernel):
    """Fully connected layer."""

    keras_class: ClassVar[str] = "Dense"
    positional: ClassVar[tuple[str, ...]] = ("units",)
    kind: Literal["dense"] = "dense"
    units: IntOrVar
    """Output size."""


class Conv2D(_Kernel):
    """2-D convolution over (height, width, channels) inputs."""

    keras_class: ClassVar[str] = "Conv2D"
    positional: ClassVar[tuple[str, ...]] = ("filters", "kernel_size")
    kind: Literal["conv2d"] = "conv2d"
    filters: IntOrVar
    """Number of output channels."""
    kernel_size: SizeOrVar = 3
    """Kernel height and width."""
    strides: SizeOrVar = 1
    """Stride of the convolution."""
    padding: Literal["valid", "same"] = "valid"
    """`same` keeps the spatial size (at stride 1)."""


class Conv2DTranspose(Conv2D):
    """Transposed convolution (learned upsampling), as in UNet decoders."""

    keras_class: ClassVar[str] = "Conv2DTranspose"
    kind: Literal["conv2d_transpose"] = "conv2d_transpose"  # type: ignore[assignment]


class MaxPooling2D(LayerBase):
    """Max pooling over spatial windows."""

    keras_class: ClassVar[str] = "MaxPooling2D"
    kind: Literal["max_pooling2d"] = "max_pooling2d"
    pool_size: SizeOrVar = 2
    """Window size."""
    strides: SizeOrVar | None = None
    """Stride; None means the pool size."""
    padding: Literal["valid", "same"] = "valid"
    """Padding mode."""


class UpSampling2D(LayerBase):
    """Repeats rows and columns (fixed upsampling)."""

    keras_class: ClassVar[str] = "UpSampling2D"
    kind: Literal["up_sampling2d"] = "up_sampling2d"
    size: SizeOrVar = 2
    """Upsampling factor."""
    interpolation: Literal["nearest", "bilinear"] = "nearest"
    """Interpolation method."""


class Concatenate(LayerBase):
    """Concatenates the running tensor with the most recently saved skip connection
    (`SaveSkip`), as in UNet decoders. Functional models only."""

    keras_class: ClassVar[str] = "Concatenate"
    kind: Literal["concatenate"] = "concatenate"
    axis: int = -1
    """Axis to concatenate along."""


class Flatten(LayerBase):
    """Flattens all but the batch dimension."""

    keras_class: ClassVar[str] = "Flatten"
    kind: Literal["flatten"] = "flatten"


class Reshape(LayerBase):
    """Reshapes all but the batch dimension."""

    keras_class: ClassVar[str] = "Reshape"
    positional: ClassVar[tuple[str, ...]] = ("target_shape",)
    kind: Literal["reshape"] = "reshape"
    target_shape: tuple[PositiveInt, ...]
    """New shape without the batch dimension."""


class Dropout(LayerBase):
    """Randomly zeroes a fraction of the inputs while training."""

    keras_class: ClassVar[str] = "Dropout"
    positional: ClassVar[tuple[str, ...]] = ("rate",)
    kind: Literal["dropout"] = "dropout"
    rate: Probability
    """Fraction of inputs to drop, in [0, 1)."""

    @property
    def takes_training(self) -> bool:
        return True


class BatchNormalization(LayerBase):
    """Normalizes activations with batch statistics while training, moving averages otherwise."""

    keras_class: ClassVar[str] = "BatchNormalization"
    kind: Literal["batch_normalization"] = "batch_normalization"
    momentum: Probability = 0.99
    """Momentum of the moving averages."""
    epsilon: PositiveFloat = 0.001
    """Added to the variance for numerical stability."""
    synchronized: bool = False
    """Synchronize batch statistics across replicas under a multi-device strategy."""

    @property
    def takes_training(self) -> bool:
        return True


class ActivationLayer(LayerBase):
    """A standalone activation, e.g. after BatchNormalization."""

    keras_class: ClassVar[str] = "Activation"
    positional: ClassVar[tuple[str, ...]] = ("activation",)
    kind: Literal["activation"] = "activation"
    activation: Activation
    """Activation name."""


class Custom(LayerBase):
    """An instance of a custom layer class declared in `Spec.custom_layers`."""

    kind: Literal["custom"] = "custom"
    cls: Identifier
    """Name of the custom layer class (a `CustomLayerClass.name`)."""
    args: dict[Identifier, Scalar | Var] = {}
    """Constructor arguments; parameters not given take the class's defaults."""

    def arguments(self) -> list[tuple[str | None, Any]]:
        return [*self.args.items(), *([("name", self.name)] if self.name else [])]

    @property
    def takes_training(self) -> bool:
        return True


class SaveSkip(StrictModel):
    """Saves the running tensor for a later `Concatenate(skip=True)` (UNet skip connection).

    Skips are a stack: the last one saved is the first one concatenated."""

    kind: Literal["save_skip"] = "save_skip"


class Repeat(StrictModel):
    """Writes a block of layers once and repeats it in a Python `for` loop in the script.

    `Repeat(over={"filters": [32, 64, 128]}, layers=[...Var(var="filters")...])` renders as
    `for filters in (32, 64, 128): ...`. Several names iterate in parallel (`zip`)."""

    kind: Literal["repeat"] = "repeat"
    over: dict[Identifier, list[Scalar]]
    """Loop variables and their values, one value per repetition; all lists equally long."""
    layers: list[Item]
    """The block, applied once per repetition."""

    @model_validator(mode="after")
    def _same_lengths(self) -> Repeat:
        if not self.over:
            raise ValueError("over is empty: name at least one loop variable and its values")
        lengths = {name: len(values) for name, values in self.over.items()}
        if len(set(lengths.values())) != 1 or 0 in lengths.values():
            raise ValueError(
                f"over: every loop variable needs the same, non-zero number of values; got "
                f"{lengths}. Make the lists equally long"
            )
        if not self.layers:
            raise ValueError("layers is empty: a repeat needs at least one layer")
        for name in self.over:
            check_not_reserved(name, "over: loop variable")
        return self

    @property
    def times(self) -> int:
        return len(next(iter(self.over.values())))


Layer = Annotated[
    Union[  # noqa: UP007 - a forward-referenced union
        Dense, Conv2D, Conv2DTranspose, MaxPooling2D, UpSampling2D, Concatenate, Flatten,
        Reshape, Dropout, BatchNormalization, ActivationLayer, Custom,
    ],
    Field(discriminator="kind"),
]  # fmt: skip
"""One Keras layer."""

Item = Annotated[
    Union[  # noqa: UP007
        Dense, Conv2D, Conv2DTranspose, MaxPooling2D, UpSampling2D, Concatenate, Flatten,
        Reshape, Dropout, BatchNormalization, ActivationLayer, Custom, SaveSkip, Repeat,
    ],
    Field(discriminator="kind"),
]  # fmt: skip
"""A layer, a repeated block of layers, or a skip-connection marker."""

Repeat.model_rebuild()


class CustomLayerClass(StrictModel):
    """A custom layer class, rendered as a real `keras.layers.Layer` subclass in the script.

    Its sublayers are created in `__init__` and applied in order in `call`; its parameters are
    constructor arguments, saved in `get_config` so `.keras` files round-trip."""

    name: Identifier
    """Class name, CapWords by convention (e.g. `ConvBlock`)."""
    doc: str = ""
    """Docstring of the class: what the block is and why it exists."""
    params: dict[Identifier, Scalar] = {}
    """Constructor parameters and their defaults; layers refer to them with `Var`."""
    layers: list[Layer]
    """Sublayers, applied in order."""

    @model_validator(mode="after")
    def _layers_use_known_params(self) -> CustomLayerClass:
        if not self.layers:
            raise ValueError("layers is empty: a custom layer needs at least one sublayer")
        for param in self.params:
            check_not_reserved(param, "params: parameter")
            if param in LAYER_ATTRIBUTES:
                raise ValueError(
                    f"params: {param!r} is an attribute every Keras layer has; rename it"
                )
        names = [layer.name for layer in self.layers if layer.name]
        for i, layer in enumerate(self.layers):
            if layer.name is None:
                continue
            if names.count(layer.name) > 1:
                raise ValueError(
                    f"layers[{i}].name={layer.name!r} is used twice; sublayers with one name "
                    "would be one attribute and share their weights. Give each a unique name"
                )
            if layer.name in self.params or layer.name in LAYER_ATTRIBUTES:
                raise ValueError(
                    f"layers[{i}].name={layer.name!r} clashes with "
                    f"{'a parameter' if layer.name in self.params else 'a Keras layer attribute'}"
                    " of the class (sublayers become attributes of the same name); rename it"
                )
        for i, layer in enumerate(self.layers):
            if isinstance(layer, Concatenate):
                raise ValueError(
                    f"layers[{i}]: Concatenate needs two inputs and a custom layer applies its "
                    "sublayers in sequence; put the concatenation in a functional model instead"
                )
            for name in referenced_vars(layer):
                if name not in self.params:
                    raise ValueError(
                        f"layers[{i}] refers to Var {name!r}, which is not a parameter of "
                        f"{self.name}; add it to params (known: {sorted(self.params)})"
                    )
        return self


LAYER_ATTRIBUTES = frozenset({
    "add_loss", "add_metric", "add_variable", "add_weight", "build", "build_from_config", "call",
    "compute_dtype", "compute_mask", "compute_output_shape", "compute_output_spec",
    "count_params", "dtype", "dtype_policy", "from_config", "get_build_config", "get_config",
    "get_weights", "input", "input_dtype", "input_spec", "load_own_variables", "losses",
    "metrics", "metrics_variables", "non_trainable_variables", "non_trainable_weights",
    "output", "path", "quantization_mode", "quantize", "quantized_build", "quantized_call",
    "rematerialized_call", "save_own_variables", "set_weights", "stateless_call",
    "supports_masking", "symbolic_call", "trainable", "trainable_variables",
    "trainable_weights", "variable_dtype", "variables", "weights", "name", "built",
})  # fmt: skip
"""Public attributes of `keras.layers.Layer` (Keras 3.15): a sublayer attribute or a parameter
of a custom layer class must not overwrite them."""


def referenced_vars(item: StrictModel) -> set[str]:
    """Names of all `Var`s that an item (and, for a repeat, its body) refers to."""
    found: set[str] = set()
    for field in type(item).model_fields:
        value = getattr(item, field)
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            if isinstance(v, Var):
                found.add(v.var)
    if isinstance(item, Repeat):
        for layer in item.layers:
            found |= referenced_vars(layer) - set(item.over)
    return found
