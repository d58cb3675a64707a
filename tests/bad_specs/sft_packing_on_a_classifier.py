# Mistake: SFT with packing on a KerasHub text classifier, which no next token trains
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=TextRecords(path="sums.jsonl", prompt="prompt", response="completion"),
              batch_size=8),
    model=KerasHub(preset="bert_tiny_en_uncased", sequence_length=64),
    training=SFT(packing=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
