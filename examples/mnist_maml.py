"""MAML: a small CNN learns to learn 5-way 1-shot classification of MNIST digits, trained on
tasks of the digits 0-4 and scored on tasks of the held-out digits 5-9.

Each meta-step draws 4 tasks (5 digits, one image of each to adapt on and 5 more to score),
adapts the weights to each by 5 steps of SGD written as functions of the weights, and
follows the gradient of the adapted networks' loss on the scored images with respect to the
weights before adaptation, through the adaptation's own gradients (Finn et al., 2017: nested
tapes, second order). Adam applies it. Validation adapts the same way to 100 tasks of the
held-out digits and scores each on 5 more images of its digits.
"""

from loopgen.dsl import (
    MAML,
    Adam,
    Checkpoint,
    Conv2D,
    Data,
    Dense,
    Flatten,
    KerasDataset,
    Loop,
    MaxPooling2D,
    Reshape,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="mnist_maml",
    description="Learn 5-way 1-shot MNIST digit tasks by MAML.",
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
    training=MAML(
        ways=5,
        shots=1,
        queries=5,
        test_classes=[5, 6, 7, 8, 9],
        tasks_per_step=4,
        inner_steps=5,
        inner_learning_rate=0.1,
        evaluation_tasks=100,
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    # The outer optimizer, on the meta-gradient.
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=2, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1),
)
