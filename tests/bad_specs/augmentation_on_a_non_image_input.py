# Mistake: RandomFlip on flat vectors
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32, augmentation=[RandomFlip("horizontal")]),
    model=Sequential(input_shape=(784,), layers=[Dense(64, activation="relu"), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
