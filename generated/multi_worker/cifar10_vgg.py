"""Classify CIFAR-10 images with a VGG-style network built from a custom block.

Written by loopgen 0.1.0 from examples/cifar10_vgg.py
(spec sha256 dafe6a5db2baae12, script sha256 db744b15d6d0d8f7).
Rendered with: --variant multi_worker
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MultiWorkerMirroredStrategy. Start this script on every worker, each with
TF_CONFIG naming the cluster and its own index, and the same --output-dir on
storage all workers share; data.batch_size is the global batch.
Run it again to resume from the latest checkpoint (written by any variant).
Flags: --epochs, --max-steps, --output-dir, --deterministic (see --help).
"""

import argparse
import json
import math
import os
import shutil
import signal
import threading
import time

import keras
import tensorflow as tf
from keras import layers

SEED = 42
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
SHUFFLE_BUFFER = 10000
RESCALE = 1 / 255
EPOCHS = 30
LOG_EVERY_STEPS = 100
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 5
OUTPUT_DIR = "runs/cifar10_vgg"


def load_examples():
    """Training and validation examples, one (images, labels) pair per element, unbatched."""
    # Downloads once into ~/.keras/datasets, then loads from there.
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    train_examples = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    validation_examples = tf.data.Dataset.from_tensor_slices((x_test, y_test))
    return train_examples, validation_examples


def preprocess(images, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch)."""
    images = tf.cast(images, tf.float32) * RESCALE
    return images, labels


def shard_by_example():
    """Options that set how the workers split a dataset: every worker reads all of it, in the
    same order, and keeps its part of each global batch.

    The default (AUTO) shards by file when the pipeline reads files: each worker then sees other
    examples, in another order, than a single device would, and with fewer files than workers
    it fails. DATA works for any source and keeps each global batch that of a one-device run.
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA
    )
    return options


