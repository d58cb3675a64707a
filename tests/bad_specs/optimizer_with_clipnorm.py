# Mistake: clipping set on the optimizer, where it clips each replica's share
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(units=10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(clipnorm=1.0),
    loop=Loop(epochs=2),
)
