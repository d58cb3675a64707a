# Mistake: GRPO's completions as long as the whole sequence, no room for the prompt
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=TextRecords(path="sums.jsonl"), batch_size=4),
    model=KerasHub(preset="gpt2_base_en", task="causal_lm", sequence_length=32),
    training=GRPO(reward_funcs=["bad_rewards.sums:correct"], max_completion_length=32),
    optimizer=Adam(learning_rate=1e-5),
    loop=Loop(epochs=1),
)
