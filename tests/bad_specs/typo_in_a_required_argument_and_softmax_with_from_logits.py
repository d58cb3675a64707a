# Mistake: a required Keras argument misspelt (filter for filters), and softmax with from_logits
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(
        input_shape=(28, 28, 1),
        layers=[
            Conv2D(filter=16, kernel_size=3, activation="relu"),
            Flatten(),
            Dense(units=10, activation="softmax"),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
