"""MNIST MLP under the one-cycle policy, each batch of 256 in four micro-batches, on Comet.

The one-cycle schedule (Smith & Topin) is written into the script as a `LearningRateSchedule`
subclass; gradient accumulation splits every batch into micro-batches of 64 and sums their
gradients into one update, so the memory is a micro-batch's and the update the whole batch's.
Metrics go to Comet too, offline here (a zip under the output directory, for `comet upload`).
"""

from loopgen.dsl import (
    SGD,
    Checkpoint,
    Comet,
    Data,
    Dense,
    Flatten,
    Gradients,
    KerasDataset,
    Logging,
    Loop,
    OneCycle,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="mnist_onecycle",
    description="Classify MNIST digits; one-cycle learning rate, accumulated gradients, Comet.",
    seed=5,
    data=Data(
        train=KerasDataset(name="mnist", split="train"),
        validation=KerasDataset(name="mnist", split="test"),
        batch_size=256,
        shuffle_buffer=10_000,
        rescale=1 / 255,
    ),
    model=Sequential(
        input_shape=(28, 28),
        layers=[
            Flatten(),
            Dense(units=128, activation="relu"),
            Dense(units=10),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    # 3 epochs of 235 steps.
    optimizer=SGD(
        learning_rate=OneCycle(max_learning_rate=0.5, total_steps=705), momentum=0.9, nesterov=True
    ),
    gradients=Gradients(accumulate_steps=4),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=50),
    checkpoint=Checkpoint(every_epochs=1),
    logging=Logging(comet=Comet(project_name="loopgen-examples", offline=True)),
)
