"""Losses, optimizers, learning-rate schedules and metrics."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from .base import Identifier, KerasObject, PositiveFloat, PositiveInt, Probability
from .schedules import LearningRate

# --- losses -----------------------------------------------------------------------------------


class _Loss(KerasObject):
    labels: ClassVar[str] = "any"
    """Label format the loss expects: sparse, one_hot or any."""
    probabilistic: ClassVar[bool] = False
    """Whether the loss reads probabilities (and so cares about from_logits)."""


class SparseCategoricalCrossentropy(_Loss):
    """Cross-entropy with integer class labels."""

    keras_class: ClassVar[str] = "SparseCategoricalCrossentropy"
    labels: ClassVar[str] = "sparse"
    probabilistic: ClassVar[bool] = True
    kind: Literal["sparse_categorical_crossentropy"] = "sparse_categorical_crossentropy"
    from_logits: bool = False
    """True when the model outputs logits (no softmax on the last layer)."""


class CategoricalCrossentropy(_Loss):
    """Cross-entropy with one-hot labels."""

    keras_class: ClassVar[str] = "CategoricalCrossentropy"
    labels: ClassVar[str] = "one_hot"
    probabilistic: ClassVar[bool] = True
    kind: Literal["categorical_crossentropy"] = "categorical_crossentropy"
    from_logits: bool = False
    """True when the model outputs logits (no softmax on the last layer)."""
    label_smoothing: Probability = 0.0
    """Mix the one-hot labels with a uniform distribution by this much."""


class BinaryCrossentropy(_Loss):
    """Cross-entropy for binary (or multi-label) 0/1 targets."""

    keras_class: ClassVar[str] = "BinaryCrossentropy"
    probabilistic: ClassVar[bool] = True
    kind: Literal["binary_crossentropy"] = "binary_crossentropy"
    from_logits: bool = False
    """True when the model outputs logits (no sigmoid on the last layer)."""
    label_smoothing: Probability = 0.0
    """Squeeze the labels towards 0.5 by this much."""


class MeanSquaredError(_Loss):
    """Mean of squared differences (regression)."""

    keras_class: ClassVar[str] = "MeanSquaredError"
    kind: Literal["mean_squared_error"] = "mean_squared_error"


class MeanAbsoluteError(_Loss):
    """Mean of absolute differences (regression)."""

    keras_class: ClassVar[str] = "MeanAbsoluteError"
    kind: Literal["mean_absolute_error"] = "mean_absolute_error"


class Huber(_Loss):
    """Quadratic near zero, linear further out (robust regression)."""

    keras_class: ClassVar[str] = "Huber"
    kind: Literal["huber"] = "huber"
    delta: PositiveFloat = 1.0
    """Where the loss turns from quadratic to linear."""


Loss = Annotated[
    SparseCategoricalCrossentropy | CategoricalCrossentropy | BinaryCrossentropy
    | MeanSquaredError | MeanAbsoluteError | Huber,
    Field(discriminator="kind"),
]  # fmt: skip
"""The training objective; regularization penalties from the layers are added to it."""


# --- optimizers -------------------------------------------------------------------------------


class _Optimizer(KerasObject):
    learning_rate: LearningRate

    @property
    def schedule(self) -> Any:
        return None if isinstance(self.learning_rate, float | int) else self.learning_rate

    def arguments(self) -> list[tuple[str, Any]]:
        # The learning rate is always written out (a schedule is built before the optimizer).
        rest = [(k, v) for k, v in super().arguments() if k != "learning_rate"]
        return [("learning_rate", self.learning_rate), *rest]


class SGD(_Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum."""

    keras_class: ClassVar[str] = "SGD"
    kind: Literal["sgd"] = "sgd"
    learning_rate: LearningRate = 0.01
    """A constant rate or a schedule."""
    momentum: Probability = 0.0
    """Momentum factor."""
    nesterov: bool = False
    """Use Nesterov momentum."""


class Adam(_Optimizer):
    """Adam."""

    keras_class: ClassVar[str] = "Adam"
    kind: Literal["adam"] = "adam"
    learning_rate: LearningRate = 0.001
    """A constant rate or a schedule."""
    beta_1: Probability = 0.9
    """Decay of the first-moment estimate."""
    beta_2: Probability = 0.999
    """Decay of the second-moment estimate."""
    epsilon: PositiveFloat = 1e-7
    """Numerical-stability constant."""
    amsgrad: bool = False
    """Use the AMSGrad variant."""


