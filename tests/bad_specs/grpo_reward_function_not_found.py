# Mistake: GRPO's reward function named in a module that is not beside the spec
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=TextRecords(path="sums.jsonl"), batch_size=4),
    model=KerasHub(preset="gpt2_base_en", task="causal_lm", sequence_length=32),
    training=GRPO(reward_funcs=["math_rewards:correct"], num_generations=4),
    optimizer=Adam(learning_rate=1e-5),
    loop=Loop(epochs=1),
)
