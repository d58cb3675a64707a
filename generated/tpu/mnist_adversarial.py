"""Train an MNIST classifier on PGD-perturbed digits, robust within 0.1.

Written by loopgen 0.1.0 from examples/mnist_adversarial.py
(spec sha256 1a97f85283023b71, script sha256 a002721e6af02bff).
Rendered with: --variant tpu
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: TPUStrategy; run it on a Cloud TPU VM. data.batch_size is the global batch.
Run it again to resume from the latest checkpoint (written by any variant).
"""

import argparse
import functools
import math
import os
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        downloading,
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
        read_array_inputs,
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

SEED = 8
GLOBAL_BATCH_SIZE = 128  # over all replicas: each takes a slice
RESCALE = 1 / 255
EPOCHS = 5

# The attack (training.attack): ATTACK_STEPS steps of STEP_SIZE along the sign of the loss's gradient
# with respect to the inputs, each input moved by at most EPSILON and kept in INPUT_RANGE.
EPSILON = 0.1
ATTACK_STEPS = 5
STEP_SIZE = 0.05
INPUT_RANGE = (0.0, 1.0)
LOG_EVERY_STEPS = 100
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/mnist_adversarial"
TPU = ""  # TPU name or grpc:// address; "" for this TPU VM's own


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
        commands=["evaluate", "predict"],
        inputs="predict: .npy or .npz files of examples, image files, and directories of them",
        best=True,
        init_from=True,
        new_data=True,
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
    # TPUs compile for fixed shapes: the smaller last batch of an epoch is dropped.
    steps_per_epoch = count // GLOBAL_BATCH_SIZE
    first_epoch, first_step = divmod(start_step, steps_per_epoch)

    def epoch_batches(epoch):
        order = epoch_order(epoch, count)
        # A resumed run's first epoch starts at its step.
        start = tf.where(
            epoch == first_epoch,
            tf.constant(first_step * GLOBAL_BATCH_SIZE, tf.int64),
            0,
        )
        order = order[start : steps_per_epoch * GLOBAL_BATCH_SIZE]
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
    # Fixed shapes on TPUs: the last GLOBAL_BATCH_SIZE - 1 examples at most are left out.
    batches = indices.batch(GLOBAL_BATCH_SIZE, drop_remainder=True)
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
            layers.Dense(256, activation="relu"),
            layers.Dense(256, activation="relu"),
            layers.Dense(10, name="logits"),
        ],
        name="mnist_adversarial",
    )


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


class ValidationMonitor(tf.Module):
    """The best value so far of a validation value, and how many validations ago it was.
    A tf.Module: its variables go into the checkpoint with the rest of the run's state.
    """

    def __init__(self, monitored, mode, min_delta=0.0, patience=None, restart=False):
        super().__init__()
        self.monitored, self.min_delta, self.patience = monitored, min_delta, patience
        self.restart = restart  # whether the patience starts over once it has run out
        # The best value times `sign`, so that lower is better in both modes.
        self.sign = 1.0 if mode == "min" else -1.0
        self.best = tf.Variable(math.inf, trainable=False)
        self.waited = tf.Variable(0, trainable=False)

    def update(self, logs):
        """Records a validation's value; returns whether it beat the best by min_delta."""
        value = self.sign * logs[self.monitored]
        improved = value < float(self.best.numpy()) - self.min_delta
        if improved:
            self.best.assign(value)
            self.waited.assign(0)
        else:
            self.waited.assign_add(1)
        return improved

    def stalled(self, logs):
        """Records a validation's value; returns whether `patience` validations in a row
        have not improved it."""
        if self.update(logs) or int(self.waited.numpy()) < self.patience:
            return False
        if self.restart:
            self.waited.assign(0)
        return True


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


