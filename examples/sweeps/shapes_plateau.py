"""Ten trials of the shapes_plateau example, which draws its own data and so sweeps offline:
the learning rate, the width of the first convolution and of the dense layer, and the batch
size, judged by the last validation loss. A trial whose validation loss at an epoch is above
the median of the earlier trials' at that epoch is stopped there (after 4 trials have run to
the end and 3 epochs of its own). The site's sweep plots are this sweep's
(docs/figures/make.py).

    loopgen sweep examples/sweeps/shapes_plateau.py
    loopgen sweep status examples/sweeps/shapes_plateau.py
"""

from loopgen.dsl.sweep import Choice, IntRange, LogUniform, Median, Sweep

sweep = Sweep(
    spec="../shapes_plateau.py",
    space={
        "optimizer.learning_rate": LogUniform(3e-4, 3e-2),
        "model.layers[0].filters": IntRange(4, 16, step=4),
        "model.layers[5].units": IntRange(16, 64, step=16),
        "data.batch_size": Choice([16, 32, 64]),
    },
    objective="val_loss",
    direction="minimize",
    trials=10,
    pruner=Median(startup_trials=4, warmup_steps=3),
    # The example's own values first: the baseline the search has to beat.
    first=[
        {
            "optimizer.learning_rate": 3e-3,
            "model.layers[0].filters": 8,
            "model.layers[5].units": 32,
            "data.batch_size": 32,
        }
    ],
)
