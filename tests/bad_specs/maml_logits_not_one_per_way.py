# Mistake: a MAML model whose logits are not one per class of a task
from loopgen.dsl import (
    Adam,
    Checkpoint,
    Conv2D,
    Data,
    Dense,
    Flatten,
    KerasDataset,
    Loop,
    MaxPooling2D,
    MAML,
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
            Dense(units=10, name="logits"),
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
