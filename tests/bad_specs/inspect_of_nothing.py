# Mistake: inspect with nothing to inspect
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    checkpoint=Checkpoint(every_epochs=1),
    logging=Logging(inspect=Inspect(every_steps=10, activations=False, gradients=False, weights=False)),
)
