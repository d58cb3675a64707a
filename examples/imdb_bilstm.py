"""Sentiment of IMDB movie reviews from their word ids: an embedding, a convolution over
5-word windows, a bidirectional LSTM, max pooling over the review, one logit.

The text classifier of the Keras guides, as a loop: the reviews (the 20,000 most frequent
words, padded or cut to 200) come from keras.datasets.imdb.
"""

from loopgen.dsl import (
    LSTM,
    Adam,
    Bidirectional,
    BinaryAccuracy,
    BinaryCrossentropy,
    Checkpoint,
    Conv1D,
    Data,
    Dense,
    Dropout,
    Embedding,
    GlobalMaxPooling1D,
    KerasDataset,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="imdb_bilstm",
    description="Classify IMDB reviews as positive or negative from their word ids.",
    seed=11,
    data=Data(
        train=KerasDataset(name="imdb", split="train", num_words=20_000, maxlen=200),
        validation=KerasDataset(name="imdb", split="test", num_words=20_000, maxlen=200),
        batch_size=64,
    ),
    model=Sequential(
        input_shape=(200,),
        layers=[
            Embedding(input_dim=20_000, output_dim=64),
            Conv1D(64, 5, activation="relu"),
            Bidirectional(LSTM(32, return_sequences=True)),
            GlobalMaxPooling1D(),
            Dropout(0.3),
            Dense(1),
        ],
    ),
    loss=BinaryCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[BinaryAccuracy(threshold=0.0)],
    loop=Loop(epochs=4, log_every_steps=50),
    checkpoint=Checkpoint(every_epochs=1),
)
