"""The sweep language: which spec fields to vary, over what values, judged by which logged
value. `loopgen sweep sweep.py` runs it on Optuna (sweep/).

A sweep file imports these from `loopgen.dsl.sweep`, apart from the spec language: a spec's
`import loopgen.dsl` does not build their models."""

from typing import Annotated, Any, Literal

from pydantic import Field, PositiveInt, model_validator

from .base import StrictModel


class _Bounded(StrictModel):
    def __init__(self, low: Any = None, high: Any = None, /, **fields: Any) -> None:
        # Written as a user reads it: LogUniform(1e-4, 1e-1), IntRange(32, 256, step=32).
        positional = {"low": low, "high": high}
        super().__init__(**{k: v for k, v in positional.items() if v is not None}, **fields)

    def __repr__(self) -> str:
        # As a sweep file writes it: LogUniform(0.0001, 0.1), IntRange(8, 32, step=8).
        options = {
            name: getattr(self, name)
            for name, info in type(self).model_fields.items()
            if name not in ("kind", "low", "high") and getattr(self, name) != info.default
        }
        shown = [repr(self.low), repr(self.high), *(f"{k}={v!r}" for k, v in options.items())]
        return f"{type(self).__name__}({', '.join(shown)})"


class _Range(_Bounded):
    low: float
    """The smallest value drawn."""
    high: float
    """The largest value drawn (above `low`)."""

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


class Uniform(_Range):
    """A float drawn uniformly between `low` and `high`: `Uniform(0.0, 0.5)`."""

    kind: Literal["uniform"] = "uniform"


class LogUniform(_Range):
    """A positive float drawn uniformly on a log scale, for rates and decays:
    `LogUniform(1e-4, 1e-1)` tries as many values below 1e-3 as above."""

    kind: Literal["log_uniform"] = "log_uniform"

    @model_validator(mode="after")
    def _positive(self):
        if self.low <= 0:
            raise ValueError(f"low ({self.low}) must be above 0 on a log scale: use Uniform")
        return self


class IntRange(_Bounded):
    """An integer from `low` to `high` inclusive, in steps of `step`:
    `IntRange(32, 256, step=32)`."""

    kind: Literal["int_range"] = "int_range"
    low: int
    """The smallest integer drawn."""
    high: int
    """The largest integer drawn: `low` plus a whole number of steps."""
    step: PositiveInt = 1
    """The distance between two values that can be drawn."""
    log: bool = False
    """Draw on a log scale (`step` must then be 1)."""

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if (self.high - self.low) % self.step:
            raise ValueError(
                f"high - low ({self.high - self.low}) is not a multiple of step ({self.step}): "
                f"end at {self.high - (self.high - self.low) % self.step}"
            )
        if self.log and (self.step != 1 or self.low < 1):
            raise ValueError("log=True needs step 1 and low >= 1")
        return self


class Choice(StrictModel):
    """One of the listed values: `Choice([32, 64, 128])`. Values may be numbers, strings,
    booleans, None, or JSON lists and objects (a whole layer's settings)."""

    kind: Literal["choice"] = "choice"
    values: list[Any] = Field(min_length=1)
    """The values, each listed once; each must validate in the field the sweep sets."""

    def __init__(self, values: Any = None, /, **fields: Any) -> None:
        super().__init__(**({"values": values} if values is not None else {}), **fields)

    def __repr__(self) -> str:
        return f"Choice({self.values!r})"

    @model_validator(mode="after")
    def _distinct(self):
        seen: list[Any] = []
        for value in self.values:
            if value in seen:
                raise ValueError(f"{value!r} is listed twice")
            seen.append(value)
        return self


Distribution = Annotated[Uniform | LogUniform | IntRange | Choice, Field(discriminator="kind")]
"""The values a sweep tries in one field."""


class TPE(StrictModel):
    """Optuna's Tree-structured Parzen Estimator (its default): random for the first
    `startup_trials`, then drawn near the best values so far."""

    kind: Literal["tpe"] = "tpe"
    startup_trials: PositiveInt = 10
    """Trials drawn at random before the estimator draws near the best values."""


