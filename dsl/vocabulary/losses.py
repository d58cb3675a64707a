"""Every loss of `keras.losses` as a spec loss: one function per class, with Keras' signature (Keras 3.15.1).

Generated from dsl/catalog/keras.json by `python -m loopgen.dsl.catalog.api`; do not edit."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any

from ..training import KerasLoss
from ._build import build

__all__ = [
    "BinaryCrossentropy",
    "BinaryFocalCrossentropy",
    "CategoricalCrossentropy",
    "CategoricalFocalCrossentropy",
    "CategoricalGeneralizedCrossEntropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "Dice",
    "Hinge",
    "Huber",
    "KLDivergence",
    "LogCosh",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Poisson",
    "SparseCategoricalCrossentropy",
    "SquaredHinge",
    "Tversky",
]


def BinaryCrossentropy(
    from_logits=False, label_smoothing=0.0, axis=-1, dtype=None, name=None, **kwargs: Any
) -> KerasLoss:
    """`keras.losses.BinaryCrossentropy`: Computes the cross-entropy loss between true labels and predicted labels."""
    return build(KerasLoss, "binary_crossentropy", locals())


def BinaryFocalCrossentropy(
    apply_class_balancing=False,
    alpha=0.25,
    gamma=2.0,
    from_logits=False,
    label_smoothing=0.0,
    axis=-1,
    dtype=None,
    name=None,
    **kwargs: Any,
) -> KerasLoss:
    """`keras.losses.BinaryFocalCrossentropy`: Computes focal cross-entropy loss between true labels and predictions."""
    return build(KerasLoss, "binary_focal_crossentropy", locals())


def CategoricalCrossentropy(
    from_logits=False, label_smoothing=0.0, axis=-1, dtype=None, name=None, **kwargs: Any
) -> KerasLoss:
    """`keras.losses.CategoricalCrossentropy`: Computes the crossentropy loss between the labels and predictions."""
    return build(KerasLoss, "categorical_crossentropy", locals())


def CategoricalFocalCrossentropy(
    alpha=0.25,
    gamma=2.0,
    from_logits=False,
    label_smoothing=0.0,
    axis=-1,
    dtype=None,
    name=None,
    **kwargs: Any,
) -> KerasLoss:
    """`keras.losses.CategoricalFocalCrossentropy`: Computes the alpha balanced focal crossentropy loss."""
    return build(KerasLoss, "categorical_focal_crossentropy", locals())


def CategoricalGeneralizedCrossEntropy(q=0.5, dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.CategoricalGeneralizedCrossEntropy`: Computes the Generalized Cross Entropy loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "categorical_generalized_cross_entropy", locals())


def CategoricalHinge(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.CategoricalHinge`: Computes the categorical hinge loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "categorical_hinge", locals())


def CosineSimilarity(axis=-1, dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.CosineSimilarity`: Computes the cosine similarity between `y_true` & `y_pred`."""
    return build(KerasLoss, "cosine_similarity", locals())


def Dice(axis=None, dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.Dice`: Computes the Dice loss value between `y_true` and `y_pred`."""
    return build(KerasLoss, "dice", locals())


def Hinge(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.Hinge`: Computes the hinge loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "hinge", locals())


def Huber(delta=1.0, dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.Huber`: Computes the Huber loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "huber", locals())


def KLDivergence(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.KLDivergence`: Computes Kullback-Leibler divergence loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "kl_divergence", locals())


def LogCosh(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.LogCosh`: Computes the logarithm of the hyperbolic cosine of the prediction error."""
    return build(KerasLoss, "log_cosh", locals())


def MeanAbsoluteError(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.MeanAbsoluteError`: Computes the mean of absolute difference between labels and predictions."""
    return build(KerasLoss, "mean_absolute_error", locals())


def MeanAbsolutePercentageError(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.MeanAbsolutePercentageError`: Computes the mean absolute percentage error between `y_true` & `y_pred`."""
    return build(KerasLoss, "mean_absolute_percentage_error", locals())


def MeanSquaredError(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.MeanSquaredError`: Computes the mean of squares of errors between labels and predictions."""
    return build(KerasLoss, "mean_squared_error", locals())


def MeanSquaredLogarithmicError(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.MeanSquaredLogarithmicError`: Computes the mean squared logarithmic error between `y_true` & `y_pred`."""
    return build(KerasLoss, "mean_squared_logarithmic_error", locals())


def Poisson(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.Poisson`: Computes the Poisson loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "poisson", locals())


def SparseCategoricalCrossentropy(
    from_logits=False, ignore_class=None, axis=-1, dtype=None, name=None, **kwargs: Any
) -> KerasLoss:
    """`keras.losses.SparseCategoricalCrossentropy`: Computes the crossentropy loss between the labels and predictions."""
    return build(KerasLoss, "sparse_categorical_crossentropy", locals())


def SquaredHinge(dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.SquaredHinge`: Computes the squared hinge loss between `y_true` & `y_pred`."""
    return build(KerasLoss, "squared_hinge", locals())


def Tversky(alpha=0.5, beta=0.5, axis=None, dtype=None, name=None, **kwargs: Any) -> KerasLoss:
    """`keras.losses.Tversky`: Computes the Tversky loss value between `y_true` and `y_pred`."""
    return build(KerasLoss, "tversky", locals())
