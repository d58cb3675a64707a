"""Layers, layer blocks and custom layer classes: the vocabulary of the `model` section.

Any Keras layer is one `KerasLayer`: its `kind` names the class (`conv1d` for
`keras.layers.Conv1D`) and its other fields are the constructor's arguments, by their Keras
names, checked against the catalog generated from the installed Keras (`dsl/catalog/`). The
Python names a spec file uses (`Conv1D(filters=128, kernel_size=5)`) are functions generated
from the same catalog (`dsl/vocabulary/`, written by `dsl/catalog/api.py`) that build
these models."""

import math
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from . import catalog
from .base import (
    Identifier,
    PositiveFloat,
    PositiveInt,
    StrictModel,
    Var,
    check_not_reserved,
)

Scalar = int | float | str | bool
"""A constant that a repeat loop or a custom layer parameter can take."""


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

REGULARIZER_KINDS = frozenset({"l1", "l2", "l1_l2"})


def _element_tag(value: Any) -> str:
    return (
        "var"
        if isinstance(value, Var) or (isinstance(value, dict) and set(value) == {"var"})
        else "data"
    )


Element = Annotated[
    Union[Annotated[Var, Tag("var")], Annotated[Any, Tag("data")]],  # noqa: UP007
    Discriminator(_element_tag),
]
"""An element of a tuple argument: a constant or a loop variable."""


def _argument_tag(value: Any) -> str:
    """Which kind of value a layer argument holds, so that pydantic validates it as that."""
    if isinstance(value, dict):
        if set(value) == {"var"}:
            return "var"
        if value.get("kind") in REGULARIZER_KINDS:
            return "regularizer"
        return "layer" if "kind" in value else "data"
    if isinstance(value, Var):
        return "var"
    if isinstance(value, L1 | L2 | L1L2):
        return "regularizer"
    if isinstance(value, KerasLayer):
        return "layer"
    if isinstance(value, list | tuple):
        return "sequence"
    return "data"


Argument = Annotated[
    Union[  # noqa: UP007 - a forward-referenced union
        Annotated[Var, Tag("var")],
        Annotated[Regularizer, Tag("regularizer")],
        Annotated["KerasLayer", Tag("layer")],
        Annotated[tuple[Element, ...], Tag("sequence")],
        Annotated[Any, Tag("data")],
    ],
    Discriminator(_argument_tag),
]
"""The value of a layer's constructor argument: a constant, a tuple, a loop variable (`Var`),
a regularizer, or another layer (e.g. the layer that `Bidirectional` wraps)."""


class Catalogued(StrictModel):
    """A class of the Keras catalog (a layer, loss, metric or optimizer): `kind` names it, in
    snake_case or by the class name; the extra fields are its constructor arguments by their
    Keras names, checked against the catalog with their paths."""

    model_config = ConfigDict(extra="allow")

    section: ClassVar[str]
    """The catalog section: layers, losses, metrics or optimizers."""
    kind: str
    """The Keras class, in snake_case (e.g. `conv1d` for `keras.layers.Conv1D`)."""

    @model_validator(mode="before")
    @classmethod
    def _class_name_as_kind(cls, data: Any) -> Any:
        # `kind="Conv1D"` means `kind="conv1d"`: both name the class, and the script says Conv1D.
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            entry = catalog.lookup(cls.section, data["kind"])
            if entry is not None and entry.kind != data["kind"]:
                data = {**data, "kind": entry.kind}
        return data

    @model_validator(mode="after")
    def _check_against_catalog(self) -> "Catalogued":
        entry = catalog.lookup(self.section, self.kind)
        if entry is None:
            what = {"losses": "loss"}.get(self.section, self.section[:-1])
            hint = catalog.did_you_mean(
                self.kind, catalog.kinds(self.section), f"see keras.{self.section}"
            )
            raise ValueError(f"kind={self.kind!r} is not a Keras {what}; {hint}")
        if entry.excluded:
            raise ValueError(f"{entry.class_name} cannot be used in a spec: {entry.excluded}")
        self._check_arguments(entry)
        return self

    def _check_arguments(self, entry: catalog.Entry) -> None:
        check_arguments(entry, self.given(), entry.class_name)

    def given(self) -> dict[str, Any]:
        """The constructor arguments the spec gives."""
        return dict(self.__pydantic_extra__ or {})

    @property
    def entry(self) -> catalog.Entry:
        entry = catalog.lookup(self.section, self.kind)
        assert entry is not None
        return entry

    @property
    def keras_class(self) -> str:
        return self.entry.class_name


