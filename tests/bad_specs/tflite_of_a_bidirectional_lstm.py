# Mistake: a TFLite file of a recurrent model whose loop TFLite's builtins cannot run
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="reviews.npz"), batch_size=32),
    model=Sequential(
        input_shape=(100,),
        layers=[
            Embedding(input_dim=2000, output_dim=16),
            Bidirectional(LSTM(16)),
            Dense(1),
        ],
    ),
    loss=BinaryCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
    export=Export(tflite=True),
)
