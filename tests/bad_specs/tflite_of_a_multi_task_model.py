# Mistake: a TFLite file of a multi-task model, which has no model to serve raw examples
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Shapes(count=200, image_size=16, task="multitask"), batch_size=32),
    model=Functional(
        input_shape=(16, 16, 3),
        layers=[Conv2D(filters=8, kernel_size=3, padding="same", activation="relu")],
        heads={
            "mask": [Conv2D(filters=4, kernel_size=1)],
            "shape": [Flatten(), Dense(units=3)],
        },
    ),
    training=MultiTask(
        tasks={
            "mask": Task(loss=SparseCategoricalCrossentropy(from_logits=True)),
            "shape": Task(loss=SparseCategoricalCrossentropy(from_logits=True)),
        }
    ),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
