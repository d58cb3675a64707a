"""Generative adversarial networks: two models trained against each other, each with its own
optimizer, in an alternating step that the script writes out."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ..base import PositiveFloat, PositiveInt, Probability, StrictModel
from ..model import Functional, Sequential
from ..training import Optimizer, PlainOptimizer

Network = Annotated[Sequential | Functional, Field(discriminator="kind")]


class GradientPenalty(StrictModel):
    """WGAN-GP (Gulrajani et al., 2017): `weight * (||grad D(x)|| - 1)^2` at points `x` drawn
    on the lines between real and generated images, so that the critic stays 1-Lipschitz.
    The gradient is taken by a GradientTape inside the critic's (and, under mixed_float16,
    on a scaled score, as the step's own loss is)."""

    kind: Literal["gradient_penalty"] = "gradient_penalty"
    weight: PositiveFloat = 10.0
    """lambda of the paper (10)."""

    @property
    def log_name(self) -> str:
        return "gradient_penalty"


class R1(StrictModel):
    """R1 (Mescheder et al., 2018): `weight / 2 * ||grad D(x)||^2` on the real images, which
    keeps the discriminator flat where the data is."""

    kind: Literal["r1"] = "r1"
    weight: PositiveFloat = 10.0
    """gamma of the paper."""

    @property
    def log_name(self) -> str:
        return "r1_penalty"


Penalty = Annotated[GradientPenalty | R1, Field(discriminator="kind")]


class GAN(StrictModel):
    """A GAN on the training images; their labels are not used. Each step trains the
    discriminator (`critic_steps` times) on a real batch and as many generated images, then the
    generator through the updated discriminator. With `loss="cross_entropy"` (DCGAN) real
    images go towards 1 and generated ones towards 0, and the generator has the non-saturating
    loss of Goodfellow et al.; with `loss="wasserstein"` (WGAN) the critic scores real images
    high and generated ones low, with a `penalty` to keep it Lipschitz. The noise, and the
    points a gradient penalty is taken at, are a function of (seed, step, position in the
    global batch): a resumed run, and any number of replicas, draw what one device does. Set
    it instead of `model`, `loss` and `optimizer`."""

    kind: Literal["gan"] = "gan"
    template: ClassVar[str] = "gan"

    latent_dim: PositiveInt = 100
    """Size of the noise vector the generator maps to an image."""
    generator: Network
    """Noise (`input_shape=(latent_dim,)`) to an image of the data's shape. Its last layer's
    activation sets the image range: `tanh` for [-1, 1] (the script rescales the real images
    to match), `sigmoid` for [0, 1]."""
    discriminator: Network
    """An image to one logit: real (high) or generated (low)."""
    generator_optimizer: PlainOptimizer
    """Optimizer of the generator (DCGAN: Adam, 2e-4, beta_1=0.5)."""
    discriminator_optimizer: PlainOptimizer
    """Optimizer of the discriminator."""
    loss: Literal["cross_entropy", "wasserstein"] = "cross_entropy"
    """`cross_entropy`: binary cross-entropies on the discriminator's logits (DCGAN).
    `wasserstein`: the critic's mean score on generated minus on real images, and minus the
    mean on generated for the generator (WGAN); it needs a `penalty`."""
    penalty: Penalty | None = None
    """GradientPenalty() (WGAN-GP) or R1() added to the discriminator's loss."""
    critic_steps: PositiveInt = 1
    """Discriminator updates per generator update, each on the same real batch and fresh
    noise (WGAN-GP: 5)."""
    label_smoothing: Probability = 0.0
    """One-sided label smoothing: real images are labelled 1 - label_smoothing for the
    discriminator (Salimans et al., 2016), so that it does not grow overconfident."""
    samples: Annotated[int, Field(ge=1, le=64)] = 16
    """Generated images written to TensorBoard after every epoch, always from the same noise,
    so that they show the generator's progress."""

    def describe(self, spec: object) -> str:
        if self.loss == "wasserstein":
            return (
                "a WGAN-GP"
                if self.penalty and self.penalty.kind == "gradient_penalty"
                else "a WGAN"
            )
        return "a GAN"

    def log_names(self) -> list[str]:
        penalty = [self.penalty.log_name] if self.penalty is not None else []
        return ["discriminator_loss", "generator_loss", "real_score", "fake_score", *penalty]

    def networks(self) -> dict[str, Sequential | Functional]:
        return {"generator": self.generator, "discriminator": self.discriminator}

    def optimizers(self) -> dict[str, Optimizer]:
        return {
            "generator": self.generator_optimizer,
            "discriminator": self.discriminator_optimizer,
        }
