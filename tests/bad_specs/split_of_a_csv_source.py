# Mistake: holding out the end of a streamed source
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(
        train=Csv(files="houses-*.csv", features={"numeric": ["area", "rooms"]}, label="price"),
        validation=Split(fraction=0.2),
        batch_size=32,
    ),
    model=Sequential(input_shape=(2,), layers=[Dense(1)]),
    loss=MeanSquaredError(),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
