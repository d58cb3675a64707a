# Mistake: data.rescale on an integer input (token ids): the script would fail multiplying them
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=32, rescale=1 / 255),
    model=Graph(
        inputs={"tokens": Input(shape=(200,), dtype="int32")},
        nodes=[
            Node(name="embedded", layer=Embedding(input_dim=20000, output_dim=32), inputs="tokens"),
            Node(name="pooled", layer=GlobalAveragePooling1D(), inputs="embedded"),
            Node(name="logits", layer=Dense(2), inputs="pooled"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
