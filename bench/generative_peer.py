"""The generative part's peer: flow matching as keras.io's generative examples write it (the
DDIM example's shape: a `keras.Model` holding the network and its EMA copy, `train_step`
overridden, `compile` and `fit`), on the network and the images of a rendered shapes_flow
script, in its own process.

    python bench/generative_peer.py SCRIPT OUT_JSON --epochs 4 --seed 0 [--no-jit]

The network is the script's own build_model() and the images its load_examples()', in [-1, 1]
as the loop's; the step is the loop's: straight paths x_t = (1 - t) x0 + t e, the velocity
e - x0 by a mean squared error, labels dropped one time in ten, the EMA copy updated after
each step, Adam at the spec's rate. The draws are Keras's stateful random ops, as keras.io's
are. `compile` keeps its defaults (jit_compile="auto"), or with --no-jit compiles without XLA,
as the loop runs. Writes each epoch's wall time (the callbacks' epoch begin to end) as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("out")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-jit", action="store_true", help="compile(jit_compile=False)")
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    # Imported as `python train.py` runs it: loopgen_runtime.py beside it on the path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    spec = importlib.util.spec_from_file_location("generated_script", args.script)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    images, labels = script.load_examples()

    class FlowMatching(keras.Model):
        def __init__(self, network, ema_network):
            super().__init__()
            self.network, self.ema_network = network, ema_network
            self.loss_tracker = keras.metrics.Mean(name="loss")

        @property
        def metrics(self):
            return [self.loss_tracker]

        def train_step(self, data):
            images, labels = data
            batch = tf.shape(images)[0]
            noise = keras.random.normal(tf.shape(images))
            t = keras.random.uniform((batch, 1))
            path = t[:, :, None, None]
            noisy = (1.0 - path) * images + path * noise
            dropped = keras.random.uniform((batch,)) < script.LABEL_DROPOUT
            labels = tf.where(dropped, script.NO_LABEL, tf.cast(labels, tf.int32))
            with tf.GradientTape() as tape:
                velocity = self.network({"image": noisy, "t": t, "label": labels}, training=True)
                loss = tf.reduce_mean(tf.square(velocity - (noise - images)))
            gradients = tape.gradient(loss, self.network.trainable_weights)
            self.optimizer.apply_gradients(
                zip(gradients, self.network.trainable_weights, strict=True)
            )
            for weight, average in zip(self.network.weights, self.ema_network.weights, strict=True):
                average.assign(script.EMA_DECAY * average + (1 - script.EMA_DECAY) * weight)
            self.loss_tracker.update_state(loss)
            return {"loss": self.loss_tracker.result()}

    keras.utils.set_random_seed(args.seed)
    network, ema_network = script.build_model(), script.build_model()
    ema_network.set_weights(network.get_weights())
    model = FlowMatching(network, ema_network)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        **({"jit_compile": False} if args.no_jit else {}),
    )
    dataset = (
        tf.data.Dataset.from_tensor_slices((images * 2.0 - 1.0, labels))
        .shuffle(len(images), seed=args.seed, reshuffle_each_iteration=True)
        .batch(script.BATCH_SIZE)
        .prefetch(tf.data.AUTOTUNE)
    )

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    seconds: list[float] = []
    history = model.fit(dataset, epochs=args.epochs, callbacks=[EpochTimer()], verbose=2)
    with open(args.out, "w") as f:
        json.dump(
            {
                "epoch_seconds": seconds,
                "loss": history.history["loss"],
                "jit_compile": bool(model.jit_compile),
            },
            f,
        )


if __name__ == "__main__":
    main()
