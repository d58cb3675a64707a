# Mistake: an application keras.applications does not have
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(16, 16, 3))},
        nodes=[
            Node(name="features", layer=Backbone(application="MobileNetV5", weights=None), inputs="image"),
            Node(name="logits", layer=Dense(10), inputs="features"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
