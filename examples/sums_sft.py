"""Supervised fine-tuning (SFT) of a pretrained Llama from KerasHub with LoRA, on prompt and
completion records in JSON Lines (TRL's column names): the model learns to answer sums of two
digits. The loss counts the answers' tokens only: the prompts are masked out of it.

Exported, the model takes prompts and answers them with text (greedy decoding). Needs
the `lm` extra (keras-hub, tensorflow-text); the preset downloads once into KerasHub's
cache, or set model.preset to a local preset directory.
"""

from loopgen.dsl import (
    SFT,
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
    name="sums_sft",
    description="Teach a causal language model to answer sums, by SFT with LoRA.",
    seed=5,
    data=Data(
        train=TextRecords(path="data/sums.jsonl", prompt="prompt", response="completion"),
        validation=Split(fraction=0.1),
        batch_size=16,
    ),
    model=KerasHub(
        preset="llama3.2_instruct_1b", task="causal_lm", sequence_length=32, lora_rank=8
    ),
    training=SFT(completion_only_loss=True),
    optimizer=Adam(learning_rate=2e-4),
    loop=Loop(epochs=3, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)
