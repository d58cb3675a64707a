# Mistake: a TFLite file of a GAN, which has no model to serve raw examples
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Shapes(count=200, image_size=8), batch_size=32),
    training=GAN(
        latent_dim=8,
        generator=Sequential(
            input_shape=(8,),
            layers=[
                Dense(8 * 8 * 3),
                Reshape(target_shape=(8, 8, 3)),
                Activation(activation="tanh"),
            ],
        ),
        discriminator=Sequential(input_shape=(8, 8, 3), layers=[Flatten(), Dense(1)]),
        generator_optimizer=Adam(),
        discriminator_optimizer=Adam(),
    ),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
