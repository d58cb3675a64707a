"""Knowledge distillation: a 784-32-10 student learns MNIST from the labels and from the
mnist_mlp example's trained network (784-64-64-10), its teacher.

Train the teacher first (`loopgen render examples/mnist_mlp.py -o teacher.py && python
teacher.py`, into runs/mnist_mlp), then this script: each step, the student's loss is
0.1 x its cross-entropy on the labels + 0.9 x T^2 x the KL divergence from the teacher's
predictions softened by T = 3 to its own (Hinton et al., 2015). The teacher is frozen and
always in inference mode; only the student is checkpointed and exported.
"""

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
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
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
        layers=[Flatten(), Dense(units=32, activation="relu"), Dense(units=10, name="logits")],
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
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.05, momentum=0.9),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=200),
    checkpoint=Checkpoint(every_epochs=1),
)
