"""Contrastive self-supervised learning (SimCLR): an encoder learns what two augmented views of
an image share, against the other images of the global batch."""

from typing import ClassVar, Literal

from ..base import PositiveFloat, PositiveInt, StrictModel
from ..layers import KerasLayer


class Contrastive(StrictModel):
    """SimCLR (Chen et al., 2020). Each training image is augmented twice (`data.augmentation`,
    each view's random choices a function of (seed, epoch, position, view)); the encoder
    (`model`, ending in a feature vector) and the `projection` head map both views, and the
    NT-Xent loss asks each view to find its twin among the 2N - 1 other views of the global
    batch by cosine similarity over `temperature`. The negatives are gathered across replicas,
    so two replicas train what one device does. A linear probe (one Dense layer of `classes`
    logits) learns the labels from the encoder's features without changing them: `loss` and
    `metrics` are the probe's, and validation scores it. The encoder is what is exported."""

    kind: Literal["contrastive"] = "contrastive"
    template: ClassVar[str] = "contrastive"

    projection: list[KerasLayer]
    """The projection head's layers, on the encoder's features (SimCLR: Dense, ReLU, Dense)."""
    temperature: PositiveFloat = 0.1
    """tau of the NT-Xent loss: lower sharpens the softmax over the negatives."""
    classes: PositiveInt
    """Logits of the linear probe: the number of classes of the labels."""

    def describe(self, spec: object) -> str:
        return "an encoder trained by SimCLR, with a linear probe"
