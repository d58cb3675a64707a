# Mistake: the label names a feature the records spec does not list
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(
        train=TFRecord(
            files="train-*.tfrecord",
            features={"image": Feature(dtype="string", image=(32, 32))},
            label="class_id",
        ),
        batch_size=32,
    ),
    model=Sequential(input_shape=(32, 32, 3), layers=[Flatten(), Dense(10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
