"""Losses, optimizers and metrics: any of Keras' own, checked against the catalog like layers,
or your own functions and classes (`ImportedLoss`, `ImportedMetric`)."""

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BeforeValidator, Discriminator, Tag, field_validator

from . import catalog
from .base import Identifier, StrictModel, check_target
from .layers import Catalogued, check_arguments
from .schedules import LearningRate

LABELS = {
    "losses": {
        "sparse_categorical_crossentropy": "sparse",
        "categorical_crossentropy": "one_hot",
        "categorical_focal_crossentropy": "one_hot",
        "categorical_hinge": "one_hot",
        "categorical_generalized_cross_entropy": "sparse",
    },
    "metrics": {
        "sparse_categorical_accuracy": "sparse",
        "sparse_top_k_categorical_accuracy": "sparse",
        "sparse_categorical_crossentropy": "sparse",
        "mean_iou": "sparse",
        "iou": "sparse",
        "categorical_accuracy": "one_hot",
        "top_k_categorical_accuracy": "one_hot",
        "categorical_crossentropy": "one_hot",
        "one_hot_iou": "one_hot",
        "one_hot_mean_iou": "one_hot",
    },
}
"""The label format a loss or metric reads, where it matters: `sparse` (class ids) or `one_hot`
(checked against `data.labels`). Hand-kept: Keras' signatures do not say it."""

DEFAULT_METRIC_NAMES = {
    "sparse_categorical_accuracy": "accuracy",
    "categorical_accuracy": "accuracy",
    "binary_accuracy": "accuracy",
    "sparse_top_k_categorical_accuracy": "top_k_accuracy",
    "top_k_categorical_accuracy": "top_k_accuracy",
}
"""The logged name of a metric without `name=`: what Keras users call these in `fit`'s logs."""

LOOPGEN_DEFAULTS = {
    ("metrics", "mean_iou"): {"sparse_y_pred": False},
    ("metrics", "iou"): {"sparse_y_pred": False},
}
"""Arguments whose default differs in a loopgen script from Keras': the models output one score
per class, so IoU metrics take the argmax (Keras' default expects class ids)."""

SET_BY_LOOPGEN = {
    "losses": {"reduction": "the train step sets the reduction itself (per-example losses "
               "under a strategy and with accumulation, averaged over the global batch)"},
    "optimizers": {
        "clipnorm": "use gradients.clip_norm, which clips the whole batch's gradient",
        "global_clipnorm": "use gradients.clip_norm, which clips the whole batch's gradient",
        "clipvalue": "use gradients.clip_value",
        "gradient_accumulation_steps": "use gradients.accumulate_steps",
        "loss_scale_factor": "set performance.precision='mixed_float16' instead",
    },
}  # fmt: skip
"""Arguments the script decides, refused in a spec with what to use instead."""


class _Catalogued(Catalogued):
    """A Keras loss, metric or optimizer: `kind` names the class, the other fields are its
    constructor arguments by their Keras names."""

    def _check_arguments(self, entry: catalog.Entry) -> None:
        extra = dict(self.__pydantic_extra__ or {})  # the declared fields validate themselves
        for name in extra:
            why = SET_BY_LOOPGEN.get(self.section, {}).get(name)
            if why:
                raise ValueError(f"{entry.class_name}.{name} is not set in the spec: {why}")
        check_arguments(entry, extra, entry.class_name)

    def given(self) -> dict[str, Any]:
        """The constructor arguments the spec gives."""
        fields = {k: getattr(self, k) for k in type(self).model_fields if k != "kind"}
        return {
            **{k: v for k, v in fields.items() if v is not None},
            **(self.__pydantic_extra__ or {}),
        }

    def arg(self, name: str) -> Any:
        """An argument's value: the one the spec gives, else loopgen's or Keras' default."""
        given = self.given()
        if name in given:
            return given[name]
        ours = LOOPGEN_DEFAULTS.get((self.section, self.kind), {})
        if name in ours:
            return ours[name]
        arg = self.entry.args.get(name)
        return arg.default if arg is not None else None

    def arguments(self) -> list[tuple[str, Any]]:
        """Keyword arguments in the constructor's order, defaults left out."""
        given = {**LOOPGEN_DEFAULTS.get((self.section, self.kind), {}), **self.given()}
        return [
            (arg.name, given[arg.name])
            for arg in self.entry.args.values()
            if arg.name in given and not catalog.is_default(arg, given[arg.name])
        ]


class KerasLoss(_Catalogued):
    """A Keras loss, `keras.losses.<Class>(...)`: `kind` is the class in snake_case
    (`sparse_categorical_crossentropy`, `huber`, `binary_focal_crossentropy`, ...), the other
    fields its arguments (`from_logits`, `label_smoothing`, ...). The step reduces it itself
    (per example under a strategy), so `reduction` is not set here."""

    section: ClassVar[str] = "losses"
    kind: str
    """The Keras loss class, in snake_case (e.g. `mean_squared_error`)."""

    @property
    def labels(self) -> str:
        """The label format it reads: sparse, one_hot, or any."""
        return LABELS["losses"].get(self.kind, "any")

    @property
    def probabilistic(self) -> bool:
        """Whether it reads probabilities or logits (and so cares about `from_logits`)."""
        return "from_logits" in self.entry.args

    @property
    def from_logits(self) -> bool:
        return bool(self.arg("from_logits"))


