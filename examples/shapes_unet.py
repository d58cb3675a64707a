"""Offline demo: a small UNet segments procedurally drawn shapes.

The generated script draws its own data (circles, squares, triangles with per-pixel masks), so
it trains anywhere without a download. Follows the UNet trainer of seed 002 (CheckpointManager,
SavedModel export, TensorBoard summaries).
"""

from loopgen.dsl import (
    Activation,
    Adam,
    BatchNormalization,
    Checkpoint,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    CosineDecay,
    Custom,
    CustomLayerClass,
    Data,
    Export,
    Functional,
    Loop,
    MaxPooling2D,
    MeanIoU,
    Repeat,
    SaveSkip,
    Shapes,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    var,
)

conv_block = CustomLayerClass(
    name="ConvBlock",
    doc="Two 3x3 convolutions, each followed by batch normalization and ReLU: one UNet level.",
    params={"filters": 16},
    layers=[
        Conv2D(filters=var("filters"), kernel_size=3, padding="same", use_bias=False),
        BatchNormalization(),
        Activation(activation="relu"),
        Conv2D(filters=var("filters"), kernel_size=3, padding="same", use_bias=False),
        BatchNormalization(),
        Activation(activation="relu"),
    ],
)

spec = Spec(
    name="shapes_unet",
    description="Segment procedurally drawn shapes with a small UNet (offline demo).",
    seed=7,
    data=Data(
        train=Shapes(count=2000, image_size=32, task="segmentation", seed=1),
        validation=Shapes(count=400, image_size=32, task="segmentation", seed=2),
        batch_size=32,
        shuffle_buffer=2000,
    ),
    custom_layers=[conv_block],
    model=Functional(
        input_shape=(32, 32, 3),
        layers=[
            # Encoder: each level saves its output for the decoder, then halves the resolution.
            Repeat(
                over={"filters": [16, 32]},
                layers=[
                    Custom(cls="ConvBlock", args={"filters": var("filters")}),
                    SaveSkip(),
                    MaxPooling2D(pool_size=2),
                ],
            ),
            Custom(cls="ConvBlock", args={"filters": 64}),
            # Decoder: upsample, join the encoder output of the same resolution, convolve.
            Repeat(
                over={"filters": [32, 16]},
                layers=[
                    Conv2DTranspose(filters=var("filters"), kernel_size=2, strides=2),
                    Concatenate(),
                    Custom(cls="ConvBlock", args={"filters": var("filters")}),
                ],
            ),
            # Per-pixel logits: background + 3 shape classes.
            Conv2D(filters=4, kernel_size=1),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(
        learning_rate=CosineDecay(
            initial_learning_rate=0.0, warmup_target=3e-3, warmup_steps=60, decay_steps=380
        )
    ),
    metrics=[
        SparseCategoricalAccuracy(name="pixel_accuracy"),
        MeanIoU(num_classes=4),
    ],
    loop=Loop(epochs=6, log_every_steps=20),
    checkpoint=Checkpoint(every_epochs=1, keep=3),
    export=Export(saved_model=True, keras=True),
)
