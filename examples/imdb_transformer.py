"""A small Transformer encoder classifies IMDB reviews: word and position embeddings, two
encoder blocks (self-attention and a feed-forward network, each with a residual connection and
layer normalization), average pooling, one logit.

The encoder block is written once, as a function of the script, and called twice by a loop,
as in the Keras guide "Text classification with Transformer".
"""

from loopgen.dsl import (
    Adam,
    Add,
    BinaryAccuracy,
    BinaryCrossentropy,
    Block,
    Checkpoint,
    Data,
    Dense,
    Dropout,
    Embedding,
    GlobalAveragePooling1D,
    Graph,
    Input,
    KerasDataset,
    LayerNormalization,
    Loop,
    MultiHeadAttention,
    Node,
    PositionEmbedding,
    Spec,
    var,
)

LENGTH = 128  # tokens per review
WIDTH = 64  # the model's width

encoder_block = Block(
    name="encoder_block",
    doc="Self-attention, then a position-wise feed-forward network; each adds to its input "
    "(a residual connection), then normalizes (post-norm, as in the original Transformer).",
    params={"heads": 4, "hidden": 128, "dropout": 0.1},
    nodes=[
        Node(name="attention", layer=MultiHeadAttention(num_heads=var("heads"),
                                                        key_dim=WIDTH // 4),
             inputs=["x", "x"]),
        Node(name="attention_dropout", layer=Dropout(var("dropout")), inputs="attention"),
        Node(name="residual1", layer=Add(), inputs=["x", "attention_dropout"]),
        Node(name="norm1", layer=LayerNormalization(epsilon=1e-6), inputs="residual1"),
        Node(name="expanded", layer=Dense(var("hidden"), activation="relu"), inputs="norm1"),
        Node(name="projected", layer=Dense(WIDTH), inputs="expanded"),
        Node(name="ffn_dropout", layer=Dropout(var("dropout")), inputs="projected"),
        Node(name="residual2", layer=Add(), inputs=["norm1", "ffn_dropout"]),
        Node(name="norm2", layer=LayerNormalization(epsilon=1e-6), inputs="residual2"),
    ],
    output="norm2",
)  # fmt: skip

spec = Spec(
    name="imdb_transformer",
    description="Classify IMDB reviews with a two-block Transformer encoder.",
    seed=5,
    data=Data(
        train=KerasDataset(name="imdb", split="train", num_words=20_000, maxlen=LENGTH),
        validation=KerasDataset(name="imdb", split="test", num_words=20_000, maxlen=LENGTH),
        batch_size=64,
    ),
    model=Graph(
        inputs={"tokens": Input(shape=(LENGTH,), dtype="int32")},
        blocks=[encoder_block],
        nodes=[
            Node(
                name="embedded",
                layer=Embedding(input_dim=20_000, output_dim=WIDTH),
                inputs="tokens",
            ),
            Node(
                name="positioned",
                layer=PositionEmbedding(sequence_length=LENGTH),
                inputs="embedded",
            ),
            Node(name="encoded", block="encoder_block", inputs="positioned", times=2),
            Node(name="pooled", layer=GlobalAveragePooling1D(), inputs="encoded"),
            Node(name="dropout", layer=Dropout(0.1), inputs="pooled"),
            Node(name="logit", layer=Dense(1), inputs="dropout"),
        ],
        outputs="logit",
    ),
    loss=BinaryCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[BinaryAccuracy(threshold=0.0)],
    loop=Loop(epochs=3, log_every_steps=50),
    checkpoint=Checkpoint(every_epochs=1),
)
