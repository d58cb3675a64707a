"""The lm part's peer: KerasHub's own `CausalLM.fit` on the preset and records the generated
SFT loop trains on, in its own process, as a KerasHub user writes it.

    python bench/lm_peer.py PRESET RECORDS_JSONL OUT_JSON --sequence-length 32 --batch-size 16
        --learning-rate 2e-4 --epochs 4 --seed 0 [--repeat]

`CausalLM.from_preset` with its own `CausalLMPreprocessor` of the same sequence length,
compiled with Adam at the same learning rate and KerasHub's defaults otherwise (its loss:
sparse cross-entropy from logits, weighted by the preprocessor's padding mask; its weighted
token accuracy), `fit` on a tf.data of the prompt + completion strings, shuffled each epoch and
batched as the loop's, which `fit` maps the preprocessor onto itself. Every weight trains, as in
the loop (no LoRA on either side). Writes each epoch's wall time (the callbacks' epoch begin to
end) as JSON.

As usually called, `fit(dataset, epochs=N)` makes a new iterator of the dataset each epoch, and
on this machine starting one (the preprocessor's tokenizer mapped in parallel) and ending it
costs seconds an epoch. With --repeat, the dataset repeats and `fit` is given steps_per_epoch:
Keras then keeps one iterator for the whole run, as the generated loop does.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("preset")
    parser.add_argument("records")
    parser.add_argument("out")
    parser.add_argument("--sequence-length", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--learning-rate", type=float, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", action="store_true", help="one iterator for the whole run")
    args = parser.parse_args()

    import keras
    import keras_hub
    import tensorflow as tf

    with open(args.records, encoding="utf-8") as file:
        records = [json.loads(line) for line in file if line.strip()]
    # What the loop's preprocess() tokenizes: prompt and completion joined.
    texts = [record["prompt"] + record["completion"] for record in records]

    keras.utils.set_random_seed(args.seed)
    preprocessor = keras_hub.models.CausalLMPreprocessor.from_preset(
        args.preset, sequence_length=args.sequence_length
    )
    model = keras_hub.models.CausalLM.from_preset(args.preset, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=args.learning_rate))
    dataset = (
        tf.data.Dataset.from_tensor_slices(texts)
        .shuffle(len(texts), seed=args.seed, reshuffle_each_iteration=True)
        .batch(args.batch_size)
    )

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    steps = None
    if args.repeat:
        dataset, steps = dataset.repeat(), -(-len(texts) // args.batch_size)
    seconds: list[float] = []
    history = model.fit(dataset, epochs=args.epochs, steps_per_epoch=steps,
                        callbacks=[EpochTimer()], verbose=2)  # fmt: skip
    with open(args.out, "w") as f:
        json.dump(
            {
                "epoch_seconds": seconds,
                "loss": history.history["loss"],
                "trainable_weights": len(model.trainable_weights),
                "jit_compile": bool(model.jit_compile),
            },
            f,
        )


if __name__ == "__main__":
    main()
