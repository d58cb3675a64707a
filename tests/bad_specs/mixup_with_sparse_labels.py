# Mistake: MixUp mixing class ids
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32, augmentation=[MixUp()]),
    model=Sequential(input_shape=(32, 32, 3), layers=[Flatten(), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
