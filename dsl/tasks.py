"""Multi-task training: one loss (and weight, and metrics) per output head of the model."""

from .base import PositiveFloat, StrictModel
from .training import Loss, Metric


class Task(StrictModel):
    """One output of a multi-task model: the loss on its head, its weight in the total loss the
    gradients follow, and its metrics. The labels of a task are the data's label of the same
    name."""

    loss: Loss
    """The task's loss, on the head of the same name."""
    weight: PositiveFloat = 1.0
    """Its weight in the total loss (`sum(weight * loss)`), which is what is minimized."""
    metrics: list[Metric] = []
    """Metrics of this task, logged as `<task>_<name>` (e.g. `shape_accuracy`)."""
