# Mistake: SFT's packing on a TPU, which compiles for fixed shapes
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=TextRecords(path="sums.jsonl", prompt="prompt", response="completion"),
              batch_size=8),
    model=KerasHub(preset="gpt2_base_en", task="causal_lm", sequence_length=64),
    training=SFT(packing=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
    distribute=TPU(),
)