class KerasMetric(_Catalogued):
    """A Keras metric, `keras.metrics.<Class>(...)`: `kind` is the class in snake_case
    (`sparse_categorical_accuracy`, `auc`, `precision`, `mean_absolute_error`, ...), the other
    fields its arguments."""

    section: ClassVar[str] = "metrics"
    kind: str
    """The Keras metric class, in snake_case (e.g. `auc`)."""
    name: Identifier | None = None
    """Name in logs and TensorBoard; defaults to the usual one (`accuracy`, `mean_iou`, ...)."""

    @property
    def labels(self) -> str:
        return LABELS["metrics"].get(self.kind, "any")

    @property
    def metric_name(self) -> str:
        if self.name:
            return self.name
        if self.kind in DEFAULT_METRIC_NAMES:
            return DEFAULT_METRIC_NAMES[self.kind]
        default = self.entry.args.get("name")
        return default.default if default and isinstance(default.default, str) else self.kind

    def arguments(self) -> list[tuple[str, Any]]:
        rest = [(k, v) for k, v in super().arguments() if k != "name"]
        return [("name", self.metric_name), *rest]


class KerasOptimizer(_Catalogued):
    """A Keras optimizer, `keras.optimizers.<Class>(...)`: `kind` is the class in snake_case
    (`sgd`, `adam`, `adamw`, `nadam`, `lion`, ...), the other fields its arguments."""

    section: ClassVar[str] = "optimizers"
    kind: str
    """The Keras optimizer class, in snake_case (e.g. `adamw`)."""
    learning_rate: LearningRate | None = None
    """A constant rate or a schedule; None is the optimizer's Keras default."""

    @property
    def rate(self) -> Any:
        """The learning rate: the spec's, else the optimizer's default."""
        if self.learning_rate is not None:
            return self.learning_rate
        return self.entry.args["learning_rate"].default

    @property
    def schedule(self) -> Any:
        return None if isinstance(self.rate, float | int) else self.rate

    def arguments(self) -> list[tuple[str, Any]]:
        # The learning rate is always written out (a schedule is built before the optimizer).
        rest = [(k, v) for k, v in super().arguments() if k != "learning_rate"]
        return [("learning_rate", self.rate), *rest]


class _Imported(StrictModel):
    imports: ClassVar[str] = "function"
    kind: Literal["import"] = "import"
    target: str
    """`package.module:name`, importable where the script runs."""
    kwargs: dict[Identifier, int | float | str | bool | None] = {}
    """Keyword arguments it is called with."""

    @field_validator("target")
    @classmethod
    def _target_form(cls, value: str) -> str:
        return check_target(value, cls.imports)

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def attribute(self) -> str:
        return self.target.split(":")[1]


class ImportedLoss(_Imported):
    """Your own loss function, imported by the script: `fn(labels, predictions, **kwargs)`
    returns the loss of **each example** (a tensor of shape `(batch,)`, or `(batch, ...)` whose
    extra axes the step averages, as for per-pixel losses), not their mean: the step sums them
    and divides by the (global) batch size, which keeps the loss right across replicas and
    micro-batches. Weight penalties are added by the step; do not add `model.losses`."""

    labels: ClassVar[str] = "any"
    probabilistic: ClassVar[bool] = False
    from_logits: ClassVar[bool] = False


class ImportedMetric(_Imported):
    """Your own metric class, imported by the script: a `keras.metrics.Metric` subclass
    constructed as `Class(name=..., **kwargs)`, updated with `update_state(labels,
    predictions)` on every batch, read with `result()` and cleared with `reset_state()`."""

    imports: ClassVar[str] = "class"
    labels: ClassVar[str] = "any"
    name: Identifier
    """Name in logs and TensorBoard."""

    @property
    def metric_name(self) -> str:
        return self.name


class ImportedOptimizer(_Imported):
    """Your own optimizer class, imported by the script: a `keras.optimizers.Optimizer`
    subclass (its `build` creates the slots, its `update_step` applies a gradient), constructed
    as `Class(learning_rate=..., **kwargs)`. Its variables are checkpointed like Keras's own;
    under `mixed_float16` it is wrapped in a LossScaleOptimizer."""

    imports: ClassVar[str] = "class"
    learning_rate: LearningRate = 0.01
    """A constant rate or a schedule, passed as `learning_rate`."""

    @property
    def rate(self) -> Any:
        return self.learning_rate

    @property
    def schedule(self) -> Any:
        return None if isinstance(self.rate, float | int) else self.rate

    def arguments(self) -> list[tuple[str, Any]]:
        return [("learning_rate", self.rate), *self.kwargs.items()]


def _tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "import" if kind == "import" else "keras"


