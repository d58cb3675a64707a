"""Predict house prices from numeric columns and the city, read from CSV files.

Written by loopgen 0.1.0 from examples/houses_tabular.py
(spec sha256 6da4d8c168cf4b54, script sha256 aaf6c961d1ed2c67).
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
import re
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
        read_csv_inputs,
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

SEED = 2
BATCH_SIZE = 32
SHUFFLE_BUFFER = 1024  # records shuffle within windows this long
EPOCHS = 20
LOG_EVERY_STEPS = 50
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 5
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/houses_tabular"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="epochs to train")
    parser.add_argument("--max-steps", type=int, help="stop after this many steps")
    parser.add_argument("--output-dir", default=OUTPUT_DIR, help="where the run writes")
    parser.add_argument(
        "--data",
        metavar="PATH",
        help="evaluate: another source of the validation data's kind (its files' glob), a test split",
    )
    # The commands, resuming, determinism, the lock and the debugging flags (how the run
    # executes, never what it trains): loopgen_runtime.py, before TensorFlow loads.
    return parse_run_flags(
        parser,
        argv,
        commands=["evaluate", "predict", "replay"],
        inputs="predict: CSV files with a header, and directories of them",
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

# The columns read from the CSV files, their types, and the spec fields that name them.
COLUMNS = ["area", "rooms", "age", "city", "price"]
COLUMN_DTYPES = [tf.float32, tf.float32, tf.float32, tf.string, tf.float32]
DELIMITER = ","
COLUMN_FIELDS = {
    "area": "data.train.features.numeric",
    "rooms": "data.train.features.numeric",
    "age": "data.train.features.numeric",
    "city": "data.train.features.city",
    "price": "data.train.label",
}
COLUMN_DTYPES_FIELD = "data.train.dtypes"


class Records:
    """A streamed source: its files and how many records (examples) each holds, and for CSV
    files the positions of the columns the spec reads. A generator has no files: one count,
    the examples it yields in an epoch, and the function making a pass."""

    def __init__(self, files, counts, columns=None):
        self.files = files
        self.counts = counts
        self.count = sum(counts)
        self.columns = columns


def glob_files(pattern, field):
    """The files of a glob, sorted: the order an unshuffled run reads them in."""
    files = sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise SystemExit(
            f"{field}: no file matches {pattern!r}; check the path and the glob"
        )
    return files


def shard_order(num_files, epoch):
    """The positions of the files in the order epoch `epoch` reads them: drawn from (SEED,
    epoch) when shuffled, as listed when `epoch` is None (validation)."""
    order = tf.range(num_files, dtype=tf.int64)
    if epoch is not None:
        order = tf.random.experimental.index_shuffle(
            order,
            seed=tf.stack([tf.constant(SEED, tf.int64), epoch]),
            max_index=num_files - 1,
        )
    return order


def file_stream(examples, epoch, start, read):
    """The raw records of an epoch from position `start` on: the files in shard_order, in
    groups of four read together and interleaved, one group after the other. The groups before
    the one holding `start` are skipped by their record counts, unread; of that group, the
    records before `start` are read and dropped (at most four files' worth)."""
    order = shard_order(len(examples.files), epoch)
    files = tf.gather(tf.constant(examples.files), order)
    counts = tf.gather(tf.constant(examples.counts, tf.int64), order)
    group_size = min(4, len(examples.files))
    num_groups = math.ceil(len(examples.files) / group_size)
    sizes = tf.math.unsorted_segment_sum(
        counts, tf.range(len(examples.files)) // group_size, num_groups
    )
    ends = tf.cumsum(sizes)
    start = tf.convert_to_tensor(start, tf.int64)
    first = tf.searchsorted(ends, start[None], side="right", out_type=tf.int64)[0]

    def group_records(group):
        return tf.data.Dataset.from_tensor_slices(
            files[group * group_size : (group + 1) * group_size]
        ).interleave(
            read,
            cycle_length=group_size,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    records = tf.data.Dataset.range(first, num_groups).flat_map(group_records)
    return records.skip(start - (ends[first] - sizes[first]))


def csv_files(pattern, field):
    """The CSV files of a glob, checked now rather than during training: every file has the
    header of the first, holds every column the spec reads, and every row parses (numbers
    where numbers are expected). Returns them with their row counts."""
    files = glob_files(pattern, field)
    header, rows = None, []
    for path in files:
        rows.append(0)
        lines = tf.data.TextLineDataset(path)
        try:
            first = (
                next(iter(lines.take(1)), tf.constant(b""))
                .numpy()
                .decode()
                .rstrip("\r")
            )
        except (tf.errors.DataLossError, UnicodeDecodeError):
            raise SystemExit(
                f"{path} cannot be read as a plain CSV file: if it is compressed, set "
                f"{field.rsplit('.', 1)[0]}.compression (GZIP or ZLIB)"
            ) from None
        if header is None:
            header = first.split(DELIMITER)
            missing = [column for column in COLUMNS if column not in header]
            if missing:
                raise SystemExit(
                    f"{path}: no column {missing[0]!r}, which {COLUMN_FIELDS[missing[0]]} names; "
                    f"its columns are {header}"
                )
            selected = [header.index(column) for column in COLUMNS]
        elif first.split(DELIMITER) != header:
            raise SystemExit(f"{path}: its header differs from {files[0]}'s: {first!r}")
        for number, batch in enumerate(lines.skip(1).batch(4096)):
            try:
                decode_csv(batch, selected)
            except tf.errors.InvalidArgumentError as error:
                # "Field <f> in record <r> is not a valid <type>: <text>"
                found = re.search(r"Field (\d+) in record (\d+) (.*?) \[Op", str(error))
                if found is None:
                    raise
                field, record, problem = int(found[1]), int(found[2]), found[3]
                raise SystemExit(
                    f"{path}:{number * 4096 + record + 2}: column {COLUMNS[field]!r}: {problem} "
                    f"(its type: {COLUMN_DTYPES[field].name}, set in {COLUMN_DTYPES_FIELD})"
                ) from None
            rows[-1] += int(tf.size(batch))
    return Records(files, rows, columns=selected)


def decode_csv(lines, selected):
    """The spec's columns (at positions `selected`) of a batch of lines, a tensor each."""
    # Empty defaults: every column is required, and of its dtype.
    defaults = [tf.constant([], dtype) for dtype in COLUMN_DTYPES]
    return tf.io.decode_csv(
        lines, record_defaults=defaults, field_delim=DELIMITER, select_cols=selected
    )


def csv_stream(examples, epoch=None, start=0):
    """An epoch's lines from position `start` on, raw (unparsed), headers left out, in the same
    order on every run (file_stream)."""
    return file_stream(
        examples, epoch, start, lambda path: tf.data.TextLineDataset(path).skip(1)
    )


def parse_csv_lines(lines, selected):
    """A batch of lines parsed (only now that they are picked): the model's inputs and the
    label(s) from their columns."""
    columns = dict(zip(COLUMNS, decode_csv(lines, selected)))
    return csv_inputs(columns), columns["price"]


def csv_inputs(columns):
    """The model's inputs from a batch of decoded columns, by name: in training
    (parse_csv_lines), and in the exported model, whose serving signature takes the columns.
    """
    return {
        "numeric": tf.stack(
            [columns["area"], columns["rooms"], columns["age"]], axis=1
        ),
        "city": columns["city"][:, None],
    }


def load_examples(data=None):
    """Training and validation examples: streams of records, read epoch by epoch as the
    batches need them (their files checked and counted now)."""
    train_examples = csv_files("data/houses/train-*.csv", field="data.train.files")
    validation_examples = csv_files(
        data or "data/houses/validation-*.csv",
        field="--data" if data else "data.validation.files",
    )
    return train_examples, validation_examples


def num_examples(examples):
    """How many examples a source holds (counted by load_examples)."""
    return examples.count


def preprocess(features, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch): its inputs
    by prepare_inputs(), which the exported model's serving signature applies too."""
    features = prepare_inputs(features)
    return features, labels


def prepare_inputs(features):
    """The model's inputs from a batch of examples as read: in training and validation
    (preprocess), and in the exported model's serving signature, so that a served example is
    prepared exactly as the training examples were (never augmented)."""
    # Each of the model's inputs in its own dtype.
    features = {
        "numeric": tf.cast(features["numeric"], tf.float32),
        "city": features["city"],
    }
    return features


def shuffle_windows(records, epoch, first_window=0):
    """A stream shuffled in windows of SHUFFLE_BUFFER records, each window permuted by (SEED,
    epoch, window): the order is a function of the epoch alone, with no buffer state to carry
    across a restart (tf.data's shuffle keeps one). Records move within their window only.
    A stream that starts at window `first_window` of its epoch is shuffled as that window on.
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

    return records.batch(SHUFFLE_BUFFER).enumerate(first_window).flat_map(permuted)


def training_batches(examples, start_step):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The order depends on the step alone: every epoch reads the files in an order drawn from
    (SEED, epoch), four at a time, and shuffles the records in windows of SHUFFLE_BUFFER
    seeded with (SEED, epoch, window).

    A resumed run starts a later epoch without reading the ones before. Inside its epoch it
    starts at the shuffle window holding its step: the files before are skipped by their
    record counts, unread, and at most four files and a window of raw records are read to be
    dropped, before any is parsed.
    """
    steps_per_epoch = math.ceil(num_examples(examples) / BATCH_SIZE)
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        # A resumed run's first epoch starts at its step: the stream at the shuffle window
        # holding it, then the window's records before it dropped.
        start = tf.where(
            epoch == first_epoch, tf.constant(first_step * BATCH_SIZE, tf.int64), 0
        )
        window = start // SHUFFLE_BUFFER
        records = csv_stream(examples, epoch, start=window * SHUFFLE_BUFFER)
        records = shuffle_windows(records, epoch, first_window=window)
        records = records.skip(start - window * SHUFFLE_BUFFER)
        return records.batch(BATCH_SIZE)

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    return (
        batches.map(
            lambda lines: parse_csv_lines(lines, examples.columns),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


def validation_batches(examples):
    """The validation examples, batched, read and preprocessed, in a fixed order, repeated: a
    validation pass takes one epoch of batches from an iterator that lasts the whole run.
    """
    records = csv_stream(examples)
    batches = records.batch(BATCH_SIZE)
    return (
        batches.map(
            lambda lines: parse_csv_lines(lines, examples.columns),
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
    batches = csv_stream(examples).batch(BATCH_SIZE)
    batches = batches.map(lambda lines: parse_csv_lines(lines, examples.columns))
    return batches.map(preprocess).map(lambda features, labels: features)


def build_model():
    numeric = keras.Input(shape=(3,), name="numeric")
    city = keras.Input(shape=(1,), dtype="string", name="city")
    scaled = layers.Normalization(name="scaled")(numeric)
    city_id = layers.StringLookup(
        vocabulary=("lyon", "marseille", "nice", "paris", "toulouse"), name="city_id"
    )(city)
    city_vector = layers.Embedding(6, 4, name="city_vector")(city_id)
    city_flat = layers.Flatten(name="city_flat")(city_vector)
    joined = layers.Concatenate(name="joined")([scaled, city_flat])
    hidden = layers.Dense(32, activation="relu", name="hidden")(joined)
    price = layers.Dense(1, name="price")(hidden)
    return keras.Model(
        inputs={"numeric": numeric, "city": city}, outputs=price, name="houses_tabular"
    )


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def make_metrics():
    """The values logged of a split, training or validation: its loss and metrics."""
    loss = keras.metrics.Mean(name="loss")
    metrics = [
        keras.metrics.MeanAbsoluteError(name="mae"),
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
    # evaluate --data: the validation data from other files (a test split).
    train_examples, validation_examples = load_examples(getattr(args, "data", None))
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
    model.get_layer("scaled").adapt(
        training_inputs(train_examples).map(lambda features: features["numeric"])
    )
    model.summary()
    loss_fn = keras.losses.MeanSquaredError()
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
        train_loss.update_state(loss, sample_weight=tf.shape(features["numeric"])[0])
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
            validation_loss.update_state(
                loss, sample_weight=tf.shape(features["numeric"])[0]
            )
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
        return predict(serving_function(model), args)

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
    export(model, os.path.join(args.output_dir, "export"))


def export(model, directory):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs already prepared as
      prepare_inputs() does.

    Both SavedModels load without this script's classes."""
    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
        served.add_endpoint("serving_default", serving_function(model))
        served.write_out(os.path.join(partial, "saved_model", "1"), verbose=False)
        model.export(os.path.join(partial, "network"), verbose=False)


def serving_function(model):
    """The exported model's serving_default: a batch of CSV rows as columns, one input per
    column the model's inputs are made of (not the label), each of shape (None,) and of its
    type in COLUMN_DTYPES. csv_inputs() makes the model's inputs of them as in training,
    prepare_inputs() prepares them, then the network answers.
    Named outputs: "scores", the network's output."""
    dtypes = dict(zip(COLUMNS, COLUMN_DTYPES))
    signature = {
        column: tf.TensorSpec((None,), dtypes[column], name=column)
        for column in ["area", "rooms", "age", "city"]
    }

    @tf.function(input_signature=[signature])
    def serve(columns):
        scores = model(prepare_inputs(csv_inputs(columns)), training=False)
        return {"scores": scores}

    return serve


def predict(serve, args):
    """predict: a JSON line of the served model's outputs for each input, in input order,
    written whole to --predictions; the inputs read by loopgen_runtime's reader."""
    dtypes = dict(
        zip(COLUMNS, COLUMN_DTYPES)
    )  # the columns the model reads, as trained
    wanted = {column: dtypes[column] for column in ["area", "rooms", "age", "city"]}
    read = functools.partial(read_csv_inputs, args.inputs, wanted, DELIMITER)
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
    "spec": "houses_tabular",
    "spec_sha256": "6da4d8c168cf4b54",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "2e1f301f439c74ee",
    "data.train": "dde1d49a57d56ec2",
    "data.validation": "551ad7d65edc44d3",
    "data.batch_size": BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "0f36a0dce26ec3b6",
    "loss": "cd09723ff7777ab0",
}
# The training data's files, as the spec names them: setup.json records their sizes and times.
TRAIN_FILES = "data/houses/train-*.csv"


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    train_files, train_glob = TRAIN_FILES, True
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
