"""Fine-tuning: a frozen pretrained backbone that starts to train part-way through the run."""

from typing import Any

from pydantic import field_validator, model_validator

from .base import Identifier, PositiveFloat, PositiveInt, StrictModel


class FineTune(StrictModel):
    """Unfreezes a frozen backbone at an epoch or a step: the two phases of transfer learning,
    first the new layers on the frozen features, then the backbone too (usually at a lower
    rate). The optimizer holds slots for the backbone's weights from the start, so checkpoints
    have the same variables before and after, and a run resumed on either side of the
    unfreeze continues exactly."""

    backbone: Identifier
    """The graph node whose Backbone unfreezes (it must be frozen: trainable=False)."""
    at_epoch: PositiveInt | None = None
    """Unfreeze when this epoch starts (epochs count from 1: 3 trains two epochs frozen; 2 at
    the earliest)."""
    at_step: PositiveInt | None = None
    """Unfreeze after this many steps instead."""
    from_layer: str | None = None
    """Unfreeze the backbone's layers from this one on, by its name in the application (e.g.
    `block_13_expand` in MobileNetV2), the earlier ones stay frozen; None (and no top_layers)
    unfreezes all."""
    top_layers: PositiveInt | None = None
    """Unfreeze the backbone's last this many layers, counted from its top (the Keras guide's
    "unfreeze the top 20 layers"), the earlier ones stay frozen; instead of from_layer."""
    learning_rate: PositiveFloat | None = None
    """The optimizer's learning rate from the unfreeze on (the Keras guide: about ten times
    lower); None keeps the rate. Needs a constant optimizer.learning_rate."""

    @field_validator("from_layer", mode="before")
    @classmethod
    def _a_name(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            count = value if value > 0 else "N"
            raise ValueError(
                f"{value} is not a layer's name: from_layer names the first layer to unfreeze "
                f"(e.g. 'block_13_expand'); to unfreeze the backbone's last {count} layers, "
                f"set top_layers={count} instead"
            )
        return value

    @model_validator(mode="after")
    def _which_layers(self) -> "FineTune":
        if self.from_layer is not None and self.top_layers is not None:
            raise ValueError(
                f"fine_tune.from_layer={self.from_layer!r} and fine_tune.top_layers="
                f"{self.top_layers} both say which layers unfreeze; keep one"
            )
        return self

    @model_validator(mode="after")
    def _when(self) -> "FineTune":
        if (self.at_epoch is None) == (self.at_step is None):
            raise ValueError("set exactly one of fine_tune.at_epoch and fine_tune.at_step")
        if self.at_epoch == 1:
            raise ValueError(
                "at_epoch=1 unfreezes the backbone before the first step: there is no frozen "
                "phase (and no step at which its learning_rate would take over); unfreeze at "
                "epoch 2 or later, or at_step=N, or make the Backbone trainable=True and drop "
                "fine_tune"
            )
        return self