def _in_section(section: str) -> Any:
    """A validator that refuses a Keras loss where a metric goes, and a metric where a loss
    goes, naming the one that fits: `from loopgen.dsl import *` binds the names Keras gives
    both a loss and a metric (`MeanAbsoluteError`, ...) to the loss, so `metrics=
    [MeanAbsoluteError()]` is an easy slip, and pydantic alone would only say that a loss is
    not a `KerasMetric`."""

    def check(value: Any) -> Any:
        if isinstance(value, KerasLoss | KerasMetric) and value.section != section:
            raise ValueError(_wrong_section(value, section))
        return value

    return BeforeValidator(check)


def _wrong_section(value: KerasLoss | KerasMetric, section: str) -> str:
    name, given = value.keras_class, value.section
    what = {"losses": "loss", "metrics": "metric"}
    if catalog.lookup(section, value.kind) is None:
        return (
            f"{name}() is a {what[given]} (keras.{given}.{name}), not a {what[section]}; "
            f"Keras has no {what[section]} of that name"
        )
    # The name is both: the plain name is the loss, the metric is `metrics.<Name>`.
    written, fix = (f"{name}()", f"metrics.{name}()")
    if given == "metrics":
        written, fix = fix, written
    return (
        f"{written} is the {what[given]} of that name (keras.{given}.{name}); "
        f"the {what[section]} is {fix}"
    )


Loss = Annotated[
    Union[Annotated[KerasLoss, Tag("keras")], Annotated[ImportedLoss, Tag("import")]],  # noqa: UP007
    Discriminator(_tag),
    _in_section("losses"),
]
"""The training objective: a Keras loss or your own function; the layers' weight penalties are
added to it."""

Metric = Annotated[
    Union[Annotated[KerasMetric, Tag("keras")], Annotated[ImportedMetric, Tag("import")]],  # noqa: UP007
    Discriminator(_tag),
    _in_section("metrics"),
]
"""A metric computed on training batches and on the validation data."""


def _not_sam(problem: str) -> Any:
    """A validator that refuses a SAM where only a Keras optimizer or your class goes."""

    def check(value: Any) -> Any:
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if kind == "sam":
            raise ValueError(problem)
        return value

    return BeforeValidator(check)


_PLAIN = Union[Annotated[KerasOptimizer, Tag("keras")], Annotated[ImportedOptimizer, Tag("import")]]  # noqa: UP007

BaseOptimizer = Annotated[
    _PLAIN,
    Discriminator(_tag),
    _not_sam(
        "a SAM wraps a SAM: SAM's base is the optimizer that applies the gradient taken at the "
        "perturbed weights (a Keras optimizer or your own class); write "
        "SAM(base=SGD(...), rho=...) once"
    ),
]
"""A Keras optimizer or your own class: what applies the gradients."""

PlainOptimizer = Annotated[
    _PLAIN,
    Discriminator(_tag),
    _not_sam(
        "SAM perturbs the weights of a supervised step (Spec.optimizer with "
        "training=Supervised()); this optimizer takes a Keras optimizer or your own class"
    ),
]
"""The optimizer of a network other than a supervised model's (a GAN's, a critic's)."""


class SAM(StrictModel):
    """Sharpness-aware minimization (Foret et al. 2021; google-research/sam): each train step
    takes the gradient g of the batch's loss at the weights w, moves the weights to the worst
    point within `rho` of them to first order, w + rho * g / ||g|| (||g||: the global norm of
    all the gradients), takes the gradient again there, moves the weights back to w, and has
    `base` apply that second gradient. Two forward and backward passes a step; the loss and
    metrics logged are those at w. On several replicas the ascent is the global batch's
    gradient, so the step is one device's (the paper ascends from each device's own; see the
    optimizers guide)."""

    kind: Literal["sam"] = "sam"
    base: BaseOptimizer
    """The optimizer that applies the gradient taken at the perturbed weights (its learning
    rate, schedule and slots are the step's)."""
    rho: float = 0.05
    """The radius of the ascent (the paper's 0.05 for CIFAR-10 with SGD)."""

    @field_validator("rho")
    @classmethod
    def _positive(cls, value: float) -> float:
        if not value > 0:
            raise ValueError(
                f"rho={value} is no ascent: SAM would take the plain gradient at twice the cost; "
                "make it above 0 (the paper's is 0.05), or use the base optimizer alone"
            )
        return value

    @property
    def rate(self) -> Any:
        return self.base.rate

    @property
    def learning_rate(self) -> Any:
        return self.base.learning_rate

    @property
    def schedule(self) -> Any:
        return self.base.schedule


def _optimizer_tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "sam" if kind == "sam" else _tag(value)


Optimizer = Annotated[
    Union[  # noqa: UP007
        Annotated[KerasOptimizer, Tag("keras")],
        Annotated[ImportedOptimizer, Tag("import")],
        Annotated[SAM, Tag("sam")],
    ],
    Discriminator(_optimizer_tag),
]
"""The optimizer, Keras's or your own class (or SAM around one); its iteration counter drives
the schedule and is checkpointed."""
