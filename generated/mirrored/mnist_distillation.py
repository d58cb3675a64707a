"""Distil the mnist_mlp example's network into a smaller MLP.

Written by loopgen 0.1.0 from examples/mnist_distillation.py
(spec sha256 4859a9a0dba00642, script sha256 4d25b2e0b0cde049).
Rendered with: --variant mirrored
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MirroredStrategy, one replica per GPU (or the CPU); data.batch_size is the global batch.
Run it again to resume from the latest checkpoint (written by any variant).
"""

import argparse
import contextlib
import ctypes
import errno
import fcntl
import functools
import glob
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import sys
import time
import traceback

SEED = 3
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
RESCALE = 1 / 255
EPOCHS = 3

# Distillation (training): logits are divided by TEMPERATURE before the softmax, and the loss
# on the labels weighs ALPHA, the loss on the teacher's predictions 1 - ALPHA.
TEMPERATURE = 3.0
ALPHA = 0.1
TEACHER_WEIGHTS = "runs/mnist_mlp"  # a run's output directory, or a weights file
LOG_EVERY_STEPS = 200
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/mnist_distillation"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
    parser.add_argument(
        "command",
        nargs="?",
        choices=["train", "evaluate", "predict", "replay"],
        default="train",
        help="train (the default; resumes from the newest checkpoint), evaluate a checkpoint "
        "on the validation data, predict on raw inputs, or replay a step (none of them "
        "writes checkpoints)",
    )
    parser.add_argument(
        "--checkpoint",
        default="latest",
        help="evaluate, predict: 'latest' or a checkpoint's path",
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="PATH",
        help="predict: .npy or .npz files of examples, image files, and directories of them",
    )
    parser.add_argument(
        "--predictions",
        metavar="FILE",
        help="predict: where the predictions go, a JSON line each (default: "
        "predictions.jsonl in the output directory)",
    )
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="epochs to train")
    parser.add_argument("--max-steps", type=int, help="stop after this many steps")
    parser.add_argument("--output-dir", default=OUTPUT_DIR, help="where the run writes")
    parser.add_argument(
        "--init-from",
        metavar="DIR",
        help="start a new run from the weights of the newest checkpoint in DIR (another "
        "run's --output-dir)",
    )
    parser.add_argument(
        "--new-data",
        action="store_true",
        help="resume on training data other than the checkpoints' (setup.json records it): "
        "an epoch then has another length and order",
    )
    parser.add_argument(
        "--deterministic", action="store_true", help="make TensorFlow ops deterministic"
    )
    parser.add_argument(
        "--no-lock",
        action="store_true",
        help="do not lock the output directory (for file systems without locks)",
    )
    # Debugging: how the run executes, never what it trains.
    for flag, purpose in [
        ("--eager", "run the steps as plain Python: pdb and print() work in them"),
        ("--check-numerics", "stop at the first op that makes a NaN or Inf (slow)"),
        ("--dump-debug-info", "record every op's outputs in logs/debugger (slow)"),
    ]:
        parser.add_argument(flag, action="store_true", help=purpose)
    parser.add_argument("--profile", metavar="START:STOP", help="trace these steps")
    parser.add_argument(
        "--fast-dev-run",
        nargs="?",
        const="2",
        metavar="N",
        help="every stage on N steps",
    )
    parser.add_argument("--step", metavar="N", help="replay: the step to replay")
    # Intermixed: `predict --checkpoint best a.png b.png` gives the paths after an option too.
    args = parser.parse_intermixed_args(argv)
    if (args.command == "predict") != bool(args.inputs):
        parser.error(
            "predict takes the paths of its inputs; train and evaluate take none"
        )
    check_debugging_flags(args)
    return args


def check_debugging_flags(args):
    """The debugging flags' mistakes stop the script before TensorFlow loads; --profile's
    range becomes a pair of steps, and --overfit-batches's run gets a directory of its own.
    """
    # Counts of steps or batches.
    for flag in ["--fast-dev-run", "--step"]:
        name = flag[2:].replace("-", "_")
        count = getattr(args, name)
        if count is not None and not (count.isdigit() and int(count) >= 1):
            raise SystemExit(f"{flag} {count}: give a whole number, 1 or more")
        setattr(args, name, count and int(count))
    for flag, why in [
        ("--dump-debug-info", "TensorFlow 2.21 then fails with a RecursionError"),
        ("--deterministic", "its deterministic cross-entropy makes a NaN it drops"),
    ]:
        if args.check_numerics and getattr(args, flag[2:].replace("-", "_")):
            raise SystemExit(f"--check-numerics and {flag} do not combine ({why})")
    if args.profile:
        start, _, stop = args.profile.partition(":")
        if not (start.isdigit() and stop.isdigit() and 0 < int(start) <= int(stop)):
            raise SystemExit(
                f"--profile {args.profile}: give the first and last step to trace, "
                "START:STOP with 1 <= START <= STOP (3:5, say)"
            )
        args.profile = int(start), int(stop)
    if args.command != "train" and (args.fast_dev_run or args.profile):
        raise SystemExit(f"--fast-dev-run, --profile: for training, not {args.command}")
    if (args.command == "replay") != (args.step is not None):
        raise SystemExit(
            "replay takes --step N, the step to replay; the other commands take none"
        )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import keras
import numpy as np
import tensorflow as tf
from keras import layers


def load_examples():
    """Training and validation examples: (images, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    # Downloads once into ~/.keras/datasets, then loads from there.
    with downloading(
        "mnist (keras.datasets.mnist.load_data())",
        "Offline? Give the arrays as a local file instead: data.train=Npz(path=...), an .npz "
        "of x and y as load_data() returns them; or run once online: load_data() keeps its "
        "download in ~/.keras/datasets.",
    ):
        (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    train_examples = (x_train, y_train)
    validation_examples = (x_test, y_test)
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


def preprocess(images, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch): its inputs
    by prepare_inputs(), which the exported model's serving signature applies too."""
    images = prepare_inputs(images)
    return images, labels


def prepare_inputs(images):
    """The model's inputs from a batch of examples as read: in training and validation
    (preprocess), and in the exported model's serving signature, so that a served example is
    prepared exactly as the training examples were (never augmented)."""
    images = tf.cast(images, tf.float32) * RESCALE
    return images


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


def training_batches(examples, start_step, context):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The batches are a function of the step alone: epoch e takes the examples in
    the order epoch_order(e) gives, GLOBAL_BATCH_SIZE at a time, and only then are they read.
    A resumed run starts inside its epoch by slicing that order: it reads nothing of the steps
    already done, however many they are.
    Each global batch is cut into one slice per replica; this input pipeline (one per worker)
    reads only its replicas' slices.
    """
    examples = as_tensors(examples)
    count = num_examples(examples)
    steps_per_epoch = math.ceil(count / GLOBAL_BATCH_SIZE)
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        order = epoch_order(epoch, count)
        # A resumed run's first epoch starts at its step.
        start = tf.where(
            epoch == first_epoch,
            tf.constant(first_step * GLOBAL_BATCH_SIZE, tf.int64),
            0,
        )
        order = order[start:]
        return tf.data.Dataset.from_tensor_slices(order).batch(GLOBAL_BATCH_SIZE)

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
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


def validation_batches(examples, context):
    """The validation examples, batched, read and preprocessed, in a fixed order, repeated: a
    validation pass takes one epoch of batches from an iterator that lasts the whole run.
    """
    examples = as_tensors(examples)
    indices = tf.data.Dataset.range(num_examples(examples))
    batches = indices.batch(GLOBAL_BATCH_SIZE)
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
    return (
        batches.map(
            functools.partial(read_arrays, examples),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def build_model():
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            layers.Flatten(),
            layers.Dense(32, activation="relu"),
            layers.Dense(10, name="logits"),
        ],
        name="mnist_distillation",
    )


def build_teacher():
    """The teacher's network (training.teacher.model), into which its weights are loaded."""
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(64, activation="relu"),
            layers.Dense(10, name="predictions"),
        ],
        name="teacher",
    )


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


def load_teacher(model):
    """The teacher (training.teacher), frozen: not trainable, and only ever called in inference
    mode, so that neither its weights nor its BatchNormalization statistics change."""
    if not os.path.exists(TEACHER_WEIGHTS):
        raise SystemExit(
            f"training.teacher.weights: {TEACHER_WEIGHTS}: no such file or directory"
        )
    teacher = build_teacher()
    if TEACHER_WEIGHTS.endswith(".weights.h5"):
        teacher.load_weights(TEACHER_WEIGHTS)
    else:  # another run: its newest checkpoint
        checkpoints = os.path.join(TEACHER_WEIGHTS, "checkpoints")
        path = tf.train.latest_checkpoint(checkpoints) or tf.train.latest_checkpoint(
            TEACHER_WEIGHTS
        )
        if path is None:
            raise SystemExit(
                f"training.teacher.weights: no checkpoint in {TEACHER_WEIGHTS}: give the "
                "--output-dir of the run that trained the teacher, or a .weights.h5 file"
            )
        try:
            status = tf.train.Checkpoint(model=teacher).restore(path)
            status.assert_existing_objects_matched().expect_partial()
        except Exception as error:  # another network: ValueError, AssertionError, ...
            raise SystemExit(
                f"training.teacher.weights: cannot load {path} into training.teacher.model "
                f"({type(error).__name__}: {error}): it must be the network that run trained"
            ) from None
    teacher.trainable = False
    return teacher


