# Mistake: padding='vaild'
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(
        input_shape=(28, 28, 1),
        layers=[Conv2D(8, 3, padding="vaild"), Flatten(), Dense(10)],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