def random_start(seed, inputs, first, count):
    """Where the attack of `inputs`, examples first, first + 1, ... of a global batch of
    `count`, starts: a uniformly random point of their EPSILON-balls, drawn for the whole
    global batch from `seed`, so that a replica starts its examples where one device would.
    """
    shape = tf.concat([[count], tf.shape(inputs)[1:]], axis=0)
    noise = tf.random.stateless_uniform(shape, seed, minval=-EPSILON, maxval=EPSILON)
    return noise[first : first + tf.shape(inputs)[0]]


def perturb(model, loss_fn, inputs, labels, start):
    """PGD (Madry et al., 2018): from `start` off the inputs, ATTACK_STEPS steps of STEP_SIZE
    along the sign of the loss's gradient with respect to the inputs, each projected back to
    within EPSILON of them. The model runs in inference mode: the attack changes no
    BatchNormalization statistics, and draws no Dropout masks."""
    adversarial = inputs + start
    for _ in range(ATTACK_STEPS):
        with tf.GradientTape() as tape:
            tape.watch(adversarial)
            loss = tf.reduce_sum(loss_fn(labels, model(adversarial, training=False)))
        adversarial = adversarial + STEP_SIZE * tf.sign(
            tape.gradient(loss, adversarial)
        )
        adversarial = tf.clip_by_value(adversarial, inputs - EPSILON, inputs + EPSILON)
    adversarial = tf.clip_by_value(adversarial, *INPUT_RANGE)
    return tf.stop_gradient(adversarial)


def make_train_loop(train_step):
    """Several train steps per call, as Orbit's create_loop_fn and Keras' steps_per_execution:
    Python runs once per call, not once per step."""

    # Traced once: num_steps is a tensor (each new Python int would trace again), and the
    # batches all have one shape.
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
    # Connect to the TPU and initialize it before anything else runs on it.
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=TPU)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as error:
        raise SystemExit(
            f"No TPU to train on ({error}). Run this script on a Cloud TPU VM (or set TPU in "
            "the spec's distribute.tpu), or render another variant: loopgen render --variant"
        ) from None
    strategy = tf.distribute.TPUStrategy(resolver)
    print(f"{strategy.num_replicas_in_sync} TPU core(s)")

    # Seeds Python, NumPy, TensorFlow and Keras: the same weights, shuffles and masks each run.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    run.lock()  # one run at a time in the output directory

    # --- Data -------------------------------------------------------------------------
    train_examples, validation_examples = load_examples()
    # An epoch is counted in steps of whole batches (the smaller last batch is dropped).
    steps_per_epoch = num_examples(train_examples) // GLOBAL_BATCH_SIZE
    validation_steps = num_examples(validation_examples) // GLOBAL_BATCH_SIZE
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
        # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss, train_metrics = make_metrics()
        validation_loss, validation_metrics = make_metrics()
        validation_robust_loss = keras.metrics.Mean(name="robust_loss")
        validation_robust_metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="robust_accuracy"),
        ]
        train_values = [train_loss, *train_metrics]
        validation_values = [
            validation_loss,
            *validation_metrics,
            validation_robust_loss,
            *validation_robust_metrics,
        ]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)
    best = ValidationMonitor("robust_accuracy", "max", 0.0)

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
            # The attack's gradients are with respect to the inputs, outside this tape.
            with tape.stop_recording():
                # A random start: a function of (SEED, step, position in the global batch).
                start = random_start(
                    tf.stack([tf.constant(SEED, tf.int64), step]),
                    images,
                    tf.distribute.get_replica_context().replica_id_in_sync_group
                    * global_batch_size
                    // strategy.num_replicas_in_sync,
                    global_batch_size,
                )
                adversarial = perturb(model, loss_fn, images, labels, start)
            predictions = model(adversarial, training=True)
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
    def train_step(images, labels):
        """One train step on every replica."""
        replica_losses, batch_sizes = strategy.run(
            replica_train_step, args=(images, labels)
        )
        # Each replica's loss is its share of the global batch's mean: their sum is the mean.
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, replica_losses, axis=None)
        batch_size = strategy.reduce(tf.distribute.ReduceOp.SUM, batch_sizes, axis=None)
        train_loss.update_state(loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step)

    def replica_eval_step(images, labels, batch):
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, tf.shape(images)[0]
        )
        predictions = model(images, training=False)
        # The data loss only: weight penalties say nothing about generalization.
        validation_loss.update_state(loss_fn(labels, predictions))
        for metric in validation_metrics:
            metric.update_state(labels, predictions)
        # Robustness: the same examples after the attack (its start drawn from SEED and the batch).
        start = random_start(
            tf.stack([tf.constant(SEED, tf.int64), -1 - batch]),
            images,
            tf.distribute.get_replica_context().replica_id_in_sync_group
            * global_batch_size
            // strategy.num_replicas_in_sync,
            global_batch_size,
        )
        adversarial = perturb(model, loss_fn, images, labels, start)
        robust_predictions = model(adversarial, training=False)
        validation_robust_loss.update_state(loss_fn(labels, robust_predictions))
        for metric in validation_robust_metrics:
            metric.update_state(labels, robust_predictions)

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the validation set in one call: num_steps batches."""
        for batch in tf.range(num_steps, dtype=tf.int64):
            strategy.run(replica_eval_step, args=(*next(iterator), batch))

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
        # The validation monitors' best values and patience counts.
        best=best,
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
    run.start(step, nonfinite_step, total_steps, strategy)
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
            if best.update(validation_logs):
                print(
                    f"  best val_robust_accuracy so far: saved {run.save_best(global_step)}"
                )
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
        if run.preempted:
            break
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    # The last weights, and in export/best the best val_robust_accuracy's, written whole together.
    export(
        model, os.path.join(args.output_dir, "export"), train_examples, run.restore_best
    )


def export(model, directory, examples, best):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs already prepared as
      prepare_inputs() does.
    - best/: the same for the best val_robust_accuracy's weights (best() restores them;
      none when no validation saved them), written in the same step as the rest: a server
      watching `directory` never finds a part of either.

    Both SavedModels load without this script's classes. `examples`: the training examples, whose
    dtype and shape the served model takes."""
    with written_whole(directory) as partial:
        write_export(model, partial, examples)
        if best():
            write_export(model, os.path.join(partial, "best"), examples)