def distillation_loss(teacher_logits, student_logits):
    """Each example's KL divergence from the teacher's softened predictions to the student's,
    times TEMPERATURE squared: the soft targets' gradients then keep their size whatever the
    temperature (Hinton et al., 2015)."""
    teacher = tf.nn.log_softmax(teacher_logits / TEMPERATURE)
    student = tf.nn.log_softmax(student_logits / TEMPERATURE)
    return TEMPERATURE**2 * tf.reduce_sum(
        tf.exp(teacher) * (teacher - student), axis=-1
    )


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
    """The run, from the strategy to the export; main() records how it ends."""
    # --- Strategy -----------------------------------------------------------------------
    # A replica of the model on each device; every step, each replica takes its slice of the
    # global batch and the gradients are summed across replicas.
    # No device list: every GPU, or the CPU when there is none.
    strategy = tf.distribute.MirroredStrategy()
    if args.step:  # replay: on one device (the replicas train as one device does)
        strategy = tf.distribute.get_strategy()
    print(f"{strategy.num_replicas_in_sync} replica(s) on this machine")

    # Seeds Python, NumPy, TensorFlow and Keras: the same weights, shuffles and masks each run.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    run.lock()  # one run at a time in the output directory

    # --- Data -------------------------------------------------------------------------
    train_examples, validation_examples = load_examples()
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
        optimizer = keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
        # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss, train_metrics = make_metrics()
        validation_loss, validation_metrics = make_metrics()
        # The loss on the labels and the loss on the teacher, logged apart.
        train_losses = {
            name: keras.metrics.Mean(name=name)
            for name in ("student_loss", "distillation_loss")
        }
        teacher = load_teacher(model)
        train_values = [train_loss, *train_losses.values(), *train_metrics]
        validation_values = [validation_loss, *validation_metrics]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(images, labels):
        """One replica's part of a train step, on its slice of the global batch."""
        # The size of this global batch: the last batch of an epoch is smaller than
        # GLOBAL_BATCH_SIZE, and a replica's slice may even be empty.
        batch_size = tf.shape(images)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            # The teacher in inference mode, never trained: constants to the tape.
            teacher_logits = teacher(images, training=False)
            # Divided by the global batch size, not this replica's: apply_gradients sums the
            # replicas' gradients, and the sum is then the gradient of the global batch's mean.
            losses = {
                "student_loss": tf.nn.compute_average_loss(
                    loss_fn(labels, predictions), global_batch_size=global_batch_size
                ),
                "distillation_loss": tf.nn.compute_average_loss(
                    distillation_loss(teacher_logits, predictions),
                    global_batch_size=global_batch_size,
                ),
            }
            loss = (
                ALPHA * losses["student_loss"]
                + (1 - ALPHA) * losses["distillation_loss"]
            )
        gradients = tape.gradient(loss, model.trainable_variables)
        # Sums the gradients over all replicas, then applies the same update on each.
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.
        for metric in train_metrics:
            metric.update_state(labels, predictions)
        return loss, losses, batch_size

    @tf.function
    def train_step(images, labels):
        """One train step on every replica."""
        replica_losses, losses, batch_sizes = strategy.run(
            replica_train_step, args=(images, labels)
        )
        # Each replica's loss is its share of the global batch's mean: their sum is the mean.
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, replica_losses, axis=None)
        batch_size = strategy.reduce(tf.distribute.ReduceOp.SUM, batch_sizes, axis=None)
        train_loss.update_state(loss, sample_weight=batch_size)
        for name, name_loss in losses.items():
            name_loss = strategy.reduce(
                tf.distribute.ReduceOp.SUM, name_loss, axis=None
            )
            train_losses[name].update_state(name_loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step)

    def replica_eval_step(images, labels):
        predictions = model(images, training=False)
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
        # The epoch's running means: a run resumed mid-epoch continues them.
        train_values=[v for value in train_values for v in value.variables],
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(checkpoint, train_examples, model=model)
    if args.command == "evaluate":  # one validation pass of the restored weights
        validation_pass(validation_iterator, tf.constant(validation_steps))
        return run.evaluated(results(validation_values))
    if args.command == "predict":  # the model to serve, of the restored weights
        return predict(serving_function(model, train_examples), args, train_examples)

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
                run.log("train", global_step, epoch, logs)
                run.stop_if_diverged()
        if run.preempted:
            break

        if (epoch + 1) % VALIDATE_EVERY_EPOCHS == 0 or global_step == total_steps:
            for metric in validation_values:
                metric.reset_state()
            validation_pass(validation_iterator, tf.constant(validation_steps))
            validation_logs = results(validation_values)
            run.log("validation", global_step, epoch, validation_logs)
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    export(model, os.path.join(args.output_dir, "export"), train_examples)


def export(model, directory, examples):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs already prepared as
      prepare_inputs() does.

    Both SavedModels load without this script's classes. `examples`: the training examples, whose
    dtype and shape the served model takes."""
    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
        served.add_endpoint("serving_default", serving_function(model, examples))
        served.write_out(os.path.join(partial, "saved_model", "1"), verbose=False)
        model.export(os.path.join(partial, "network"), verbose=False)


def serving_function(model, examples):
    """The exported model's serving_default: a batch of raw examples, of the dtype and shape
    of the training images load_examples() gives (uint8 pixels, say).
    prepare_inputs() prepares them as it did the training images, then the network
    answers. Named outputs: "scores", the network's output; "probabilities" and
    "class_ids"."""
    images, _ = examples
    signature = tf.TensorSpec((None, *images.shape[1:]), images.dtype, name="images")

    @tf.function(input_signature=[signature])
    def serve(images):
        scores = model(prepare_inputs(images), training=False)
        probabilities = tf.nn.softmax(scores)
        class_ids = tf.argmax(scores, axis=-1)
        return {
            "scores": scores,
            "probabilities": probabilities,
            "class_ids": class_ids,
        }

    return serve


# The formats decode_images() reads, by their files' first bytes.
IMAGE_SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"BM", b"GIF8")


def input_files(paths):
    """predict: the files named, and the files in the directories named (sorted by path; not
    hidden files, such as .DS_Store)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = [
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if not name.startswith(".")
            ]
            files += sorted(found)
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise SystemExit(f"predict: {path}: no such file or directory")
    if not files:
        raise SystemExit(f"predict: no files in {', '.join(paths)}")
    return files


def read_examples(path, like):
    """predict: the examples in one file, of the training images' (`like`) shape and dtype:
    an .npy array of them (or of one), an .npz file's array 'x', or an image file."""
    shape = like.shape[1:]
    with open(path, "rb") as f:
        content = f.read()
    if content.startswith(IMAGE_SIGNATURES):
        channels = shape[2] if len(shape) == 3 else 1
        try:
            image = tf.io.decode_image(
                content, channels=channels, expand_animations=False
            )
        except (
            tf.errors.InvalidArgumentError
        ) as error:  # damaged, or a GIF for grayscale
            raise SystemExit(
                f"predict: {path}: {error.message.split(' [Op')[0]}"
            ) from None
        if image.shape[:2] != shape[:2]:
            raise SystemExit(
                f"predict: {path} is {image.shape[1]}x{image.shape[0]} pixels; the model takes "
                f"{shape[1]}x{shape[0]} images and does not resize them: resize it first"
            )
        return np.reshape(image.numpy(), (1, *shape)).astype(like.dtype)
    try:
        array = np.load(path)
    except (OSError, ValueError):  # not NumPy's format (nor pickles, which it refuses)
        raise SystemExit(
            f"predict: {path} is not an .npy or .npz file, nor an image"
        ) from None
    if isinstance(array, np.lib.npyio.NpzFile):
        if "x" not in array.files:
            raise SystemExit(
                f"predict: {path} has no array 'x' (its arrays: {array.files})"
            )
        array = array["x"]
    if array.shape == shape:
        array = array[None]  # one example
    kind_ok = np.can_cast(array.dtype, like.dtype, "same_kind")  # no floats for uint8
    if array.shape[1:] != shape or not kind_ok:
        raise SystemExit(
            f"predict: {path} holds {array.dtype} examples of shape {array.shape[1:]}; the "
            f"model takes {like.dtype} examples of shape {shape}"
        )
    return array.astype(like.dtype)


def read_inputs(paths, examples):
    """predict: (names, examples), in the order named (a file of several examples names them
    <path>[<i>]). Every file is read and checked before any is predicted."""
    like, _ = examples
    names, arrays = [], []
    for path in input_files(paths):
        array = read_examples(path, like)
        if len(array) == 1:
            names.append(path)
        else:
            names += [f"{path}[{i}]" for i in range(len(array))]
        arrays.append(array)
    return names, np.concatenate(arrays)


