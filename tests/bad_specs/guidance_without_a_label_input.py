# Mistake: classifier-free guidance on a denoiser that takes no label

from loopgen.dsl import (
    EMA,
    Activation,
    Adam,
    Add,
    Checkpoint,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    Data,
    Dense,
    Export,
    FlowMatching,
    Graph,
    Guidance,
    Input,
    Loop,
    Node,
    Reshape,
    Shapes,
    Spec,
)

WIDTH = 48  # channels at 16x16; twice as many at 8x8


def conv(name, inputs, filters, strides=1):
    """A 3x3 convolution with the swish activation."""
    layer = Conv2D(filters=filters, kernel_size=3, strides=strides, padding="same",
                   activation="swish")  # fmt: skip
    return Node(name=name, layer=layer, inputs=inputs)


spec = Spec(
    name="shapes_flow",
    description="Draw shapes of a chosen class with class-conditional flow matching (offline).",
    seed=11,
    data=Data(
        train=Shapes(count=2000, image_size=16, seed=31),
        validation=Shapes(count=256, image_size=16, seed=32),
        batch_size=64,
        shuffle_buffer=2000,
    ),
    training=FlowMatching(
        guidance=Guidance(classes=3, label_dropout=0.1, scale=4.0),
        sample_steps=30,
        samples=12,
    ),
    model=Graph(
        inputs={
            "image": Input(shape=(16, 16, 3)),
            "t": Input(shape=(1,)),
        },
        nodes=[
            # What the image is denoised towards: the time, and the class (id 3: none).
            Node(name="time_hidden", layer=Dense(WIDTH, activation="swish"), inputs="t"),
            Node(name="time_vector", layer=Dense(WIDTH), inputs="time_hidden"),
            Node(name="condition_sum", layer=Add(), inputs=["time_vector", "time_vector"]),
            Node(name="condition", layer=Activation(activation="swish"), inputs="condition_sum"),
            Node(name="condition_16", layer=Dense(WIDTH), inputs="condition"),
            Node(name="bias_16", layer=Reshape(target_shape=(1, 1, WIDTH)), inputs="condition_16"),
            Node(name="condition_8", layer=Dense(2 * WIDTH), inputs="condition"),
            Node(
                name="bias_8", layer=Reshape(target_shape=(1, 1, 2 * WIDTH)), inputs="condition_8"
            ),
            # 16x16: features plus the condition, kept for the decoder.
            conv("stem", "image", WIDTH),
            Node(name="conditioned_16", layer=Add(), inputs=["stem", "bias_16"]),
            conv("encoded_16", "conditioned_16", WIDTH),
            # 8x8, conditioned again.
            conv("down", "encoded_16", 2 * WIDTH, strides=2),
            Node(name="conditioned_8", layer=Add(), inputs=["down", "bias_8"]),
            conv("middle_1", "conditioned_8", 2 * WIDTH),
            conv("middle_2", "middle_1", 2 * WIDTH),
            # Back to 16x16, joined with the encoder's features.
            Node(
                name="up",
                layer=Conv2DTranspose(filters=WIDTH, kernel_size=2, strides=2),
                inputs="middle_2",
            ),
            Node(name="joined", layer=Concatenate(), inputs=["up", "encoded_16"]),
            conv("decoded", "joined", WIDTH),
            Node(
                name="velocity",
                layer=Conv2D(filters=3, kernel_size=3, padding="same"),
                inputs="decoded",
            ),
        ],
        outputs="velocity",
    ),
    optimizer=Adam(learning_rate=1e-3),
    ema=EMA(decay=0.995),
    # About 6,000 steps: some four minutes on two CPU cores.
    loop=Loop(epochs=190, log_every_steps=50, validate_every_epochs=10),
    checkpoint=Checkpoint(every_epochs=10, keep=2),
    export=Export(saved_model=True),
)
