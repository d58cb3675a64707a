"""Generative adversarial networks: two models trained against each other, each with its own
optimizer, in an alternating step that the script writes out."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ..base import PositiveInt, Probability, StrictModel
from ..model import Functional, Sequential
from ..training import Optimizer

Network = Annotated[Sequential | Functional, Field(discriminator="kind")]


class GAN(StrictModel):
    """A GAN (DCGAN-style) on the training images; their labels are not used. Each step trains
    the discriminator on a real batch and as many generated images (real towards 1, generated
    towards 0), then the generator through the updated discriminator (its images towards 1, the
    non-saturating loss of Goodfellow et al.). Both losses are binary cross-entropies on the
    discriminator's logits. Set it instead of `model`, `loss` and `optimizer`."""

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
    generator_optimizer: Optimizer
    """Optimizer of the generator (DCGAN: Adam, 2e-4, beta_1=0.5)."""
    discriminator_optimizer: Optimizer
    """Optimizer of the discriminator."""
    label_smoothing: Probability = 0.0
    """One-sided label smoothing: real images are labelled 1 - label_smoothing for the
    discriminator (Salimans et al., 2016), so that it does not grow overconfident."""
    samples: Annotated[int, Field(ge=1, le=64)] = 16
    """Generated images written to TensorBoard after every epoch, always from the same noise,
    so that they show the generator's progress."""

    def describe(self, spec: object) -> str:
        return "a GAN"

    def networks(self) -> dict[str, Sequential | Functional]:
        return {"generator": self.generator, "discriminator": self.discriminator}

    def optimizers(self) -> dict[str, Optimizer]:
        return {
            "generator": self.generator_optimizer,
            "discriminator": self.discriminator_optimizer,
        }
