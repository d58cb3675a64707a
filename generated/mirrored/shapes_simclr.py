"""Learn drawn shapes without labels by SimCLR, scored by a linear probe.

Written by loopgen 0.1.0 from examples/shapes_simclr.py
(spec sha256 806778977d5e11e4, script sha256 d7a454880edc2974).
Rendered with: --variant mirrored
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MirroredStrategy, one replica per GPU (or the CPU); data.batch_size is the global batch.
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
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
        read_array_inputs,
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

SEED = 17
GLOBAL_BATCH_SIZE = 128  # over all replicas: each takes a slice
EPOCHS = 10
TEMPERATURE = 0.1  # of the NT-Xent loss: lower sharpens its softmax
CLASSES = 3  # logits of the linear probe
LOG_EVERY_STEPS = 5
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/shapes_simclr"


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
        inputs="predict: .npy or .npz files of examples, image files, and directories of them",
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


def draw_shapes(count, image_size, seed):
    """Draws `count` random circles, squares and triangles on noisy backgrounds.

    Deterministic for a seed and made in about a second, so the run needs no download.
    Returns float32 images in [0, 1] and int32 labels: 0 circle, 1 square, 2 triangle.
    """
    rng = np.random.default_rng(seed)
    shape_class = rng.integers(0, 3, size=count)
    radius = rng.uniform(0.12, 0.35, size=count) * image_size
    center = rng.uniform(radius[:, None], image_size - radius[:, None], size=(count, 2))
    # Colours overlap the background's range: the shape, not the colour, tells the class.
    color = rng.uniform(0.3, 1.0, size=(count, 1, 1, 3))
    rows, cols = np.mgrid[:image_size, :image_size].astype(np.float32)
    dy = rows[None] - center[:, 0, None, None]
    dx = cols[None] - center[:, 1, None, None]
    r = radius[:, None, None]
    circle = dx**2 + dy**2 <= r**2
    square = (np.abs(dx) <= 0.8 * r) & (np.abs(dy) <= 0.8 * r)
    triangle = (dy <= 0.8 * r) & (np.abs(dx) <= (dy + r) * 0.6)
    inside = np.select(
        [shape_class[:, None, None] == k for k in range(3)], [circle, square, triangle]
    )
    background = rng.uniform(0.0, 0.6, size=(count, image_size, image_size, 3))
    images = np.where(inside[..., None], color, background).astype(np.float32)
    return images, shape_class.astype(np.int32)


def load_examples():
    """Training and validation examples: (images, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    train_examples = draw_shapes(count=2000, image_size=32, seed=3)
    validation_examples = draw_shapes(count=400, image_size=32, seed=4)
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
    images = tf.cast(images, tf.float32)
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


def make_augmentation():
    """The augmentation layers, in order (data.augmentation). Made with the pipeline, after the
    strategy: a layer creates variables."""
    return [
        layers.RandomFlip(mode="horizontal"),
        layers.RandomTranslation(0.15, 0.15),
        layers.RandomContrast(0.4),
    ]


class ExampleSeed(keras.random.SeedGenerator):
    """Random seeds that are a function of an example alone, never of how many examples came
    before: Keras' layers draw from it as from their own SeedGenerator, and an augmented
    example is the same on every run, on any strategy and after a resume."""

    def __init__(self, seed):
        # No super().__init__(): it would create a state variable this has no use for.
        self.seed = seed
        self.draws = 0

    def next(self, ordered=True):
        # Every draw its own seed, as a SeedGenerator's state advances.
        self.draws += 1
        return tf.random.experimental.stateless_fold_in(self.seed, self.draws)


def augment(images, labels, seeds, augmentation, view):
    """Augments the training images of a batch, each on its own: the random choices for an
    image are drawn from its seed, (SEED, epoch, position in the epoch, view): each of its
    two views has choices of its own."""

    def augment_one(example):
        image, epoch_and_position = example
        seed = tf.random.experimental.stateless_fold_in(
            tf.stack([tf.constant(SEED, tf.int64), epoch_and_position[0]]),
            epoch_and_position[1],
        )
        seed = fold(seed, view)
        images = image[None]  # the layers take batches
        for index, layer in enumerate(augmentation[:3]):
            if hasattr(layer, "get_random_transformation"):
                transformation = layer.get_random_transformation(
                    images, training=True, seed=ExampleSeed(fold(seed, index))
                )
                images = layer.transform_images(images, transformation, training=True)
            else:  # padding or resizing: nothing random
                images = layer(images)
        return tf.cast(images[0], tf.float32)

    images = tf.map_fn(augment_one, (images, seeds), fn_output_signature=tf.float32)
    return images, labels


def fold(seed, number):
    """A seed of its own for the `number`-th use of `seed`."""
    return tf.random.experimental.stateless_fold_in(seed, number)


def training_batches(examples, start_step, context):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The batches are a function of the step alone: epoch e takes the examples in
    the order epoch_order(e) gives, GLOBAL_BATCH_SIZE at a time, and only then are they read.
    A resumed run starts inside its epoch by slicing that order: it reads nothing of the steps
    already done, however many they are.
    Each global batch is cut into one slice per replica; this input pipeline (one per worker)
    reads only its replicas' slices.
    """
    augmentation = make_augmentation()
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
        # Each example with the seed of its augmentation: (epoch, its position in the epoch).
        positions = tf.range(start, start + tf.size(order, out_type=tf.int64))
        seeds = tf.stack([tf.fill(tf.shape(positions), epoch), positions], axis=1)
        return tf.data.Dataset.from_tensor_slices((order, seeds)).batch(
            GLOBAL_BATCH_SIZE
        )

    batches = tf.data.Dataset.counter(first_epoch).flat_map(epoch_batches)
    # (indices, seeds): both are sliced alike.
    batches = batches.flat_map(lambda *batch: replica_slices(batch, context))
    return (
        batches.map(
            lambda indices, seeds: (*read_arrays(examples, indices), seeds),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        .map(
            lambda images, labels, seeds: (*preprocess(images, labels), seeds),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        # After preprocessing: MixUp and CutMix mix one-hot labels, and value ranges are the
        # model's.
        # Two views of each image (SimCLR), each with random choices of its own.
        .map(
            lambda images, labels, seeds: (
                augment(images, labels, seeds, augmentation, view=0)[0],
                *augment(images, labels, seeds, augmentation, view=1),
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
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
            keras.Input(shape=(32, 32, 3)),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
        ],
        name="shapes_simclr",
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


def build_projection(features):
    """The projection head (training.projection): the encoder's features to the vectors the
    contrastive loss compares."""
    return keras.Sequential(
        [
            keras.Input(shape=features),
            layers.Dense(64, activation="relu"),
            layers.Dense(32),
        ],
        name="projection",
    )


def contrastive_losses(first, second):
    """NT-Xent (SimCLR), one loss per image of this replica's slice: for each of its two
    views, the cross-entropy of finding the other view among all the other views of the global
    batch, by cosine similarity / TEMPERATURE; the mean of the two."""
    first = tf.math.l2_normalize(first, axis=1)
    second = tf.math.l2_normalize(second, axis=1)
    # The negatives are every replica's views, not this replica's alone: gathered, so that
    # two replicas compute what one device does (and the gradient flows back to each).
    context = tf.distribute.get_replica_context()
    all_first = context.all_gather(first, axis=0)
    all_second = context.all_gather(second, axis=0)
    # Where this replica's images sit in the global batch (slices may be uneven).
    sizes = context.all_gather(tf.shape(first)[:1], axis=0)
    offset = tf.reduce_sum(sizes[: context.replica_id_in_sync_group])
    twins = offset + tf.range(tf.shape(first)[0])
    # A view is not its own negative: its similarity to itself is masked out.
    itself = tf.one_hot(twins, tf.shape(all_first)[0]) * 1e9
    losses = []
    for view, other, same in (
        (first, all_second, all_first),
        (second, all_first, all_second),
    ):
        logits = tf.concat(
            [
                tf.matmul(view, other, transpose_b=True),
                tf.matmul(view, same, transpose_b=True) - itself,
            ],
            axis=1,
        )
        losses.append(
            tf.nn.sparse_softmax_cross_entropy_with_logits(twins, logits / TEMPERATURE)
        )
    return (losses[0] + losses[1]) / 2


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
        # The projection head, and a linear probe that learns the labels from the features.
        projection = build_projection(model.output_shape[1:])
        probe = keras.Sequential(
            [keras.Input(shape=model.output_shape[1:]), layers.Dense(CLASSES)],
            name="probe",
        )
        # One optimizer for the three: the probe's gradients never reach the encoder.
        trained_variables = [
            *model.trainable_variables,
            *projection.trainable_variables,
            *probe.trainable_variables,
        ]
        # One loss per example (see per_example). The replica step sums them and divides by
        # the global batch size; a mean per replica would be num_replicas times off.
        loss_fn = per_example(
            keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
        )
        optimizer = keras.optimizers.Adam(learning_rate=0.001)
        # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
        optimizer.build(trained_variables)
        # Metrics are summed over replicas when read.
        train_loss, train_metrics = make_metrics()
        validation_loss, validation_metrics = make_metrics()
        train_losses = {"probe_loss": keras.metrics.Mean(name="probe_loss")}
        train_values = [train_loss, *train_losses.values(), *train_metrics]
        validation_values = [validation_loss, *validation_metrics]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(first, second, labels):
        """One replica's part of a train step, on its slice of the global batch."""
        batch_size = tf.shape(first)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        with tf.GradientTape() as tape:
            # Both views through the encoder at once: BatchNormalization sees all 2N images.
            features = model(tf.concat([first, second], axis=0), training=True)
            projected = projection(features, training=True)
            loss = tf.nn.compute_average_loss(
                contrastive_losses(*tf.split(projected, 2)),
                global_batch_size=global_batch_size,
            )
            # The probe on the first views' features, which it does not change.
            predictions = probe(tf.stop_gradient(features[:batch_size]), training=True)
            probe_loss = tf.nn.compute_average_loss(
                loss_fn(labels, predictions), global_batch_size=global_batch_size
            )
            total_loss = loss + probe_loss
        gradients = tape.gradient(total_loss, trained_variables)
        optimizer.apply_gradients(zip(gradients, trained_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.
        for metric in train_metrics:
            metric.update_state(labels, predictions)
        return loss, probe_loss, batch_size

    @tf.function
    def train_step(first, second, labels):
        """One train step on every replica."""
        values = strategy.run(replica_train_step, args=(first, second, labels))
        # Each replica's losses are its shares of the global batch's: their sums are the means.
        loss, probe_loss, batch_size = [
            strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
            for value in values
        ]
        train_loss.update_state(loss, sample_weight=batch_size)
        train_losses["probe_loss"].update_state(probe_loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss + probe_loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step)

    def replica_eval_step(images, labels):
        predictions = probe(model(images, training=False), training=False)
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
        projection=projection,
        probe=probe,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
        # The epoch's running means: a run resumed mid-epoch continues them.
        train_values=[v for value in train_values for v in value.variables],
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(
        checkpoint, train_examples, model=model, projection=projection, probe=probe
    )
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
    answers. Named outputs: "scores", the network's output."""
    images, _ = examples
    signature = tf.TensorSpec((None, *images.shape[1:]), images.dtype, name="images")

    @tf.function(input_signature=[signature])
    def serve(images):
        scores = model(prepare_inputs(images), training=False)
        return {"scores": scores}

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
    "spec": "shapes_simclr",
    "spec_sha256": "806778977d5e11e4",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "b2b0ef8d38364953",
    "data.train": "310a8c4c96a06972",
    "data.validation": "92fa0c66a3375cba",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.labels": "sparse",
    "data.augmentation": "9baff35913336210",
    "data.augment_in": "pipeline",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "training": "07d63d74d6ee218f",
    "loss": "071318bbec99592d",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    readers = ("evaluate", "predict", "replay")
    strategy = "MirroredStrategy"
    preemptible = True
    means_checkpointed = True
    replayed_networks = ("model", "projection", "probe")
    results = staticmethod(results)
    batch_names, batch_of_step = ("first", "second", "labels"), staticmethod(
        batch_of_step
    )


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
