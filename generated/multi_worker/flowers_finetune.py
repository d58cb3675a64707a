"""Classify flower photos by fine-tuning an ImageNet MobileNetV2.

Written by loopgen 0.1.0 from examples/flowers_finetune.py
(spec sha256 6618a71dabe18f46, script sha256 8d7619e16c2d11c9).
Rendered with: --variant multi_worker
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MultiWorkerMirroredStrategy. Start this script on every worker, each with
TF_CONFIG naming the cluster and its own index, and the same --output-dir on
storage all workers share; data.batch_size is the global batch.
Run it again to resume from the latest checkpoint (written by any variant).
"""

import argparse
import functools
import glob
import math
import os
import re
import shutil
import struct
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        downloading,
        execution_modes,
        fast_dev_stages,
        imagenet_weights,
        is_chief,
        parse_run_flags,
        read_tfrecord_inputs,
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

SEED = 9
GLOBAL_BATCH_SIZE = 32  # over all replicas: each takes a slice
SHUFFLE_BUFFER = 1000  # records shuffle within windows this long
EPOCHS = 6
LOG_EVERY_STEPS = 20
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
UNFREEZE_AT_EPOCH = 3  # the backbone trains from this epoch on
UNFREEZE_FROM = (
    "block_13_expand"  # its layers from this one on; earlier ones stay frozen
)
FINE_TUNE_LEARNING_RATE = 0.0001  # the rate once it trains
OUTPUT_DIR = "runs/flowers_finetune"


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
        inputs="predict: TFRecord files, and directories of them",
        init_from=True,
        new_data=True,
        multi_worker=True,
    )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import keras
import numpy as np
import tensorflow as tf
from keras import layers

# Where the spec names the records' features (for messages about records that do not fit).
FEATURES_FIELD = "data.train.features"


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


def tfrecord_files(pattern, field):
    """The TFRecord files of a glob and their record counts; the first record is parsed now, so
    that a feature spec that does not fit the records stops the run before training."""
    files = glob_files(pattern, field)
    try:
        first = tf.data.TFRecordDataset(files[:1])
        parse_tfrecords(next(iter(first.batch(1))))
    except StopIteration:
        raise SystemExit(f"{files[0]} holds no record") from None
    except tf.errors.DataLossError:
        raise SystemExit(
            f"{files[0]} cannot be read as a plain TFRecord file: if it is compressed, set "
            f"{field.rsplit('.', 1)[0]}.compression (GZIP or ZLIB)"
        ) from None
    except (tf.errors.InvalidArgumentError, ValueError) as error:
        # TensorFlow's message, without the op that raised it.
        message = re.sub(r"\{\{function_node .*?\}\}\s*|\s*\[Op:.*", "", str(error))
        raise SystemExit(
            f"{files[0]}: its records do not fit the spec's features ({FEATURES_FIELD}): "
            f"{message.strip()}"
        ) from None
    return Records(files, [count_records(path) for path in files])


def count_records(path):
    """How many records a TFRecord file holds, from the record headers alone: each record is an
    8-byte length, its 4-byte checksum, the data and the data's 4-byte checksum, and the data
    is skipped, not read."""
    count = 0
    with tf.io.gfile.GFile(path, "rb") as file:
        while header := file.read(12):
            if len(header) < 12:
                raise SystemExit(f"{path} is cut short: a record header is incomplete")
            (length,) = struct.unpack("<Q", header[:8])
            file.seek(length + 4, whence=1)
            count += 1
    return count


def tfrecord_stream(examples, epoch=None, start=0):
    """An epoch's records from position `start` on, raw (serialized), in the same order on
    every run (file_stream)."""
    return file_stream(examples, epoch, start, tf.data.TFRecordDataset)


def parse_tfrecords(serialized):
    """A batch of records parsed (images decoded, only now that they are picked)."""
    example = tf.io.parse_example(
        serialized,
        {
            "image": tf.io.FixedLenFeature((), tf.string),
            "label": tf.io.FixedLenFeature((), tf.int64),
        },
    )
    return record_inputs(example), example["label"]


def record_inputs(example):
    """The model's inputs from a batch of records' features, by name as parsed, images decoded
    and resized: in training (parse_tfrecords), and in the exported model, whose serving
    signature takes the features."""
    return tf.map_fn(
        lambda image: tf.image.resize(
            tf.io.decode_image(image, channels=3, expand_animations=False),
            (160, 160),
        ),
        example["image"],
        fn_output_signature=tf.TensorSpec((160, 160, 3), tf.float32),
    )


