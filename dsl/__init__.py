"""The spec language: validated pydantic models of a training run.

A spec file builds a `Spec` from these classes and binds it to the name `spec`."""

from .base import Var, var
from .data import Data, ImageDirectory, KerasDataset, Npz, Shapes, Split, Tfds
from .layers import (
    L1,
    L2,
    L1L2,
    ActivationLayer,
    BatchNormalization,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    Custom,
    CustomLayerClass,
    Dense,
    Dropout,
    Flatten,
    MaxPooling2D,
    Repeat,
    Reshape,
    SaveSkip,
    UpSampling2D,
)
from .model import Functional, Imported, Sequential
from .spec import Checkpoint, Export, Logging, Loop, SingleDevice, Spec
from .training import (
    SGD,
    Adam,
    AdamW,
    BinaryAccuracy,
    BinaryCrossentropy,
    CategoricalAccuracy,
    CategoricalCrossentropy,
    CosineDecay,
    ExponentialDecay,
    Huber,
    MeanAbsoluteError,
    MeanIoU,
    MeanSquaredError,
    PiecewiseConstantDecay,
    RMSprop,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    SparseTopKCategoricalAccuracy,
)

Activation = ActivationLayer

__all__ = [name for name in dir() if not name.startswith("_")]
