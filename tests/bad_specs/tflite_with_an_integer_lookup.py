# Mistake: a TFLite file of a model with a lookup table (an op TFLite's builtins lack)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="categories.npz"), batch_size=32),
    model=Sequential(
        input_shape=(4,),
        layers=[IntegerLookup(vocabulary=[3, 7, 11]), Flatten(), Dense(1)],
    ),
    loss=MeanSquaredError(),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