def load_examples(data=None):
    """Training and validation examples: streams of records, read epoch by epoch as the
    batches need them (their files checked and counted now)."""
    train_examples = tfrecord_files(
        "data/flowers/train-*.tfrecord", field="data.train.files"
    )
    validation_examples = tfrecord_files(
        data or "data/flowers/validation-*.tfrecord",
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
    features = tf.cast(features, tf.float32)
    return features


def replica_slices(batch, context):
    """This input pipeline's share of a global batch: one slice per replica it feeds, the batch
    cut into num_replicas_in_sync contiguous, near-equal parts. The workers together read
    exactly the global batch a single device trains on, and each only its own part of it (the
    smaller last batch of an epoch may leave a replica an empty slice)."""
    replicas = context.num_replicas_in_sync
    local = replicas // context.num_input_pipelines
    first = context.input_pipeline_id * local
    size = tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]
    bounds = tf.range(replicas + 1, dtype=tf.int64) * size // replicas
    return tf.data.Dataset.range(first, first + local).map(
        lambda replica: tf.nest.map_structure(
            lambda part: part[bounds[replica] : bounds[replica + 1]], batch
        )
    )


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


def training_batches(examples, start_step, context):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The order depends on the step alone: every epoch reads the files in an order drawn from
    (SEED, epoch), four at a time, and shuffles the records in windows of SHUFFLE_BUFFER
    seeded with (SEED, epoch, window).

    A resumed run starts a later epoch without reading the ones before. Inside its epoch it
    starts at the shuffle window holding its step: the files before are skipped by their
    record counts, unread, and at most four files and a window of raw records are read to be
    dropped, before any is parsed.
    Each global batch is cut into one slice per replica; this input pipeline (one per worker)
    reads only its replicas' slices.
    """
    steps_per_epoch = math.ceil(num_examples(examples) / GLOBAL_BATCH_SIZE)
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        # A resumed run's first epoch starts at its step: the stream at the shuffle window
        # holding it, then the window's records before it dropped.
        start = tf.where(
            epoch == first_epoch,
            tf.constant(first_step * GLOBAL_BATCH_SIZE, tf.int64),
            0,
        )
        window = start // SHUFFLE_BUFFER
        records = tfrecord_stream(examples, epoch, start=window * SHUFFLE_BUFFER)
        records = shuffle_windows(records, epoch, first_window=window)
        records = records.skip(start - window * SHUFFLE_BUFFER)
        return records.batch(GLOBAL_BATCH_SIZE)

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
    return (
        batches.map(parse_tfrecords, num_parallel_calls=tf.data.AUTOTUNE)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


def validation_batches(examples, context):
    """The validation examples, batched, read and preprocessed, in a fixed order, repeated: a
    validation pass takes one epoch of batches from an iterator that lasts the whole run.
    """
    records = tfrecord_stream(examples)
    batches = records.batch(GLOBAL_BATCH_SIZE)
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
    return (
        batches.map(parse_tfrecords, num_parallel_calls=tf.data.AUTOTUNE)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def build_model():
    image = keras.Input(shape=(160, 160, 3), name="image")
    # MobileNetV2 without its classifier: a frozen feature extractor.
    with downloading(*imagenet_weights("MobileNetV2", node="features")):
        backbone = keras.applications.MobileNetV2(
            include_top=False,
            weights="imagenet",
            input_shape=(160, 160, 3),
            pooling="avg",
            name="features",
        )
    # Frozen: its BatchNormalization layers normalize with their own statistics too.
    backbone.trainable = False
    # The pixel scaling MobileNetV2 was trained with.
    features = keras.applications.mobilenet_v2.preprocess_input(image)
    features = backbone(features)
    dropout = layers.Dropout(0.2, name="dropout")(features)
    logits = layers.Dense(5, name="logits")(dropout)
    return keras.Model(inputs=image, outputs=logits, name="flowers_finetune")


def unfreeze(backbone):
    """Fine-tuning's second phase: the backbone's layers from UNFREEZE_FROM on train from here
    on. Its BatchNormalization layers stay frozen, in inference mode: the statistics of small
    fine-tuning batches would overwrite the ones it was trained with."""
    names = [layer.name for layer in backbone.layers]
    if UNFREEZE_FROM not in names:
        raise SystemExit(
            f"fine_tune.from_layer={UNFREEZE_FROM!r} is not a layer of {backbone.name}; its "
            f"layers: {', '.join(names)}"
        )
    backbone.trainable = True
    for layer in backbone.layers[: names.index(UNFREEZE_FROM)]:
        layer.trainable = False
    for layer in backbone.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.trainable = False


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


def per_example(loss_fn):
    """The loss of each example (the Keras loss with reduction=None): averaged over any further
    axes (a mask's pixels), as a mean over the batch averages over all of them."""

    def losses(labels, predictions):
        losses = loss_fn(labels, predictions)
        return tf.reduce_mean(losses, axis=list(range(1, losses.shape.rank)))

    return losses


def make_train_loop(train_step, strategy):
    """Several train steps per call, as Orbit's create_loop_fn and Keras' steps_per_execution:
    Python runs once per call, not once per step."""

    # Traced once: num_steps is a tensor, and the batch dimension is unknown (None), so neither
    # another count nor the smaller last batch of an epoch traces it again.
    @tf.function
    def train_loop(iterator, num_steps, stop_requested):
        # The next batch is taken while the current step computes (nothing orders the two),
        # and the last step takes none: the iterator stops exactly after num_steps batches.
        batch = next(iterator)
        for _ in tf.range(num_steps - 1):
            train_step(*batch)
            batch = next(iterator)
        train_step(*batch)
        # Preemption: each worker says whether it got SIGTERM; every worker gets the sum, so
        # all of them stop after the same call (checkpointing is collective).
        votes = strategy.run(tf.identity, args=(stop_requested,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, votes, axis=None)

    return train_loop


def steps_in_call(global_step, epoch_end, bound, unfreeze_step):
    """The steps of the next train_loop call: STEPS_PER_LOOP, or fewer to stop at the next log
    point, unfreeze, epoch end or run.bound: each of them then happens at its exact step.
    """
    return min(
        STEPS_PER_LOOP,
        epoch_end - global_step,
        LOG_EVERY_STEPS - global_step % LOG_EVERY_STEPS,
        bound(global_step) - global_step,
        unfreeze_step - global_step if global_step < unfreeze_step else STEPS_PER_LOOP,
    )


def train(args, run):
    """The run, from the strategy to the export; main() records how it ends."""
    # --- Strategy -----------------------------------------------------------------------
    # Created first: it reads TF_CONFIG (the cluster and this worker's place in it) and must
    # exist before any other TensorFlow op. Every worker runs this same script.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task_id = strategy.cluster_resolver.task_id or 0
    chief = run.chief = is_chief(strategy.cluster_resolver)
    # What the other workers must write but nobody keeps goes here.
    run.scratch = os.path.join(args.output_dir, "workers", f"worker-{task_id}")
    print(
        f"Worker {task_id}{' (chief)' if chief else ''}: "
        f"{strategy.num_replicas_in_sync} replica(s) in the cluster"
    )

    # Seeds Python, NumPy, TensorFlow and Keras: the same weights, shuffles and masks each run.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    # One run at a time in the output directory. Every worker learns whether the chief got
    # the lock: all workers of a refused job stop, and none waits for a peer that has left.
    refusal = run.lock() if chief else None
    refusals = strategy.run(lambda: tf.constant(0 if refusal is None else 1))
    if strategy.reduce(tf.distribute.ReduceOp.SUM, refusals, axis=None) > 0:
        raise SystemExit(
            refusal or f"The chief could not lock {args.output_dir} (see its message)."
        )

    # --- Data -------------------------------------------------------------------------
    # evaluate --data: the validation data from other files (a test split).
    train_examples, validation_examples = load_examples(getattr(args, "data", None))
    # An epoch is counted in steps; the smaller last batch of an epoch is a step too.
    steps_per_epoch = math.ceil(num_examples(train_examples) / GLOBAL_BATCH_SIZE)
    validation_steps = math.ceil(num_examples(validation_examples) / GLOBAL_BATCH_SIZE)
    validation_steps = min(validation_steps, args.fast_dev_run or validation_steps)
    # One iterator for all passes: one per pass can stall tf.data's autotuner for seconds.
    # Each input pipeline (one per worker) reads only its replicas' slices of each batch.
    validation_iterator = iter(
        strategy.distribute_datasets_from_function(
            lambda context: validation_batches(validation_examples, context)
        )
    )

    # --- Model, loss, optimizer, metrics ----------------------------------------------
    # Everything that owns variables is created under the strategy's scope: its variables
    # are then mirrored on every replica and kept in sync.
    with strategy.scope():
        model = build_model()
        model.summary()
        # One loss per example (see per_example). The replica step sums them and divides by
        # the global batch size; a mean per replica would be num_replicas times off.
        loss_fn = per_example(
            keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        )
        optimizer = keras.optimizers.Adam(learning_rate=0.001)
        backbone = model.get_layer("features")
        # Create the slot variables (momentum, moments) now, not in the first traced step,
        # and for the backbone's weights too, frozen or not: a checkpoint then holds the same
        # variables before and after the unfreeze.
        unfreeze(backbone)
        optimizer.build(model.trainable_variables)
        backbone.trainable = False
        # Metrics are summed over replicas when read.
        train_loss, train_metrics = make_metrics()
        validation_loss, validation_metrics = make_metrics()
        train_values = [train_loss, *train_metrics]
        validation_values = [validation_loss, *validation_metrics]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(features, labels):
        """One replica's part of a train step, on its slice of the global batch."""
        # The size of this global batch: the last batch of an epoch is smaller than
        # GLOBAL_BATCH_SIZE, and a replica's slice may even be empty.
        batch_size = tf.shape(features)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        with tf.GradientTape() as tape:
            predictions = model(features, training=True)
            # Divided by the global batch size, not this replica's: apply_gradients sums the
            # replicas' gradients, and the sum is then the gradient of the global batch's mean.
            loss = tf.nn.compute_average_loss(
                loss_fn(labels, predictions), global_batch_size=global_batch_size
            )
        gradients = tape.gradient(loss, model.trainable_variables)
        # Sums the gradients over all replicas, then applies the same update on each.
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.
        for metric in train_metrics:
            metric.update_state(labels, predictions)
        return loss, batch_size

    @tf.function
    def train_step(features, labels):
        """One train step on every replica."""
        replica_losses, batch_sizes = strategy.run(
            replica_train_step, args=(features, labels)
        )
        # Each replica's loss is its share of the global batch's mean: their sum is the mean.
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, replica_losses, axis=None)
        batch_size = strategy.reduce(tf.distribute.ReduceOp.SUM, batch_sizes, axis=None)
        train_loss.update_state(loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step, strategy)

    def replica_eval_step(features, labels):
        predictions = model(features, training=False)
        # The data loss only: weight penalties say nothing about generalization.
        validation_loss.update_state(loss_fn(labels, predictions))
        for metric in validation_metrics:
            metric.update_state(labels, predictions)

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the validation set in one call: num_steps batches."""
        for _ in tf.range(num_steps):
            strategy.run(replica_eval_step, args=next(iterator))

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
        # Dropout's random state lives in Keras SeedGenerator variables that the model does
        # not expose to tf.train.Checkpoint: without them a resumed run repeats old masks.
        rng_states=[v for v in model.variables if "seed_generator_state" in v.path],
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(checkpoint, train_examples, model=model)
    if args.command == "evaluate":  # one validation pass of the restored weights
        validation_pass(validation_iterator, tf.constant(validation_steps))
        return run.evaluated(results(validation_values))
    if args.command == "predict":  # the model to serve, of the restored weights
        return predict(serving_function(model), args)
    # All workers must continue from the same step: one that cannot read the chief's
    # directory would start again from 0 and train on without a word.
    steps = strategy.run(lambda: tf.identity(step))
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, steps, axis=None)
    if int(total.numpy()) != int(step.numpy()) * strategy.num_replicas_in_sync:
        raise SystemExit(
            f"Worker {task_id} is at step {int(step.numpy())}, but the workers are not all at "
            f"the same step: give every worker the same --output-dir, on storage all of them "
            f"read (found {run.resumed_from or 'no checkpoint'} in {run.checkpoints})"
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
    run.start(step, nonfinite_step, total_steps, strategy, train_step)
    # One iterator for the whole run, from the current step on. Each input pipeline (one per
    # worker) reads only the slices of each global batch that its replicas train on.
    train_iterator = iter(
        strategy.distribute_datasets_from_function(
            lambda context: training_batches(
                train_examples, start_step=global_step, context=context
            )
        )
    )

    # The backbone unfreezes when epoch UNFREEZE_AT_EPOCH starts; a run resumed later unfreezes
    # it before its first step.
    unfreeze_step = (UNFREEZE_AT_EPOCH - 1) * steps_per_epoch
    if global_step >= unfreeze_step:
        unfreeze(backbone)

    for epoch in range(first_epoch, epochs):
        epoch_end = min((epoch + 1) * steps_per_epoch, total_steps)
        run.start_epoch(epoch, epochs, epoch * steps_per_epoch, epoch_end, train_values)
        while global_step < epoch_end and not run.preempted:
            num_steps = steps_in_call(global_step, epoch_end, run.bound, unfreeze_step)
            with run.debugged(global_step, num_steps):  # the debugging flags, replay
                votes = train_loop(
                    train_iterator,
                    tf.constant(num_steps),
                    tf.constant(float(run.sigterm)),
                )
            # Some worker got SIGTERM: every worker stops after this call.
            run.preempted = bool(votes > 0)
            global_step += num_steps
            if global_step == unfreeze_step:
                print(f"Step {global_step}: the backbone unfreezes")
                unfreeze(backbone)
                optimizer.learning_rate.assign(FINE_TUNE_LEARNING_RATE)
                # The traced steps hold the variables that were trainable when they were traced:
                # trace them again.
                train_step = tf.function(train_step.python_function)
                train_loop = make_train_loop(train_step)
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
    # Every worker exports (reading the variables may take all workers), but only the chief's
    # copy is kept: the others write into their scratch directory and delete it.
    export_dir = os.path.join(args.output_dir if chief else run.scratch, "export")
    export(model, export_dir)
    if not chief:
        shutil.rmtree(export_dir)


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
    """The exported model's serving_default: a batch of records' features, one input per
    feature the model reads (not the label), as the records hold them: an image as its encoded
    bytes (tf.string: PNG, JPEG, BMP or GIF). record_inputs() decodes and resizes images as in
    training, prepare_inputs() prepares them, then the network answers.
    Named outputs: "scores", the network's output; "probabilities" and
    "class_ids"."""
    signature = {
        "image": tf.TensorSpec((None,), tf.string, name="image"),
    }

    @tf.function(input_signature=[signature])
    def serve(features):
        scores = model(prepare_inputs(record_inputs(features)), training=False)
        probabilities = tf.nn.softmax(scores)
        class_ids = tf.argmax(scores, axis=-1)
        return {
            "scores": scores,
            "probabilities": probabilities,
            "class_ids": class_ids,
        }

    return serve


def predict(serve, args):
    """predict: a JSON line of the served model's outputs for each input, in input order,
    written whole to --predictions; the inputs read by loopgen_runtime's reader."""
    wanted = {
        "image": tf.io.FixedLenFeature((), tf.string),
    }
    read = functools.partial(read_tfrecord_inputs, args.inputs, wanted)
    write_predictions(serve, args, read, GLOBAL_BATCH_SIZE)


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
    batch = next(
        iter(
            training_batches(
                examples, start_step=0, context=tf.distribute.InputContext()
            )
        )
    )
    inputs = tf.nest.map_structure(lambda part: part[:count], batch[0])
    outputs = network.serve(inputs)
    if not all(np.isfinite(output).all() for output in tf.nest.flatten(outputs)):
        raise SystemExit(
            f"--fast-dev-run: the network in {directory} answers NaN or Inf"
        )


def batch_of_step(examples, step):
    """The batch that step `step` trains on, as training_batches() gives it: a function of the
    step alone."""
    batches = training_batches(
        examples, start_step=step - 1, context=tf.distribute.InputContext()
    )
    return next(iter(batches))


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "flowers_finetune",
    "spec_sha256": "6618a71dabe18f46",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "26b14cb6cf9b1b96",
    "data.train": "2e00451048bba535",
    "data.validation": "59f293435f90cb83",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1000,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "loss": "071318bbec99592d",
    "fine_tune": "5c0f0670f3b40b54",
}
# The training data's files, as the spec names them: setup.json records their sizes and times.
TRAIN_FILES = "data/flowers/train-*.tfrecord"


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    train_files, train_glob = TRAIN_FILES, True
    readers = ("evaluate", "predict", "replay")
    multi_worker = True
    strategy = "MultiWorkerMirroredStrategy"
    preemptible = True
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
