"""Reptile: a small CNN learns to learn 5-way 1-shot classification of MNIST digits, trained
on tasks of the digits 0-4 and scored on tasks of the held-out digits 5-9.

Each meta-step draws 4 tasks (5 digits, one image of each to adapt on), adapts a copy of the
weights to each by 5 steps of SGD, and moves the weights toward the adapted copies' mean
(Nichol et al., 2018): SGD with a learning rate decaying from 1.0 to 0 is the paper's
interpolation by a decaying meta step size. Validation adapts the same way to 100 tasks of the
held-out digits and scores each on 5 more images of its digits.
"""

from loopgen.dsl import (
    SGD,
    Checkpoint,
    Conv2D,
    CosineDecay,
    Data,
    Dense,
    Flatten,
    KerasDataset,
    Loop,
    MaxPooling2D,
    Reptile,
    Reshape,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="mnist_reptile",
    description="Learn 5-way 1-shot MNIST digit tasks by Reptile.",
    seed=11,
    data=Data(train=KerasDataset(name="mnist"), batch_size=20, rescale=1 / 255),
    model=Sequential(
        input_shape=(28, 28),
        layers=[
            Reshape(target_shape=(28, 28, 1)),
            Conv2D(filters=16, kernel_size=3, activation="relu"),
            MaxPooling2D(),
            Conv2D(filters=16, kernel_size=3, activation="relu"),
            MaxPooling2D(),
            Flatten(),
            Dense(units=5, name="logits"),
        ],
    ),
    training=Reptile(
        ways=5,
        shots=1,
        queries=5,
        test_classes=[5, 6, 7, 8, 9],
        tasks_per_step=4,
        inner_steps=5,
        inner_learning_rate=0.05,
        evaluation_tasks=100,
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    # The meta step size: 1.0 at first, decaying to 0 over the run's 4 x 1,530 steps.
    optimizer=SGD(learning_rate=CosineDecay(initial_learning_rate=1.0, decay_steps=6120)),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=4, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1),
)
