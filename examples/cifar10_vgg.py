"""VGG-style CNN on CIFAR-10 with a custom layer, SGD with a learning-rate schedule,
checkpoints and SavedModel export.

Follows seed 000 ("Custom Training Loop using TensorFlow Keras", VGGNet on CIFAR-10): the model
is built "by defining a custom layer" (a VGG block written once, repeated with more filters).
"""

from loopgen.dsl import (
    L2,
    SGD,
    Checkpoint,
    Conv2D,
    Custom,
    CustomLayerClass,
    Data,
    Dense,
    Dropout,
    Export,
    Flatten,
    KerasDataset,
    Loop,
    MaxPooling2D,
    PiecewiseConstantDecay,
    Repeat,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    var,
)


def conv3x3():
    """A same-padded ReLU convolution with weight decay, `filters` wide."""
    return Conv2D(
        filters=var("filters"),
        kernel_size=3,
        padding="same",
        activation="relu",
        kernel_initializer="he_uniform",
        kernel_regularizer=L2(l2=5e-4),
    )


vgg_block = CustomLayerClass(
    name="VGGBlock",
    doc="Two 3x3 same-padded ReLU convolutions, then 2x2 max pooling (one VGG stage).",
    params={"filters": 32},
    layers=[conv3x3(), conv3x3(), MaxPooling2D(pool_size=2)],
)

spec = Spec(
    name="cifar10_vgg",
    description="Classify CIFAR-10 images with a VGG-style network built from a custom block.",
    seed=42,
    data=Data(
        train=KerasDataset(name="cifar10", split="train"),
        validation=KerasDataset(name="cifar10", split="test"),
        batch_size=64,
        shuffle_buffer=10_000,
        rescale=1 / 255,
    ),
    custom_layers=[vgg_block],
    model=Sequential(
        input_shape=(32, 32, 3),
        layers=[
            Repeat(
                over={"filters": [32, 64, 128]},
                layers=[Custom(cls="VGGBlock", args={"filters": var("filters")})],
            ),
            Flatten(),
            Dense(units=128, activation="relu", kernel_initializer="he_uniform"),
            Dropout(rate=0.5),
            Dense(units=10),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(
        learning_rate=PiecewiseConstantDecay(
            boundaries=[7820, 15640], values=[0.01, 0.001, 0.0001]
        ),
        momentum=0.9,
    ),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=30, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1, keep=5),
    export=Export(saved_model=True, keras=True),
)
