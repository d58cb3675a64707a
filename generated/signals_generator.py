"""Spot events in windows of a signal yielded by a Python generator.

Written by loopgen 0.1.0 from examples/signals_generator.py
(spec sha256 bacbed6570608914, script sha256 afd30a40ef31794a).
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Run it again to resume from the latest checkpoint.
"""

import argparse
import functools
import math
import os
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
        replay,
        run_and_record,
        written_whole,
    )
except ImportError:  # none beside this script, or another render's (it lacks a name)
    loopgen_runtime = sys.modules.get("loopgen_runtime")

# The run's machinery (the output directory, checkpoints, logs, debugging, replay) is
# loopgen_runtime.py beside this script, from the same render: yours to read and edit too.
RUNTIME = "loopgen 0.1.0, runtime d53ed7073d29770d"
if getattr(loopgen_runtime, "RUNTIME", None) != RUNTIME:
    found = getattr(loopgen_runtime, "RUNTIME", "none")
    sys.exit(
        f"{__file__} needs the loopgen_runtime.py of its render beside it ({RUNTIME}; found "
        f"{found}): render it again, loopgen render SPEC -o {__file__} with the spec its "
        "header names (your edits to both files are merged)"
    )

SEED = 6
BATCH_SIZE = 64
SHUFFLE_BUFFER = 512  # records shuffle within windows this long
EPOCHS = 5
LOG_EVERY_STEPS = 20
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/signals_generator"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="epochs to train")
    parser.add_argument("--max-steps", type=int, help="stop after this many steps")
    parser.add_argument("--output-dir", default=OUTPUT_DIR, help="where the run writes")
    # The commands, resuming, determinism, the lock and the debugging flags (how the run
    # executes, never what it trains): loopgen_runtime.py, before TensorFlow loads.
    return parse_run_flags(
        parser, argv, commands=["replay"], init_from=True, new_data=True, overfit=True
    )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import keras
import numpy as np
import tensorflow as tf
from keras import layers

import signals

# What the generator yields: (features, label), as declared in the spec.
GENERATOR_SIGNATURE = (
    tf.TensorSpec(shape=(128, 1), dtype=tf.float32),
    tf.TensorSpec(shape=(), dtype=tf.float32),
)


class Records:
    """A streamed source: its files and how many records (examples) each holds, and for CSV
    files the positions of the columns the spec reads. A generator has no files: one count,
    the examples it yields in an epoch, and the function making a pass."""

    def __init__(self, files, counts, columns=None, generate=None):
        self.files = files
        self.counts = counts
        self.count = sum(counts)
        self.columns = columns
        self.generate = generate


def generated_examples(generate, target, count, field):
    """A generator's examples: `generate()` makes one pass of it, the same examples every time
    (its first is checked against the spec's signature now, not during training), `count` of
    them (None: counted now, in one pass)."""
    try:
        first = next(iter(generate()))
    except StopIteration:
        raise SystemExit(f"{target} yielded no example") from None
    try:
        tf.nest.assert_same_structure(first, GENERATOR_SIGNATURE)
        for value, spec in zip(
            tf.nest.flatten(first), tf.nest.flatten(GENERATOR_SIGNATURE)
        ):
            tensor = tf.convert_to_tensor(value)
            if not tf.dtypes.as_dtype(tensor.dtype).is_compatible_with(
                spec.dtype
            ) and not (
                tensor.dtype.is_integer
                and spec.dtype.is_integer
                or tensor.dtype.is_floating
                and spec.dtype.is_floating
            ):
                raise ValueError(
                    f"a {tensor.dtype.name} where the spec says {spec.dtype.name}"
                )
            if not spec.shape.is_compatible_with(tensor.shape):
                raise ValueError(
                    f"shape {tensor.shape} where the spec says {spec.shape}"
                )
    except (ValueError, TypeError) as error:
        raise SystemExit(
            f"{target} yields examples that do not match the spec's features and label "
            f"({field}.features, {field}.label): {error}"
        ) from None
    if count is None:
        count = sum(1 for _ in generate())
    return Records(None, [count], generate=generate)


def generator_stream(examples, epoch=None):
    """An epoch's examples: one pass of the source's generator."""
    return tf.data.Dataset.from_generator(
        examples.generate, output_signature=GENERATOR_SIGNATURE
    )


def load_examples():
    """Training examples: a stream of records, read epoch by epoch as the
    batches need them."""
    train_examples = generated_examples(
        lambda: signals.windows(count=4096, length=128, seed=1),
        "signals:windows",
        count=4096,
        field="data.train",
    )
    return train_examples


def num_examples(examples):
    """How many examples a source holds (counted by load_examples)."""
    return examples.count