def predict(serve, args, examples):
    """predict: the served model's outputs for each input, a JSON line each in input order
    ("input": its name, then the outputs), written whole to --predictions."""
    destination = args.predictions or os.path.join(args.output_dir, "predictions.jsonl")
    if os.path.isdir(destination) or not os.path.isdir(
        os.path.dirname(destination) or "."
    ):
        raise SystemExit(
            f"--predictions {destination}: not a file in an existing directory"
        )
    all_names, all_inputs = read_inputs(args.inputs, examples)
    lines = []
    for start in range(0, len(all_names), GLOBAL_BATCH_SIZE):
        batch = slice(start, start + GLOBAL_BATCH_SIZE)
        names = all_names[batch]
        inputs = tf.nest.map_structure(lambda values: values[batch], all_inputs)
        try:
            outputs = {name: output.numpy() for name, output in serve(inputs).items()}
        except tf.errors.InvalidArgumentError:
            # An input the model to serve cannot read (a damaged image): named, one by one.
            for i, name in enumerate(names):
                try:
                    serve(
                        tf.nest.map_structure(lambda values: values[i : i + 1], inputs)
                    )
                except tf.errors.InvalidArgumentError as error:
                    problem = error.message.split("[[")[0].strip()
                    raise SystemExit(f"predict: {name}: {problem}") from None
            raise
        for i, name in enumerate(names):
            record = {"input": name}
            for key, values in outputs.items():
                value = values[i]
                # bytes: a class name; NumPy numbers and arrays: JSON numbers and lists (of
                # bytes too, class names in arrays: decoded by json.dumps's default).
                record[key] = (
                    value.decode() if isinstance(value, bytes) else value.tolist()
                )
            lines.append(json.dumps(record, default=bytes.decode) + "\n")
    # Another predict may write the same file: each writes its own partial file.
    partial = f"{destination}.{os.getpid()}.partial"
    try:
        with open(partial, "w") as f:
            f.writelines(lines)
        os.replace(partial, destination)
    except BaseException:  # a full disk: no half file left behind
        if os.path.exists(partial):
            os.remove(partial)
        raise
    print(f"{len(lines)} predictions written to {destination}")


# --- Debugging ------------------------------------------------------------------------


def execution_modes(args):
    """How TensorFlow runs this process's ops, set before anything is traced: --deterministic
    and the debugging flags. Returns whether the steps may compile with XLA, which cannot run
    the numerics checks of --check-numerics and --dump-debug-info."""
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The modules that only debugging needs are imported where it does.
    if args.eager:
        import warnings

        tf.config.run_functions_eagerly(True)
        # tf.data's functions stay compiled, which TensorFlow warns of at each: as meant.
        warnings.filterwarnings(
            "ignore", "Even though the `tf.config.experimental_run_functions"
        )
        print(
            "--eager: the steps run as plain Python, slowly (print, breakpoint() and pdb work)"
        )
    if args.check_numerics:
        tf.debugging.enable_check_numerics()
        print(
            "--check-numerics: the first NaN or Inf stops the run; the steps run without XLA"
        )
    if args.dump_debug_info:
        import atexit

        directory = os.path.join(args.output_dir, "logs", "debugger")
        tf.debugging.experimental.enable_dump_debug_info(
            directory, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
        )
        # Written out as the process ends, however it ends.
        atexit.register(tf.debugging.experimental.disable_dump_debug_info)
        print(
            f"--dump-debug-info: every op's outputs into {directory} (tensorboard --logdir "
            f"{directory}, then the Debugger V2 tab); the steps run without XLA"
        )
    return not (args.check_numerics or args.dump_debug_info)


def nonfinite_op(error):
    """--check-numerics: which op made the first NaN or Inf, and where this script (or your
    module) created it, from TensorFlow's error; None for another error."""
    found = isinstance(error, tf.errors.InvalidArgumentError) and re.search(
        r'Infinity or NaN in output (\d+) of (graph|eagerly-executing) op "([^"]+)"',
        error.message,
    )
    if not found:
        return None
    import linecache

    # A graph op's creation is in TensorFlow's message, with "->" marking user code.
    if found[2] == "graph":
        frames = re.findall(r"\+ (\S+) \(L(\d+)\) (\S+)\n -> \|", error.message)
        # It shortens long paths from the left: the loaded file whose path ends so.
        files = [__file__] + [
            getattr(module, "__file__", None) or ""
            for module in list(sys.modules.values())
        ]
        frames = [
            (
                next((file for file in files if file.endswith(path.lstrip("."))), path),
                int(line),
                function,
            )
            for path, line, function in frames
        ]
    else:  # an eager op's frames are the traceback's
        frames = [
            (frame.filename, frame.lineno, frame.name)
            for frame in traceback.extract_tb(error.__traceback__)
        ]
    # Not the libraries' frames: the script's, and those of your modules.
    frames = [
        frame
        for frame in frames
        if "-packages" not in frame[0] and not frame[0].startswith(sys.base_prefix)
    ]
    where = frames[-1:] + [frame for frame in frames if frame[0] == __file__][-1:]
    lines = [
        f"  {os.path.basename(p)}:{n}, in {f}: {linecache.getline(p, n).strip()}"
        for p, n, f in dict.fromkeys(where)
    ]
    return f'output {found[1]} of op "{found[3]}", created at\n' + "\n".join(lines)


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run, on N steps, in a temporary directory removed
    after (--output-dir is not touched): a crash that a long run would meet only at its end
    (in a validation, a checkpoint, the export) shows in seconds."""
    import tempfile

    n, scratch = args.fast_dev_run, tempfile.mkdtemp(prefix="fast-dev-run-")
    stages = [
        (
            {"max_steps": n},
            f"train {n} steps, validate {n} batches, save a checkpoint, export",
        ),
        ({"max_steps": 2 * n}, f"resume from the checkpoint, train {n} more"),
        ({"command": "evaluate"}, "evaluate the checkpoint"),
        ({"command": "predict", "inputs": None}, "predict with the checkpoint"),
    ]
    try:
        examples = load_examples()[0]
        for changes, stage in stages:
            # The scratch directory is this process's alone: no lock to take again each stage.
            staged = argparse.Namespace(
                **{**vars(args), "output_dir": scratch, "no_lock": True, **changes}
            )
            if "inputs" in changes:
                staged.inputs = dev_inputs(examples, scratch, n)
            with dev_stage(stage):
                run = RunDirectory(staged)
                try:
                    train(staged, run)
                except BaseException as error:
                    run.end(error)
                    raise
                run.end()
            # The later stages build the same networks: one summary of them is enough.
            keras.Model.summary = lambda *args, **kwargs: None
        with dev_stage("serve the export"):
            serve_once(os.path.join(scratch, "export"), examples, n)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"--fast-dev-run: every stage ran (in {scratch}, removed)")


@contextlib.contextmanager
def dev_stage(stage):
    """--fast-dev-run: one stage, announced, then OK and its time (or FAILED, and the error)."""
    print(f"--fast-dev-run: {stage} ...")
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        print(f"--fast-dev-run: {stage}: FAILED")
        raise
    print(f"--fast-dev-run: {stage}: OK ({time.perf_counter() - started:.1f} s)")


def dev_inputs(examples, directory, count):
    """--fast-dev-run: inputs for predict, of the training data's kind."""
    path = os.path.join(directory, "inputs.npy")
    np.save(path, np.asarray(tf.nest.flatten(examples)[0][:count]))
    return [path]


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


