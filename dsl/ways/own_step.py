"""Your own step: a function of yours computes the losses; loopgen writes everything around it."""

from typing import ClassVar, Literal

from pydantic import field_validator, model_validator

from ..base import Identifier, StrictModel, check_target


class OwnStep(StrictModel):
    """Your own step, as an escape hatch like `Imported` for models: a function of yours
    computes what the step minimizes, and the script writes everything around it in every
    strategy: the GradientTape, the averaging over the (global) batch and over micro-batches,
    the weight penalties, loss scaling, clipping, checkpoints and logging.

    `target` is called as `fn(model, inputs, labels, training=..., **kwargs)` and returns
    `(predictions, losses)` or `(predictions, losses, extras)`: `losses` a dict of the losses
    of each example by name (shape `(batch,)`), whose means the gradients follow, and `extras`
    a dict of other values of each example to log (their mean). `predictions` feed the
    spec's `metrics`. It runs inside the train step with `training=True` and in the validation
    pass with `training=False`; it is traced, so it must be TensorFlow code (no NumPy)."""

    kind: Literal["own_step"] = "own_step"
    template: ClassVar[str] = "own_step"
    target: str
    """`package.module:function`, importable where the script runs."""
    kwargs: dict[Identifier, int | float | str | bool | None] = {}
    """Keyword arguments it is called with."""
    losses: list[Identifier] = ["loss"]
    """The names of the losses it returns, logged as they are (their sum as `loss`)."""
    extras: list[Identifier] = []
    """The names of the other values it returns, logged as they are."""

    @field_validator("target")
    @classmethod
    def _target_form(cls, value: str) -> str:
        return check_target(value, "function")

    @model_validator(mode="after")
    def _names(self) -> "OwnStep":
        names = [*self.losses, *self.extras]
        if not self.losses:
            raise ValueError("training.losses is empty: name at least one loss it returns")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"training names {repeated[0]!r} more than once (losses and extras are logged "
                "by name): give each its own name"
            )
        if "loss" in self.extras or (len(self.losses) > 1 and "loss" in self.losses):
            raise ValueError(
                "training names a loss or extra 'loss', the name of the logged total: call it "
                "something else (e.g. 'cross_entropy')"
            )
        return self

    def describe(self, spec: object) -> str:
        return f"{spec.model.kind} model, your step {self.target}"  # type: ignore[attr-defined]

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def function(self) -> str:
        return self.target.split(":")[1]
