# Mistake: logging.inspect's activations on a diffusion denoiser

from loopgen.dsl import (
    EMA,
    Adam,
    Add,
    Checkpoint,
    Concatenate,
    Conv2D,
    Conv2DTranspose,
    CosineNoise,
    Data,
    Dense,
    Diffusion,
    Export,
    Graph,
    Input,
    Inspect,
    Logging,
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
    name="shapes_diffusion",
    description="Draw shapes with a small DDPM, sampled by DDIM (offline demo images).",
    seed=12,
    data=Data(
        train=Shapes(count=2000, image_size=16, seed=31),
        validation=Shapes(count=256, image_size=16, seed=32),
        batch_size=64,
        shuffle_buffer=2000,
    ),
    training=Diffusion(
        timesteps=1000, schedule=CosineNoise(), prediction="epsilon", sample_steps=50, samples=16
    ),
    model=Graph(
        inputs={
            "image": Input(shape=(16, 16, 3)),
            "t": Input(shape=(1,)),
        },
        nodes=[
            # The noise level, embedded.
            Node(name="time_hidden", layer=Dense(WIDTH, activation="swish"), inputs="t"),
            Node(name="condition", layer=Dense(WIDTH, activation="swish"), inputs="time_hidden"),
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
                name="noise",
                layer=Conv2D(filters=3, kernel_size=3, padding="same"),
                inputs="decoded",
            ),
        ],
        outputs="noise",
    ),
    optimizer=Adam(learning_rate=1e-3),
    ema=EMA(decay=0.995),
    # About 6,000 steps: some four minutes on two CPU cores.
    logging=Logging(inspect=Inspect(every_steps=10)),
    loop=Loop(epochs=190, log_every_steps=50, validate_every_epochs=10),
    checkpoint=Checkpoint(every_epochs=10, keep=2),
    export=Export(saved_model=True),
)