def preprocess(features, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch)."""
    features = tf.cast(features, tf.float32)
    return features, labels


def shuffle_windows(records, epoch):
    """A stream shuffled in windows of SHUFFLE_BUFFER records, each window permuted by (SEED,
    epoch, window): the order is a function of the epoch alone, with no buffer state to carry
    across a restart (tf.data's shuffle keeps one). Records move within their window only.
    """
    seed = tf.stack([tf.constant(SEED, tf.int64), epoch])

    def permuted(window, records):
        size = tf.shape(tf.nest.flatten(records)[0], out_type=tf.int64)[0]
        order = tf.random.experimental.index_shuffle(
            tf.range(size),
            seed=tf.random.experimental.stateless_fold_in(seed, window),
            max_index=size - 1,
        )
        return tf.data.Dataset.from_tensor_slices(
            tf.nest.map_structure(lambda part: tf.gather(part, order), records)
        )

    return records.batch(SHUFFLE_BUFFER).enumerate().flat_map(permuted)


def training_batches(examples, start_step):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The order depends on the step alone: every epoch streams the records in their order,
    through a shuffle buffer seeded with (SEED, epoch). A resumed run starts a later epoch
    without reading the ones before; inside its epoch it skips the records already trained
    on, at most one epoch of them. They are skipped before they are preprocessed.
    """
    steps_per_epoch = math.ceil(num_examples(examples) / BATCH_SIZE)
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        # A resumed run's first epoch starts at its step.
        start = tf.where(
            epoch == first_epoch, tf.constant(first_step * BATCH_SIZE, tf.int64), 0
        )
        records = generator_stream(examples, epoch)
        records = shuffle_windows(records, epoch)
        records = records.skip(start)
        return records.batch(BATCH_SIZE)

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    return batches.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE
    )


def build_model():
    return keras.Sequential(
        [
            keras.Input(shape=(128, 1)),
            layers.Conv1D(16, 9, activation="relu"),
            layers.Conv1D(32, 9, activation="relu"),
            layers.GlobalMaxPooling1D(),
            layers.Dense(1),
        ],
        name="signals_generator",
    )


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def make_train_loop(train_step):
    """Several train steps per call, as Orbit's create_loop_fn and Keras' steps_per_execution:
    Python runs once per call, not once per step."""

    # Traced once: num_steps is a tensor, and the batch dimension is unknown (None), so neither
    # another count nor the smaller last batch of an epoch traces it again.
    @tf.function
    def train_loop(iterator, num_steps):
        # The next batch is taken while the current step computes (nothing orders the two),
        # and the last step takes none: the iterator stops exactly after num_steps batches.
        batch = next(iterator)
        for _ in tf.range(num_steps - 1):
            train_step(*batch)
            batch = next(iterator)
        train_step(*batch)

    return train_loop


def steps_in_call(global_step, epoch_end, bound):
    """The steps of the next train_loop call: STEPS_PER_LOOP, or fewer to stop at the next log
    point, epoch end or run.bound: each of them then happens at its exact step."""
    return min(
        STEPS_PER_LOOP,
        epoch_end - global_step,
        LOG_EVERY_STEPS - global_step % LOG_EVERY_STEPS,
        bound(global_step) - global_step,
    )


def train(args, run):
    """The run, from the seeds to the export; main() records how it ends."""
    # Seeds Python, NumPy, TensorFlow and Keras: the same weights, shuffles and masks each run.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    run.lock()  # one run at a time in the output directory

    # --- Data -------------------------------------------------------------------------
    train_examples = load_examples()
    # An epoch is counted in steps; the smaller last batch of an epoch is a step too.
    steps_per_epoch = math.ceil(num_examples(train_examples) / BATCH_SIZE)

    # --- Model, loss, optimizer, metrics ----------------------------------------------
    model = build_model()
    model.summary()
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(learning_rate=0.001)
    # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
    optimizer.build(model.trainable_variables)
    train_loss = keras.metrics.Mean(name="loss")
    train_metrics = [
        keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0),
    ]
    train_values = [train_loss, *train_metrics]
    # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
    nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    @tf.function
    def train_step(features, labels):
        with tf.GradientTape() as tape:
            predictions = model(features, training=True)
            loss = loss_fn(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)
        # Metrics accumulate on the device; Python reads them only when it logs.
        train_loss.update_state(loss, sample_weight=tf.shape(features)[0])
        for metric in train_metrics:
            metric.update_state(labels, predictions)

    train_loop = make_train_loop(train_step)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
        # The epoch's running means: a run resumed mid-epoch continues them.
        train_values=[v for value in train_values for v in value.variables],
    )
    run.restore(checkpoint, train_examples, model=model)

    # --- Training loop ----------------------------------------------------------------
    total_steps = args.epochs * steps_per_epoch
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    epochs = math.ceil(total_steps / steps_per_epoch)
    # A Python copy of the step: reading the variable would wait for the device each time.
    global_step = int(step.numpy())
    first_epoch = global_step // steps_per_epoch
    if global_step >= total_steps:  # nothing left to train (run.start says so)
        first_epoch = epochs
    run.start(step, nonfinite_step, total_steps, train_step=train_step)
    # One iterator for the whole run, from the current step on (--overfit-batches: overfit()).
    batches = training_batches(train_examples, start_step=global_step)
    train_iterator = iter(overfit(batches, args, train_examples, global_step))

    for epoch in range(first_epoch, epochs):
        epoch_end = min((epoch + 1) * steps_per_epoch, total_steps)
        run.start_epoch(epoch, epochs, epoch * steps_per_epoch, epoch_end, train_values)
        while global_step < epoch_end and not run.preempted:
            num_steps = steps_in_call(global_step, epoch_end, run.bound)
            with run.debugged(global_step, num_steps):  # the debugging flags, replay
                train_loop(train_iterator, tf.constant(num_steps))
            global_step += num_steps
            if global_step % LOG_EVERY_STEPS == 0 or global_step == epoch_end:
                logs = results(train_values)
                logs["learning_rate"] = float(optimizer.learning_rate.numpy())
                run.log("train", global_step, logs, epoch)
                run.stop_if_diverged()
        if run.preempted:
            break
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    export(model, os.path.join(args.output_dir, "export"))


