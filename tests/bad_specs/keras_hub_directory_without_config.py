# Mistake: a directory that is no KerasHub preset
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=8),
    model=KerasHub(preset="tests/bad_specs"),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
