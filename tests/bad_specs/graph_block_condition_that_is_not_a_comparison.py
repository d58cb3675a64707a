# Mistake: a block node's condition written with = where == was meant
from loopgen.dsl import *

block = Block(
    name="residual_block",
    params={"filters": 8, "strides": 1},
    nodes=[
        Node(name="conv", layer=Conv2D(var("filters"), 3, strides=var("strides"), padding="same"), inputs="x"),
        Node(name="shortcut", layer=Conv2D(var("filters"), 1, strides=var("strides")), inputs="x", when="strides = 2"),
        Node(name="added", layer=Add(), inputs=["conv", "shortcut"]),
    ],
    output="added",
)
spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(16, 16, 3))},
        blocks=[block],
        nodes=[
            Node(name="stem", layer=Conv2D(8, 3, padding="same"), inputs="image"),
            Node(name="body", block="residual_block", inputs="stem", over={"filters": [8, 16], "strides": [1, 2]}),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="body"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