class AdamW(_Optimizer):
    """Adam with decoupled weight decay."""

    keras_class: ClassVar[str] = "AdamW"
    kind: Literal["adamw"] = "adamw"
    learning_rate: LearningRate = 0.001
    """A constant rate or a schedule."""
    weight_decay: Annotated[float, Field(ge=0)] = 0.004
    """Decoupled weight decay factor."""
    beta_1: Probability = 0.9
    """Decay of the first-moment estimate."""
    beta_2: Probability = 0.999
    """Decay of the second-moment estimate."""
    epsilon: PositiveFloat = 1e-7
    """Numerical-stability constant."""


class RMSprop(_Optimizer):
    """RMSprop."""

    keras_class: ClassVar[str] = "RMSprop"
    kind: Literal["rmsprop"] = "rmsprop"
    learning_rate: LearningRate = 0.001
    """A constant rate or a schedule."""
    rho: Probability = 0.9
    """Decay of the squared-gradient average."""
    momentum: Probability = 0.0
    """Momentum factor."""
    epsilon: PositiveFloat = 1e-7
    """Numerical-stability constant."""


Optimizer = Annotated[SGD | Adam | AdamW | RMSprop, Field(discriminator="kind")]
"""The optimizer; its iteration counter drives the schedule and is checkpointed."""


# --- metrics ----------------------------------------------------------------------------------


class _Metric(KerasObject):
    labels: ClassVar[str] = "any"
    default_name: ClassVar[str]

    name: Identifier | None = None
    """Name in logs and TensorBoard; defaults to the usual one (`accuracy`, `mean_iou`, ...)."""

    @property
    def metric_name(self) -> str:
        return self.name or self.default_name

    def arguments(self) -> list[tuple[str, Any]]:
        return [
            ("name", self.metric_name),
            *[(k, v) for k, v in super().arguments() if k != "name"],
        ]


class SparseCategoricalAccuracy(_Metric):
    """Accuracy against integer class labels (also per pixel for segmentation)."""

    keras_class: ClassVar[str] = "SparseCategoricalAccuracy"
    labels: ClassVar[str] = "sparse"
    default_name: ClassVar[str] = "accuracy"
    kind: Literal["sparse_categorical_accuracy"] = "sparse_categorical_accuracy"


class CategoricalAccuracy(_Metric):
    """Accuracy against one-hot labels."""

    keras_class: ClassVar[str] = "CategoricalAccuracy"
    labels: ClassVar[str] = "one_hot"
    default_name: ClassVar[str] = "accuracy"
    kind: Literal["categorical_accuracy"] = "categorical_accuracy"


class BinaryAccuracy(_Metric):
    """Accuracy of 0/1 predictions at a threshold."""

    keras_class: ClassVar[str] = "BinaryAccuracy"
    default_name: ClassVar[str] = "accuracy"
    kind: Literal["binary_accuracy"] = "binary_accuracy"
    threshold: Probability = 0.5
    """Decision threshold (use 0.0 when the model outputs logits)."""


class SparseTopKCategoricalAccuracy(_Metric):
    """Whether the true class is among the k highest scores."""

    keras_class: ClassVar[str] = "SparseTopKCategoricalAccuracy"
    labels: ClassVar[str] = "sparse"
    default_name: ClassVar[str] = "top_k_accuracy"
    kind: Literal["sparse_top_k_categorical_accuracy"] = "sparse_top_k_categorical_accuracy"
    k: PositiveInt = 5
    """How many top scores count."""


class MeanIoU(_Metric):
    """Mean intersection-over-union of class masks (segmentation), from integer labels and
    per-class scores (the argmax is taken inside the metric)."""

    keras_class: ClassVar[str] = "MeanIoU"
    labels: ClassVar[str] = "sparse"
    default_name: ClassVar[str] = "mean_iou"
    kind: Literal["mean_iou"] = "mean_iou"
    num_classes: Annotated[int, Field(ge=2)]
    """Number of classes, background included."""

    def arguments(self) -> list[tuple[str, Any]]:
        return [*super().arguments(), ("sparse_y_pred", False)]


Metric = Annotated[
    SparseCategoricalAccuracy | CategoricalAccuracy | BinaryAccuracy
    | SparseTopKCategoricalAccuracy | MeanIoU,
    Field(discriminator="kind"),
]  # fmt: skip
"""A metric computed on training batches and on the validation data."""
