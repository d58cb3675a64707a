"""Fashion-MNIST with a warmup in front of a cyclical learning rate, gradients clipped by value.

Keras has no cyclical schedule (Smith, 2017) nor a warmup that goes in front of any schedule:
the script defines both as `LearningRateSchedule` subclasses, evaluated at the optimizer's
iteration counter, so that a resumed run continues them. `triangular2` halves the swing every
cycle.
"""

from loopgen.dsl import (
    SGD,
    Checkpoint,
    Cyclical,
    Data,
    Dense,
    Dropout,
    Flatten,
    Gradients,
    KerasDataset,
    Loop,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    Warmup,
)

spec = Spec(
    name="fashion_cyclical",
    description="Classify Fashion-MNIST; warmup, then a triangular2 cyclical learning rate.",
    seed=2,
    data=Data(
        train=KerasDataset(name="fashion_mnist", split="train"),
        validation=KerasDataset(name="fashion_mnist", split="test"),
        batch_size=128,
        shuffle_buffer=10_000,
        rescale=1 / 255,
    ),
    model=Sequential(
        input_shape=(28, 28),
        layers=[
            Flatten(),
            Dense(units=256, activation="relu"),
            Dropout(rate=0.2),
            Dense(units=10),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    # 469 steps an epoch: a warmup of half an epoch, then cycles of 4 epochs.
    optimizer=SGD(
        learning_rate=Warmup(
            warmup_steps=234,
            after=Cyclical(
                initial_learning_rate=0.005,
                maximal_learning_rate=0.1,
                step_size=938,
                mode="triangular2",
            ),
        ),
        momentum=0.9,
    ),
    gradients=Gradients(clip_value=0.5),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=8, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
)
