# Mistake: a KerasHub classifier's logits taken for probabilities
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=8),
    model=KerasHub(preset="bert_tiny_en_uncased"),
    loss=SparseCategoricalCrossentropy(from_logits=False),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
