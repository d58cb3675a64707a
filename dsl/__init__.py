"""The spec language: validated pydantic models of a training run.

A spec file builds a `Spec` from these classes and binds it to the name `spec`. Every Keras
layer, loss, metric and optimizer is here under its Keras class name (`Conv1D`, `Huber`, `AUC`,
`Nadam`, ...); a metric whose name a loss also has is `metrics.<Name>`
(`metrics.MeanSquaredError`), and `losses`, `metrics` and `optimizers` hold their sections
whole."""

from .base import Var, var
from .controls import BestModel, EarlyStopping, Gradients, ReduceOnPlateau
from .data import Data, ImageDirectory, KerasDataset, Npz, Shapes, Split, Tfds
from .environment import Environment
from .finetune import FineTune
from .graph import Block, Graph, Input, Node
from .layers import (
    L1,
    L1L2,
    L2,
    Backbone,
    Custom,
    CustomLayerClass,
    KerasLayer,
    PositionEmbedding,
    Repeat,
    SaveSkip,
)
from .model import Functional, Imported, Sequential
from .performance import Performance
from .schedules import (
    CosineDecay,
    Cyclical,
    ExponentialDecay,
    OneCycle,
    PiecewiseConstantDecay,
    Warmup,
)
from .sources import Csv, Feature, Generator, Text, TextDirectory, TFRecord
from .spec import (
    TPU,
    Checkpoint,
    Comet,
    Export,
    Logging,
    Loop,
    Mirrored,
    MLflow,
    MultiWorker,
    SingleDevice,
    Spec,
)
from .training import (
    ImportedLoss,
    ImportedMetric,
    ImportedOptimizer,
    KerasLoss,
    KerasMetric,
    KerasOptimizer,
)
from .vocabulary import layers as _layers
from .vocabulary import losses, metrics, optimizers
from .vocabulary.layers import *  # noqa: F403
from .vocabulary.losses import *  # noqa: F403
from .vocabulary.metrics import *  # noqa: F403
from .vocabulary.optimizers import *  # noqa: F403
from .ways import (
    DQN,
    FGSM,
    GAN,
    MAML,
    PGD,
    PPO,
    R1,
    SAC,
    TD3,
    ActorCritic,
    Adversarial,
    Contrastive,
    Distillation,
    ExportedModel,
    GradientPenalty,
    KerasFile,
    MultiTask,
    OwnStep,
    Reptile,
    Supervised,
    Task,
    TrainedModel,
)

__all__ = [
    "DQN",
    "ActorCritic",
    "FGSM",
    "PPO",
    "Environment",
    "GAN",
    "MAML",
    "PGD",
    "R1",
    "SAC",
    "TD3",
    "Adversarial",
    "Contrastive",
    "L1",
    "L1L2",
    "L2",
    "TPU",
    "Backbone",
    "BestModel",
    "Block",
    "Checkpoint",
    "Comet",
    "MLflow",
    "CosineDecay",
    "Csv",
    "Custom",
    "CustomLayerClass",
    "Cyclical",
    "Data",
    "Distillation",
    "EarlyStopping",
    "GradientPenalty",
    "ExponentialDecay",
    "Export",
    "ExportedModel",
    "Feature",
    "FineTune",
    "Functional",
    "Generator",
    "Gradients",
    "Graph",
    "ImageDirectory",
    "Imported",
    "ImportedLoss",
    "ImportedMetric",
    "ImportedOptimizer",
    "Input",
    "KerasDataset",
    "KerasFile",
    "KerasLayer",
    "KerasLoss",
    "KerasMetric",
    "KerasOptimizer",
    "Logging",
    "Loop",
    "Mirrored",
    "MultiTask",
    "MultiWorker",
    "Node",
    "Npz",
    "OwnStep",
    "Reptile",
    "OneCycle",
    "Performance",
    "PositionEmbedding",
    "PiecewiseConstantDecay",
    "ReduceOnPlateau",
    "Repeat",
    "SaveSkip",
    "Sequential",
    "Shapes",
    "SingleDevice",
    "Spec",
    "Split",
    "Supervised",
    "TFRecord",
    "Task",
    "Text",
    "TrainedModel",
    "TextDirectory",
    "Tfds",
    "Var",
    "Warmup",
    "losses",
    "metrics",
    "optimizers",
    "var",
    *sorted({*_layers.__all__, *losses.__all__, *metrics.__all__, *optimizers.__all__}),
]
