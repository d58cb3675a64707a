# Mistake: a KerasHub text classifier fed image arrays
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), batch_size=8),
    model=KerasHub(preset="bert_tiny_en_uncased"),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
