"""Meta-learning (few-shot): the network learns, over many small N-way K-shot tasks drawn from
the training classes, an initialization that a few steps of plain SGD adapt to a new task.
Reptile is first-order; MAML differentiates through the adaptation (nested tapes)."""

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..base import PositiveFloat, PositiveInt, StrictModel


class FewShot(StrictModel):
    """What Reptile and MAML share: the tasks, the inner loop and the few-shot evaluation."""

    template: ClassVar[str] = "meta"

    ways: PositiveInt = 5
    """N: classes per task, drawn from the training classes; a task's labels are 0..N-1 in the
    order its classes were drawn (the model outputs N logits)."""
    shots: PositiveInt = 1
    """K: examples per class in a task's support set, on which the inner loop adapts."""
    queries: PositiveInt = 5
    """Examples per class in a task's query set, none of them in its support set: MAML's outer
    loss, and what the few-shot evaluation scores."""
    test_classes: list[int] = Field(min_length=1)
    """The label ids held out of training: the few-shot evaluation's tasks are drawn from them
    alone (the training tasks from the other classes)."""
    tasks_per_step: PositiveInt = 4
    """Tasks per meta-step: the meta-update is the mean of theirs (under a strategy, the
    replicas share them out)."""
    inner_steps: PositiveInt = 5
    """Plain SGD steps on a task's whole support set, in training and in evaluation."""
    inner_learning_rate: PositiveFloat = 0.01
    """The inner loop's SGD learning rate."""
    evaluation_tasks: PositiveInt = 50
    """Tasks of the held-out classes a validation pass adapts to and scores: the same ones at
    every validation."""

    @model_validator(mode="after")
    def _distinct_test_classes(self) -> Any:
        if len(set(self.test_classes)) != len(self.test_classes):
            raise ValueError("test_classes lists a class twice; list each held-out id once")
        if min(self.test_classes) < 0:
            raise ValueError("test_classes holds a negative id; class ids start at 0")
        return self


class Reptile(FewShot):
    """Reptile (Nichol et al., 2018): each task of a meta-step is adapted from the current
    weights by `inner_steps` of SGD on its support set; the meta-update moves the weights
    toward the tasks' adapted weights. The `optimizer` of the spec applies it, with
    `weights - mean(adapted)` as the gradient: SGD(learning_rate=epsilon) is the paper's
    interpolation by the meta step size epsilon (1.0 jumps to the adapted weights), and its
    schedule the paper's decay. No query set is drawn in training."""

    kind: Literal["reptile"] = "reptile"

    def describe(self, spec: Any) -> str:
        return f"Reptile, {self.ways}-way {self.shots}-shot"


class MAML(FewShot):
    """MAML (Finn et al., 2017): each task is adapted by `inner_steps` of SGD on its support set,
    written as functions of the weights (`stateless_call`), and the meta-gradient is that of
    the adapted networks' loss on the query sets with respect to the weights before adaptation:
    through the inner gradients (nested tapes, second order), or with them held constant
    (`first_order=True`, FOMAML). The `optimizer` of the spec applies it."""

    kind: Literal["maml"] = "maml"
    first_order: bool = False
    """Drop the second-order terms: the inner gradients are constants to the meta-gradient
    (cheaper; FOMAML)."""

    def describe(self, spec: Any) -> str:
        order = "first-order MAML" if self.first_order else "MAML"
        return f"{order}, {self.ways}-way {self.shots}-shot"