def training_batches(examples, start_step):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The order depends on the step alone: the shuffle has a fixed seed and reshuffles every
    epoch the same way on every run. A resumed run skips the batches it already trained on
    and sees exactly what an uninterrupted run would have seen, on any strategy. Skipping
    happens before preprocessing, so it only re-reads raw examples.
    """
    return (
        examples.shuffle(SHUFFLE_BUFFER, seed=SEED)
        .batch(GLOBAL_BATCH_SIZE)
        .repeat()
        .skip(start_step)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
        .with_options(shard_by_example())
    )


def validation_batches(examples):
    """The validation examples, batched and preprocessed, in a fixed order, repeated: a
    validation pass takes one epoch of batches from an iterator that lasts the whole run.
    """
    return (
        examples.batch(GLOBAL_BATCH_SIZE)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
        .with_options(shard_by_example())
    )


@keras.saving.register_keras_serializable(package="cifar10_vgg")
class VGGBlock(layers.Layer):
    """Two 3x3 same-padded ReLU convolutions, then 2x2 max pooling (one VGG stage)."""

    def __init__(self, filters=32, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.conv2d_1 = layers.Conv2D(
            filters,
            3,
            padding="same",
            activation="relu",
            kernel_initializer="he_uniform",
            kernel_regularizer=keras.regularizers.L2(0.0005),
        )
        self.conv2d_2 = layers.Conv2D(
            filters,
            3,
            padding="same",
            activation="relu",
            kernel_initializer="he_uniform",
            kernel_regularizer=keras.regularizers.L2(0.0005),
        )
        self.max_pooling2d_1 = layers.MaxPooling2D()

    def build(self, input_shape):
        # Create the sublayers' weights in order, from the shape flowing through them, so
        # the layer is complete before its first call (a loaded .keras model relies on it).
        shape = input_shape
        for layer in [self.conv2d_1, self.conv2d_2, self.max_pooling2d_1]:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs, training=None):
        x = self.conv2d_1(inputs)
        x = self.conv2d_2(x)
        return self.max_pooling2d_1(x)

    def get_config(self):
        # Constructor arguments, so that a saved .keras model can be rebuilt.
        config = super().get_config()
        config.update({"filters": self.filters})
        return config


def build_model():
    model = keras.Sequential(name="cifar10_vgg")
    model.add(keras.Input(shape=(32, 32, 3)))
    for filters in (32, 64, 128):
        model.add(VGGBlock(filters=filters))
    model.add(layers.Flatten())
    model.add(layers.Dense(128, activation="relu", kernel_initializer="he_uniform"))
    model.add(layers.Dropout(0.5))
    model.add(layers.Dense(10))
    return model


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def append_jsonl(path, record):
    """Appends one JSON record per line, a format every plotting tool reads."""
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def restore_newest(checkpoint, paths):
    """Restores the newest checkpoint in `paths` that restores, and returns its path (None when
    there are none). A damaged one (a full disk, a copy cut short) is reported and the one
    before it is used; when none restores, the run stops rather than start over."""
    failures = []
    for path in reversed(paths):
        try:
            # Also fails when the checkpoint does not fit this model (e.g. after a spec change).
            checkpoint.restore(path).assert_existing_objects_matched()
            return path
        except Exception as error:  # damaged files raise OpError, IndexError, ...
            print(f"Cannot restore {path}: {type(error).__name__}: {error}")
            failures.append(path)
    if failures:
        raise SystemExit(
            f"None of the checkpoints restores ({', '.join(failures)}): see the errors above. "
            "Move them away (or pass another --output-dir) to start from scratch."
        )
    return None


def is_chief(cluster_resolver):
    """Whether this worker is the chief: the one that writes logs, checkpoints and the export.

    That is the `chief` task when TF_CONFIG has one, else worker 0 (or the only process, when
    there is no TF_CONFIG)."""
    task_type, task_id = cluster_resolver.task_type, cluster_resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    has_chief = "chief" in cluster_resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--epochs", type=int, default=EPOCHS, help="passes over the training data"
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="stop after this many steps in all (smoke runs)",
    )
    parser.add_argument(
        "--output-dir", default=OUTPUT_DIR, help="checkpoints, logs and exports go here"
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="make TensorFlow ops deterministic (reproducible, somewhat slower)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # --- Strategy -----------------------------------------------------------------------
    # Created first: it reads TF_CONFIG (the cluster and this worker's place in it) and must
    # exist before any other TensorFlow op. Every worker runs this same script.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task_id = strategy.cluster_resolver.task_id or 0
    chief = is_chief(strategy.cluster_resolver)
    # What the other workers must write but nobody keeps goes here.
    scratch_dir = os.path.join(args.output_dir, "workers", f"worker-{task_id}")
    print(
        f"Worker {task_id}{' (chief)' if chief else ''}: "
        f"{strategy.num_replicas_in_sync} replica(s) in the cluster"
    )

    # Seeds Python, NumPy, TensorFlow and Keras at once: the same initial weights, shuffles
    # and dropout masks on every run.
    keras.utils.set_random_seed(SEED)
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()

    # --- Data -------------------------------------------------------------------------
    train_examples, validation_examples = load_examples()
    # An epoch is counted in steps; the smaller last batch of an epoch is a step too.
    steps_per_epoch = math.ceil(int(train_examples.cardinality()) / GLOBAL_BATCH_SIZE)
    validation_steps = math.ceil(
        int(validation_examples.cardinality()) / GLOBAL_BATCH_SIZE
    )
    # One iterator for every validation pass: creating and deleting one per pass can stall
    # tf.data's autotuner for seconds.
    # Each global batch is split into one slice per replica.
    validation_iterator = iter(
        strategy.experimental_distribute_dataset(
            validation_batches(validation_examples)
        )
    )

    # --- Model, loss, optimizer, metrics ----------------------------------------------
    # Everything that owns variables is created under the strategy's scope: its variables
    # are then mirrored on every replica and kept in sync.
    with strategy.scope():
        model = build_model()
        model.summary()
        # reduction=None: one loss per example. The replica step sums them and divides
        # by the global batch size; a mean per replica would be num_replicas times off.
        loss_fn = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=None
        )
        # The schedule is evaluated at optimizer.iterations, which the checkpoint saves
        # with the optimizer: a resumed run continues the schedule, not restarts it.
        learning_rate = keras.optimizers.schedules.PiecewiseConstantDecay(
            boundaries=[7820, 15640], values=[0.01, 0.001, 0.0001]
        )
        optimizer = keras.optimizers.SGD(learning_rate=learning_rate, momentum=0.9)
        # Create the slot variables (momentum, moments) now, not in the first traced
        # step, which would trace it twice and leave a restored checkpoint nothing to fill.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss = keras.metrics.Mean(name="loss")
        train_metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
        ]
        validation_loss = keras.metrics.Mean(name="loss")
        validation_metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
        ]
        # Counts train steps. The checkpoint saves it, so a resumed run continues
        # counting (and with it the epoch, the data position and the cadences).
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step whose loss was NaN or Inf (-1: none so far). Not
        # checkpointed: a run that stops on it restarts from the last good checkpoint.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    def per_example_loss(labels, predictions):
        """One loss value per example: averaged over any further axes (a mask's pixels), as
        the single-device loss averages over all of them."""
        losses = loss_fn(labels, predictions)
        return tf.reduce_mean(losses, axis=list(range(1, losses.shape.rank)))

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
            # Divided by the global batch size, not this replica's: apply_gradients sums the
            # replicas' gradients, and the sum is then the gradient of the global batch's mean.
            loss = tf.nn.compute_average_loss(
                per_example_loss(labels, predictions),
                global_batch_size=global_batch_size,
            )
            # The layers' weight penalties (kernel_regularizer, ...) live in model.losses:
            # a hand-written step must add them, or the regularizers silently do nothing.
            # Every replica adds them: each adds its 1/num_replicas share.
            loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
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
        losses, batch_sizes = strategy.run(replica_train_step, args=(images, labels))
        # Each replica's loss is its share of the global batch's mean: their sum is the mean.
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        batch_size = strategy.reduce(tf.distribute.ReduceOp.SUM, batch_sizes, axis=None)
        train_loss.update_state(loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note the first step it happens at, so that the
        # loop stops before a checkpoint saves them.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    # Traced once: num_steps is a tensor (each new Python int would trace again), and the
    # batches' first dimension is unknown (None), so the smaller last batch of an epoch does
    # not retrace either. A call runs num_steps steps, so Python pays its overhead once per
    # call, not once per step.
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

    def replica_eval_step(images, labels):
        predictions = model(images, training=False)
        # The data loss only: weight penalties say nothing about generalization.
        validation_loss.update_state(per_example_loss(labels, predictions))
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
    checkpoint_dir = os.path.join(args.output_dir, "checkpoints")
    # Saving is collective: every worker must call save(). The chief's checkpoints are the
    # ones kept; the other workers write one each to their scratch directory, never read back.
    manager = tf.train.CheckpointManager(
        checkpoint,
        checkpoint_dir if chief else os.path.join(scratch_dir, "checkpoints"),
        max_to_keep=KEEP_CHECKPOINTS if chief else 1,
    )
    # Every worker resumes from the chief's newest checkpoint, so all start from the same
    # state: the output directory must be storage that every worker reads (NFS, GCS, ...).
    state = tf.train.get_checkpoint_state(checkpoint_dir)
    latest = restore_newest(
        checkpoint, state.all_model_checkpoint_paths if state else []
    )
    if latest:
        print(f"Resumed from {latest} at step {int(step.numpy())}")
    # All workers must continue from the same step: one that cannot read the chief's
    # directory would start again from 0 and train on without a word.
    steps = strategy.run(lambda: tf.identity(step))
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, steps, axis=None)
    if int(total.numpy()) != int(step.numpy()) * strategy.num_replicas_in_sync:
        raise SystemExit(
            f"Worker {task_id} is at step {int(step.numpy())}, but the workers are not all at "
            f"the same step: give every worker the same --output-dir, on storage all of them "
            f"read (found {latest or 'no checkpoint'} in {checkpoint_dir})"
        )

    # --- Training loop ----------------------------------------------------------------
    os.makedirs(args.output_dir, exist_ok=True)
    # TensorBoard: tensorboard --logdir <output-dir>/logs. Only the chief writes summaries.
    train_writer = (
        tf.summary.create_file_writer(os.path.join(args.output_dir, "logs", "train"))
        if chief
        else tf.summary.create_noop_writer()
    )
    validation_writer = (
        tf.summary.create_file_writer(
            os.path.join(args.output_dir, "logs", "validation")
        )
        if chief
        else tf.summary.create_noop_writer()
    )
    metrics_path = os.path.join(args.output_dir, "metrics.jsonl")
    total_steps = args.epochs * steps_per_epoch
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    epochs = math.ceil(total_steps / steps_per_epoch)
    # A Python copy of the step counter: reading the variable every step would wait for the
    # device each time.
    global_step = int(step.numpy())
    saved_step = global_step if latest else None
    # One iterator for the whole run, from the current step on; each global batch is split
    # into one slice per replica.
    train_dataset = training_batches(train_examples, start_step=global_step)
    train_iterator = iter(strategy.experimental_distribute_dataset(train_dataset))
    first_epoch = global_step // steps_per_epoch

    def stop_if_diverged():
        """Ends the run at a NaN or Inf loss, before a checkpoint saves the weights it ruined."""
        bad_step = int(nonfinite_step.numpy())
        if bad_step >= 0:
            raise SystemExit(
                f"The loss became NaN or Inf at step {bad_step}: stopped without saving"
                f" (newest checkpoint: {manager.latest_checkpoint or 'none yet'})"
                ". Lower the learning rate, clip the gradients, or look for NaN in the data."
            )

    # Preemption: schedulers (Slurm, Kubernetes, spot VMs) send SIGTERM, then SIGKILL after a
    # grace period. The loop finishes its train_loop call (STEPS_PER_LOOP steps at most),
    # saves a checkpoint and exits; run it again to resume.
    preempted = threading.Event()
    # A worker's own SIGTERM is only its vote (see train_loop): the workers stop together.
    sigterm = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: sigterm.set())

    def steps_to_run(global_step, epoch_end):
        """Steps in the next train_loop call: STEPS_PER_LOOP, or fewer to stop at the next log
        point or epoch end: each of them then happens at its exact step."""
        return min(
            STEPS_PER_LOOP,
            epoch_end - global_step,
            LOG_EVERY_STEPS - global_step % LOG_EVERY_STEPS,
        )

    if global_step >= total_steps:
        print(f"Already at step {global_step} of {total_steps}: nothing left to train.")
        first_epoch = epochs

    for epoch in range(first_epoch, epochs):
        print(f"Epoch {epoch + 1}/{epochs}")
        epoch_start = epoch * steps_per_epoch
        epoch_end = min(epoch_start + steps_per_epoch, total_steps)
        # The logged values are already running means: "stateful", so the bar shows them as
        # they are instead of averaging them again.
        progbar = keras.utils.Progbar(
            epoch_end - epoch_start,
            stateful_metrics=["loss", "accuracy", "learning_rate", "steps_per_second"],
            verbose=1 if chief else 0,
        )
        for metric in [train_loss, *train_metrics]:
            metric.reset_state()
        # Throughput is timed from log point to log point (validation is not counted).
        timer_start, timer_step = time.perf_counter(), global_step
        while global_step < epoch_end:
            num_steps = steps_to_run(global_step, epoch_end)
            stop_votes = train_loop(
                train_iterator,
                tf.constant(num_steps),
                tf.constant(float(sigterm.is_set())),
            )
            # Some worker got SIGTERM: every worker stops after this call.
            if stop_votes > 0:
                preempted.set()
            global_step += num_steps
            if global_step % LOG_EVERY_STEPS == 0 or global_step == epoch_end:
                logs = results([train_loss, *train_metrics])
                logs["learning_rate"] = float(optimizer.learning_rate.numpy())
                # Timed after results(), which waited for the device.
                now = time.perf_counter()
                logs["steps_per_second"] = (global_step - timer_step) / (
                    now - timer_start
                )
                timer_start, timer_step = now, global_step
                progbar.update(global_step - epoch_start, list(logs.items()))
                with train_writer.as_default(step=global_step):
                    for name, value in logs.items():
                        tf.summary.scalar(name, value)
                if chief:  # the only worker that writes the metrics log
                    append_jsonl(
                        metrics_path, {"step": global_step, "epoch": epoch + 1, **logs}
                    )
                stop_if_diverged()
            if preempted.is_set():
                break
        if preempted.is_set():
            break

        if (epoch + 1) % VALIDATE_EVERY_EPOCHS == 0 or global_step == total_steps:
            for metric in [validation_loss, *validation_metrics]:
                metric.reset_state()
            validation_pass(validation_iterator, tf.constant(validation_steps))
            validation_logs = results([validation_loss, *validation_metrics])
            print(
                "  ".join(
                    f"val_{name}: {value:.4f}"
                    for name, value in validation_logs.items()
                )
            )
            with validation_writer.as_default(step=global_step):
                for name, value in validation_logs.items():
                    tf.summary.scalar(name, value)
            # Elsewhere the validation values are named apart: val_loss, val_accuracy, ...
            val_logs = {f"val_{name}": value for name, value in validation_logs.items()}
            if chief:  # the only worker that writes the metrics log
                append_jsonl(
                    metrics_path, {"step": global_step, "epoch": epoch + 1, **val_logs}
                )
        if (
            (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0
            and global_step == epoch_start + steps_per_epoch
        ):
            stop_if_diverged()
            manager.save(checkpoint_number=global_step)
            saved_step = global_step

    # Also save where training stopped (mid-epoch after --max-steps or a SIGTERM, or off the
    # cadence) so that the next run continues from here instead of redoing steps.
    if saved_step != global_step:
        stop_if_diverged()
        manager.save(checkpoint_number=global_step)
    if preempted.is_set():
        print(
            f"Stopped by SIGTERM at step {global_step}; saved {manager.latest_checkpoint}."
        )
        raise SystemExit(128 + signal.SIGTERM)  # the shell's status for a SIGTERM death

    # --- Export -----------------------------------------------------------------------
    # Every worker exports (reading the variables may take all workers), but only the chief's
    # copy is kept: the others write into their scratch directory and delete it.
    export_dir = os.path.join(args.output_dir if chief else scratch_dir, "export")
    # SavedModel for serving (TF Serving, tf.saved_model.load): it does not need the Python
    # classes of this script to load, nor a strategy.
    model.export(os.path.join(export_dir, "saved_model"), verbose=False)
    # Architecture and weights for keras.saving.load_model (no optimizer state: resume from
    # the checkpoints). Loading it needs this script's custom layer classes imported.
    model.save(os.path.join(export_dir, "cifar10_vgg.keras"))
    if not chief:
        shutil.rmtree(export_dir)


if __name__ == "__main__":
    main()
