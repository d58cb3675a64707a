# Mistake: a reduction on the loss, which the step decides
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(units=10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True, reduction="sum"),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
