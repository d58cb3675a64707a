"""Twenty trials of the fashion_validation example: the learning rate, the first layer's width,
the dropout and the batch size, judged by the last validation accuracy. A trial whose
validation accuracy at an epoch is below the median of the earlier trials' at that epoch is
stopped there (after 5 trials have run to the end and 2 epochs of its own).

    loopgen sweep examples/sweeps/fashion_validation.py
    loopgen sweep status examples/sweeps/fashion_validation.py
"""

from loopgen.dsl.sweep import Choice, IntRange, LogUniform, Median, Sweep, Uniform

sweep = Sweep(
    spec="../fashion_validation.py",
    space={
        "optimizer.learning_rate": LogUniform(1e-4, 1e-2),
        "model.layers[1].units": IntRange(64, 512, step=64),
        "model.layers[2].rate": Uniform(0.0, 0.5),
        "data.batch_size": Choice([64, 128, 256]),
    },
    objective="val_accuracy",
    direction="maximize",
    trials=20,
    parallel=2,
    pruner=Median(startup_trials=5, warmup_steps=2),
    # The example's own values first: the baseline the search has to beat.
    first=[
        {
            "optimizer.learning_rate": 1e-3,
            "model.layers[1].units": 256,
            "model.layers[2].rate": 0.3,
            "data.batch_size": 128,
        }
    ],
)
