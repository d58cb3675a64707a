"""Group relative policy optimization (GRPO) of a pretrained Llama from KerasHub with LoRA, on
prompts of sums in JSON Lines (TRL's `prompt` column): for each prompt the model samples 8
answers, two reward functions of yours score them (`rewards/sums.py`, beside this spec: the
answer's digits, and whether it is the sum), and the model learns to write the answers that
score above their group's mean. The mean reward rises as it trains; logged with TRL's names
(reward, reward_std, kl, completions/mean_length, clip_ratio/region_mean).

Exported, the model takes prompts and answers them with text (greedy decoding). Needs the `lm`
extra (keras-hub, tensorflow-text); the preset downloads once into KerasHub's cache, or set
model.preset to a local preset directory.
"""

from loopgen.dsl import (
    GRPO,
    Adam,
    Checkpoint,
    Data,
    Export,
    KerasHub,
    Loop,
    Spec,
    TextRecords,
)

spec = Spec(
    name="sums_grpo",
    description="Answer sums right, by GRPO with LoRA and a verifiable reward.",
    seed=7,
    data=Data(train=TextRecords(path="data/sums.jsonl"), batch_size=4),
    model=KerasHub(
        preset="llama3.2_instruct_1b", task="causal_lm", sequence_length=32, lora_rank=8
    ),
    training=GRPO(
        reward_funcs=["rewards.sums:digits", "rewards.sums:correct"],
        num_generations=8,
        max_completion_length=8,
        beta=0.04,
    ),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(epochs=2, log_every_steps=10),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)
