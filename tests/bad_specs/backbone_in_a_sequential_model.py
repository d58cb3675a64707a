# Mistake: a backbone outside a graph
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32),
    model=Sequential(input_shape=(32, 32, 3), layers=[Backbone(application="MobileNetV2", weights=None), Dense(units=10)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=0.01),
    loop=Loop(epochs=2),
)