def export(model, directory):
    """The trained network, written whole into `directory`: network/ is the SavedModel
    (model.export; TF Serving, tf.saved_model.load), which loads without this script's classes
    and takes inputs prepared as the training batches are (preprocess())."""
    with written_whole(directory) as partial:
        model.export(os.path.join(partial, "network"), verbose=False)


# --- Debugging (the flags and replay: loopgen_runtime.py) ---------------------------


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run on N steps, each a run of its own in a scratch
    directory (loopgen_runtime.fast_dev_stages)."""
    n = args.fast_dev_run
    examples = load_examples()
    stages = [
        ({"max_steps": n}, f"train {n} steps, save a checkpoint, export"),
        ({"max_steps": 2 * n}, f"resume from the checkpoint, train {n} more"),
    ]
    fast_dev_stages(
        args,
        stages,
        train,
        RunDirectory,
        serve=functools.partial(serve_once, examples=examples, count=n),
    )


def serve_once(directory, examples, count):
    """--fast-dev-run: the exported network, loaded as a server loads it, answers `count`
    training examples."""
    network = tf.saved_model.load(os.path.join(directory, "network"))
    batch = next(iter(training_batches(examples, start_step=0)))
    inputs = tf.nest.map_structure(lambda part: part[:count], batch[0])
    outputs = network.serve(inputs)
    if not all(np.isfinite(output).all() for output in tf.nest.flatten(outputs)):
        raise SystemExit(
            f"--fast-dev-run: the network in {directory} answers NaN or Inf"
        )


def overfit(batches, args, examples, step):
    """--overfit-batches N: the first N batches (of the first epoch), kept and repeated: the
    same examples in the same order, augmented once, for as many steps as the run takes
    (from `step` on: a replay resumes in the middle). Otherwise `batches` as they are.
    """
    if not args.overfit_batches:
        return batches
    first = training_batches(examples, start_step=0).take(args.overfit_batches)
    return first.cache().repeat().skip(step % args.overfit_batches)


def batch_of_step(examples, step):
    """The batch that step `step` trains on, as training_batches() gives it: a function of the
    step alone."""
    batches = training_batches(examples, start_step=step - 1)
    return next(iter(batches))


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "signals_generator",
    "spec_sha256": "bacbed6570608914",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "c90d913ff8ec9518",
    "data.train": "1c60db00f9da46ef",
    "data.batch_size": BATCH_SIZE,
    "data.shuffle_buffer": 512,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "loss": "9e4b2dcd249aaf99",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    readers = ("replay",)
    preemptible = True
    means_checkpointed = True
    results = staticmethod(results)
    batch_names, batch_of_step = ("features", "labels"), staticmethod(batch_of_step)


def main(argv=None):
    """Trains (or replays a step, or runs every stage on a few steps): loopgen_runtime's
    run_and_record() records in runs.jsonl how the run ended, and says in a few lines when
    the machine failed it (a full disk, ...)."""
    args = parse_args(argv)  # the debugging flags checked too
    if args.fast_dev_run:
        return fast_dev_run(args)
    if args.command == "replay":
        return replay(args, train, RunDirectory)
    return run_and_record(args, train, RunDirectory)


if __name__ == "__main__":
    main()
