"""Learning-rate schedules: Keras's own, the cyclical ones the script defines as
`LearningRateSchedule` subclasses, and a warmup in front of either."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from .base import KerasObject, PositiveFloat, PositiveInt, Probability


class _Schedule(KerasObject):
    script_class: ClassVar[str | None] = None
    """The `LearningRateSchedule` subclass the script defines for it; None for Keras's own."""

    def length_problem(self, path: str, steps: int, limit: str = "") -> str | None:
        """Why `steps` training steps are too few for the schedule at `path`, or None. `limit`
        says where the number comes from (default: `loop.steps=<steps>`)."""
        return None


# --- Keras schedules ------------------------------------------------------------------


class ExponentialDecay(_Schedule):
    """`lr = initial * decay_rate ** (step / decay_steps)`."""

    keras_class: ClassVar[str] = "ExponentialDecay"
    kind: Literal["exponential_decay"] = "exponential_decay"
    initial_learning_rate: PositiveFloat
    """Learning rate at step 0."""
    decay_steps: PositiveInt
    """Steps over which the rate is multiplied by `decay_rate` once."""
    decay_rate: Annotated[float, Field(gt=0, le=1)]
    """Multiplier per `decay_steps`."""
    staircase: bool = False
    """Decay in discrete jumps instead of continuously."""


class PiecewiseConstantDecay(_Schedule):
    """Constant rates between step boundaries."""

    keras_class: ClassVar[str] = "PiecewiseConstantDecay"
    kind: Literal["piecewise_constant"] = "piecewise_constant"
    boundaries: list[PositiveInt]
    """Steps where the rate changes, increasing."""
    values: list[PositiveFloat]
    """Rates: one before the first boundary and one after each (len(boundaries) + 1)."""

    @model_validator(mode="after")
    def _shape(self) -> "PiecewiseConstantDecay":
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(
                f"values has {len(self.values)} entries and boundaries {len(self.boundaries)}; "
                "values needs exactly one more entry than boundaries"
            )
        if any(b >= c for b, c in zip(self.boundaries, self.boundaries[1:], strict=False)):
            raise ValueError(f"boundaries {self.boundaries} must be strictly increasing")
        return self


class CosineDecay(_Schedule):
    """Cosine decay, optionally after a linear warmup from `initial_learning_rate` to
    `warmup_target`."""

    keras_class: ClassVar[str] = "CosineDecay"
    kind: Literal["cosine_decay"] = "cosine_decay"
    initial_learning_rate: Annotated[float, Field(ge=0)]
    """Rate at step 0 (the warmup's start when warming up, usually 0)."""
    decay_steps: PositiveInt
    """Steps of the cosine decay (after the warmup)."""
    alpha: Probability = 0.0
    """Final rate as a fraction of the peak rate."""
    warmup_target: PositiveFloat | None = None
    """Peak rate reached at the end of the warmup; None means no warmup."""
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    """Length of the linear warmup."""

    @model_validator(mode="after")
    def _warmup(self) -> "CosineDecay":
        if (self.warmup_steps > 0) != (self.warmup_target is not None):
            raise ValueError(
                "warmup_steps and warmup_target go together: set both for a warmup, or neither"
            )
        if self.warmup_target is None and self.initial_learning_rate == 0:
            raise ValueError(
                "initial_learning_rate is 0 without a warmup: the rate would stay 0; set "
                "initial_learning_rate, or warmup_target and warmup_steps"
            )
        return self

    def length_problem(self, path: str, steps: int, limit: str = "") -> str | None:
        return _warmup_problem(path, self.warmup_steps, steps, limit)


# --- schedules the script defines ------------------------------------------------------------


