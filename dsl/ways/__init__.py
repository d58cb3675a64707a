"""Ways of training: the `training` section says what a train step does with the networks, a
batch and the losses. Each kind is rendered by a partial of its own (`template`), with its
GradientTapes written out."""

from typing import Annotated

from pydantic import Field

from .adversarial import FGSM, PGD, Adversarial
from .contrastive import Contrastive
from .distillation import Distillation, ExportedModel, KerasFile, TrainedModel
from .gan import GAN, R1, GradientPenalty
from .meta import MAML, Reptile
from .own_step import OwnStep
from .supervised import MultiTask, Supervised, Task

Training = Annotated[
    Supervised
    | MultiTask
    | GAN
    | Distillation
    | Adversarial
    | Contrastive
    | Reptile
    | MAML
    | OwnStep,
    Field(discriminator="kind"),
]
"""How the script trains: supervised (the default), multi-task, a GAN, ..."""

__all__ = [
    "FGSM",
    "GAN",
    "MAML",
    "PGD",
    "R1",
    "Adversarial",
    "Contrastive",
    "Distillation",
    "ExportedModel",
    "GradientPenalty",
    "KerasFile",
    "MultiTask",
    "OwnStep",
    "Reptile",
    "Supervised",
    "Task",
    "TrainedModel",
    "Training",
]