@contextlib.contextmanager
def gradients_applied(*optimizers):
    """replay: the gradients each optimizer is handed, by id of their variable. The step runs
    eagerly: its apply_gradients calls are plain Python calls, which this watches."""
    seen = {}

    def watching(apply):
        def apply_gradients(grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            seen.update({id(v): g for g, v in grads_and_vars if g is not None})
            return apply(grads_and_vars, *args, **kwargs)

        return apply_gradients

    for optimizer in optimizers:
        optimizer.apply_gradients = watching(optimizer.apply_gradients)
    try:
        yield seen
    finally:
        for optimizer in optimizers:
            del optimizer.apply_gradients


def batch_of_step(examples, step):
    """The batch that step `step` trains on, as training_batches() gives it: a function of the
    step alone."""
    batches = training_batches(
        examples, start_step=step - 1, context=tf.distribute.InputContext()
    )
    return next(iter(batches))


def replay(args):
    """replay --step N: trains step N again, exactly as the run trained it, and shows what it
    computed. The run's newest checkpoint before step N (before the first, the initial weights,
    which SEED fixes) is resumed in a scratch directory; the steps after it run as the run ran
    them (the batches, noise and order are functions of the step), up to step N - 1; then step
    N runs eagerly, every op checked (replayed). The run's own directory is only read.
    """
    run = RunDirectory(args)
    run.lock()  # shared: no run may train there meanwhile
    last, flags = run.replayable()
    if args.step > last:
        raise SystemExit(
            f"replay --step {args.step}: {args.output_dir} can replay steps 1 to {last}"
        )
    import tempfile

    path = run.checkpoint_before(args.step)
    # The run's own weights; its --init-from gives the start only before its first checkpoint.
    if path:
        flags["init_from"] = None
    scratch = tempfile.mkdtemp(prefix="replay-", dir=args.output_dir)
    try:
        if path:  # linked, not copied: a checkpoint may be large
            run.link_checkpoint(path, os.path.join(scratch, "checkpoints"))
        start = (
            f"{os.path.basename(path)} (step {path.rsplit('-', 1)[1]})"
            if path
            else "the initial weights"
        )
        print(f"Replaying step {args.step} of {args.output_dir} from {start}")
        # The run's own flags (its length decides the schedules), on one device.
        replaying = argparse.Namespace(
            **{
                **vars(args),
                **flags,
                "command": "train",
                "output_dir": scratch,
                "max_steps": args.step,
                "replay_of": args.output_dir,
            }
        )
        train(replaying, RunDirectory(replaying))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def replayed(step, networks, optimizers, train_values, logged=True, again=None):
    """replay: the train_loop call of step `step` alone (run.bound ends the calls around it),
    run eagerly with every op checked. Then prints what it computed: its loss (and the epoch's
    running values, as the run logs them, `logged` at this step), each layer's weight norm
    after it, gradient norm and update, and where a NaN or Inf first appeared; and the replay
    ends there. A check stops the step at its first NaN or Inf, before its loss is counted:
    `again` then runs it once more, unchecked, from the state before it: its loss."""
    tf.config.run_functions_eagerly(True)
    tf.debugging.enable_check_numerics()
    # Whole tracebacks: the innermost Keras layer in one names the layer that made a NaN.
    keras.config.disable_traceback_filtering()
    tf.debugging.disable_traceback_filtering()
    sums_before = running_sums(train_values)
    weights_before = {
        id(w): w.numpy() for net in networks.values() for w in net.trainable_weights
    }
    # What the step changes (weights, dropout's seeds, slots, means): `again` starts there.
    state = [v for net in networks.values() for v in net.variables]
    state += [v for optimizer in optimizers for v in optimizer.variables]
    state += [v for value in train_values for v in value.variables]
    state_before = [v.numpy() for v in state] if again else []
    failure = None
    # TensorFlow also logs a failing op's report, with its inputs' values, below Python on
    # stderr: kept off the console (the summary below names the op, its layer and line).
    with gradients_applied(*optimizers) as gradients, native_stderr_silenced():
        try:
            yield
        except tf.errors.InvalidArgumentError as error:
            failure = error
    # What follows is the replay's own arithmetic, not the step's: unchecked, and in float64
    # NumPy (the squares of the weights of a diverged run overflow float32).
    tf.debugging.disable_check_numerics()
    sums_after = running_sums(train_values)
    if failure is not None and again:
        checked = [v.numpy() for v in state]  # what the checked step left, shown below
        for variable, value in zip(state, state_before):
            variable.assign(value)
        # Whatever it raises, the replay reports what the checked step found.
        with contextlib.suppress(Exception), native_stderr_silenced():
            again()
        sums_after = running_sums(train_values)
        for variable, value in zip(state, checked):
            variable.assign(value)
    print(f"\nStep {step}, eagerly, every op checked:")
    values = step_values(sums_before, sums_after)
    for name, value in values.items():
        print(f"  {name}: {value:.9g}")
    if failure is not None and not values:
        print(
            "  (its loss not counted: the step stopped at its first NaN or Inf, below)"
        )
    elif failure is not None:
        print(
            "  (run again unchecked: checked, the step stopped at its first NaN or Inf, below)"
        )
    elif logged:
        print(
            "  as logged (the epoch's running values): "
            + "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        )
    else:
        print(
            "  the epoch's running values (this step was not logged): "
            + "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        )
    print(
        f"  {'layer':<32} {'weight norm':>12} {'gradient norm':>14} {'update / weight':>16}"
    )
    shown = set()  # a layer two models share (tied embeddings): one row
    for name, net in networks.items():
        for layer in layers_of(net):
            # The network's trainable weights in the layer, also where the layer itself is
            # frozen and parts of it train (LoRA's adapters in a backbone it froze).
            weights = [w for w in layer.weights if id(w) in weights_before]
            if not weights or id(layer) in shown:
                continue
            shown.add(id(layer))
            before = [weights_before[id(w)] for w in weights]
            after = [w.numpy() for w in weights]
            grads = [gradients[id(w)] for w in weights if id(w) in gradients]
            gradient = f"{global_norm64(grads):14.6g}" if grads else f"{'-':>14}"
            size = global_norm64(before)
            # ||after - before|| / ||before||, as logging.inspect's update_ratio.
            if failure is None and size > 0:
                ratio = f"{global_norm64(after, minus=before) / size:16.3g}"
            else:
                ratio = f"{'-':>16}"
            print(
                f"  {name + '/' + layer.name:<32} {global_norm64(after):12.6g} {gradient} {ratio}"
            )
    if failure is None:
        print("Every op's outputs were finite.")
        raise SystemExit(0)  # the steps after it are another replay's
    layer = innermost_layer(failure)
    where = (
        f"layer {layer.name} ({type(layer).__name__}): " if layer is not None else ""
    )
    print(f"The first NaN or Inf: {where}{nonfinite_op(failure)}")
    raise SystemExit(1)


def global_norm64(arrays, minus=None):
    """replay: the global norm of tensors (dense or sparse) or arrays (less `minus`'s), in
    float64: no overflow for weights up to 1e150, inf or nan where they are, never an error.
    """
    with np.errstate(all="ignore"):
        arrays = [np.asarray(tf.convert_to_tensor(a), np.float64) for a in arrays]
        if minus is not None:
            arrays = [a - b for a, b in zip(arrays, minus)]
        return float(np.sqrt(sum(np.sum(np.square(a)) for a in arrays)))


def running_sums(train_values):
    """replay: each running mean's total and count, to tell one step's value from the mean."""
    return {
        value.name: [float(v.numpy()) for v in value.variables]
        for value in train_values
        if isinstance(value, keras.metrics.Mean)
    }


def was_logged(directory, step):
    """replay: whether the run in `directory` logged its training values at `step`
    (metrics.jsonl; True where it keeps none)."""
    path = os.path.join(directory, "metrics.jsonl")
    if not os.path.exists(path):
        return True
    with open(path) as f:
        for line in f:
            with contextlib.suppress(ValueError):  # a line a kill cut short
                record = json.loads(line)
                # Training's values (a validation's or an inspection's have no speed).
                if record.get("step") == step and "steps_per_second" in record:
                    return True
    return False


def step_values(before, after):
    """replay: each mean's value over the steps between two running_sums()."""
    return {
        name: (after[name][0] - before[name][0]) / (after[name][1] - before[name][1])
        for name in after
        if after[name][1] > before[name][1]
    }


@contextlib.contextmanager
def native_stderr_silenced():
    """Writes to the process's stderr (file descriptor 2, where TensorFlow's C++ logs go)
    dropped while it runs."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def layers_of(network):
    """The layers of a network, those of the models nested in it too, in order."""
    for layer in network.layers:
        yield from layers_of(layer) if isinstance(layer, keras.Model) else [layer]


def innermost_layer(error):
    """The innermost Keras layer being called when an eager op raised `error` (None when no
    layer was: the loss, or the gradients)."""
    layer, trace = None, error.__traceback__
    while trace is not None:
        candidate = trace.tb_frame.f_locals.get("self")
        if isinstance(candidate, keras.layers.Layer) and not isinstance(
            candidate, keras.Model
        ):
            layer = candidate
        trace = trace.tb_next
    return layer


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "mnist_distillation",
    "spec_sha256": "4859a9a0dba00642",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "d0606c214ea99531",
    "data.train": "ac80475db1cd2d63",
    "data.validation": "50f4886e3ff5d540",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.rescale": 1 / 255,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1cc7478308637600",
    "training": "898650e1c957c5c8",
    "loss": "071318bbec99592d",
}


# The system's reasons for failing a write that no fix of this script would help: what
# happened, and what to do.
MACHINE_FAULTS = {
    errno.ENOSPC: ("The disk is full", "free some space"),
    errno.EDQUOT: ("The disk quota is used up", "free some space"),
    errno.EFBIG: (
        "The file grew beyond the size this process may write",
        "raise ulimit -f",
    ),
    errno.EROFS: (
        "The file system is read-only",
        "pass an --output-dir on a writable one",
    ),
    errno.EACCES: (
        "This user may not write there",
        "pass an --output-dir it can write",
    ),
    errno.EPERM: ("This user may not write there", "pass an --output-dir it can write"),
    errno.EEXIST: ("--output-dir names a file", "pass a directory"),
    errno.ENOTDIR: ("A part of --output-dir is a file", "pass a directory"),
}


class RunDirectory:
    """The output directory, kept sound: one run at a time (run.lock), how each run started and
    ended (runs.jsonl), checkpoints of one training setup only (checkpoints/setup.json) and
    saved whole, and the logged values (TensorBoard's logs/, metrics.jsonl).
    """

    def __init__(self, args):
        self.args, self.path = args, args.output_dir
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.run = self.resumed_from = self.init_from = self.saved = None
        self.writers, self.preempted = {}, False

    def lock(self):
        """Takes the directory's lock, or stops: two runs writing one directory would overwrite
        each other's checkpoints. An flock: the OS drops it when the process ends, even by
        SIGKILL. run.lock names the run that holds it."""
        reader = self.args.command != "train"
        if reader and not os.path.isdir(self.checkpoints):
            raise SystemExit(
                f"Nothing to {self.args.command}: {self.path} holds no checkpoints."
            )
        # The directories this run makes, the deepest first: a failed download removes them.
        self.made_folders, folder = [], os.path.abspath(self.path)
        while not os.path.exists(folder):
            self.made_folders.append(folder)
            folder = os.path.dirname(folder)
        made = not os.path.isdir(self.path)
        os.makedirs(self.path, exist_ok=True)
        # undo() removes it again if the run is refused before it starts.
        self.made = made
        if self.args.no_lock:
            if not self.args.fast_dev_run:  # whose scratch directory is its own
                print(f"Not locking {self.path} (--no-lock): no other run may use it.")
            return
        existed = os.path.exists(os.path.join(self.path, "run.lock"))
        self.lock_file = open(os.path.join(self.path, "run.lock"), "a+")
        try:
            # evaluate and predict and replay reads: any number of them at once, but not while a run trains.
            fcntl.flock(
                self.lock_file,
                (fcntl.LOCK_SH if reader else fcntl.LOCK_EX) | fcntl.LOCK_NB,
            )
        except BlockingIOError:
            self.lock_file.seek(0)
            holder = self.lock_file.read().strip() or "it has not written its pid yet"
            try:  # open to a reader: readers hold it, and run.lock names the last run to train
                fcntl.flock(self.lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB)
                holder = "evaluate or predict or replay reads it"
            except BlockingIOError:
                pass
            raise SystemExit(
                f"{self.path} is in use by another run ({holder}). Wait for it to end, or "
                "pass another --output-dir."
            ) from None
        except OSError as error:  # ENOLCK, ENOSYS: a file system that refuses locks
            raise SystemExit(
                f"Cannot lock {self.lock_file.name}: {error.strerror}. This file system does "
                f"not support locks; if no other run uses {self.path}, run again with --no-lock."
            ) from None
        if reader:
            return
        # What run.lock said before this run: a run that stops before it wrote anything else
        # (a failed download) puts it back.
        self.lock_file.seek(0)
        self.found = self.lock_file.read()
        # What it said before this run (None: no file), for undo().
        self.lock_file.seek(0)
        self.lock_text = self.lock_file.read() if existed else None
        # Often the first write of a run: the one a full disk fails.
        try:
            with writing(self.lock_file.name):
                self.lock_file.truncate(0)
                self.lock_file.write(
                    f"pid {os.getpid()} on {socket.gethostname()}, started {now()}\n"
                )
                self.lock_file.flush()
        except OSError:
            # Nothing of it was written: no empty run.lock is left (nor the directory this run
            # made), as if the run had never started.
            if os.path.getsize(self.lock_file.name) == 0:
                os.remove(self.lock_file.name)
                if made:
                    os.rmdir(self.path)
            raise
        # What a run killed mid-export left.
        settle_whole(os.path.join(self.path, "export"))

    def unlock(self):
        """Leaves the directory as this run found it, when the run stopped before it wrote
        anything there but run.lock (a download failed): run.lock holds what it held (or is
        removed, with the directories this run made if nothing else is in them), and the lock
        is released."""
        text = getattr(self, "found", None)
        if text is None:
            return  # not locked by this run (--no-lock, another run's, a reader's)
        if text:
            self.lock_file.truncate(0)
            self.lock_file.write(text)
            self.lock_file.flush()
        else:  # (end() may have removed it already: undo())
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.lock_file.name)
        self.lock_file.close()  # the flock goes with it
        self.found = None
        for folder in self.made_folders:
            if not os.path.isdir(folder):
                continue  # removed by undo() already
            if os.listdir(folder):
                break
            os.rmdir(folder)

    def restore(self, checkpoint, examples, **networks):
        """Resumes from the newest checkpoint that restores (a damaged one is reported and the
        one before it used), if setup.json says they are this setup's: SETUP, the network's
        weights (a hand edit of build_model) and the training data (`examples`, its files). A
        new run records its setup there, and may start from the weights of another run
        (--init-from)."""
        setup = {**SETUP, "weights": weights_fingerprint(*networks.values())}
        self.data = data_record(examples)
        self.examples = examples  # a diverged step's batch is read again from them
        self.checkpoint = checkpoint  # replay watches its networks and optimizers
        setup_path = os.path.join(self.checkpoints, "setup.json")
        if self.args.command != "train":
            return self.restore_to_read(checkpoint, setup, networks)
        # Before the manager reads the state file, which may be damaged.
        paths = checkpoint_paths(self.checkpoints)
        self.manager = tf.train.CheckpointManager(
            checkpoint, self.checkpoints, KEEP_CHECKPOINTS
        )
        self.remove_partial_checkpoints(self.manager.directory)
        if not paths:
            # What a run killed before its first checkpoint logged.
            self.forget_logged_after(0)
            if self.args.init_from:
                self.init_from = load_weights(self.args.init_from, **networks)
            os.makedirs(self.checkpoints, exist_ok=True)
            self.wrote_setup = True  # undo() removes it again if the run is refused
            with open(setup_path, "w") as f:
                return json.dump({**setup, "data": self.data}, f, indent=2)
        if self.args.init_from:
            raise SystemExit(
                f"--init-from {self.args.init_from}: {self.checkpoints} already holds this run's "
                "checkpoints. Run without --init-from to resume it, or pass a new --output-dir."
            )
        self.check_setup(setup)
        self.check_data(setup_path)
        for path in reversed(paths):
            try:
                restore_whole(checkpoint, path)
            except (
                Exception
            ) as error:  # damaged files raise OpError, IndexError, MemoryError
                print(f"Cannot restore {path}: {checkpoint_damage(error)}")
                continue
            self.resumed_from, self.saved = path, int(checkpoint.step.numpy())
            print(f"Resumed from {path} at step {self.saved}")
            return self.forget_logged_after(self.saved)
        raise SystemExit(
            f"None of the checkpoints restores ({', '.join(paths)}): see the errors above. "
            "Move them away (or pass another --output-dir) to start from scratch."
        )

    def check_setup(self, setup, doing="resume from"):
        """Stops unless setup.json says the checkpoints are of this setup."""
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        differences = [
            f"  {key}: {saved.get(key)!r} in the checkpoints, {setup.get(key)!r} in this run"
            for key in {**setup, **saved}
            if key != "data" and saved.get(key) != setup.get(key)  # data: check_data()
        ]
        if differences:
            raise SystemExit(
                f"Refusing to {doing} {self.checkpoints}: its checkpoints come from another "
                "training setup (SETUP in this script; weights: the names, shapes and dtypes "
                "of the network's variables). What differs:\n"
                + "\n".join(differences)
                + "\n"
                "Undo the change, or train in a new --output-dir (with --init-from "
                f"{self.path} to start from those weights)."
            )

    def check_data(self, setup_path):
        """Stops unless the training data is the one setup.json records, or --new-data accepts
        other data (then setup.json records it). An epoch's length and order follow from the
        data: on other data, a resumed run continues a run that never was. A setup.json that
        records no data (an earlier script's) is not checked."""
        with open(setup_path) as f:
            saved = json.load(f)
        recorded = saved.get("data")
        if recorded is None or recorded == self.data:
            return
        differences = []
        if recorded["examples"] != self.data["examples"]:
            differences.append(
                f"  data.train: {recorded['examples']} examples in the checkpoints, "
                f"{self.data['examples']} in this run"
            )
        files = {**recorded["files"], **self.data["files"]}
        for path in files:
            before, now = recorded["files"].get(path), self.data["files"].get(path)
            if before != now:
                differences.append(
                    f"  {path}: {before or 'absent'} in the checkpoints, {now or 'absent'} in this run"
                )
        if not self.args.new_data:
            raise SystemExit(
                f"Refusing to resume from {self.checkpoints}: its checkpoints were trained on "
                "other data (setup.json records the number of examples and each file's size and "
                "time). What differs:\n" + "\n".join(differences) + "\n"
                "Put the data back; or resume on this data on purpose with --new-data (an epoch "
                "then has another length and order); or train in a new --output-dir (with "
                f"--init-from {self.path} to start from those weights)."
            )
        print(
            "Resuming on other training data (--new-data):\n" + "\n".join(differences)
        )
        with open(setup_path, "w") as f:
            json.dump({**saved, "data": self.data}, f, indent=2)

    def restore_to_read(self, checkpoint, setup, networks):
        """evaluate, predict, replay: the weights of --checkpoint (latest or a path), of this setup. Nothing in
        the directory is written."""
        self.check_setup(setup, f"{self.args.command} with")
        path = self.args.checkpoint
        if path == "latest":
            path = (checkpoint_paths(self.checkpoints, repair=False) or [None])[-1]
        if path is None:
            raise SystemExit(
                f"--checkpoint {self.args.checkpoint}: none in {self.checkpoints}"
            )
        try:
            restore_whole(checkpoint, path)
        except Exception as error:  # a path that is no checkpoint, damaged files
            raise SystemExit(
                f"--checkpoint: cannot restore {path}: {checkpoint_damage(error)}"
            ) from None
        number = re.search(r"-(\d+)$", path)  # ckpt-<step>
        self.resumed_from, self.saved = path, int(number[1]) if number else None

    def replayable(self):
        """replay: the last step it can replay (that a run of this directory reached), and the
        flags of the run's newest start that decide what a step trains."""
        records = []
        if os.path.exists(os.path.join(self.path, "runs.jsonl")):
            with open(os.path.join(self.path, "runs.jsonl")) as f:
                for line in f:
                    with contextlib.suppress(ValueError):  # a line a kill cut short
                        records.append(json.loads(line))
        starts = [r for r in records if r.get("event") == "start"]
        if not starts:
            raise SystemExit(
                f"Nothing to replay: {self.path} holds no run's start (runs.jsonl)."
            )
        # The network's fingerprint is checked when the checkpoint restores.
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        self.check_setup({**SETUP, "weights": saved.get("weights")}, "replay")
        ends = [r for r in records if r.get("event") == "end"]
        saved = [
            int(path.rsplit("-", 1)[1])
            for path in checkpoint_paths(self.checkpoints, repair=False)
        ]
        reached = [r.get("nan_step", r.get("step", 0)) for r in ends] + saved
        flags = {
            name: starts[-1]["flags"][name]
            # An --overfit-batches run trains on its batches alone: so does its replay.
            for name in ("epochs",)
            if name in starts[-1]["flags"]
        }
        # Not the run's --deterministic: TensorFlow's deterministic sparse cross-entropy makes a
        # NaN for each label out of range, kept for those alone, and the replayed step's check
        # would stop at it. Its values without it are the run's within rounding.
        flags["init_from"] = starts[0]["flags"].get("init_from")
        return max([*reached, 0]), flags

    def checkpoint_before(self, step):
        """replay: the newest checkpoint of a step before `step` (None: none is left)."""
        paths = checkpoint_paths(self.checkpoints, repair=False)
        before = [path for path in paths if int(path.rsplit("-", 1)[1]) < step]
        return before[-1] if before else None

    def link_checkpoint(self, path, directory):
        """replay: `path` as the one checkpoint of `directory`: its files hard-linked (copied
        where the file system cannot link; TensorFlow never writes into a checkpoint's files),
        setup.json copied."""
        os.makedirs(directory)
        for file in glob.glob(path + ".*"):
            target = os.path.join(directory, os.path.basename(file))
            try:
                os.link(file, target)
            except OSError:
                shutil.copyfile(file, target)
        shutil.copyfile(
            os.path.join(self.checkpoints, "setup.json"),
            os.path.join(directory, "setup.json"),
        )
        name = os.path.basename(path)
        with open(os.path.join(directory, "checkpoint"), "w") as f:
            f.write(
                f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n'
            )

    def write_batch(self, step):
        """debug/step-<step>/batch.npz: the batch step `step` trained on, as the step received
        it (a function of the step alone: read again). Returns the folder."""
        folder = os.path.join(self.path, "debug", f"step-{step}")
        parts = dict(zip(["images", "labels"], self.batch_of(step)))
        arrays = {
            "/".join(map(str, path)): np.asarray(v)
            for path, v in keras.tree.flatten_with_path(parts)
        }
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "batch.npz")
        with open(
            path + ".partial", "wb"
        ) as f:  # written aside, then renamed: whole or not at all
            np.savez(f, **arrays)
        os.replace(path + ".partial", path)
        return folder

    def batch_of(self, step):
        """The batch step `step` trained on (a function of the step alone: read again)."""
        return batch_of_step(self.examples, step)

    def train_again(self):
        """replay: step N once more, unchecked, when its checked run stopped at a NaN or Inf:
        the loss it makes."""
        self.train_step(*self.batch_of(self.args.step))

    def evaluated(self, values):
        """evaluate: prints the validation values and appends them to evaluations.jsonl."""
        values = {"val_" + name: value for name, value in values.items()}
        print(f"{self.resumed_from} (step {self.saved}):")
        print("  ".join(f"{name}: {value:.4f}" for name, value in values.items()))
        record = {"checkpoint": self.resumed_from, "step": self.saved, **values}
        self.append("evaluations.jsonl", record)

    def start(self, step, nonfinite_step, total_steps, strategy, train_step):
        """Writes the run's start record to runs.jsonl (main() writes its end record), once the
        steps it trains are known to hold those --profile names."""
        self.step, self.nonfinite_step = step, nonfinite_step
        # The steps a train_loop call must end at: --profile's first and last.
        self.bounds, self.call = (), None
        self.train_step = train_step  # replay: runs a step stopped at a NaN again
        done = int(step.numpy())
        if done >= total_steps:
            print(f"Already at step {done} of {total_steps}: nothing left to train.")
        if self.args.step:  # replay: step N runs alone
            self.bounds = (self.args.step - 1, self.args.step)
        if self.args.profile:
            first, last = self.args.profile
            if done >= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run is at step {done} of {total_steps}, "
                    "with none left to trace"
                )
            if not done < first <= last <= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run trains steps {done + 1} to {total_steps}; "
                    "give START:STOP within them"
                )
            self.bounds = (first - 1, last)
        # Schedulers (Slurm, Kubernetes, spot VMs) preempt with SIGTERM, then SIGKILL after a
        # grace period: the loop ends its train_loop call, saves a checkpoint and exits.
        signal.signal(
            signal.SIGTERM, lambda signum, frame: setattr(self, "preempted", True)
        )
        rendered, current = script_checksums()
        self.run = os.urandom(4).hex()
        # fmt: off
        self.append("runs.jsonl", {
            "event": "start", "run": self.run, "time": now(), **RENDERED_FROM,
            "script": os.path.abspath(__file__), "script_sha256": current,
            "script_edited": current != rendered, "command": sys.argv, "flags": vars(self.args),
            "python": sys.version.split()[0], "tensorflow": tf.__version__,
            "keras": keras.__version__, "host": socket.gethostname(), "pid": os.getpid(),
            "strategy": 'MirroredStrategy',
            "replicas": strategy.num_replicas_in_sync,
            "devices": [device.name for device in tf.config.list_logical_devices()],
            "resumed_from": self.resumed_from, "init_from": self.init_from, "step": int(step.numpy()),
        })
        # fmt: on

    def writer(self, split):
        """The TensorBoard writer of logs/<split>: tensorboard --logdir <output-dir>/logs."""
        if split not in self.writers:
            logdir = os.path.join(self.path, "logs", split)
            self.writers[split] = tf.summary.create_file_writer(logdir)
        return self.writers[split]

    def start_epoch(self, epoch, epochs, first_step, end_step, metrics):
        """Starts an epoch: its running means from zero, its progress bar, and the throughput
        timer (validation and checkpoints are not counted: it runs from log point to log
        point). Resumed in its middle, it continues the means the checkpoint holds."""
        self.train_values = metrics  # replay prints them
        # Resumed in this epoch's middle (the newest checkpoint is past its first step).
        resumed_at = max(first_step, self.saved or 0)
        if resumed_at == first_step:
            for metric in metrics:
                metric.reset_state()
        # A replay stops at its step: the run's own epochs are what it counts up to.
        print(f"Epoch {epoch + 1}/{self.args.epochs if self.args.step else epochs}")
        # The logged values are running means already: all shown as they are, none averaged.
        steps = end_step - first_step
        self.progbar = keras.utils.Progbar(steps, stateless_metrics=())
        self.epoch_start, self.timer = first_step, (time.perf_counter(), resumed_at)

    def log(self, split, step, epoch, values):
        """Writes logged values: to TensorBoard, and to metrics.jsonl with the
        validation values named apart (val_loss, val_...), which are also printed."""
        if split == "train":
            # Timed after the values were read, which waited for the device.
            start, start_step = self.timer
            self.timer = time.perf_counter(), step
            values["steps_per_second"] = (step - start_step) / (self.timer[0] - start)
            self.progbar.update(step - self.epoch_start, list(values.items()))
        with self.writer(split).as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)
        prefix = "val_" if split == "validation" else ""
        values = {prefix + name: value for name, value in values.items()}
        if split == "validation":
            print("  ".join(f"{name}: {value:.4f}" for name, value in values.items()))
        record = {"step": step, "epoch": epoch + 1, **values}
        self.append("metrics.jsonl", record)

    def bound(self, step):
        """The first step after `step` that ends a train_loop call for the debugging flags:
        --profile's first and last; each with --check-numerics (a NaN then names its step), in a
        replay (each one's loss printed) and while --profile traces (the profiler counts
        a call as a step)."""
        first, last = self.args.profile or (0, 0)
        if self.args.check_numerics or self.args.step or first - 1 <= step < last:
            return step + 1
        return min((bound for bound in self.bounds if bound > step), default=math.inf)

    @contextlib.contextmanager
    def debugged(self, first_step, num_steps):
        """A train_loop call of steps first_step + 1 on: --profile START:STOP has TensorFlow's
        profiler trace the calls of those steps into logs/profile (TensorBoard's Profile tab).
        """
        self.call = first_step + 1  # what --check-numerics's NaN stopped
        if self.args.step == first_step + 1:  # replay: step N, alone (see bound)
            networks = {"model": self.checkpoint.model}
            optimizers = [self.checkpoint.optimizer]
            logged = was_logged(self.args.replay_of, self.args.step)
            values = self.train_values
            with replayed(
                self.args.step, networks, optimizers, values, logged, self.train_again
            ):
                yield
            return
        if self.args.step:  # replay: a step before N, alone, and its loss
            sums = running_sums(self.train_values)
            yield
            values = step_values(sums, running_sums(self.train_values)).items()
            return print(
                f"\nStep {first_step + 1}: "
                + "  ".join(f"{k}: {v:.9g}" for k, v in values)
            )
        first, last = self.args.profile or (0, 0)
        if first_step + 1 == first:
            tf.profiler.experimental.start(os.path.join(self.path, "logs", "profile"))
        # Marks the step in a trace (nothing when the profiler is not running).
        with tf.profiler.experimental.Trace("train", step_num=first_step + 1, _r=1):
            yield
        if first_step + num_steps == last:
            tf.profiler.experimental.stop()
            print()  # after the progress bar's line
            print(
                f"--profile: steps {first} to {last} traced into {os.path.join(self.path, 'logs', 'profile')}"
            )

    def stop_if_diverged(self):
        """Ends the run at a NaN or Inf loss, before a checkpoint saves the weights it ruined."""
        if int(self.nonfinite_step.numpy()) >= 0:
            raise SystemExit(
                self.diverged(
                    int(self.nonfinite_step.numpy()), "The loss became NaN or Inf"
                )
            )

    def diverged(self, step, what, detail=""):
        """What to say of a NaN or Inf at `step`, whose batch goes into debug/step-<step>/."""
        print()  # after the progress bar's line
        if self.args.step:  # replaying: a step before the one asked for
            return f"{what} at step {step}, before step {self.args.step}: replay --step {step}"
        folder = self.write_batch(step)
        command = f"python {sys.argv[0]} replay --step {step} --output-dir {self.path}"
        return (
            f"{what} at step {step}: stopped without saving (newest checkpoint: "
            f"{self.manager.latest_checkpoint or 'none yet'}).{detail}\nThe batch it trained on "
            f"is in {folder}; replay the step, eagerly with every op checked:\n  {command}\n"
            "Lower the learning rate, clip the gradients, or look for NaN in the data."
        )

    def nonfinite(self, error):
        """--check-numerics: what to say of the error of an op that made a NaN or Inf; None for
        another error."""
        found = nonfinite_op(error)
        if found is None:
            return None
        return self.diverged(self.call, "A NaN or Inf", f"\nThe first: {found}")

    def save(self, step):
        """Saves a checkpoint. One the disk cannot hold whole is removed again: the newest
        checkpoint on disk always restores."""
        self.stop_if_diverged()
        try:
            self.manager.save(checkpoint_number=step)
        except BaseException:
            self.remove_partial_checkpoints(self.manager.directory)
            raise
        self.saved = step

    def remove_partial_checkpoints(self, directory):
        """Removes what a save cut short left behind (a full disk, a kill): its _temp directory,
        the files of a checkpoint that the `checkpoint` file does not list, and that file's
        checkpoint.tmp<hex> copy (TensorFlow writes it there, then renames it)."""
        state = tf.train.get_checkpoint_state(directory)
        listed = (
            [os.path.basename(path) for path in state.all_model_checkpoint_paths]
            if state
            else []
        )
        for path in glob.glob(os.path.join(directory, "ckpt-*")):
            if re.match(r"ckpt-\d+", os.path.basename(path)).group(0) not in listed:
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        for path in glob.glob(os.path.join(directory, "checkpoint.tmp*")):
            os.remove(path)
            print(f"Removed {path}: the state file of a save that was cut short")

    def finish(self, step):
        """Saves where training stopped, if no checkpoint is there yet (mid-epoch after
        --max-steps or a SIGTERM, or off the cadence), so that the next run continues from there; after a SIGTERM, exits.
        """
        if self.saved != step:
            self.save(step)
        if self.preempted:
            print(
                f"Stopped by SIGTERM at step {step}; saved {self.manager.latest_checkpoint}."
            )
            raise SystemExit(128 + signal.SIGTERM)  # the status of a SIGTERM death

    def end(self, error=None):
        """Writes the run's end record: finished, sigterm, nan, or error (with its traceback).
        A run killed outright leaves a start record without an end."""
        if self.run is None:  # never started: refused, or stopped before training
            return self.undo() if isinstance(error, SystemExit) else None
        record = {
            "event": "end",
            "run": self.run,
            "time": now(),
            "step": int(self.step.numpy()),
        }
        if error is None:
            record["exit"] = "finished"
        elif isinstance(error, SystemExit) and error.code == 128 + signal.SIGTERM:
            record["exit"] = "sigterm"
        elif int(self.nonfinite_step.numpy()) >= 0:
            record.update(exit="nan", nan_step=int(self.nonfinite_step.numpy()))
        elif nonfinite_op(error):  # --check-numerics
            record.update(exit="nan", nan_step=self.call, op=nonfinite_op(error))
        else:
            record.update(exit="error", error=f"{type(error).__name__}: {error}")
            record["traceback"] = "".join(traceback.format_exception(error))
        try:
            self.append("runs.jsonl", record)
        except OSError as failure:  # the disk that ended the run may refuse this too
            path = os.path.join(self.path, "runs.jsonl")
            print(
                f"Cannot write the end record to {path}: {failure.strerror}",
                file=sys.stderr,
            )

    def forget_logged_after(self, step):
        """Drops the logged records of the steps after `step`, where training goes on: a run
        killed after its last checkpoint logged steps that this run logs again (TensorBoard,
        too, purges the events past a restart). A file is rewritten whole: aside, then renamed
        over it."""
        # Each record starts with its step: {"step": 7, ... in metrics.jsonl, 7,... in metrics.csv.
        for name, pattern in [
            ("metrics.jsonl", r'\{"step": (\d+),'),
        ]:
            path = os.path.join(self.path, name)
            if not os.path.exists(path):
                continue
            with open(path, newline="") as f:
                lines = f.readlines()
            header = 1 if name == "metrics.csv" else 0  # the CSV's column names stay
            # A line whose step cannot be read is a record cut short: it goes too.
            kept = lines[:header] + [
                line
                for line in lines[header:]
                if (found := re.match(pattern, line)) and int(found[1]) <= step
            ]
            if len(kept) == len(lines):
                continue
            with writing(path + ".tmp"), open(path + ".tmp", "w", newline="") as f:
                f.writelines(kept)
            os.replace(path + ".tmp", path)
            dropped = len(lines) - len(kept)
            print(
                f"Dropped from {path} its {dropped} records after step {step}: logged again"
            )

    def undo(self):
        """A run refused before it started (a --profile range, another setup's checkpoints, ...)
        leaves the directory as it was: the setup.json it wrote and the directory it made go
        again, and run.lock says what it said. What cannot be undone stays."""
        with contextlib.suppress(OSError):
            self.remove_what_it_made()

    def remove_what_it_made(self):
        if getattr(self, "wrote_setup", False):
            os.remove(os.path.join(self.checkpoints, "setup.json"))
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.checkpoints)
        lock_text = getattr(self, "lock_text", False)
        if lock_text is None:
            os.remove(self.lock_file.name)
        elif lock_text:
            with open(self.lock_file.name, "w") as f:
                f.write(lock_text)
        if getattr(self, "made", False):
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.path)

    def append(self, name, record):
        """Appends a JSON line, whole or not at all (a full disk would leave part of it), on a
        line of its own: a line an earlier run left cut short stays apart, and readers skip it
        (jq -R 'fromjson?')."""
        # Strict JSON has no NaN or Infinity (jq and JavaScript refuse them): such a value is
        # null, and "nonfinite" says which it was (a NaN is not less than inf either).
        nonfinite = {
            k: json.dumps(v)
            for k, v in record.items()
            if isinstance(v, float) and not abs(v) < float("inf")
        }
        if nonfinite:
            record = {**record, **dict.fromkeys(nonfinite), "nonfinite": nonfinite}
        line = (json.dumps(record) + "\n").encode()
        # Unbuffered: a buffered file's truncate() flushes first, and fails again on a full disk.
        with open(os.path.join(self.path, name), "ab+", buffering=0) as f:
            end = f.seek(0, os.SEEK_END)
            if end:  # a line cut short (a kill mid-write) must not swallow this record
                f.seek(end - 1)
                line = line if f.read(1) == b"\n" else b"\n" + line
            try:
                while line:  # a full disk may take part of it, then refuse the rest
                    line = line[f.write(line) :]
            except OSError as error:
                f.truncate(end)
                error.filename = f.name  # os-level write errors name no file
                raise

    def fault(self, error):
        """What to say when the machine failed the run: a full disk, a directory it may not
        write, a path that is not what it should be. None for other errors (their traceback,
        on stderr, says more)."""
        if isinstance(error, OSError) and error.errno in MACHINE_FAULTS:
            # A write that names no file (see writing()): at least the directory it was in.
            path, code = error.filename or f"into {self.path}", error.errno
        else:  # TensorFlow's file errors say "<path>; <the system's words> [Op:...]"
            words = {os.strerror(code): code for code in MACHINE_FAULTS}
            found = isinstance(error, tf.errors.OpError) and re.search(
                r"([^\s;{}]+); (" + "|".join(words) + ")", error.message
            )
            if not found:
                return None
            # The file being written, not TensorFlow's temporary name for it.
            path = re.sub(
                r"(_temp|\.tempstate\d+|\.tmp[0-9a-f]*)(/.*)?$", "", found.group(1)
            )
            code = words[found.group(2)]
        what, fix = MACHINE_FAULTS[code]
        stopped = f"Stopped: cannot write {path} ({os.strerror(code)}). {what}"
        # Room to make (the same directory will do then), or another place to write.
        room = code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        state = os.path.isdir(self.checkpoints) and tf.train.get_checkpoint_state(
            self.checkpoints
        )
        if state:
            newest = state.model_checkpoint_path
            step = newest.rsplit("-", 1)[1]
            intact = f"The newest checkpoint, {newest} (step {step}), is intact"
            if room:
                return (
                    f"{stopped}: {fix}.\n{intact}: once there is room, run the script again "
                    "with the same --output-dir to resume."
                )
            return (
                f"{stopped}.\n{intact}: to resume from it, run the script again with the same "
                f"--output-dir once it can be written, or copy {self.path} to a place that can "
                "and pass that as --output-dir."
            )
        if self.run and room:
            return (
                f"{stopped}: {fix}.\nNo checkpoint was saved yet: once there is room, run the "
                "script again."
            )
        return f"{stopped}: {fix}."


