# Mistake: a residual Add across a stride
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(16, 16, 3))},
        nodes=[
            Node(name="stem", layer=Conv2D(8, 3, padding="same"), inputs="image"),
            Node(name="down", layer=Conv2D(8, 3, strides=2, padding="same"), inputs="stem"),
            Node(name="added", layer=Add(), inputs=["stem", "down"]),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="added"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
