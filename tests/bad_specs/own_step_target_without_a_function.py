# Mistake: an own step named by its module alone
from loopgen.dsl import (
    Checkpoint,
    Data,
    Dense,
    Flatten,
    ImportedOptimizer,
    KerasDataset,
    Loop,
    OwnStep,
    Sequential,
    SparseCategoricalAccuracy,
    Spec,
)

spec = Spec(
    name="mnist_own_step",
    description="Classify MNIST digits with a confidence penalty of your own, by sign descent.",
    seed=5,
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
            Dense(units=128, activation="relu"),
            Dense(units=10, name="logits"),
        ],
    ),
    # own_steps.confidence_penalty(model, inputs, labels, training=..., beta=0.1) returns the
    # logits, the losses of each example by name, and the entropy of each prediction.
    training=OwnStep(
        target="own_steps",
        kwargs={"beta": 0.1},
        losses=["cross_entropy", "confidence_penalty"],
        extras=["entropy"],
    ),
    optimizer=ImportedOptimizer(target="own_steps:SignSGD", learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1),
)
