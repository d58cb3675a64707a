"""Generate drawn shapes with a small DCGAN (offline demo images).

Written by loopgen 0.1.0 from examples/shapes_dcgan.py
(spec sha256 ff52002a209d5f47, script sha256 8e9603a84f795e67).
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
        execution_modes,
        fast_dev_stages,
        parse_run_flags,
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

SEED = 9
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
EPOCHS = 20
LATENT_DIM = 32  # size of the generator's noise vectors
# The discriminator's label for real images: 1 - label smoothing (one-sided).
REAL_LABEL = 0.9
NUM_SAMPLES = 16  # generated images written to TensorBoard each epoch
LOG_EVERY_STEPS = 10
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 2
OUTPUT_DIR = "runs/shapes_dcgan"
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
    return parse_run_flags(parser, argv, init_from=True, new_data=True)


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
    """Training examples: (images, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    train_examples = draw_shapes(count=2000, image_size=16, seed=31)
    return train_examples


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
    """Prepares a batch, inside the tf.data pipeline: the images alone (a GAN does not use the
    labels), in the generator's range [-1, 1]."""
    images = tf.cast(images, tf.float32)
    # From [0, 1] to [-1, 1], the range of the generator's tanh output.
    images = images * 2.0 - 1.0
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


def build_generator():
    """Noise vectors (LATENT_DIM) to images."""
    return keras.Sequential(
        [
            keras.Input(shape=(32,)),
            layers.Dense(1024, use_bias=False),
            layers.BatchNormalization(),
            layers.Activation("relu"),
            layers.Reshape((4, 4, 64)),
            layers.Conv2DTranspose(32, 4, strides=2, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.Activation("relu"),
            layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh"),
        ],
        name="generator",
    )


def build_discriminator():
    """Images to one logit each: high for real, low for generated."""
    return keras.Sequential(
        [
            keras.Input(shape=(16, 16, 3)),
            layers.Conv2D(32, 4, strides=2, padding="same"),
            layers.Activation("leaky_relu"),
            layers.Conv2D(64, 4, strides=2, padding="same"),
            layers.Activation("leaky_relu"),
            layers.Flatten(),
            layers.Dense(1),
        ],
        name="discriminator",
    )


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def draw(sample, seed, use, shape, first, count):
    """`sample` (a stateless random op) of `shape` for examples first, first + 1, ... of a
    global batch of `count`: drawn for the whole global batch from (seed, use), so that a
    replica draws for its examples what one device draws for them."""
    seed = tf.random.experimental.stateless_fold_in(seed, use)
    values = sample(tf.concat([[count], shape[1:]], axis=0), seed)
    return values[first : first + shape[0]]


def learning_rates(generator_optimizer, discriminator_optimizer):
    """Each network's learning rate now, as the run logs them."""
    return {
        "generator_learning_rate": float(generator_optimizer.learning_rate.numpy()),
        "discriminator_learning_rate": float(
            discriminator_optimizer.learning_rate.numpy()
        ),
    }


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
            train_step(batch)
            batch = next(iterator)
        train_step(batch)

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
    train_examples = load_examples()
    # An epoch is counted in steps of whole batches (the smaller last batch is dropped).
    steps_per_epoch = num_examples(train_examples) // GLOBAL_BATCH_SIZE

    # --- Model, loss, optimizer, metrics ----------------------------------------------
    # Everything that owns variables is created under the strategy's scope: its variables
    # are then mirrored on every replica and kept in sync.
    with strategy.scope():
        generator = build_generator()
        discriminator = build_discriminator()
        generator.summary()
        discriminator.summary()
        # Both losses are binary cross-entropies on the discriminator's logits: real images
        # towards 1, generated ones towards 0.
        # reduction=None: one loss per image; the replica step divides their sum by the
        # global batch size.
        cross_entropy = keras.losses.BinaryCrossentropy(
            from_logits=True, reduction=None
        )
        # Two optimizers: each network has its own steps, slots and learning rate.
        generator_optimizer = keras.optimizers.Adam(learning_rate=0.0002, beta_1=0.5)
        discriminator_optimizer = keras.optimizers.Adam(
            learning_rate=0.0002, beta_1=0.5
        )
        # Create the slot variables now, not in the first traced step.
        generator_optimizer.build(generator.trainable_variables)
        discriminator_optimizer.build(discriminator.trainable_variables)
        # Metrics are summed over replicas when read.
        train_discriminator_loss = keras.metrics.Mean(name="discriminator_loss")
        train_generator_loss = keras.metrics.Mean(name="generator_loss")
        # The discriminator's mean probability that real images are real, and that generated
        # ones are: 1 and 0 when it wins outright, both near 0.5 when the generator fools it.
        train_real_score = keras.metrics.Mean(name="real_score")
        train_fake_score = keras.metrics.Mean(name="fake_score")
        # Fixed noise for the sample images: the same points every epoch show the progress.
        sample_noise = tf.random.stateless_normal(
            (NUM_SAMPLES, LATENT_DIM), seed=[SEED, 0]
        )
        train_values = [
            train_discriminator_loss,
            train_generator_loss,
            train_real_score,
            train_fake_score,
        ]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(images):
        """One replica's part of a GAN step, on its slice of the global batch."""
        batch_size = tf.shape(images)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        # Where this replica's images start in the global batch, cut as replica_slices cuts it.
        first = (
            tf.distribute.get_replica_context().replica_id_in_sync_group
            * global_batch_size
            // strategy.num_replicas_in_sync
        )
        # Every random draw is a function of (SEED, step, use, position in the global batch).
        seed = tf.stack([tf.constant(SEED, tf.int64), step])
        noise_shape = (batch_size, LATENT_DIM)
        # 1. The discriminator learns to tell the real batch from as many generated images.
        noise = draw(
            tf.random.stateless_normal, seed, 0, noise_shape, first, global_batch_size
        )
        with tf.GradientTape() as tape:
            generated = generator(noise, training=True)
            real_scores = discriminator(images, training=True)
            fake_scores = discriminator(generated, training=True)
            # Real images are labelled REAL_LABEL, not 1 (one-sided label smoothing).
            real_labels = tf.fill(tf.shape(real_scores), REAL_LABEL)
            real_loss = tf.nn.compute_average_loss(
                cross_entropy(real_labels, real_scores),
                global_batch_size=global_batch_size,
            )
            fake_loss = tf.nn.compute_average_loss(
                cross_entropy(tf.zeros_like(fake_scores), fake_scores),
                global_batch_size=global_batch_size,
            )
            discriminator_loss = real_loss + fake_loss
        variables = discriminator.trainable_variables
        gradients = tape.gradient(discriminator_loss, variables)
        discriminator_optimizer.apply_gradients(zip(gradients, variables))
        # 2. The generator learns to make the updated discriminator call its images real:
        # the non-saturating loss, -log D(G(z)), which still has a gradient when the
        # discriminator wins easily (log(1 - D(G(z))) then has none).
        noise = draw(
            tf.random.stateless_normal, seed, 2, noise_shape, first, global_batch_size
        )
        with tf.GradientTape() as tape:
            scores = discriminator(generator(noise, training=True), training=True)
            generator_loss = tf.nn.compute_average_loss(
                cross_entropy(tf.ones_like(scores), scores),
                global_batch_size=global_batch_size,
            )
        variables = generator.trainable_variables
        gradients = tape.gradient(generator_loss, variables)
        generator_optimizer.apply_gradients(zip(gradients, variables))
        # Scores accumulate on each replica; reading them averages over all images.
        train_real_score.update_state(tf.sigmoid(real_scores))
        train_fake_score.update_state(tf.sigmoid(fake_scores))
        return discriminator_loss, generator_loss, batch_size

    @tf.function
    def train_step(images):
        """One GAN step on every replica."""
        values = strategy.run(replica_train_step, args=(images,))
        # Each replica's losses are its shares of the global batch's: their sums are the means.
        discriminator_loss, generator_loss, batch_size = [
            strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
            for value in values
        ]
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(
            discriminator_loss + generator_loss
        ):
            nonfinite_step.assign(step)
        # Metrics accumulate on the device; Python reads them only when it logs.
        train_discriminator_loss.update_state(
            discriminator_loss, sample_weight=batch_size
        )
        train_generator_loss.update_state(generator_loss, sample_weight=batch_size)

    train_loop = make_train_loop(train_step)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        # Both networks and both optimizers (slots, iterations).
        generator=generator,
        discriminator=discriminator,
        generator_optimizer=generator_optimizer,
        discriminator_optimizer=discriminator_optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(
        checkpoint, train_examples, generator=generator, discriminator=discriminator
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
                logs |= learning_rates(generator_optimizer, discriminator_optimizer)
                run.log("train", global_step, logs, epoch)
                run.stop_if_diverged()
        if run.preempted:
            break

        # Samples from the same noise every epoch: the generator's progress at a glance.
        samples = generator(sample_noise, training=False)
        with run.writer("train").as_default(step=global_step):
            tf.summary.image("samples", (samples + 1) / 2, max_outputs=NUM_SAMPLES)
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    export(generator, os.path.join(args.output_dir, "export"))


def export(generator, directory):
    """The generator, which is what a GAN is trained for: noise vectors (LATENT_DIM) in, images
    out. A SavedModel, which loads without this script's classes."""
    with written_whole(directory) as partial:
        generator.export(os.path.join(partial, "generator"), verbose=False)


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
    noise vectors."""
    network = tf.saved_model.load(os.path.join(directory, "generator"))
    outputs = network.serve(tf.random.normal((count, LATENT_DIM)))
    if not all(np.isfinite(output).all() for output in tf.nest.flatten(outputs)):
        raise SystemExit(
            f"--fast-dev-run: the network in {directory} answers NaN or Inf"
        )


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "shapes_dcgan",
    "spec_sha256": "ff52002a209d5f47",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "training.generator": "8bdf0e08f782a35e",
    "training.discriminator": "204e1b8be0ac657a",
    "training.latent_dim": LATENT_DIM,
    "data.train": "5d026731d41f36bb",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 2000,
    "data.labels": "sparse",
    "seed": SEED,
    "training.generator_optimizer": "d9e1df48737db7db",
    "training.discriminator_optimizer": "d9e1df48737db7db",
    "training.label_smoothing": 0.1,
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    strategy = "TPUStrategy"
    preemptible = True


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