class KerasLayer(Catalogued):
    """A Keras layer, `keras.layers.<Class>(...)`. `kind` is the class name in snake_case
    (`dense`, `conv1d`, `max_pooling2d`, `multi_head_attention`, ...; the class name itself,
    `Conv1D`, is accepted too); every other field is a constructor argument by its Keras name
    (`filters=128, kernel_size=5`). Unknown arguments, missing required ones and values of the
    wrong kind are errors naming the argument; defaults are left out of the script."""

    __pydantic_extra__: dict[str, Argument]

    is_layer: ClassVar[bool] = True
    section: ClassVar[str] = "layers"
    kind: str
    """The Keras layer class, in snake_case (e.g. `conv1d` for `keras.layers.Conv1D`)."""
    name: Identifier | None = None
    """Layer name in the Keras model (and the attribute name inside a custom layer)."""

    def arguments(self) -> list[tuple[str | None, Any]]:
        """Constructor arguments as (keyword, or None for positional, value), as a Keras user
        writes them: the required ones positionally, then the others in the constructor's
        order, defaults left out, the name last."""
        return constructor_arguments(self.entry, self.given(), self.name)

    @property
    def regularized(self) -> bool:
        return any(
            isinstance(v, L1 | L2 | L1L2) or (k.endswith("_regularizer") and v is not None)
            for k, v in self.given().items()
        )

    @property
    def takes_training(self) -> bool:
        """Whether `training=` must be passed when calling it (behaves differently in training)."""
        return self.entry.takes_training

    def arg(self, name: str) -> Any:
        """An argument's value: the one the spec gives, else Keras' default."""
        given = self.given()
        if name in given:
            return given[name]
        arg = self.entry.args.get(name)
        return arg.default if arg is not None else None


def check_arguments(entry: catalog.Entry, given: dict[str, Any], what: str) -> None:
    """Raises for an argument the class does not take, a value of the wrong kind (each at the
    argument's own path), or a required argument missing: the message says the fix."""
    known = entry.args
    base = BASE_ARGUMENTS if entry.get("base_kwargs") else {}
    for name, value in given.items():
        arg = known.get(name) or base.get(name)
        if arg is None:
            options = [*known, *base, "name"]
            hint = catalog.closest(name, options)
            raise argument_error(
                what,
                name,
                value,
                f"{what} has no argument {name!r}; "
                + (f"did you mean {hint!r}?" if hint else f"its arguments: {sorted(known)}"),
                unknown=True,
                meant=hint,
            )
        if _contains_var(value):
            continue  # checked where the loop or the class gives it a value
        problem = _non_finite(value) or catalog.value_problem(arg, value) or _range(name, value)
        if problem:
            raise argument_error(what, name, value, problem)
    missing = [name for name in entry.required if name not in given]
    if missing:
        raise ValueError(
            f"{what} needs {', '.join(repr(m) for m in missing)}: add "
            + ", ".join(f"{m}=..." for m in missing)
        )


def argument_error(
    what: str,
    name: str,
    value: Any,
    message: str,
    unknown: bool = False,
    meant: str | None = None,
) -> ValidationError:
    """An error at the argument's own path (`model.layers[3].filters`), raised from a model
    validator: pydantic places it below the model's path. `unknown`: an argument the class
    does not take (a misspelling; the loader checks the cross-field rules without it, or with
    it renamed to the argument it was `meant` to be, the one the message suggests)."""
    ctx = {"error": message, "unknown": unknown, "meant": meant}
    line = {"type": "value_error", "loc": (name,), "input": value, "ctx": ctx}
    return ValidationError.from_exception_data(what, [line])  # type: ignore[list-item]


def constructor_arguments(
    entry: catalog.Entry, given: dict[str, Any], name: str | None
) -> list[tuple[str | None, Any]]:
    args: list[tuple[str | None, Any]] = []
    for arg in entry.args.values():
        if arg.name not in given:
            continue
        value = given[arg.name]
        if arg.required and all(a == (None, a[1]) for a in args):
            args.append((None, value))
        elif not catalog.is_default(arg, value):
            args.append((arg.name, value))
    args += [(k, v) for k, v in given.items() if k not in entry.args]  # dtype, trainable, ...
    if name is not None:
        args.append(("name", name))
    return args


BASE_ARGUMENTS = {
    "dtype": catalog.Argument("dtype", False, None, ("dtype", "none"), None),
    "trainable": catalog.Argument("trainable", False, True, ("bool",), None),
}
"""Arguments every Keras layer takes besides its own (`name` is a field of its own)."""


