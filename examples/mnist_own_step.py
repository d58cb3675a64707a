"""Your own step and your own optimizer: MNIST digits with a confidence penalty, by sign descent.

The loss is the cross-entropy minus beta times the entropy of the predicted distribution
(Pereyra et al., 2017, "Regularizing neural networks by penalizing confident output
distributions"), and the optimizer is signSGD (Bernstein et al., 2018): a step of size
learning_rate against the sign of each gradient. Both come from a module of yours next to the
script, `own_steps.py`; loopgen writes everything around them (the GradientTape, averaging over
the global batch on any number of replicas, checkpoints, logging):

```python
import keras
import tensorflow as tf


def confidence_penalty(model, inputs, labels, training, beta=0.1):
    logits = model(inputs, training=training)
    cross_entropy = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    entropy = -tf.reduce_sum(tf.nn.softmax(logits) * tf.nn.log_softmax(logits), axis=-1)
    losses = {"cross_entropy": cross_entropy, "confidence_penalty": -beta * entropy}
    return logits, losses, {"entropy": entropy}


class SignSGD(keras.optimizers.Optimizer):
    def __init__(self, learning_rate=0.001, name="sign_sgd", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = keras.ops.cast(learning_rate, variable.dtype)
        self.assign_sub(variable, learning_rate * keras.ops.sign(gradient))
```
"""

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
        target="own_steps:confidence_penalty",
        kwargs={"beta": 0.1},
        losses=["cross_entropy", "confidence_penalty"],
        extras=["entropy"],
    ),
    optimizer=ImportedOptimizer(target="own_steps:SignSGD", learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=100),
    checkpoint=Checkpoint(every_epochs=1),
)
