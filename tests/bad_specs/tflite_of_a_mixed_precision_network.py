# Mistake: a TFLite file of a network that computes in float16 (ops TFLite's builtins lack)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="digits.npz"), batch_size=32, rescale=1 / 255),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(64), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    performance=Performance(precision="mixed_float16"),
    export=Export(tflite=True),
)
