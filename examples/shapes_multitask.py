"""Two tasks, one network: name the shape in the image and mask its pixels.

A multi-task model (seed 005: "multiple outputs, a loss for each"): a shared convolutional
trunk, then two heads, one per task. Each task has its loss, weight and metrics; the script
minimizes the weighted sum, and logs the total and every task's loss and metrics. The data is
drawn by the script (offline), with both labels for each image.
"""

from loopgen.dsl import (
    Adam,
    BestModel,
    Checkpoint,
    Conv2D,
    Data,
    Dense,
    Flatten,
    Functional,
    Loop,
    MaxPooling2D,
    MeanIoU,
    MultiTask,
    Shapes,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    Task,
)

spec = Spec(
    name="shapes_multitask",
    description="Classify and segment drawn shapes with one two-headed network.",
    seed=4,
    data=Data(
        train=Shapes(count=1000, image_size=24, task="multitask", seed=21),
        validation=Shapes(count=200, image_size=24, task="multitask", seed=22),
        batch_size=32,
        shuffle_buffer=1000,
    ),
    model=Functional(
        input_shape=(24, 24, 3),
        # The trunk both tasks share: features at full resolution.
        layers=[
            Conv2D(filters=16, kernel_size=3, padding="same", activation="relu"),
            Conv2D(filters=16, kernel_size=3, padding="same", activation="relu"),
        ],
        heads={
            # Per-pixel logits: background + 3 shape classes.
            "mask": [Conv2D(filters=4, kernel_size=1)],
            # One label per image: pool, then classify.
            "shape": [
                MaxPooling2D(pool_size=2),
                Conv2D(filters=16, kernel_size=3, padding="same", activation="relu"),
                MaxPooling2D(pool_size=2),
                Flatten(),
                Dense(units=3),
            ],
        },
    ),
    training=MultiTask(
        tasks={
            "mask": Task(
                loss=SparseCategoricalCrossentropy(from_logits=True),
                metrics=[MeanIoU(num_classes=4)],
            ),
            "shape": Task(
                loss=SparseCategoricalCrossentropy(from_logits=True),
                weight=0.5,
                metrics=[SparseCategoricalAccuracy()],
            ),
        },
    ),
    optimizer=Adam(learning_rate=2e-3),
    loop=Loop(epochs=10, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
    best_model=BestModel(monitor="val_shape_accuracy"),
)
