# Mistake: LoRA on a backbone frozen whole
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Text(path="reviews.tsv"), batch_size=8),
    model=KerasHub(preset="bert_tiny_en_uncased", lora_rank=4, freeze_backbone=True),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=1),
)
