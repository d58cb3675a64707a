"""Eight trials of the sums_dpo example: DPO's beta, the LoRA rank and the learning rate,
judged by the last validation reward accuracy (how often the model prefers the right answer
to the wrong one by more than the reference does). Not by the loss: beta scales the rewards
inside it, so trials of other betas log losses on other scales, where the accuracy of
chosen over rejected means the same for any beta.

    loopgen sweep examples/sweeps/sums_dpo_beta.py
    loopgen sweep status examples/sweeps/sums_dpo_beta.py
"""

from loopgen.dsl.sweep import Choice, LogUniform, Sweep

sweep = Sweep(
    spec="../sums_dpo.py",
    space={
        "training.beta": LogUniform(0.01, 1.0),
        "model.lora_rank": Choice([4, 8, 16]),
        "optimizer.learning_rate": LogUniform(1e-5, 1e-3),
    },
    objective="val_rewards/accuracies",
    direction="maximize",
    trials=8,
    # The example's own values first: the baseline the search has to beat.
    first=[{"training.beta": 0.1, "model.lora_rank": 8, "optimizer.learning_rate": 5e-5}],
)