class Cyclical(_Schedule):
    """Cyclical learning rate (Smith, 2017): up and down linearly between two rates, a full
    cycle every `2 * step_size` steps. `triangular2` halves the swing every cycle."""

    script_class: ClassVar[str] = "CyclicalLearningRate"
    kind: Literal["cyclical"] = "cyclical"
    initial_learning_rate: PositiveFloat
    """The lower rate, at step 0 and at the end of every cycle."""
    maximal_learning_rate: PositiveFloat
    """The upper rate, reached mid-cycle."""
    step_size: PositiveInt
    """Steps from the lower to the upper rate (half a cycle); 2-10 epochs' worth, says the
    paper."""
    mode: Literal["triangular", "triangular2"] = "triangular"
    """`triangular`: every cycle the same; `triangular2`: the swing halves each cycle."""

    @model_validator(mode="after")
    def _range(self) -> "Cyclical":
        if self.maximal_learning_rate <= self.initial_learning_rate:
            raise ValueError(
                f"maximal_learning_rate={self.maximal_learning_rate} is not above "
                f"initial_learning_rate={self.initial_learning_rate}; the cycle goes from the "
                "initial (lower) rate up to the maximal one"
            )
        return self


class OneCycle(_Schedule):
    """One-cycle policy (Smith & Topin, 2018; PyTorch's `OneCycleLR` with cosine annealing):
    the rate rises from `max_learning_rate / div_factor` to `max_learning_rate` over the first
    `pct_start` of `total_steps`, then falls to `initial / final_div_factor`, and stays there."""

    script_class: ClassVar[str] = "OneCycle"
    kind: Literal["one_cycle"] = "one_cycle"
    max_learning_rate: PositiveFloat
    """The peak rate."""
    total_steps: PositiveInt
    """Length of the cycle: the run's total number of steps."""
    pct_start: Annotated[float, Field(gt=0, lt=1)] = 0.3
    """Fraction of the cycle spent rising."""
    div_factor: Annotated[float, Field(gt=1)] = 25.0
    """The starting rate is max_learning_rate / div_factor."""
    final_div_factor: Annotated[float, Field(gt=1)] = 1e4
    """The final rate is the starting rate / final_div_factor."""

    def length_problem(self, path: str, steps: int, limit: str = "") -> str | None:
        if self.total_steps > steps:
            return (
                f"{path}.total_steps={self.total_steps} is above {limit or f'loop.steps={steps}'}: "
                f"training would end mid-cycle, before the rate anneals; set total_steps={steps}"
            )
        return None


KerasSchedule = ExponentialDecay | PiecewiseConstantDecay | CosineDecay | Cyclical | OneCycle


class Warmup(_Schedule):
    """A linear warmup in front of a constant rate or of any other schedule: over the first
    `warmup_steps` steps the rate rises linearly to the `after` rate at its step 0, then `after`
    runs as if training started there (its step counts from the end of the warmup)."""

    script_class: ClassVar[str] = "LinearWarmup"
    kind: Literal["warmup"] = "warmup"
    warmup_steps: PositiveInt
    """Length of the warmup."""
    after: PositiveFloat | Annotated[KerasSchedule, Field(discriminator="kind")]
    """The rate, or the schedule, that follows the warmup."""

    def length_problem(self, path: str, steps: int, limit: str = "") -> str | None:
        problem = _warmup_problem(path, self.warmup_steps, steps, limit)
        if problem is None and not isinstance(self.after, float | int):
            left = steps - self.warmup_steps
            limit = f"the {left} steps left after {path}.warmup_steps"
            return self.after.length_problem(f"{path}.after", left, limit)
        return problem


def _warmup_problem(path: str, warmup_steps: int, steps: int, limit: str) -> str | None:
    if warmup_steps >= steps:
        return (
            f"{path}.warmup_steps={warmup_steps} is not below {limit or f'loop.steps={steps}'}: "
            "training "
            "would end inside the warmup; shorten the warmup or train longer"
        )
    return None


Schedule = Annotated[KerasSchedule | Warmup, Field(discriminator="kind")]
"""A learning-rate schedule, stepped by the optimizer's iteration counter (so it resumes)."""

LearningRate = PositiveFloat | Schedule
