# Mistake: ema on contrastive training (its encoder, projection and probe are not averaged)

from loopgen.dsl import (
    EMA,
    Adam,
    Checkpoint,
    Contrastive,
    Conv2D,
    Data,
    Dense,
    Export,
    GlobalAveragePooling2D,
    Loop,
    MaxPooling2D,
    RandomContrast,
    RandomFlip,
    RandomTranslation,
    Sequential,
    Shapes,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="shapes_simclr",
    description="Learn drawn shapes without labels by SimCLR, scored by a linear probe.",
    seed=17,
    data=Data(
        train=Shapes(count=2000, image_size=32, seed=3),
        validation=Shapes(count=400, image_size=32, seed=4),
        batch_size=128,
        augmentation=[
            RandomFlip(mode="horizontal"),
            RandomTranslation(height_factor=0.15, width_factor=0.15),
            RandomContrast(factor=0.4),
        ],
    ),
    # The encoder: 32x32x3 -> 64 features.
    model=Sequential(
        input_shape=(32, 32, 3),
        layers=[
            Conv2D(filters=32, kernel_size=3, activation="relu", padding="same"),
            MaxPooling2D(),
            Conv2D(filters=64, kernel_size=3, activation="relu", padding="same"),
            GlobalAveragePooling2D(),
        ],
    ),
    training=Contrastive(
        projection=[Dense(units=64, activation="relu"), Dense(units=32)],
        temperature=0.1,
        classes=3,
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    ema=EMA(decay=0.999),
    loop=Loop(epochs=10, log_every_steps=5),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)