RANGES = {
    "rate": (0, 1, "the fraction dropped, in [0, 1)"),
    "dropout": (0, 1, "the fraction dropped, in [0, 1)"),
    "recurrent_dropout": (0, 1, "the fraction dropped, in [0, 1)"),
    "momentum": (0, 1, "a decay in [0, 1)"),
    "units": (1, None, "a size of at least 1"),
    "filters": (1, None, "a size of at least 1"),
    "num_heads": (1, None, "a count of at least 1"),
    "key_dim": (1, None, "a size of at least 1"),
    "input_dim": (1, None, "a vocabulary size of at least 1"),
    "output_dim": (1, None, "a size of at least 1"),
}
"""Ranges of numeric arguments, by name, across Keras (its signatures do not say them; most are
checked only when the layer is built or trained): a dropout of 1 drops everything, a layer of 0
units has no output."""


def _range(name: str, value: Any) -> str | None:
    bounds = RANGES.get(name)
    if bounds is None or not isinstance(value, int | float) or isinstance(value, bool):
        return None
    low, high, meaning = bounds
    if value < low or (high is not None and value >= high):
        return f"{value!r} is out of range: it is {meaning}"
    return None


def _contains_var(value: Any) -> bool:
    if isinstance(value, Var):
        return True
    return isinstance(value, tuple | list) and any(_contains_var(v) for v in value)


