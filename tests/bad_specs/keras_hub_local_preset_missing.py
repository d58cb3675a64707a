# Mistake: a local preset directory that is not there
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=8),
    model=KerasHub(preset="presets/my_bert"),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
