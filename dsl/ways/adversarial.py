"""Adversarial training: the model learns on inputs perturbed to raise its loss (FGSM, PGD)."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..base import PositiveFloat, PositiveInt, StrictModel


class FGSM(StrictModel):
    """The fast gradient sign method (Goodfellow et al., 2015): one step of size `epsilon` along
    the sign of the loss's gradient with respect to the input."""

    kind: Literal["fgsm"] = "fgsm"
    epsilon: PositiveFloat
    """The largest change of an input value, in the units the model sees (after rescaling)."""


class PGD(StrictModel):
    """Projected gradient descent (Madry et al., 2018): from a random point of the
    `epsilon`-ball around the input, `steps` steps of `step_size` along the sign of the
    gradient, each projected back into the ball."""

    kind: Literal["pgd"] = "pgd"
    epsilon: PositiveFloat
    """The largest change of an input value, in the units the model sees (after rescaling)."""
    steps: PositiveInt = 7
    """Gradient steps of the attack."""
    step_size: PositiveFloat | None = None
    """The size of one step; None is 2.5 * epsilon / steps (Madry et al.)."""
    random_start: bool = True
    """Start from a uniformly random point of the ball (drawn from the seed, the step and the
    example's position in the global batch) rather than from the input."""

    @property
    def size(self) -> float:
        return self.step_size if self.step_size is not None else 2.5 * self.epsilon / self.steps


class Adversarial(StrictModel):
    """Adversarial training: each step perturbs the batch to raise the model's loss (`attack`,
    with a GradientTape of its own on the inputs, the model in inference mode so that the
    attack moves no BatchNormalization statistics), then trains on the perturbed batch, the
    clean one, or both. Validation also attacks its examples and logs the robust loss and
    metrics (`val_robust_loss`, `val_robust_accuracy`, ...)."""

    kind: Literal["adversarial"] = "adversarial"
    template: ClassVar[str] = "adversarial"
    attack: Annotated[FGSM | PGD, Field(discriminator="kind")]
    """How the inputs are perturbed."""
    train_on: Literal["adversarial", "clean", "both"] = "adversarial"
    """What the step trains on: the perturbed batch, the clean one (robustness only measured),
    or both (the mean of their losses)."""
    input_range: tuple[float, float] | None = (0.0, 1.0)
    """The range the inputs keep (perturbed values are clipped to it); None for none."""

    @model_validator(mode="after")
    def _range(self) -> "Adversarial":
        low, high = self.input_range or (0.0, 1.0)
        if low >= high:
            raise ValueError(f"input_range={self.input_range}: the first must be below the second")
        if self.input_range and self.attack.epsilon >= high - low:
            raise ValueError(
                f"attack.epsilon={self.attack.epsilon} is as large as the whole input_range "
                f"{self.input_range}: a perturbation that size can make any input; use a "
                "fraction of the range (e.g. 8/255 for pixels in [0, 1])"
            )
        return self

    def describe(self, spec: Any) -> str:
        return f"{spec.model.kind} model, adversarial training ({self.attack.kind.upper()})"