def _non_finite(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN and ±inf are not allowed here; give a finite number"
    if isinstance(value, tuple | list):
        return next((p for p in map(_non_finite, value) if p), None)
    if isinstance(value, dict):
        return next((p for p in map(_non_finite, value.values()) if p), None)
    return None


class Custom(StrictModel):
    """An instance of a custom layer class declared in `Spec.custom_layers`."""

    kind: Literal["custom"] = "custom"
    cls: Identifier
    """Name of the custom layer class (a `CustomLayerClass.name`)."""
    args: dict[Identifier, Scalar | Var] = {}
    """Constructor arguments; parameters not given take the class's defaults."""
    name: Identifier | None = None
    """Layer name in the Keras model (and the attribute name inside a custom layer)."""

    def arguments(self) -> list[tuple[str | None, Any]]:
        return [*self.args.items(), *([("name", self.name)] if self.name else [])]

    @property
    def takes_training(self) -> bool:
        return True

    @property
    def regularized(self) -> bool:
        return False  # its sublayers say (custom_layers)


APPLICATION_ARGS_SET_BY_LOOPGEN = {
    "include_top": "a backbone is the model without its classifier (include_top=False)",
    "input_tensor": "the backbone is called on the node's input",
    "input_shape": "it is the shape of the node's input",
    "weights": "set Backbone.weights",
    "pooling": "set Backbone.pooling",
    "classes": "a backbone has no classifier; add a Dense layer after it",
    "classifier_activation": "a backbone has no classifier; add a Dense layer after it",
    "name": "the backbone takes its node's name",
}


class Backbone(StrictModel):
    """A `keras.applications` model as a layer of a graph model: its convolutional part
    (`include_top=False`), pretrained or not, frozen or trainable. Its BatchNormalization
    layers keep their ImageNet statistics: frozen, they run in inference mode, and
    `fine_tune` leaves them frozen when it unfreezes the rest (the Keras transfer-learning
    guide's advice; statistics of small fine-tuning batches would undo the pretraining). The
    application's own `preprocess_input` is applied to its input."""

    kind: Literal["backbone"] = "backbone"
    application: str
    """The application, by class name or lower-case name: `MobileNetV2`, `EfficientNetB0`,
    `ResNet50`, ... (every one of `keras.applications`)."""
    weights: str | None = "imagenet"
    """`imagenet` (downloaded once into ~/.keras/models), a path to a weights file of the same
    architecture without its top, or None for random initial weights."""
    pooling: Literal["avg", "max"] | None = "avg"
    """How the feature map becomes a vector: global average or max pooling; None keeps the
    map."""
    trainable: bool = False
    """Whether its weights train from the start; False freezes it (see `fine_tune` to unfreeze
    it later)."""
    preprocess: bool = True
    """Apply the application's `preprocess_input` to the input (e.g. pixels from [0, 255] to
    [-1, 1] for MobileNetV2): feed it 0-255 pixels (no data.rescale)."""
    args: dict[Identifier, int | float | str | bool | None] = {}
    """Other arguments of the application's constructor (e.g. `alpha` for MobileNetV2)."""

    @model_validator(mode="after")
    def _known_application(self) -> "Backbone":
        entry = self._lookup()
        if entry is None:
            names = sorted(catalog.data()["applications"])
            raise ValueError(
                f"application={self.application!r} is not one of keras.applications; "
                + catalog.did_you_mean(self.application, names, f"choose one of {names}")
            )
        for name in self.args:
            why = APPLICATION_ARGS_SET_BY_LOOPGEN.get(name)
            if why:
                raise ValueError(f"args.{name} is not set here: {why}")
        check_arguments(entry, self.args, entry.class_name)
        return self

    def _lookup(self) -> catalog.Entry | None:
        """The application by its class name or its lower-case name."""
        return catalog.lookup("applications", self.application) or catalog.lookup(
            "applications", self.application.lower()
        )

    @property
    def entry(self) -> catalog.Entry:
        entry = self._lookup()
        assert entry is not None
        return entry

    @property
    def keras_class(self) -> str:
        return self.entry.class_name

    @property
    def takes_training(self) -> bool:
        return True

    @property
    def regularized(self) -> bool:
        return False


class PositionEmbedding(StrictModel):
    """Adds a learned vector to every position of a sequence (the first `sequence_length`
    positions), so that attention, blind to order, knows where each token is: the position
    embedding of a Transformer (as keras_hub's PositionEmbedding). Keras has no such layer:
    the script defines it, a small `keras.layers.Layer` subclass."""

    kind: Literal["position_embedding"] = "position_embedding"
    sequence_length: PositiveInt
    """The longest sequence it embeds (the input length)."""
    name: Identifier | None = None
    """Layer name in the Keras model."""

    keras_class: ClassVar[str] = "PositionEmbedding"

    def arguments(self) -> list[tuple[str | None, Any]]:
        return [
            ("sequence_length", self.sequence_length),
            *([("name", self.name)] if self.name else []),
        ]

    @property
    def takes_training(self) -> bool:
        return False

    @property
    def regularized(self) -> bool:
        return False


class SaveSkip(StrictModel):
    """Saves the running tensor for a later `Concatenate()` (UNet skip connection).

    Skips are a stack: the last one saved is the first one concatenated."""

    kind: Literal["save_skip"] = "save_skip"


class Repeat(StrictModel):
    """Writes a block of layers once and repeats it in a Python `for` loop in the script.

    `Repeat(over={"filters": [32, 64, 128]}, layers=[...Var(var="filters")...])` renders as
    `for filters in (32, 64, 128): ...`. Several names iterate in parallel (`zip`)."""

    kind: Literal["repeat"] = "repeat"
    over: dict[Identifier, list[Scalar]]
    """Loop variables and their values, one value per repetition; all lists equally long."""
    layers: list["Item"]
    """The block, applied once per repetition."""

    @model_validator(mode="after")
    def _same_lengths(self) -> "Repeat":
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


def _item_tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    own = ("custom", "save_skip", "repeat", "backbone", "position_embedding")
    return kind if kind in own else "layer"


Layer = Annotated[
    Union[  # noqa: UP007
        Annotated[KerasLayer, Tag("layer")],
        Annotated[Custom, Tag("custom")],
        Annotated[Backbone, Tag("backbone")],
        Annotated[PositionEmbedding, Tag("position_embedding")],
    ],
    Discriminator(_item_tag),
]
"""One layer: a Keras layer, or an instance of a custom layer class."""

Item = Annotated[
    Union[  # noqa: UP007
        Annotated[KerasLayer, Tag("layer")],
        Annotated[Custom, Tag("custom")],
        Annotated[PositionEmbedding, Tag("position_embedding")],
        Annotated[Backbone, Tag("backbone")],
        Annotated[SaveSkip, Tag("save_skip")],
        Annotated[Repeat, Tag("repeat")],
    ],
    Discriminator(_item_tag),
]
"""A layer, a repeated block of layers, or a skip-connection marker."""

KerasLayer.model_rebuild()
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
    def _layers_use_known_params(self) -> "CustomLayerClass":
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
            if _merges(layer):
                raise ValueError(
                    f"layers[{i}]: {layer.keras_class} needs several inputs and a custom layer "
                    "applies its sublayers in sequence; put it in a functional or graph model "
                    "instead"
                )
            for name in referenced_vars(layer):
                if name not in self.params:
                    raise ValueError(
                        f"layers[{i}] refers to Var {name!r}, which is not a parameter of "
                        f"{self.name}; add it to params (known: {sorted(self.params)})"
                    )
        return self


def _merges(layer: Any) -> bool:
    """Whether a layer takes several tensors (Concatenate, Add, MultiHeadAttention, ...)."""
    return isinstance(layer, KerasLayer) and layer.entry.call.get("inputs", "single") != "single"


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


def referenced_vars(item: Any) -> set[str]:
    """Names of all `Var`s that an item (and, for a repeat, its body) refers to."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, Var):
            found.add(value.var)
        elif isinstance(value, tuple | list):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, KerasLayer):
            for v in value.given().values():
                visit(v)

    if isinstance(item, KerasLayer):
        visit(item.given())
    elif isinstance(item, Custom):
        visit(item.args)
    elif isinstance(item, Repeat):
        for layer in item.layers:
            found |= referenced_vars(layer) - set(item.over)
    return found
