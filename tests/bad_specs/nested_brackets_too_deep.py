# Mistake: an expression nested 300 brackets deep (written by a program, not by hand)
"""MLP 784-10 on MNIST digits."""

from loopgen.dsl import SGD, Data, Dense, Flatten, KerasDataset, Loop, Sequential, Spec
from loopgen.dsl import SparseCategoricalCrossentropy

spec = Spec(
    name="mnist_mlp",
    data=Data(train=KerasDataset(name="mnist"), batch_size=64),
    model=Sequential(input_shape=(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((28, 28))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))), layers=[Flatten(), Dense(units=10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=1e-3),
    loop=Loop(epochs=2),
)
