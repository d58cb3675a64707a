# Mistake: more shots than the dataset's smallest class has examples
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
        shots=6000,
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
