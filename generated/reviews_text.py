"""Classify reviews as positive or negative from their text.

Written by loopgen 0.1.0 from examples/reviews_text.py
(spec sha256 601d2125b1b62bc5, script sha256 634f8d24c84a5c45).
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Run it again to resume from the latest checkpoint.
"""

import argparse
import functools
import glob
import math
import os
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
        read_text_inputs,
        replay,
        run_and_record,
        write_predictions,
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

SEED = 4
BATCH_SIZE = 32
EPOCHS = 10
LOG_EVERY_STEPS = 20
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/reviews_text"


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
        parser,
        argv,
        commands=["evaluate", "predict", "replay"],
        inputs="predict: text files (a text per line, as the training file), and directories of them",
        init_from=True,
        new_data=True,
        overfit=True,
    )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import keras
import numpy as np
import tensorflow as tf
from keras import layers


def read_text_lines(path, delimiter, text_column, label_column, field):
    """The examples of a file of lines: each line's text and label, held in memory. Labels are
    class ids, or class names numbered in alphabetical order."""
    if not os.path.isfile(path):
        raise SystemExit(f"{field}: no file {path!r}")
    texts, names = [], []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            columns = line.rstrip("\n").split(delimiter)
            if columns == [""]:
                continue  # an empty line
            if len(columns) <= max(text_column, label_column):
                raise SystemExit(
                    f"{path}:{number}: {len(columns)} column(s) split by {delimiter!r}, but the "
                    f"text is in column {text_column} and the label in column {label_column}"
                )
            texts.append(columns[text_column])
            names.append(columns[label_column].strip())
    if not texts:
        raise SystemExit(f"{path} holds no example (no line of text)")
    if all(name.isdigit() for name in names):
        labels = [int(name) for name in names]
    else:
        classes = sorted(set(names))
        print(f"{path}: classes {classes}, numbered from 0")
        labels = [classes.index(name) for name in names]
    return np.array(texts), np.array(labels, dtype=np.int32)


def label_names(path, delimiter, label_column):
    """The class names of a file of lines, sorted (None when its labels are class ids)."""
    with open(path, encoding="utf-8") as file:
        rows = [line.rstrip("\n").split(delimiter) for line in file if line.strip()]
    names = {row[label_column].strip() for row in rows if len(row) > label_column}
    return None if all(name.isdigit() for name in names) else sorted(names)


