"""UNet segmentation of Oxford-IIIT Pet images with CheckpointManager, SavedModel export and
TensorBoard summaries.

Follows seed 002 ("How to build a custom production-ready Deep Learning Training loop"): the
UNet trainer with Adam, SparseCategoricalCrossentropy(from_logits=True) and accuracy. Needs
`pip install tensorflow-datasets` and downloads the dataset on first use. Written for a machine
with several GPUs: MirroredStrategy, with batch normalization synchronized across them.
"""

from loopgen.dsl import (
    Adam,
    BatchNormalization,
    Checkpoint,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    Data,
    Functional,
    Loop,
    MaxPooling2D,
    MeanIoU,
    Mirrored,
    Repeat,
    SaveSkip,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    Tfds,
    var,
)


def conv(filters):
    return Conv2D(filters=filters, kernel_size=3, padding="same", activation="relu")


def pets(split):
    # Masks are 1 pet, 2 background, 3 border: shift them to class ids 0..2.
    return Tfds(
        name="oxford_iiit_pet:4.*.*",
        split=split,
        label_key="segmentation_mask",
        image_size=(128, 128),
        label_is_mask=True,
        label_offset=-1,
    )


spec = Spec(
    name="pets_unet",
    description="Segment pets from background and border (Oxford-IIIT Pet) with a UNet.",
    seed=3,
    data=Data(
        train=pets("train"),
        validation=pets("test"),
        batch_size=32,
        shuffle_buffer=1000,
        rescale=1 / 255,
    ),
    model=Functional(
        input_shape=(128, 128, 3),
        layers=[
            Repeat(
                over={"filters": [32, 64, 128]},
                layers=[
                    conv(var("filters")),
                    # Statistics of the global batch, not of each GPU's slice of it.
                    BatchNormalization(synchronized=True),
                    conv(var("filters")),
                    SaveSkip(),
                    MaxPooling2D(pool_size=2),
                ],
            ),
            conv(256),
            conv(256),
            Repeat(
                over={"filters": [128, 64, 32]},
                layers=[
                    Conv2DTranspose(filters=var("filters"), kernel_size=2, strides=2),
                    Concatenate(),
                    conv(var("filters")),
                    conv(var("filters")),
                ],
            ),
            Conv2D(filters=3, kernel_size=1),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy(), MeanIoU(num_classes=3)],
    loop=Loop(epochs=20, log_every_steps=50),
    checkpoint=Checkpoint(every_epochs=1, keep=3),
    # One replica per GPU; `loopgen render --variant single_device` writes the one-device twin.
    distribute=Mirrored(),
)
