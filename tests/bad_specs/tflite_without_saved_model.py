# Mistake: a TFLite file without the SavedModel it is converted from
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="digits.npz"), batch_size=32, rescale=1 / 255),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(saved_model=False, keras=True, tflite=True),
)
