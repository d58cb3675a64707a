# Mistake: ema on a GAN (not written for its networks yet)
from loopgen.dsl import (
    EMA,
    GAN,
    Activation,
    Adam,
    BatchNormalization,
    Checkpoint,
    Conv2D,
    Conv2DTranspose,
    Data,
    Dense,
    Export,
    Flatten,
    Loop,
    Reshape,
    Sequential,
    Shapes,
    Spec,
)

spec = Spec(
    name="shapes_dcgan",
    description="Generate drawn shapes with a small DCGAN (offline demo images).",
    seed=9,
    data=Data(
        train=Shapes(count=2000, image_size=16, seed=31),
        batch_size=64,
        shuffle_buffer=2000,
    ),
    training=GAN(
        latent_dim=32,
        # Noise -> 4x4x64 -> 8x8x32 -> 16x16x3 in [-1, 1].
        generator=Sequential(
            input_shape=(32,),
            layers=[
                Dense(units=4 * 4 * 64, use_bias=False),
                BatchNormalization(),
                Activation(activation="relu"),
                Reshape(target_shape=(4, 4, 64)),
                Conv2DTranspose(
                    filters=32, kernel_size=4, strides=2, padding="same", use_bias=False
                ),
                BatchNormalization(),
                Activation(activation="relu"),
                Conv2DTranspose(
                    filters=3, kernel_size=4, strides=2, padding="same", activation="tanh"
                ),
            ],
        ),
        # 16x16x3 -> 8x8x32 -> 4x4x64 -> one logit.
        discriminator=Sequential(
            input_shape=(16, 16, 3),
            layers=[
                Conv2D(filters=32, kernel_size=4, strides=2, padding="same"),
                Activation(activation="leaky_relu"),
                Conv2D(filters=64, kernel_size=4, strides=2, padding="same"),
                Activation(activation="leaky_relu"),
                Flatten(),
                Dense(units=1),
            ],
        ),
        generator_optimizer=Adam(learning_rate=2e-4, beta_1=0.5),
        discriminator_optimizer=Adam(learning_rate=2e-4, beta_1=0.5),
        label_smoothing=0.1,
        samples=16,
    ),
    ema=EMA(decay=0.999),
    loop=Loop(epochs=20, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
    export=Export(saved_model=True),
)
