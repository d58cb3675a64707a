# Mistake: an EMA decay of 1 (the average never moves)
from loopgen.dsl import (
    EMA,
    Adam,
    Checkpoint,
    Data,
    Dense,
    Dropout,
    Flatten,
    KerasDataset,
    Logging,
    Loop,
    MLflow,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="fashion_validation",
    description="Classify Fashion-MNIST with validation loss and accuracy reported every epoch.",
    seed=1,
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
            Dropout(rate=0.3),
            Dense(units=128, activation="relu"),
            Dropout(rate=0.3),
            Dense(units=10),
        ],
    ),
    ema=EMA(decay=1.0),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=10, log_every_steps=100, validate_every_epochs=1),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
    logging=Logging(mlflow=MLflow(experiment="fashion_validation")),
)
