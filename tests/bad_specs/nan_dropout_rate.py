# Mistake: a dropout rate of NaN
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dropout(rate=float("nan")), Dense(units=10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
