# Mistake: a feature named unlike the model's input
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="t.npz", x_key={"numbers": "x", "town": "c"}), batch_size=32),
    model=Graph(
        inputs={"numbers": Input(shape=(3,)), "city": Input(shape=(1,), dtype="int32")},
        nodes=[
            Node(name="city_vector", layer=Embedding(input_dim=5, output_dim=2), inputs="city"),
            Node(name="city_flat", layer=Flatten(), inputs="city_vector"),
            Node(name="joined", layer=Concatenate(), inputs=["numbers", "city_flat"]),
            Node(name="price", layer=Dense(1), inputs="joined"),
        ],
        outputs="price",
    ),
    loss=MeanSquaredError(),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
