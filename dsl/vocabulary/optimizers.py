"""Every optimizer of `keras.optimizers` as a spec optimizer: one function per class, with Keras' signature (Keras 3.15.1).

Generated from dsl/catalog/keras.json by `python -m loopgen.dsl.catalog.api`; do not edit."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any

from ..training import KerasOptimizer
from ._build import build

__all__ = [
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Ftrl",
    "Lamb",
    "Lion",
    "Muon",
    "Nadam",
    "RMSprop",
    "ScheduleFreeAdamW",
]


def Adadelta(
    learning_rate=0.001,
    rho=0.95,
    epsilon=1e-07,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Adadelta`: Optimizer that implements the Adadelta algorithm."""
    return build(KerasOptimizer, "adadelta", locals())


def Adafactor(
    learning_rate=0.001,
    beta_2_decay=-0.8,
    epsilon_1=1e-30,
    epsilon_2=0.001,
    clip_threshold=1.0,
    relative_step=True,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Adafactor`: Optimizer that implements the Adafactor algorithm."""
    return build(KerasOptimizer, "adafactor", locals())


def Adagrad(
    learning_rate=0.001,
    initial_accumulator_value=0.1,
    epsilon=1e-07,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Adagrad`: Optimizer that implements the Adagrad algorithm."""
    return build(KerasOptimizer, "adagrad", locals())


def Adam(
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-07,
    amsgrad=False,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Adam`: Optimizer that implements the Adam algorithm."""
    return build(KerasOptimizer, "adam", locals())


def AdamW(
    learning_rate=0.001,
    weight_decay=0.004,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-07,
    amsgrad=False,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.AdamW`: Optimizer that implements the AdamW algorithm."""
    return build(KerasOptimizer, "adamw", locals())


def Adamax(
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-07,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Adamax`: Optimizer that implements the Adamax algorithm."""
    return build(KerasOptimizer, "adamax", locals())


def Ftrl(
    learning_rate=0.001,
    learning_rate_power=-0.5,
    initial_accumulator_value=0.1,
    l1_regularization_strength=0.0,
    l2_regularization_strength=0.0,
    l2_shrinkage_regularization_strength=0.0,
    beta=0.0,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Ftrl`: Optimizer that implements the FTRL algorithm."""
    return build(KerasOptimizer, "ftrl", locals())


def Lamb(
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-07,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Lamb`: Optimizer that implements the Lamb algorithm."""
    return build(KerasOptimizer, "lamb", locals())


def Lion(
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.99,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Lion`: Optimizer that implements the Lion algorithm."""
    return build(KerasOptimizer, "lion", locals())


def Muon(
    learning_rate=0.001,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_weight_decay=0.004,
    epsilon=1e-07,
    weight_decay=0.004,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    exclude_layers=None,
    exclude_embeddings=True,
    muon_a=3.4445,
    muon_b=-4.775,
    muon_c=2.0315,
    adam_lr_ratio=1,
    momentum=0.95,
    ns_steps=5,
    nesterov=True,
    rms_rate=0.2,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Muon`: Optimizer that implements the Muon algorithm."""
    return build(KerasOptimizer, "muon", locals())


def Nadam(
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-07,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.Nadam`: Optimizer that implements the Nadam algorithm."""
    return build(KerasOptimizer, "nadam", locals())


def RMSprop(
    learning_rate=0.001,
    rho=0.9,
    momentum=0.0,
    epsilon=1e-07,
    centered=False,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.RMSprop`: Optimizer that implements the RMSprop algorithm."""
    return build(KerasOptimizer, "rmsprop", locals())


def SGD(
    learning_rate=0.01,
    momentum=0.0,
    nesterov=False,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.SGD`: Gradient descent (with momentum) optimizer."""
    return build(KerasOptimizer, "sgd", locals())


def ScheduleFreeAdamW(
    learning_rate=0.0025,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-08,
    warmup_steps=0,
    weight_decay=None,
    use_ema=False,
    ema_momentum=0.99,
    ema_overwrite_frequency=None,
    name=None,
    **kwargs: Any,
) -> KerasOptimizer:
    """`keras.optimizers.ScheduleFreeAdamW`: Optimizer that implements the Schedule-Free AdamW algorithm."""
    return build(KerasOptimizer, "schedule_free_adamw", locals())
