# Mistake: a Keras argument misspelt (filter for filters)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(
        input_shape=(100, 8),
        layers=[Conv1D(filter=64, kernel_size=5), GlobalMaxPooling1D(), Dense(2)],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
