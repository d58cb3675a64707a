# Mistake: a block named like the script's training function (train), which would replace it
from loopgen.dsl import *

block = Block(
    name="train",
    params={"filters": 8},
    nodes=[Node(name="conv", layer=Conv2D(var("filters"), 3, padding="same"), inputs="x")],
    output="conv",
)
spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(16, 16, 3))},
        blocks=[block],
        nodes=[
            Node(name="body", block="train", inputs="image", over={"filters": [8, 16]}),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="body"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
