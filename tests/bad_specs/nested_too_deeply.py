# Mistake: a value wrapped in a list on every pass of a loop, 100,000 lists deep
"""MLP 784-10 on MNIST digits, written as a dict of spec fields."""

input_shape = [28, 28]
for _ in range(100_000):
    input_shape = [input_shape]  # meant to run once, to add a batch axis

spec = {
    "name": "mnist_mlp",
    "data": {"train": {"kind": "keras_dataset", "name": "mnist"}, "batch_size": 64},
    "model": {
        "kind": "sequential",
        "input_shape": input_shape,
        "layers": [{"kind": "flatten"}, {"kind": "dense", "units": 10}],
    },
    "loss": {"kind": "sparse_categorical_crossentropy", "from_logits": True},
    "optimizer": {"kind": "sgd", "learning_rate": 1e-3},
    "loop": {"epochs": 2},
}
