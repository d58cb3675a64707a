"""Diffusion and flow matching: a denoiser (`model`) learns to undo noise added to the training
images, and a sampler turns pure noise into images with it, optionally guided towards a class
(classifier-free guidance)."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..base import PositiveFloat, PositiveInt, StrictModel

Probability = Annotated[float, Field(gt=0, lt=1)]


class LinearNoise(StrictModel):
    """DDPM's linear schedule (Ho et al., 2020): beta_t from `beta_start` to `beta_end` in
    equal steps over the timesteps (their 1e-4 and 0.02 are for 1000 timesteps)."""

    kind: Literal["linear"] = "linear"
    beta_start: PositiveFloat = 1e-4
    """beta_1, the noise added at the first level."""
    beta_end: PositiveFloat = 0.02
    """beta_T, the noise added at the last level."""

    @model_validator(mode="after")
    def _increasing(self) -> "LinearNoise":
        if not self.beta_start < self.beta_end < 1:
            raise ValueError(
                f"beta_start={self.beta_start}, beta_end={self.beta_end}: the noise grows, "
                "so beta_start < beta_end < 1 (Ho et al.: 1e-4 and 0.02)"
            )
        return self


class CosineNoise(StrictModel):
    """The cosine schedule (Nichol & Dhariwal, 2021): alpha_bar(t) = f(t) / f(0) with
    f(t) = cos((t / T + s) / (1 + s) * pi / 2)^2, each beta capped at 0.999."""

    kind: Literal["cosine"] = "cosine"
    offset: Annotated[float, Field(ge=0, lt=1)] = 0.008
    """s of the paper: keeps beta_1 from being too small near t = 0."""


Schedule = Annotated[LinearNoise | CosineNoise, Field(discriminator="kind")]


class Guidance(StrictModel):
    """Class-conditional training with classifier-free guidance (Ho & Salimans, 2022): the
    denoiser takes the class as its input `label`, replaced by the "no class" id `classes`
    with probability `label_dropout`, so that one network learns both the conditional and
    the unconditional prediction. Sampling extrapolates from the second towards the first by
    the guidance scale: out = uncond + scale * (cond - uncond)."""

    classes: PositiveInt
    """The number of classes; the labels are 0 .. classes - 1, and `classes` means none (the
    denoiser's label embedding needs classes + 1 rows)."""
    label_dropout: Probability = 0.1
    """How often a training label is dropped (replaced by `classes`)."""
    scale: Annotated[float, Field(ge=0)] = 3.0
    """The guidance scale of the samples written at validation and of `sample` by default (1:
    the conditional model alone; 0: the unconditional one)."""


class _Generative(StrictModel):
    guidance: Guidance | None = None
    """Train class-conditional, guided at sampling; None: unconditional (labels unused)."""
    sample_steps: PositiveInt = 50
    """The sampler's steps for the samples written at each validation, and `sample`'s
    default (`--steps`)."""
    samples: Annotated[int, Field(ge=1, le=64)] = 16
    """Images in the sample grid written to TensorBoard at each validation, always from the
    same noise (and classes), so that the grids show the progress."""


class Diffusion(_Generative):
    """A denoising diffusion model (DDPM; Ho et al., 2020). Each step draws, for every image
    x0, a timestep t uniformly in 0 .. timesteps - 1 and noise e, makes
    x_t = sqrt(alpha_bar_t) x0 + sqrt(1 - alpha_bar_t) e, and trains `model` on
    (x_t, t / timesteps[, label]) to predict the target (`prediction`) with a mean squared
    error. Sampling is DDIM's (Song et al., 2021; deterministic, any number of steps). The
    noise, the timesteps and the dropped labels are functions of (seed, step, position in
    the global batch): a resumed run, a replayed step and any number of replicas draw what
    one device does. `model` takes a dict {"image", "t" (batch, 1), "label" (batch,)}."""

    kind: Literal["diffusion"] = "diffusion"
    template: ClassVar[str] = "diffusion"

    timesteps: PositiveInt = 1000
    """T: the number of noise levels of training."""
    schedule: Schedule = CosineNoise()
    """How the noise grows with t."""
    prediction: Literal["epsilon", "v", "sample"] = "epsilon"
    """What the denoiser predicts: the noise e (`epsilon`, DDPM), the velocity
    v = sqrt(alpha_bar) e - sqrt(1 - alpha_bar) x0 (`v`, Salimans & Ho 2022) or the clean
    image x0 (`sample`)."""

    @model_validator(mode="after")
    def _sampler_within_timesteps(self) -> "Diffusion":
        if self.sample_steps > self.timesteps:
            raise ValueError(
                f"sample_steps={self.sample_steps} is more than timesteps={self.timesteps}: "
                "DDIM samples a subset of the training's noise levels; lower sample_steps"
            )
        return self

    def describe(self, spec: Any) -> str:
        guided = ", class-conditional" if self.guidance else ""
        return f"a diffusion model ({self.schedule.kind} schedule, {self.prediction}{guided})"

    def log_names(self) -> list[str]:
        return ["loss"]


class FlowMatching(_Generative):
    """Flow matching with straight paths (rectified flow; Liu et al., 2022, Lipman et al.,
    2022): each step draws t uniformly in [0, 1) and noise e for every image x0, makes
    x_t = (1 - t) x0 + t e, and trains `model` on (x_t, t[, label]) to predict the velocity
    e - x0 with a mean squared error. Sampling integrates from t = 1 (noise) to 0 with
    Euler steps. Draws as in `Diffusion`: exact on resume, replay and replicas."""

    kind: Literal["flow_matching"] = "flow_matching"
    template: ClassVar[str] = "diffusion"

    def describe(self, spec: Any) -> str:
        guided = ", class-conditional" if self.guidance else ""
        return f"a flow-matching model{guided}"

    def log_names(self) -> list[str]:
        return ["loss"]


GENERATIVE_KINDS = ("diffusion", "flow_matching")
"""The ways whose model is a denoiser and whose script samples images."""
