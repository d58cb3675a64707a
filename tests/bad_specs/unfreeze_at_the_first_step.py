# Mistake: fine_tune.at_epoch=1: nothing trains frozen, and its learning rate never applies
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Graph(
        inputs={"image": Input(shape=(32, 32, 3))},
        nodes=[
            Node(name="features", layer=Backbone(application="MobileNetV2", weights=None), inputs="image"),
            Node(name="logits", layer=Dense(10), inputs="features"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
    fine_tune=FineTune(backbone="features", at_epoch=1, learning_rate=1e-4),
)
