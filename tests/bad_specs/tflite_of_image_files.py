# Mistake: a TFLite file of a model that decodes image files (an op TFLite's builtins lack)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=ImageDirectory(path="flowers", image_size=(32, 32)), batch_size=32),
    model=Sequential(
        input_shape=(32, 32, 3), layers=[Conv2D(8, 3), GlobalAveragePooling2D(), Dense(5)]
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