@contextlib.contextmanager
def writing(path):
    """Names `path` in the error of a write to it: the system's write errors (a full disk, a
    file size limit) name no file, and fault() would not know what could not be written.
    """
    try:
        yield
    except OSError as error:
        error.filename = error.filename or path
        raise


def now():
    """Local time with its UTC offset, to the second: 2026-11-23T14:05:09+0100."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def script_checksums():
    """The checksum the header records (loopgen's render) and that of the text now, computed
    as loopgen does (the field zeroed): they differ once the script is edited by hand.
    """
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"script sha256 ([0-9a-f]{16})", text)
    if found:
        text = text[: found.start(1)] + "0" * 16 + text[found.end(1) :]
    return found and found.group(1), hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def written_whole(directory):
    """A directory written whole or not at all: the files go into <directory>.partial, which
    replaces `directory` once all are written (a full disk leaves no half export behind). The
    two are exchanged in one step where the system can (a server polling `directory` never
    finds it missing), else in two renames, the old one aside to <directory>.old and the new
    one into place (a kill between them leaves <directory>.old: settle_whole() puts it back).
    Then the old one is removed."""
    partial, old = directory + ".partial", directory + ".old"
    settle_whole(directory)
    try:
        with writing(partial):
            os.makedirs(partial)  # a .keras file alone (no SavedModel) needs it made
            yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if os.path.exists(directory):
        if exchange(partial, directory):
            shutil.rmtree(partial, ignore_errors=True)  # the old one, now
            return
        os.rename(directory, old)
    os.rename(partial, directory)
    shutil.rmtree(old, ignore_errors=True)  # settle_whole() removes what is left


def exchange(a, b):
    """Swaps paths `a` and `b` in one step (Linux's renameat2 with RENAME_EXCHANGE); False
    where the system or its file system cannot, an OSError where it fails otherwise."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, rename_exchange = -100, 2  # paths relative to the working directory
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), a, None, b)


