"""Every metric of `keras.metrics` as a spec metric: one function per class, with Keras' signature (Keras 3.15.1).

Generated from dsl/catalog/keras.json by `python -m loopgen.dsl.catalog.api`; do not edit."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any

from ..training import KerasMetric
from ._build import REQUIRED, build

__all__ = [
    "AUC",
    "Accuracy",
    "BinaryAccuracy",
    "BinaryIoU",
    "CategoricalAccuracy",
    "ConcordanceCorrelation",
    "F1Score",
    "FBetaScore",
    "FalseNegatives",
    "FalsePositives",
    "IoU",
    "LogCoshError",
    "MeanIoU",
    "OneHotIoU",
    "OneHotMeanIoU",
    "PearsonCorrelation",
    "Precision",
    "PrecisionAtRecall",
    "R2Score",
    "Recall",
    "RecallAtPrecision",
    "RootMeanSquaredError",
    "SensitivityAtSpecificity",
    "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "SpecificityAtSensitivity",
    "TopKCategoricalAccuracy",
    "TrueNegatives",
    "TruePositives",
]


def AUC(
    num_thresholds=200,
    curve="ROC",
    summation_method="interpolation",
    dtype=None,
    thresholds=None,
    multi_label=False,
    num_labels=None,
    label_weights=None,
    from_logits=False,
    name=None,
    **kwargs: Any,
) -> KerasMetric:
    """`keras.metrics.AUC`: Approximates the AUC (Area under the curve) of the ROC or PR curves."""
    return build(KerasMetric, "auc", locals())


def Accuracy(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.Accuracy`: Calculates how often predictions equal labels."""
    return build(KerasMetric, "accuracy", locals())


