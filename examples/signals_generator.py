"""Examples from your own Python code: a generator yields windows of a signal and whether an
event happens in them, and a 1-D convolutional network learns to spot it.

The script imports `signals.windows` (a module of yours next to it) and calls it once per
epoch: it must yield the same examples in the same order every time (the script shuffles them,
seeded by the epoch, and a resumed run skips the ones already trained on). Its first example is
checked against the features and label declared here before training.
"""

from loopgen.dsl import (
    Adam,
    BinaryAccuracy,
    BinaryCrossentropy,
    Checkpoint,
    Conv1D,
    Data,
    Dense,
    Feature,
    Generator,
    GlobalMaxPooling1D,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="signals_generator",
    description="Spot events in windows of a signal yielded by a Python generator.",
    seed=6,
    data=Data(
        train=Generator(
            target="signals:windows",
            kwargs={"count": 4096, "length": 128, "seed": 1},
            features=Feature(dtype="float32", shape=(128, 1)),
            label=Feature(dtype="float32"),
            examples_per_epoch=4096,
        ),
        batch_size=64,
        shuffle_buffer=512,
    ),
    model=Sequential(
        input_shape=(128, 1),
        layers=[
            Conv1D(16, 9, activation="relu"),
            Conv1D(32, 9, activation="relu"),
            GlobalMaxPooling1D(),
            Dense(1),
        ],
    ),
    loss=BinaryCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[BinaryAccuracy(threshold=0.0)],
    loop=Loop(epochs=5, log_every_steps=20),
    checkpoint=Checkpoint(every_epochs=1),
)
