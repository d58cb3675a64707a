# Mistake: a student that outputs probabilities (the distillation softens logits)
from loopgen.dsl import (
    SGD,
    Checkpoint,
    Data,
    Dense,
    Distillation,
    Flatten,
    KerasDataset,
    Loop,
    Sequential,
    Spec,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    TrainedModel,
)

spec = Spec(
    name="mnist_distillation",
    description="Distil the mnist_mlp example's network into a smaller MLP.",
    seed=3,
    data=Data(
        train=KerasDataset(name="mnist"),
        validation=KerasDataset(name="mnist", split="test"),
        batch_size=64,
        rescale=1 / 255,
    ),
    model=Sequential(
        input_shape=(28, 28),
        layers=[Flatten(), Dense(units=32, activation="relu"), Dense(units=10, activation="softmax", name="probabilities")],
    ),
    training=Distillation(
        # The teacher: mnist_mlp's network, with the weights its run saved.
        teacher=TrainedModel(
            model=Sequential(
                input_shape=(28, 28),
                layers=[
                    Flatten(),
                    Dense(units=64, activation="relu"),
                    Dense(units=64, activation="relu"),
                    Dense(units=10, name="predictions"),
                ],
            ),
            weights="runs/mnist_mlp",
        ),
        temperature=3.0,
        alpha=0.1,
    ),
    loss=SparseCategoricalCrossentropy(from_logits=False),
    optimizer=SGD(learning_rate=0.05, momentum=0.9),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=200),
    checkpoint=Checkpoint(every_epochs=1),
)