def write_export(model, directory, examples):
    """export()'s files for the network's current weights, into `directory`."""
    served = keras.export.ExportArchive()
    served.track(model)
    served.add_endpoint("serving_default", serving_function(model, examples))
    served.write_out(os.path.join(directory, "saved_model", "1"), verbose=False)
    model.export(os.path.join(directory, "network"), verbose=False)


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


def predict(serve, args, examples):
    """predict: a JSON line of the served model's outputs for each input, in input order,
    written whole to --predictions; the inputs read by loopgen_runtime's reader."""
    like, _ = examples
    read = functools.partial(read_array_inputs, args.inputs, like, images=True)
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


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "mnist_adversarial",
    "spec_sha256": "1a97f85283023b71",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "002db08a7de99290",
    "data.train": "ac80475db1cd2d63",
    "data.validation": "50f4886e3ff5d540",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.rescale": 1 / 255,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "training": "985318925fe78040",
    "loss": "071318bbec99592d",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    readers = ("evaluate", "predict")
    strategy = "TPUStrategy"
    preemptible = True
    best_model = True


def main(argv=None):
    """Trains (or replays a step, or runs every stage on a few steps): loopgen_runtime's
    run_and_record() records in runs.jsonl how the run ended, and says in a few lines when
    the machine failed it (a full disk, ...)."""
    args = parse_args(argv)  # the debugging flags checked too
    if args.fast_dev_run:
        return fast_dev_run(args)
    return run_and_record(args, train, RunDirectory)


if __name__ == "__main__":
    main()
