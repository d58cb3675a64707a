# Mistake: a loss target without its function
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(units=10)]),
    loss=ImportedLoss(target="my_losses.focal"),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
