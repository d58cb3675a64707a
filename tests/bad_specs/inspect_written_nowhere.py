# Mistake: inspect with neither TensorBoard nor metrics.jsonl to write to
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(28, 28), layers=[Flatten(), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    checkpoint=Checkpoint(every_epochs=1),
    logging=Logging(tensorboard=False, jsonl=False, inspect=Inspect(every_steps=10)),
)