def BinaryAccuracy(dtype=None, threshold=0.5, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.BinaryAccuracy`: Calculates how often predictions match binary labels."""
    return build(KerasMetric, "binary_accuracy", locals())


def BinaryCrossentropy(
    dtype=None, from_logits=False, label_smoothing=0, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.BinaryCrossentropy`: Computes the crossentropy metric between the labels and predictions."""
    return build(KerasMetric, "binary_crossentropy", locals())


def BinaryIoU(
    target_class_ids=(0, 1), threshold=0.5, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.BinaryIoU`: Computes the Intersection-Over-Union metric for class 0 and/or 1."""
    return build(KerasMetric, "binary_iou", locals())


def CategoricalAccuracy(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.CategoricalAccuracy`: Calculates how often predictions match one-hot labels."""
    return build(KerasMetric, "categorical_accuracy", locals())


def CategoricalCrossentropy(
    dtype=None, from_logits=False, label_smoothing=0, axis=-1, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.CategoricalCrossentropy`: Computes the crossentropy metric between the labels and predictions."""
    return build(KerasMetric, "categorical_crossentropy", locals())


def CategoricalHinge(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.CategoricalHinge`: Computes the categorical hinge metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "categorical_hinge", locals())


def ConcordanceCorrelation(dtype=None, axis=-1, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.ConcordanceCorrelation`: Calculates the Concordance Correlation Coefficient (CCC)."""
    return build(KerasMetric, "concordance_correlation", locals())


def CosineSimilarity(dtype=None, axis=-1, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.CosineSimilarity`: Computes the cosine similarity between the labels and predictions."""
    return build(KerasMetric, "cosine_similarity", locals())


def F1Score(average=None, threshold=None, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.F1Score`: Computes F-1 Score."""
    return build(KerasMetric, "f1_score", locals())


def FBetaScore(
    average=None, beta=1.0, threshold=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.FBetaScore`: Computes F-Beta score."""
    return build(KerasMetric, "fbeta_score", locals())


def FalseNegatives(thresholds=None, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.FalseNegatives`: Calculates the number of false negatives."""
    return build(KerasMetric, "false_negatives", locals())


def FalsePositives(thresholds=None, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.FalsePositives`: Calculates the number of false positives."""
    return build(KerasMetric, "false_positives", locals())


def Hinge(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.Hinge`: Computes the hinge metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "hinge", locals())


def IoU(
    num_classes=REQUIRED,
    target_class_ids=REQUIRED,
    dtype=None,
    ignore_class=None,
    sparse_y_true=True,
    sparse_y_pred=True,
    axis=-1,
    name=None,
    **kwargs: Any,
) -> KerasMetric:
    """`keras.metrics.IoU`: Computes the Intersection-Over-Union metric for specific target classes."""
    return build(KerasMetric, "iou", locals())


def KLDivergence(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.KLDivergence`: Computes Kullback-Leibler divergence metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "kl_divergence", locals())


def LogCoshError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.LogCoshError`: Computes the logarithm of the hyperbolic cosine of the prediction error."""
    return build(KerasMetric, "log_cosh_error", locals())


def MeanAbsoluteError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.MeanAbsoluteError`: Computes the mean absolute error between the labels and predictions."""
    return build(KerasMetric, "mean_absolute_error", locals())


def MeanAbsolutePercentageError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.MeanAbsolutePercentageError`: Computes mean absolute percentage error between `y_true` and `y_pred`."""
    return build(KerasMetric, "mean_absolute_percentage_error", locals())


def MeanIoU(
    num_classes=REQUIRED,
    dtype=None,
    ignore_class=None,
    sparse_y_true=True,
    sparse_y_pred=True,
    axis=-1,
    name=None,
    **kwargs: Any,
) -> KerasMetric:
    """`keras.metrics.MeanIoU`: Computes the mean Intersection-Over-Union metric."""
    return build(KerasMetric, "mean_iou", locals())


def MeanSquaredError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.MeanSquaredError`: Computes the mean squared error between `y_true` and `y_pred`."""
    return build(KerasMetric, "mean_squared_error", locals())


def MeanSquaredLogarithmicError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.MeanSquaredLogarithmicError`: Computes mean squared logarithmic error between `y_true` and `y_pred`."""
    return build(KerasMetric, "mean_squared_logarithmic_error", locals())


def OneHotIoU(
    num_classes=REQUIRED,
    target_class_ids=REQUIRED,
    dtype=None,
    ignore_class=None,
    sparse_y_pred=False,
    axis=-1,
    name=None,
    **kwargs: Any,
) -> KerasMetric:
    """`keras.metrics.OneHotIoU`: Computes the Intersection-Over-Union metric for one-hot encoded labels."""
    return build(KerasMetric, "one_hot_iou", locals())


def OneHotMeanIoU(
    num_classes=REQUIRED,
    dtype=None,
    ignore_class=None,
    sparse_y_pred=False,
    axis=-1,
    name=None,
    **kwargs: Any,
) -> KerasMetric:
    """`keras.metrics.OneHotMeanIoU`: Computes mean Intersection-Over-Union metric for one-hot encoded labels."""
    return build(KerasMetric, "one_hot_mean_iou", locals())


def PearsonCorrelation(dtype=None, axis=-1, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.PearsonCorrelation`: Calculates the Pearson Correlation Coefficient (PCC)."""
    return build(KerasMetric, "pearson_correlation", locals())


def Poisson(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.Poisson`: Computes the Poisson metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "poisson", locals())


def Precision(
    thresholds=None, top_k=None, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.Precision`: Computes the precision of the predictions with respect to the labels."""
    return build(KerasMetric, "precision", locals())


def PrecisionAtRecall(
    recall=REQUIRED, num_thresholds=200, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.PrecisionAtRecall`: Computes best precision where recall is >= specified value."""
    return build(KerasMetric, "precision_at_recall", locals())


def R2Score(
    class_aggregation="uniform_average", num_regressors=0, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.R2Score`: Computes R2 score."""
    return build(KerasMetric, "r2_score", locals())


def Recall(
    thresholds=None, top_k=None, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.Recall`: Computes the recall of the predictions with respect to the labels."""
    return build(KerasMetric, "recall", locals())


def RecallAtPrecision(
    precision=REQUIRED, num_thresholds=200, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.RecallAtPrecision`: Computes best recall where precision is >= specified value."""
    return build(KerasMetric, "recall_at_precision", locals())


def RootMeanSquaredError(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.RootMeanSquaredError`: Computes root mean squared error metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "root_mean_squared_error", locals())


def SensitivityAtSpecificity(
    specificity=REQUIRED, num_thresholds=200, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.SensitivityAtSpecificity`: Computes best sensitivity where specificity is >= specified value."""
    return build(KerasMetric, "sensitivity_at_specificity", locals())


def SparseCategoricalAccuracy(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.SparseCategoricalAccuracy`: Calculates how often predictions match integer labels."""
    return build(KerasMetric, "sparse_categorical_accuracy", locals())


def SparseCategoricalCrossentropy(
    dtype=None, from_logits=False, ignore_class=None, axis=-1, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.SparseCategoricalCrossentropy`: Computes the crossentropy metric between the labels and predictions."""
    return build(KerasMetric, "sparse_categorical_crossentropy", locals())


def SparseTopKCategoricalAccuracy(
    k=5, dtype=None, from_sorted_ids=False, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.SparseTopKCategoricalAccuracy`: Computes how often integer targets are in the top `K` predictions."""
    return build(KerasMetric, "sparse_top_k_categorical_accuracy", locals())


def SpecificityAtSensitivity(
    sensitivity=REQUIRED, num_thresholds=200, class_id=None, dtype=None, name=None, **kwargs: Any
) -> KerasMetric:
    """`keras.metrics.SpecificityAtSensitivity`: Computes best specificity where sensitivity is >= specified value."""
    return build(KerasMetric, "specificity_at_sensitivity", locals())


def SquaredHinge(dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.SquaredHinge`: Computes the hinge metric between `y_true` and `y_pred`."""
    return build(KerasMetric, "squared_hinge", locals())


def TopKCategoricalAccuracy(k=5, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.TopKCategoricalAccuracy`: Computes how often targets are in the top `K` predictions."""
    return build(KerasMetric, "top_k_categorical_accuracy", locals())


def TrueNegatives(thresholds=None, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.TrueNegatives`: Calculates the number of true negatives."""
    return build(KerasMetric, "true_negatives", locals())


def TruePositives(thresholds=None, dtype=None, name=None, **kwargs: Any) -> KerasMetric:
    """`keras.metrics.TruePositives`: Calculates the number of true positives."""
    return build(KerasMetric, "true_positives", locals())
