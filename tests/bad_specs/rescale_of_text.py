# Mistake: data.rescale on text
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=32, rescale=1 / 255),
    model=Graph(
        inputs={"text": Input(shape=(), dtype="string")},
        nodes=[
            Node(name="tokens", layer=TextVectorization(max_tokens=100), inputs="text"),
            Node(name="embedded", layer=Embedding(input_dim=100, output_dim=4), inputs="tokens"),
            Node(name="pooled", layer=GlobalAveragePooling1D(), inputs="embedded"),
            Node(name="logits", layer=Dense(2), inputs="pooled"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=2),
)
