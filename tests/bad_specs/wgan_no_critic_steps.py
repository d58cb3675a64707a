# Mistake: a WGAN whose critic never learns (zero critic steps)
from loopgen.dsl import (
    GAN,
    Activation,
    Adam,
    Checkpoint,
    Conv2D,
    Conv2DTranspose,
    Data,
    Dense,
    Export,
    Flatten,
    GradientPenalty,
    LayerNormalization,
    Loop,
    Reshape,
    Sequential,
    Shapes,
    Spec,
)

spec = Spec(
    name="shapes_wgan_gp",
    description="Generate drawn shapes with a small WGAN-GP (offline demo images).",
    seed=13,
    data=Data(
        train=Shapes(count=2000, image_size=16, seed=31),
        batch_size=64,
        shuffle_buffer=2000,
    ),
    training=GAN(
        loss="wasserstein",
        penalty=GradientPenalty(weight=10.0),
        critic_steps=0,
        latent_dim=32,
        # Noise -> 4x4x64 -> 8x8x32 -> 16x16x3 in [-1, 1].
        generator=Sequential(
            input_shape=(32,),
            layers=[
                Dense(units=4 * 4 * 64),
                Activation(activation="leaky_relu"),
                Reshape(target_shape=(4, 4, 64)),
                Conv2DTranspose(filters=32, kernel_size=4, strides=2, padding="same"),
                Activation(activation="leaky_relu"),
                Conv2DTranspose(
                    filters=3, kernel_size=4, strides=2, padding="same", activation="tanh"
                ),
            ],
        ),
        # 16x16x3 -> 8x8x32 -> 4x4x64 -> one score (no sigmoid: a critic, not a classifier).
        discriminator=Sequential(
            input_shape=(16, 16, 3),
            layers=[
                Conv2D(filters=32, kernel_size=4, strides=2, padding="same"),
                Activation(activation="leaky_relu"),
                Conv2D(filters=64, kernel_size=4, strides=2, padding="same"),
                LayerNormalization(),
                Activation(activation="leaky_relu"),
                Flatten(),
                Dense(units=1),
            ],
        ),
        generator_optimizer=Adam(learning_rate=1e-4, beta_1=0.5, beta_2=0.9),
        discriminator_optimizer=Adam(learning_rate=1e-4, beta_1=0.5, beta_2=0.9),
        samples=16,
    ),
    loop=Loop(epochs=20, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1, keep=2),
    export=Export(saved_model=True),
)
