"""Sentiment of short reviews read from a text file, one per line (text, a tab, its label):
the model takes the raw strings and tokenizes them itself, with a TextVectorization layer that
learns its vocabulary from the training reviews before training.

Exported, the model takes strings: what a serving endpoint receives.
"""

from loopgen.dsl import (
    Adam,
    Checkpoint,
    Data,
    Dense,
    Embedding,
    Export,
    GlobalAveragePooling1D,
    Graph,
    Input,
    Loop,
    Node,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    Split,
    Text,
    TextVectorization,
)

spec = Spec(
    name="reviews_text",
    description="Classify reviews as positive or negative from their text.",
    seed=4,
    data=Data(
        train=Text(path="data/reviews.tsv", delimiter="\t", text_column=0, label_column=1),
        validation=Split(fraction=0.1),
        batch_size=32,
        shuffle_buffer=1024,
    ),
    model=Graph(
        inputs={"text": Input(shape=(), dtype="string")},
        nodes=[
            Node(
                name="tokens",
                layer=TextVectorization(max_tokens=10_000, output_sequence_length=64),
                inputs="text",
                adapt=True,
            ),
            Node(
                name="embedded", layer=Embedding(input_dim=10_000, output_dim=32), inputs="tokens"
            ),
            Node(name="pooled", layer=GlobalAveragePooling1D(), inputs="embedded"),
            Node(name="hidden", layer=Dense(32, activation="relu"), inputs="pooled"),
            Node(name="logits", layer=Dense(2), inputs="hidden"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=3e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=10, log_every_steps=20),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)
