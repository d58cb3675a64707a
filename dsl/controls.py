"""Controls of the optimization: gradient clipping and accumulation, and the decisions taken on
a monitored validation metric (early stopping, reduce-on-plateau, the best checkpoint)."""

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .base import PositiveFloat, PositiveInt, StrictModel


class Gradients(StrictModel):
    """What happens to the gradients between `tape.gradient` and `apply_gradients`."""

    clip_norm: PositiveFloat | None = None
    """Rescale the gradients when their global norm (over all variables) exceeds this. The
    script clips the gradient of the whole (global) batch: after summing the micro-batches and
    the replicas, and unscaled under mixed float16. Its norm before clipping is logged as
    `gradient_norm`."""
    clip_value: PositiveFloat | None = None
    """Clip every gradient element to [-clip_value, clip_value] (same order as clip_norm)."""
    accumulate_steps: PositiveInt = 1
    """Split every batch into this many micro-batches and sum their gradients before one
    optimizer step: the memory of a micro-batch, the update of the whole batch (the loss is
    divided by the whole batch's size, so the sum is its mean's gradient). Steps, cadences and
    the data order stay those of the whole batches."""

    @model_validator(mode="after")
    def _one_clip(self) -> "Gradients":
        if self.clip_norm is not None and self.clip_value is not None:
            raise ValueError(
                "gradients.clip_norm and gradients.clip_value are both set: clipping each value "
                "changes the norm clip_norm then limits; keep one (clip_norm, usually)"
            )
        return self

    @property
    def clipped(self) -> bool:
        return self.clip_norm is not None or self.clip_value is not None


class _Monitored(StrictModel):
    """A decision taken after each validation pass on one validation value."""

    monitor: str = "val_loss"
    """The validation value watched: `val_loss`, `val_<metric name>` (e.g. `val_accuracy`),
    or for a multi-task model `val_<task>_loss` and `val_<task>_<metric name>`."""
    mode: Literal["auto", "min", "max"] = "auto"
    """Whether lower or higher is better; `auto`: lower for losses, higher for metrics (all of
    loopgen's metrics are accuracies or overlaps)."""
    min_delta: Annotated[float, Field(ge=0)] = 0.0
    """An improvement smaller than this does not count."""

    @property
    def direction(self) -> Literal["min", "max"]:
        if self.mode != "auto":
            return self.mode
        return "min" if self.monitor.endswith("loss") else "max"


class EarlyStopping(_Monitored):
    """Stop training when the monitored value has not improved for `patience` validations."""

    patience: PositiveInt = 5
    """Validation passes without improvement before the run stops (with validation every
    epoch: epochs)."""


class ReduceOnPlateau(_Monitored):
    """Multiply the learning rate by `factor` when the monitored value has not improved for
    `patience` validations. Works on a constant `optimizer.learning_rate` (the rate is then a
    variable the script lowers, saved in checkpoints)."""

    factor: Annotated[float, Field(gt=0, lt=1)] = 0.1
    """Multiplier of the rate at each plateau."""
    patience: PositiveInt = 2
    """Validation passes without improvement before the rate is lowered."""
    min_learning_rate: Annotated[float, Field(ge=0)] = 0.0
    """The rate is never lowered below this."""


class BestModel(_Monitored):
    """Keep the weights of the best validation so far in `checkpoints/best`, and export them
    too at the end, into `export/best`."""


class EMA(StrictModel):
    """An exponential moving average of the weights (Polyak averaging): a copy of the network,
    `ema_model`, that follows them after every step, ema = decay * ema + (1 - decay) * w. It
    starts as the initial weights, is in every checkpoint, and is what validation scores, the
    monitors watch, `evaluate` and `predict` use and the export serves; the weights themselves
    train. Keras's optimizer argument `use_ema` is not used (the guide says why)."""

    decay: float = 0.999
    """The share of the average kept at each step (0.999: about the last 1,000 steps)."""

    @field_validator("decay")
    @classmethod
    def _in_the_open_interval(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError(
                f"decay={value} is outside (0, 1): the average keeps decay of itself and takes "
                "1 - decay of the weights at each step (1 would never move, 0 would be the "
                "weights); 0.999 is usual, 0.9 follows the last ten steps"
            )
        return value
