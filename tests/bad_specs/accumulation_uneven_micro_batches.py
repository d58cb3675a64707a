# Mistake: gradient accumulation that does not split the batch evenly
from loopgen.dsl import *

spec = Spec(
    name="shapes_plateau",
    description="Classify drawn shapes; the validation loss lowers the rate and stops the run.",
    seed=3,
    data=Data(
        train=Shapes(count=1000, image_size=24, task="classification", seed=11),
        validation=Shapes(count=200, image_size=24, task="classification", seed=12),
        batch_size=32,
        shuffle_buffer=1000,
    ),
    model=Sequential(
        input_shape=(24, 24, 3),
        layers=[
            Conv2D(filters=8, kernel_size=3, padding="same", activation="relu"),
            MaxPooling2D(pool_size=2),
            Conv2D(filters=16, kernel_size=3, padding="same", activation="relu"),
            MaxPooling2D(pool_size=2),
            Flatten(),
            Dense(units=32, activation="relu"),
            Dense(units=3),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=3e-3),
    gradients=Gradients(clip_norm=1.0, accumulate_steps=5),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=30, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
    reduce_on_plateau=ReduceOnPlateau(monitor="val_loss", factor=0.3, patience=2),
    early_stopping=EarlyStopping(monitor="val_loss", patience=5, min_delta=1e-3),
    best_model=BestModel(monitor="val_accuracy"),
    logging=Logging(csv=True, histograms=True),
    export=Export(saved_model=True),
)
