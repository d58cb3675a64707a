# Mistake: packing asked of DPO (TRL's packing is SFT's)
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=TextRecords(path="pairs.jsonl"), batch_size=8),
    model=KerasHub(preset="gpt2_base_en", task="causal_lm", sequence_length=64),
    training=DPO(beta=0.1, packing=True),
    optimizer=Adam(learning_rate=1e-5),
    loop=Loop(epochs=1),
)
