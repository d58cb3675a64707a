# Mistake: a TFLite file of a model trained on TFDS images, which it serves of any size
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(
        train=Tfds(name="oxford_iiit_pet:4.*.*", image_size=(32, 32)),
        batch_size=32,
        rescale=1 / 255,
    ),
    model=Sequential(input_shape=(32, 32, 3), layers=[Flatten(), Dense(37)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
