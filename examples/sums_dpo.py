"""Direct preference optimization (DPO) of a pretrained Llama from KerasHub with LoRA, on
prompt, chosen and rejected records in JSON Lines (TRL's column names): of two answers to a
sum, the model learns to prefer the right one, measured against a frozen reference (the preset
as loaded). Logs TRL's rewards/chosen, rewards/rejected, rewards/margins and
rewards/accuracies.

Exported, the model takes prompts and answers them with text (greedy decoding). Needs
the `lm` extra (keras-hub, tensorflow-text); the preset downloads once into KerasHub's
cache, or set model.preset to a local preset directory.
"""

from loopgen.dsl import (
    DPO,
    Adam,
    Checkpoint,
    Data,
    Export,
    KerasHub,
    Loop,
    Spec,
    Split,
    TextRecords,
)

spec = Spec(
    name="sums_dpo",
    description="Prefer right answers to sums over wrong ones, by DPO with LoRA.",
    seed=6,
    data=Data(
        train=TextRecords(path="data/sum_pairs.jsonl"),
        validation=Split(fraction=0.1),
        batch_size=8,
    ),
    model=KerasHub(
        preset="llama3.2_instruct_1b", task="causal_lm", sequence_length=32, lora_rank=8
    ),
    training=DPO(beta=0.1),
    optimizer=Adam(learning_rate=5e-5),
    loop=Loop(epochs=2, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)