def settle_whole(directory):
    """Undoes what a kill in written_whole() left: a <directory>.partial (never finished, or
    the old one exchanged out of place), and a <directory>.old, which is put back if the kill
    came before the new one was in place."""
    partial, old = directory + ".partial", directory + ".old"
    if os.path.exists(old) and not os.path.exists(directory):
        os.rename(old, directory)
        print(f"Put back {directory}: a replacement of it was cut short")
    for leftover in (partial, old):
        if os.path.exists(leftover):
            shutil.rmtree(leftover)
            print(f"Removed {leftover}: left by an interrupted export")


def checkpoint_paths(directory, repair=True):
    """The checkpoints in `directory`, oldest first, as its `checkpoint` file (TensorFlow's
    CheckpointState) lists them. A damaged one would make the run start over and overwrite
    them: then they are found from the ckpt-<step>.index files, and it is rewritten."""
    state_file = os.path.join(directory, "checkpoint")
    try:  # TensorFlow only warns of text it cannot parse, and returns None
        state = tf.train.get_checkpoint_state(directory)
    except (UnicodeDecodeError, ValueError):  # binary garbage; an emptied file
        state = None
    if state or not os.path.exists(state_file):
        return list(state.all_model_checkpoint_paths) if state else []
    steps = sorted(
        int(name[5:-6])
        for name in os.listdir(directory)
        if re.fullmatch(r"ckpt-\d+\.index", name)
    )
    names = [f"ckpt-{step}" for step in steps]
    if repair and names:
        # The CheckpointManager keeps (and later deletes) only the checkpoints saved after
        # last_preserved_timestamp: their save times, from the files.
        saved = [
            os.path.getmtime(os.path.join(directory, f"{name}.index")) for name in names
        ]
        lines = [f'model_checkpoint_path: "{names[-1]}"']
        lines += [f'all_model_checkpoint_paths: "{name}"' for name in names]
        lines += [f"all_model_checkpoint_timestamps: {when!r}" for when in saved]
        lines.append(f"last_preserved_timestamp: {min(saved) - 1!r}")
        # Written aside, then renamed: never a half-written state file.
        with open(state_file + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(state_file + ".tmp", state_file)
    elif repair:
        os.remove(state_file)  # it lists nothing: no checkpoint was saved whole
    if repair:
        found = ", ".join(names) or "none"
        print(f"{state_file} was damaged: rebuilt from the checkpoint files ({found})")
    return [os.path.join(directory, name) for name in names]


def checkpoint_damage(error):
    """What the error of a checkpoint that does not restore says of its files."""
    # std::bad_alloc: a garbled index file gave a size of terabytes to read.
    if isinstance(error, MemoryError):
        return (
            "its index file is damaged (reading it asked for more memory than there is)"
        )
    return f"its files are damaged or are no checkpoint's ({type(error).__name__}: {error})"


def restore_whole(checkpoint, path):
    """Restores every object of `checkpoint` from `path` (what else the file holds is left),
    but the running means, which a checkpoint written before they were saved lacks: they
    start at zero then."""
    restored = checkpoint.restore(path).expect_partial()
    saved = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
    if hasattr(checkpoint, "train_values") and "train_values" not in saved:
        return print(
            f"{path} holds no running means (an older script's): they start at 0"
        )
    restored.assert_existing_objects_matched()


def data_record(examples):
    """The training data, cheaply: how many examples (the source names no file). setup.json
    keeps it: a resume on other data stops."""
    return {"examples": num_examples(examples), "files": {}}


def weights_fingerprint(*networks):
    """sha256 of the name, shape and dtype of every weight: a hand edit of the network in this
    script changes it, where the spec sections in SETUP cannot see one."""
    weights = [
        [w.name, list(w.shape), str(w.dtype)] for net in networks for w in net.weights
    ]
    return hashlib.sha256(json.dumps(weights).encode()).hexdigest()[:16]


def load_weights(source, **networks):
    """--init-from: the networks' weights from the newest checkpoint in `source` (another run's
    output directory), not its optimizer, step or data position. Returns its path."""
    path = tf.train.latest_checkpoint(os.path.join(source, "checkpoints"))
    path = path or tf.train.latest_checkpoint(source)  # the checkpoints folder itself
    if path is None:
        raise SystemExit(
            f"--init-from {source}: no checkpoint in {os.path.join(source, 'checkpoints')}. "
            "Give the --output-dir of a run that saved one."
        )
    try:
        status = tf.train.Checkpoint(**networks).restore(path)
        status.assert_existing_objects_matched().expect_partial()
    except Exception as error:  # another network: ValueError, AssertionError, ...
        raise SystemExit(
            f"--init-from {source}: cannot load {path} into this network "
            f"({type(error).__name__}: {error}). Both runs need the same network."
        ) from None
    print(f"Starting from the weights of {path}")
    return path


class DownloadFailed(SystemExit):
    """A download the run needs failed: one message, and main() leaves the output directory
    as it found it (nothing of the run was written yet)."""


@contextlib.contextmanager
def downloading(what, instead):
    """Where the script downloads (keras.datasets, TFDS, keras.applications' weights): a
    failed download (offline, say) stops the run with one message naming `what` failed and
    the local alternative, `instead`. Other errors pass through as they are."""
    try:
        yield
    except Exception as error:
        if not download_failure(error):
            raise
        reason = (
            str(error).strip().splitlines()[0][:300]
            if str(error).strip()
            else type(error).__name__
        )
        raise DownloadFailed(f"Cannot download {what}: {reason}. {instead}") from None


def download_failure(error):
    """Whether `error`, or one it was raised from, is a failed download: a URL that could not
    be fetched (urllib's URLError, behind keras.utils.get_file's "URL fetch failure"), a host
    name that did not resolve, a connection refused or timed out (requests' and TFDS's own
    errors too)."""
    failures = (
        "URLError",
        "HTTPError",
        "ConnectionError",
        "ConnectTimeout",
        "ReadTimeout",
        "DownloadError",
    )
    while error is not None:
        if (
            isinstance(error, (ConnectionError, TimeoutError, socket.gaierror))
            or type(error).__name__ in failures
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def main(argv=None):
    """Trains, and records in runs.jsonl how the run ended: finished, stopped by SIGTERM or
    a NaN loss, or an error. When the machine failed it (a full disk, ...), says so in a few
    lines: the traceback is in runs.jsonl."""
    args = parse_args(argv)  # the debugging flags checked too
    if args.fast_dev_run:
        return fast_dev_run(args)
    if args.command == "replay":
        return replay(args)
    run = RunDirectory(args)
    try:
        train(args, run)
    except BaseException as error:  # SystemExit and KeyboardInterrupt too
        run.end(error)
        if isinstance(error, DownloadFailed):
            run.unlock()  # nothing of the run was written: the directory is as it was
        message = run.fault(error) or run.nonfinite(error)
        if message is None:
            raise
        raise SystemExit(message) from None
    run.end()


if __name__ == "__main__":
    main()
