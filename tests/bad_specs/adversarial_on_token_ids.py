# Mistake: adversarial training of a model that reads token ids
from loopgen.dsl import (
    Embedding,
    Gradients,
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
            Embedding(input_dim=256, output_dim=8),
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