def load_examples():
    """Training and validation examples: (features, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    train_examples = read_text_lines(
        "data/reviews.tsv",
        delimiter="\t",
        text_column=0,
        label_column=1,
        field="data.train.path",
    )
    # Hold out the last 10.0% of the examples (before any shuffling) for validation,
    # like Keras' validation_split: int(n * fraction) of them (Keras holds out
    # n - floor(n * (1 - fraction)), one more where n * fraction is not whole).
    total = num_examples(train_examples)
    held_out = int(total * 0.1)
    validation_examples = tf.nest.map_structure(
        lambda a: a[total - held_out :], train_examples
    )
    train_examples = tf.nest.map_structure(
        lambda a: a[: total - held_out], train_examples
    )
    return train_examples, validation_examples


def num_examples(examples):
    """How many examples a source holds (the length of its arrays, or its stream's)."""
    return len(tf.nest.flatten(examples)[0])


def read_arrays(examples, indices):
    """The examples at `indices`, gathered from arrays held in memory."""
    return tf.nest.map_structure(lambda array: tf.gather(array, indices), examples)


def as_tensors(examples):
    """Arrays as tensors: a dataset function then captures them by reference, where NumPy
    arrays would be copied into its graph (which cannot exceed 2 GB)."""
    return tf.nest.map_structure(tf.convert_to_tensor, examples)


def preprocess(features, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch)."""
    return features, labels


def epoch_order(epoch, num_examples):
    """The order of the examples in `epoch`: a permutation that depends on (SEED, epoch) alone,
    computed without touching the examples, so any step's examples are known without reading
    the others (a true shuffle of the whole set, with no buffer to fill)."""
    positions = tf.range(num_examples, dtype=tf.int64)
    return tf.random.experimental.index_shuffle(
        positions,
        seed=tf.stack([tf.constant(SEED, tf.int64), epoch]),
        max_index=num_examples - 1,
    )


def training_batches(examples, start_step):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The batches are a function of the step alone: epoch e takes the examples in
    the order epoch_order(e) gives, BATCH_SIZE at a time, and only then are they read.
    A resumed run starts inside its epoch by slicing that order: it reads nothing of the steps
    already done, however many they are.
    """
    examples = as_tensors(examples)
    count = num_examples(examples)
    steps_per_epoch = math.ceil(count / BATCH_SIZE)
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        order = epoch_order(epoch, count)
        # A resumed run's first epoch starts at its step.
        start = tf.where(
            epoch == first_epoch, tf.constant(first_step * BATCH_SIZE, tf.int64), 0
        )
        order = order[start:]
        return tf.data.Dataset.from_tensor_slices(order).batch(BATCH_SIZE)

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    return (
        batches
        # A partial, not a lambda: AutoGraph finds a lambda's source by parsing the whole
        # script, a function's by its own lines (a tenth of a second at each start).
        .map(
            functools.partial(read_arrays, examples),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


def validation_batches(examples):
    """The validation examples, batched, read and preprocessed, in a fixed order, repeated: a
    validation pass takes one epoch of batches from an iterator that lasts the whole run.
    """
    examples = as_tensors(examples)
    indices = tf.data.Dataset.range(num_examples(examples))
    batches = indices.batch(BATCH_SIZE)
    return (
        batches.map(
            functools.partial(read_arrays, examples),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def training_inputs(examples):
    """The model's inputs of every training example, in the order load_examples() gives them,
    read and preprocessed as the training batches are (neither shuffled nor augmented): what
    the adapted layers learn from, the same on every run and on every worker."""
    examples = as_tensors(examples)
    batches = tf.data.Dataset.range(num_examples(examples)).batch(BATCH_SIZE)
    batches = batches.map(functools.partial(read_arrays, examples))
    return batches.map(preprocess).map(lambda features, labels: features)


def build_model():
    text = keras.Input(shape=(), dtype="string", name="text")
    tokens = layers.TextVectorization(
        max_tokens=10000, output_sequence_length=64, name="tokens"
    )(text)
    embedded = layers.Embedding(10000, 32, name="embedded")(tokens)
    pooled = layers.GlobalAveragePooling1D(name="pooled")(embedded)
    hidden = layers.Dense(32, activation="relu", name="hidden")(pooled)
    logits = layers.Dense(2, name="logits")(hidden)
    return keras.Model(inputs=text, outputs=logits, name="reviews_text")


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def make_metrics():
    """The values logged of a split, training or validation: its loss and metrics."""
    loss = keras.metrics.Mean(name="loss")
    metrics = [
        keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
    ]
    return loss, metrics


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
    train_examples, validation_examples = load_examples()
    # An epoch is counted in steps; the smaller last batch of an epoch is a step too.
    steps_per_epoch = math.ceil(num_examples(train_examples) / BATCH_SIZE)
    validation_steps = math.ceil(num_examples(validation_examples) / BATCH_SIZE)
    validation_steps = min(validation_steps, args.fast_dev_run or validation_steps)
    # One iterator for all passes: one per pass can stall tf.data's autotuner for seconds.
    validation_iterator = iter(validation_batches(validation_examples))

    # --- Model, loss, optimizer, metrics ----------------------------------------------
    model = build_model()
    # Layers that learn from the training data (a vocabulary, statistics) before training: the
    # same on every run, and on every worker.
    model.get_layer("tokens").adapt(training_inputs(train_examples))
    model.summary()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(learning_rate=0.003)
    # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
    optimizer.build(model.trainable_variables)
    train_loss, train_metrics = make_metrics()
    validation_loss, validation_metrics = make_metrics()
    train_values = [train_loss, *train_metrics]
    validation_values = [validation_loss, *validation_metrics]
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

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the validation set in one call: num_steps batches."""
        for _ in tf.range(num_steps):
            features, labels = next(iterator)
            predictions = model(features, training=False)
            # The data loss only: weight penalties say nothing about generalization.
            loss = loss_fn(labels, predictions)
            validation_loss.update_state(loss, sample_weight=tf.shape(features)[0])
            for metric in validation_metrics:
                metric.update_state(labels, predictions)

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
    if args.command == "evaluate":  # one validation pass of the restored weights
        validation_pass(validation_iterator, tf.constant(validation_steps))
        return run.evaluated(results(validation_values))
    if args.command == "predict":  # the model to serve, of the restored weights
        return predict(
            serving_function(model, label_names("data/reviews.tsv", "\t", 1)), args
        )

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
        if run.preempted and global_step < epoch_end:  # else after the validation
            break

        if (epoch + 1) % VALIDATE_EVERY_EPOCHS == 0 or global_step == total_steps:
            for metric in validation_values:
                metric.reset_state()
            validation_pass(validation_iterator, tf.constant(validation_steps))
            validation_logs = results(validation_values)
            run.log("validation", global_step, validation_logs, epoch)
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
        if run.preempted:
            break
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    # The classes are the training file's labels where they are names, numbered as
    # load_examples() did.
    export(
        model,
        os.path.join(args.output_dir, "export"),
        label_names("data/reviews.tsv", "\t", 1),
    )


def export(model, directory, classes):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs as the training batches give
      them.

    Both SavedModels load without this script's classes. `classes`: the class names, in the
    order of their ids (None where the training file's labels are ids)."""
    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
        served.add_endpoint("serving_default", serving_function(model, classes))
        served.write_out(os.path.join(partial, "saved_model", "1"), verbose=False)
        model.export(os.path.join(partial, "network"), verbose=False)


def serving_function(model, classes):
    """The exported model's serving_default: a batch of texts (tf.string), which the network
    gets as the training pipeline gives it the file's texts: as they are (it tokenizes them
    itself). Named outputs: "scores", the network's output; "probabilities", "class_ids"
    and "class_names", the training file's label of each class where its labels are names.
    """

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.string, name="texts")])
    def serve(texts):
        scores = model(texts, training=False)
        probabilities = tf.nn.softmax(scores)
        class_ids = tf.argmax(scores, axis=-1)
        outputs = {
            "scores": scores,
            "probabilities": probabilities,
            "class_ids": class_ids,
        }
        if classes is not None:  # the training file's labels are class names, not ids
            outputs["class_names"] = tf.gather(tf.constant(classes), class_ids)
        return outputs

    return serve


def predict(serve, args):
    """predict: a JSON line of the served model's outputs for each input, in input order,
    written whole to --predictions; the inputs read by loopgen_runtime's reader."""
    read = functools.partial(read_text_inputs, args.inputs, "\t")
    write_predictions(serve, args, read, BATCH_SIZE)


# --- Debugging (the flags and replay: loopgen_runtime.py) ---------------------------


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run on N steps, each a run of its own in a scratch
    directory (loopgen_runtime.fast_dev_stages)."""
    n = args.fast_dev_run
    examples = load_examples()[0]
    inputs = functools.partial(
        dev_inputs, examples, count=n
    )  # predict's, made in the scratch
    stages = [
        (
            {"max_steps": n},
            f"train {n} steps, validate {n} batches, save a checkpoint, export",
        ),
        ({"max_steps": 2 * n}, f"resume from the checkpoint, train {n} more"),
        ({"command": "evaluate"}, "evaluate the checkpoint"),
        ({"command": "predict", "inputs": inputs}, "predict with the checkpoint"),
    ]
    fast_dev_stages(
        args,
        stages,
        train,
        RunDirectory,
        serve=functools.partial(serve_once, examples=examples, count=n),
    )


def dev_inputs(examples, directory, count):
    """--fast-dev-run: inputs for predict, of the training data's kind (in `directory`)."""
    return sorted(glob.glob(TRAIN_FILES))[:1]


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
    "spec": "reviews_text",
    "spec_sha256": "601d2125b1b62bc5",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "449b508dfc749bbf",
    "data.train": "77b0874ea38b93e1",
    "data.validation": "5d14c1474b9d3169",
    "data.batch_size": BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "0f36a0dce26ec3b6",
    "loss": "071318bbec99592d",
}
# The training data's files, as the spec names them: setup.json records their sizes and times.
TRAIN_FILES = "data/reviews.tsv"


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    train_files = TRAIN_FILES
    readers = ("evaluate", "predict", "replay")
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
