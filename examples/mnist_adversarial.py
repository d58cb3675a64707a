"""Adversarial training (Madry et al., 2018): an MLP learns MNIST digits on inputs perturbed by
PGD to raise its loss, within 0.1 of each pixel's value (pixels in [0, 1]).

Each step attacks its batch first: from a random point within 0.1 of each pixel (drawn from the
seed, the step and the example's position, so that a resumed run and any number of replicas
attack alike), 5 steps of 0.05 along the sign of the loss's gradient with respect to the
pixels, each projected back within 0.1, with the model in inference mode. Then it trains on
the perturbed batch. Validation reports the accuracy on clean digits and on attacked ones
(`val_robust_accuracy`), and keeps the weights of the most robust epoch.
"""

from loopgen.dsl import (
    PGD,
    Adam,
    Adversarial,
    BestModel,
    Checkpoint,
    Data,
    Dense,
    Flatten,
    KerasDataset,
    Loop,
    Sequential,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
)

spec = Spec(
    name="mnist_adversarial",
    description="Train an MNIST classifier on PGD-perturbed digits, robust within 0.1.",
    seed=8,
    data=Data(
        train=KerasDataset(name="mnist"),
        validation=KerasDataset(name="mnist", split="test"),
        batch_size=128,
        rescale=1 / 255,
    ),
    model=Sequential(
        input_shape=(28, 28),
        layers=[
            Flatten(),
            Dense(units=256, activation="relu"),
            Dense(units=256, activation="relu"),
            Dense(units=10, name="logits"),
        ],
    ),
    training=Adversarial(attack=PGD(epsilon=0.1, steps=5, step_size=0.05)),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=5, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1),
    best_model=BestModel(monitor="val_robust_accuracy"),
)
