# Mistake: one learning rate too few for the boundaries
"""MLP 784-64-64-10 on MNIST digits, SGD at 1e-3, training loss logged every 200 batches.

Follows seed 003 ("TensorFlow - Writing Custom Training Loop"): the Keras guide's first custom
loop, made resumable and exportable.
"""

from loopgen.dsl import *

spec = Spec(
    name="mnist_mlp",
    description="Classify MNIST digits with a 784-64-64-10 MLP trained by plain SGD.",
    seed=0,
    data=Data(
        train=KerasDataset(name="mnist"),
        batch_size=64,
        shuffle_buffer=1024,
        rescale=1 / 255,
    ),
    model=Sequential(
        input_shape=(28, 28),
        layers=[
            Flatten(),  # 28x28 -> 784
            Dense(units=64, activation="relu"),
            Dense(units=64, activation="relu"),
            Dense(units=10, name="predictions"),
        ],
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=SGD(learning_rate=PiecewiseConstantDecay(boundaries=[1000, 2000], values=[0.1, 0.01])),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=2, log_every_steps=200),
    checkpoint=Checkpoint(every_epochs=1),
)
