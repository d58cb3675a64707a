# Mistake: metrics=[MeanAbsoluteError()], the loss of that name (the metric is metrics.MeanAbsoluteError)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(8,), layers=[Dense(16, activation="relu"), Dense(1)]),
    loss=MeanSquaredError(),
    optimizer=Adam(),
    metrics=[MeanAbsoluteError()],
    loop=Loop(epochs=2),
)
