"""House prices from a CSV table: a model with two named inputs, the numeric columns
(normalized by statistics it learns from the training files) and the city (a string, looked up
and embedded), MSE loss, MAE metric.

The columns become named features of the data, matched to the graph's inputs of the same
names; the CSV files are streamed, each line parsed only when a batch picks it.
"""

from loopgen.dsl import (
    Adam,
    Checkpoint,
    Concatenate,
    Csv,
    Data,
    Dense,
    Embedding,
    Flatten,
    Graph,
    Input,
    Loop,
    MeanSquaredError,
    Node,
    Normalization,
    Spec,
    StringLookup,
    metrics,
)

CITIES = ["lyon", "marseille", "nice", "paris", "toulouse"]

spec = Spec(
    name="houses_tabular",
    description="Predict house prices from numeric columns and the city, read from CSV files.",
    seed=2,
    data=Data(
        train=Csv(
            files="data/houses/train-*.csv",
            features={"numeric": ["area", "rooms", "age"], "city": "city"},
            label="price",
            dtypes={"city": "string"},
        ),
        validation=Csv(
            files="data/houses/validation-*.csv",
            features={"numeric": ["area", "rooms", "age"], "city": "city"},
            label="price",
            dtypes={"city": "string"},
        ),
        batch_size=32,
        shuffle_buffer=1024,
    ),
    model=Graph(
        inputs={"numeric": Input(shape=(3,)), "city": Input(shape=(1,), dtype="string")},
        nodes=[
            # Learns the mean and variance of area (m²), rooms and age (years) from the
            # training files before training.
            Node(name="scaled", layer=Normalization(), inputs="numeric", adapt=True),
            Node(name="city_id", layer=StringLookup(vocabulary=CITIES), inputs="city"),
            Node(
                name="city_vector",
                layer=Embedding(input_dim=len(CITIES) + 1, output_dim=4),
                inputs="city_id",
            ),
            Node(name="city_flat", layer=Flatten(), inputs="city_vector"),
            Node(name="joined", layer=Concatenate(), inputs=["scaled", "city_flat"]),
            Node(name="hidden", layer=Dense(32, activation="relu"), inputs="joined"),
            Node(name="price", layer=Dense(1), inputs="hidden"),
        ],
        outputs="price",
    ),
    loss=MeanSquaredError(),
    optimizer=Adam(learning_rate=3e-3),
    metrics=[metrics.MeanAbsoluteError(name="mae")],
    loop=Loop(epochs=20, log_every_steps=50),
    checkpoint=Checkpoint(every_epochs=5),
)
