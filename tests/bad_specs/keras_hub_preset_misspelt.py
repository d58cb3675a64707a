# Mistake: a KerasHub preset's name misspelt
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=8),
    model=KerasHub(preset="bert_tiny_en_uncase"),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
