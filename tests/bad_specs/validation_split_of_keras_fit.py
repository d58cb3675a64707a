# Mistake: Keras' model.fit(validation_split=0.2) given to Data
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32, validation_split=0.2),
    model=Sequential(input_shape=(8,), layers=[Dense(units=16, activation="relu"), Dense(2)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
