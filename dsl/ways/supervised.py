"""Supervised training: the model's predictions against the labels, by one loss, or by one loss
per output head (multi-task)."""

from typing import Any, ClassVar, Literal

from ..base import Identifier, PositiveFloat, StrictModel
from ..training import Loss, Metric


class Supervised(StrictModel):
    """Plain supervised training, `model.fit`'s: `model`, `loss`, `optimizer` and `metrics` of
    the spec, one GradientTape per step."""

    kind: Literal["supervised"] = "supervised"
    template: ClassVar[str] = "supervised"

    def describe(self, spec: Any) -> str:
        return f"{spec.model.kind} model, {spec.loss.kind} loss"


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


class MultiTask(StrictModel):
    """Multi-task training: a model with several output heads (`model.heads`, a graph's
    `outputs`), one loss, weight and metrics per head; the gradients follow the weighted sum
    of the tasks' losses. Set it instead of `loss` and `metrics`."""

    kind: Literal["multi_task"] = "multi_task"
    template: ClassVar[str] = "supervised"
    tasks: dict[Identifier, Task]
    """A loss, weight and metrics per output head, by the head's name."""

    def describe(self, spec: Any) -> str:
        return f"{spec.model.kind} model, tasks {', '.join(self.tasks)}"
