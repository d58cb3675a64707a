# Mistake: a VAE's encoder that ends in relu, so no code's mean or log-variance is negative

from loopgen.dsl import (
    VAE,
    Adam,
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

LATENT = 8

spec = Spec(
    name="shapes_vae",
    description="Encode and draw the demo's shapes with a variational autoencoder (offline).",
    seed=13,
    data=Data(
        train=Shapes(count=2000, image_size=16, seed=31),
        validation=Shapes(count=256, image_size=16, seed=32),
        batch_size=64,
        shuffle_buffer=2000,
    ),
    training=VAE(
        latent_dim=LATENT,
        # 16x16x3 -> 8x8x32 -> 4x4x64 -> the code's mean and log-variance.
        encoder=Sequential(
            input_shape=(16, 16, 3),
            layers=[
                Conv2D(filters=32, kernel_size=3, strides=2, padding="same", activation="relu"),
                Conv2D(filters=64, kernel_size=3, strides=2, padding="same", activation="relu"),
                Flatten(),
                Dense(units=2 * LATENT, activation="relu"),
            ],
        ),
        beta=1.0,
        kl_warmup_steps=300,
        reconstruction="bernoulli",
        samples=16,
    ),
    # The decoder: a code -> 4x4x64 -> 8x8x64 -> 16x16x32 -> the pixels' logits.
    model=Sequential(
        input_shape=(LATENT,),
        layers=[
            Dense(units=4 * 4 * 64, activation="relu"),
            Reshape(target_shape=(4, 4, 64)),
            Conv2DTranspose(
                filters=64, kernel_size=3, strides=2, padding="same", activation="relu"
            ),
            Conv2DTranspose(
                filters=32, kernel_size=3, strides=2, padding="same", activation="relu"
            ),
            Conv2D(filters=3, kernel_size=3, padding="same"),
        ],
    ),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(epochs=60, log_every_steps=10, validate_every_epochs=10),
    checkpoint=Checkpoint(every_epochs=10, keep=2),
    export=Export(saved_model=True),
)
