# Mistake: a TFLite file of a model trained on CSV files, whose model to serve takes columns by name
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(
        train=Csv(files="houses-*.csv", features={"numeric": ["area", "rooms"]}, label="price"),
        batch_size=32,
    ),
    model=Sequential(input_shape=(2,), layers=[Dense(1)]),
    loss=MeanSquaredError(),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
