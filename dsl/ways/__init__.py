"""Ways of training: the `training` section says what a train step does with the networks, a
batch and the losses. Each kind is rendered by a partial of its own (`template`), with its
GradientTapes written out."""

from typing import Annotated

from pydantic import Field

from .adversarial import FGSM, PGD, Adversarial
from .contrastive import Contrastive
from .diffusion import GENERATIVE_KINDS, CosineNoise, Diffusion, FlowMatching, Guidance, LinearNoise
from .distillation import Distillation, ExportedModel, KerasFile, TrainedModel
from .gan import GAN, R1, GradientPenalty
from .lm import DPO, GRPO, LM_KINDS, SFT
from .meta import MAML, Reptile
from .own_step import OwnStep
from .rl import DQN, PPO, SAC, TD3, ActorCritic
from .supervised import MultiTask, Supervised, Task
from .vae import DRAWING_KINDS, VAE

Training = Annotated[
    Supervised
    | MultiTask
    | GAN
    | Diffusion
    | FlowMatching
    | VAE
    | Distillation
    | Adversarial
    | Contrastive
    | Reptile
    | MAML
    | OwnStep
    | SFT
    | DPO
    | GRPO
    | PPO
    | ActorCritic
    | DQN
    | SAC
    | TD3,
    Field(discriminator="kind"),
]
"""How the script trains: supervised (the default), multi-task, a GAN, ..."""

RL_KINDS = ("ppo", "actor_critic", "dqn", "sac", "td3")
"""The ways of training that act in an environment (reinforcement learning)."""

__all__ = [
    "DPO",
    "DQN",
    "DRAWING_KINDS",
    "FGSM",
    "GAN",
    "GENERATIVE_KINDS",
    "GRPO",
    "LM_KINDS",
    "MAML",
    "PGD",
    "PPO",
    "R1",
    "RL_KINDS",
    "SAC",
    "SFT",
    "TD3",
    "VAE",
    "ActorCritic",
    "Adversarial",
    "Contrastive",
    "CosineNoise",
    "Diffusion",
    "Distillation",
    "ExportedModel",
    "FlowMatching",
    "GradientPenalty",
    "Guidance",
    "KerasFile",
    "LinearNoise",
    "MultiTask",
    "OwnStep",
    "Reptile",
    "Supervised",
    "Task",
    "TrainedModel",
    "Training",
]