class RandomSearch(StrictModel):
    """Values drawn independently at random."""

    kind: Literal["random"] = "random"


class GridSearch(StrictModel):
    """Every combination of the space's values, in Optuna's order (Choice and IntRange fields
    only; `trials` should be the grid's size)."""

    kind: Literal["grid"] = "grid"


class Median(StrictModel):
    """Stops a trial whose objective at a step is worse than the median of the earlier trials'
    at that step (Optuna's MedianPruner)."""

    kind: Literal["median"] = "median"
    startup_trials: int = Field(5, ge=0)
    """Trials that run to the end before any is stopped."""
    warmup_steps: int = Field(0, ge=0)
    """Reports of a trial before it may be stopped, in the objective's steps: epochs for a
    validation value, training steps otherwise."""


class Hyperband(StrictModel):
    """Successive halving over brackets of budgets (Optuna's HyperbandPruner); a trial's
    budget is in the objective's steps: epochs for a validation value, training steps
    otherwise."""

    kind: Literal["hyperband"] = "hyperband"
    min_steps: PositiveInt = 1
    """The smallest budget a trial gets before it may be stopped."""
    max_steps: PositiveInt | None = None
    """A whole trial's budget; None: learnt from the first trial that finishes."""
    reduction_factor: int = Field(3, ge=2)
    """How much each round of halving cuts: a bracket keeps 1 in `reduction_factor` trials
    for the next budget."""


Sampler = Annotated[TPE | RandomSearch | GridSearch, Field(discriminator="kind")]
"""How Optuna chooses the values of each trial."""
Pruner = Annotated[Median | Hyperband, Field(discriminator="kind")]
"""How Optuna stops trials whose objective falls behind."""


class Sweep(StrictModel):
    """A hyperparameter search over a spec: each trial is the spec with sampled values set
    (as by `--set`), rendered and run as its own script with its own run directory."""

    spec: str
    """The spec file, relative to the sweep file. Its data paths are read from the sweep
    file's folder, where the trials run."""
    spec_name: str = "spec"
    """The name of the Spec object in that file."""
    space: dict[str, Distribution] = Field(min_length=1)
    """The values to try, by field path as `--set` writes it: `optimizer.learning_rate`,
    `model.layers[1].units`."""
    objective: str
    """A value the run logs to metrics.jsonl (`val_accuracy`, `loss`): its last logged value
    scores the trial, and each logged value is reported to the pruner, at its epoch for a
    validation value (trials of other batch sizes validate at other steps), else at its
    training step (an RL run's: environment steps)."""
    direction: Literal["minimize", "maximize"]
    """Whether a lower (`minimize`: a loss) or a higher (`maximize`: an accuracy) objective is
    better."""
    trials: PositiveInt
    """Trials in all (pruned and failed ones count); shared by every process on the study."""
    parallel: PositiveInt = 1
    """Trials this process runs at once."""
    sampler: Sampler = TPE()
    """How Optuna chooses each trial's values."""
    pruner: Pruner | None = None
    """How Optuna stops hopeless trials early; None lets every trial run to its end."""
    seed: int | None = Field(0, ge=0, lt=2**32)
    """The sampler's seed; None draws one."""
    first: list[dict[str, Any]] = []
    """Values to try first, before the sampler chooses (`{"optimizer.learning_rate": 0.01}`):
    known good settings, or a baseline."""
    devices: list[str] = []
    """GPU indices handed to this process's trials as CUDA_VISIBLE_DEVICES, each new trial
    the one running the fewest (`["0", "1"]` with parallel=2: one trial per GPU); empty:
    every trial sees every device."""
    preload: bool = True
    """Start each trial in a process forked from one that has imported TensorFlow (seconds
    sooner than `python train.py`; still a process, a run directory and a script of its own);
    False: start each as `python train.py`."""
    name: str | None = None
    """The study's name in its storage; default the sweep file's name. Processes that share
    a storage share the study of that name."""
    output_dir: str | None = None
    """Where the study and the trials go, relative to the sweep file; default
    `sweeps/<sweep file name>`."""
