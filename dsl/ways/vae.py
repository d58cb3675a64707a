"""Variational autoencoders: an encoder maps an image to a distribution over latent codes, the
decoder (`model`) maps a code drawn from it back to the image, and the loss is the
reconstruction's negative log-likelihood plus beta times the KL divergence from the prior."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from ..base import PositiveFloat, PositiveInt, StrictModel
from .diffusion import GENERATIVE_KINDS
from .gan import Network


class VAE(StrictModel):
    """A variational autoencoder (Kingma & Welling, 2014) of the training images; their labels
    are not used. `encoder` maps an image to 2 * latent_dim numbers, the mean and the
    log-variance of its latent code z (first half, second half); the step draws
    z = mean + exp(log_variance / 2) * noise (the reparameterization: differentiable in the
    mean and the variance), and `model`, the decoder, maps z to the image. The loss of an
    image is its reconstruction's negative log-likelihood summed over its pixels, plus
    beta * KL(N(mean, var) || N(0, I)) summed over the latent dimensions; the two are logged
    apart (`reconstruction`, `kl`). The noise is a function of (seed, step, position in the
    global batch): a resumed run, a replayed step and any number of replicas draw what one
    device does."""

    kind: Literal["vae"] = "vae"
    template: ClassVar[str] = "vae"

    encoder: Network
    """An image (input_shape: the data's image shape, pixels in [0, 1]) to 2 * latent_dim
    numbers, the mean and the log-variance of its code; end it in Dense(2 * latent_dim)
    without activation."""
    latent_dim: PositiveInt = 16
    """Size of the latent code: `model` (the decoder) takes input_shape=(latent_dim,)."""
    beta: PositiveFloat = 1.0
    """The KL term's weight (1: the evidence lower bound; above 1: beta-VAE, Higgins et al.,
    2017)."""
    kl_warmup_steps: Annotated[int, Field(ge=0)] = 0
    """KL annealing (Bowman et al., 2016): the KL weight rises linearly from 0 to beta over
    these first steps, so that the decoder learns to use the code before the prior pulls it
    in. 0: beta from the first step."""
    reconstruction: Literal["bernoulli", "gaussian"] = "bernoulli"
    """The decoder's likelihood of a pixel in [0, 1]. `bernoulli`: the decoder outputs
    logits, the loss is their sigmoid cross-entropy (the images are their sigmoid).
    `gaussian`: the decoder outputs the pixels, the loss is half their squared error (unit
    variance)."""
    samples: Annotated[int, Field(ge=1, le=64)] = 16
    """Images in the sample grid (decoded from the same codes each time) and in the
    reconstruction grid (the same images each time) written to TensorBoard at each
    validation."""

    def describe(self, spec: Any) -> str:
        beta = f", beta {self.beta:g}" if self.beta != 1 else ""
        return f"a variational autoencoder ({self.reconstruction}{beta})"

    def log_names(self) -> list[str]:
        return ["loss", "reconstruction", "kl"]


DRAWING_KINDS = (*GENERATIVE_KINDS, "vae")
"""The ways whose script draws images of its own (a denoiser's sampler, a VAE's decoder, and
its `sample` command): their loss is the way's, their export the sampler's or the decoder's."""
