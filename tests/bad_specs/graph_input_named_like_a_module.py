# Mistake: a graph input named like a module the script uses (keras), which build_model would shadow
from loopgen.dsl import *

block = Block(
    name="conv_block",
    params={"filters": 8},
    nodes=[Node(name="conv", layer=Conv2D(var("filters"), 3, padding="same"), inputs="x")],
    output="conv",
)
spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"keras": Input(shape=(16, 16, 3))},
        blocks=[block],
        nodes=[
            Node(name="body", block="conv_block", inputs="keras", over={"filters": [8, 16]}),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="body"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
