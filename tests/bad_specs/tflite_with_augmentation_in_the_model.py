# Mistake: a TFLite file of a model that augments its inputs (random ops TFLite lacks)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(
        train=Npz(path="images.npz"),
        batch_size=32,
        rescale=1 / 255,
        augmentation=[RandomFlip("horizontal")],
        augment_in="model",
    ),
    model=Sequential(
        input_shape=(32, 32, 3), layers=[Conv2D(8, 3), GlobalAveragePooling2D(), Dense(10)]
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
