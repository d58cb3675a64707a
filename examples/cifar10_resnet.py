"""A residual CNN on CIFAR-10 with data augmentation: random crops of the padded image and
horizontal flips, SGD with momentum, weight decay and a cosine schedule.

A ResNet-20-style network (He et al., 2016) written as a graph: the residual block is a
function of the script, repeated over three stages by one loop, the shortcut the identity but
where a stage halves the resolution (and doubles the width): there a 1x1 projection.
"""

from loopgen.dsl import (
    L2,
    SGD,
    Activation,
    Add,
    BatchNormalization,
    Block,
    Checkpoint,
    Conv2D,
    CosineDecay,
    Data,
    Dense,
    Export,
    GlobalAveragePooling2D,
    Graph,
    Input,
    KerasDataset,
    Loop,
    Node,
    RandomCrop,
    RandomFlip,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    ZeroPadding2D,
    var,
)

DECAY = L2(l2=1e-4)


def conv(filters, kernel_size, **options):
    """A convolution without bias (a BatchNormalization follows), with weight decay."""
    return Conv2D(filters, kernel_size, padding="same", use_bias=False,
                  kernel_initializer="he_normal", kernel_regularizer=DECAY, **options)  # fmt: skip


residual_block = Block(
    name="residual_block",
    doc="Two 3x3 convolutions and a shortcut: the identity, or a 1x1 projection where the "
    "block changes the resolution or the width.",
    params={"filters": 16, "strides": 1},
    nodes=[
        Node(name="conv1", layer=conv(var("filters"), 3, strides=var("strides")), inputs="x"),
        Node(name="bn1", layer=BatchNormalization(), inputs="conv1"),
        Node(name="relu1", layer=Activation("relu"), inputs="bn1"),
        Node(name="conv2", layer=conv(var("filters"), 3), inputs="relu1"),
        Node(name="bn2", layer=BatchNormalization(), inputs="conv2"),
        # Here the width doubles exactly where the resolution halves: strides tells both.
        Node(
            name="shortcut",
            layer=conv(var("filters"), 1, strides=var("strides")),
            inputs="x",
            when="strides != 1",
        ),
        Node(name="added", layer=Add(), inputs=["bn2", "shortcut"]),
        Node(name="out", layer=Activation("relu"), inputs="added"),
    ],
    output="out",
)

spec = Spec(
    name="cifar10_resnet",
    description="Classify CIFAR-10 images with a residual network, trained on augmented images.",
    seed=3,
    data=Data(
        train=KerasDataset(name="cifar10", split="train"),
        validation=KerasDataset(name="cifar10", split="test"),
        batch_size=128,
        rescale=1 / 255,
        # The classic CIFAR augmentation: pad 4 pixels, crop back to 32x32 at random, flip.
        augmentation=[ZeroPadding2D(4), RandomCrop(32, 32), RandomFlip("horizontal")],
    ),
    model=Graph(
        inputs={"image": Input(shape=(32, 32, 3))},
        blocks=[residual_block],
        nodes=[
            Node(name="stem", layer=conv(16, 3), inputs="image"),
            Node(name="stem_bn", layer=BatchNormalization(), inputs="stem"),
            Node(name="stem_relu", layer=Activation("relu"), inputs="stem_bn"),
            # Three stages of three blocks: 16, 32 then 64 filters, halving the resolution.
            Node(
                name="stages",
                block="residual_block",
                inputs="stem_relu",
                over={
                    "filters": [16, 16, 16, 32, 32, 32, 64, 64, 64],
                    "strides": [1, 1, 1, 2, 1, 1, 2, 1, 1],
                },
            ),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="stages"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(
        learning_rate=CosineDecay(initial_learning_rate=0.1, decay_steps=390 * 40),
        momentum=0.9,
        nesterov=True,
    ),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=40, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1, keep=3),
    export=Export(saved_model=True, keras=True),
)
