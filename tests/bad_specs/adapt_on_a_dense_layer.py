# Mistake: adapt on a layer that learns nothing from data
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(16, 16, 3))},
        nodes=[
            Node(name="flat", layer=Flatten(), inputs="image", adapt=True),
            Node(name="logits", layer=Dense(10), inputs="flat"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
