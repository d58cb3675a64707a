"""Generate drawn shapes with a small DCGAN (offline demo images).

Written by loopgen 0.1.0 from examples/shapes_dcgan.py
(spec sha256 461fef668c68bf08, script sha256 a280c06d006b5c80).
Rendered with: --variant tpu
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: TPUStrategy; run it on a Cloud TPU VM. data.batch_size is the global batch.
Run it again to resume from the latest checkpoint (written by any variant).
Flags: --epochs, --max-steps, --output-dir, --deterministic (see --help).
"""

import argparse
import json
import math
import os
import signal
import threading
import time

import keras
import numpy as np
import tensorflow as tf
from keras import layers

SEED = 9
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
SHUFFLE_BUFFER = 2000
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
    """Training examples, one (images, labels) pair per element, unbatched."""
    images, labels = draw_shapes(count=2000, image_size=16, seed=31)
    train_examples = tf.data.Dataset.from_tensor_slices((images, labels))
    return train_examples


def preprocess(images, labels):
    """Prepares a batch, inside the tf.data pipeline: the images alone (a GAN does not use the
    labels), in the generator's range [-1, 1]."""
    images = tf.cast(images, tf.float32)
    # From [0, 1] to [-1, 1], the range of the generator's tanh output.
    images = images * 2.0 - 1.0
    return images


def training_batches(examples, start_step):
    """Training batches from step `start_step` on, epoch after epoch, without end.

    The order depends on the step alone: the shuffle has a fixed seed and reshuffles every
    epoch the same way on every run. A resumed run skips the batches it already trained on
    and sees exactly what an uninterrupted run would have seen, on any strategy. Skipping
    happens before preprocessing, so it only re-reads raw examples.
    """
    return (
        examples.shuffle(SHUFFLE_BUFFER, seed=SEED)
        # TPUs compile for fixed shapes: the smaller last batch of an epoch is dropped.
        .batch(GLOBAL_BATCH_SIZE, drop_remainder=True)
        .repeat()
        .skip(start_step)
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
    print(f"Training on {strategy.num_replicas_in_sync} TPU core(s)")

    # Seeds Python, NumPy, TensorFlow and Keras at once: the same initial weights, shuffles
    # and dropout masks on every run.
    keras.utils.set_random_seed(SEED)
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()

    # --- Data -------------------------------------------------------------------------
    train_examples = load_examples()
    # An epoch is counted in steps of whole batches (the smaller last batch is dropped).
    steps_per_epoch = int(train_examples.cardinality()) // GLOBAL_BATCH_SIZE

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
        # The noise comes from a generator whose state is a variable: the checkpoint saves it,
        # so a resumed run draws the noise an uninterrupted run would have drawn.
        noise = tf.random.Generator.from_seed(SEED)
        # Fixed noise for the sample images: the same points every epoch show the progress.
        sample_noise = tf.random.stateless_normal(
            (NUM_SAMPLES, LATENT_DIM), seed=[SEED, 0]
        )
        # Counts train steps. The checkpoint saves it, so a resumed run continues
        # counting (and with it the epoch, the data position and the cadences).
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step whose loss was NaN or Inf (-1: none so far). Not
        # checkpointed: a run that stops on it restarts from the last good checkpoint.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(images):
        """One replica's part of a GAN step, on its slice of the global batch."""
        batch_size = tf.shape(images)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        # 1. The discriminator learns to tell the real batch from as many generated images.
        with tf.GradientTape() as tape:
            generated = generator(noise.normal((batch_size, LATENT_DIM)), training=True)
            real_logits = discriminator(images, training=True)
            fake_logits = discriminator(generated, training=True)
            # Real images are labelled REAL_LABEL, not 1 (one-sided label smoothing).
            real_labels = tf.fill(tf.shape(real_logits), REAL_LABEL)
            real_loss = tf.nn.compute_average_loss(
                cross_entropy(real_labels, real_logits),
                global_batch_size=global_batch_size,
            )
            fake_loss = tf.nn.compute_average_loss(
                cross_entropy(tf.zeros_like(fake_logits), fake_logits),
                global_batch_size=global_batch_size,
            )
            discriminator_loss = real_loss + fake_loss
        gradients = tape.gradient(discriminator_loss, discriminator.trainable_variables)
        discriminator_optimizer.apply_gradients(
            zip(gradients, discriminator.trainable_variables)
        )

        # 2. The generator learns to make the updated discriminator call its images real:
        # the non-saturating loss, -log D(G(z)), which still has a gradient when the
        # discriminator wins easily (log(1 - D(G(z))) then has none).
        with tf.GradientTape() as tape:
            generated = generator(noise.normal((batch_size, LATENT_DIM)), training=True)
            logits = discriminator(generated, training=True)
            generator_loss = tf.nn.compute_average_loss(
                cross_entropy(tf.ones_like(logits), logits),
                global_batch_size=global_batch_size,
            )
        gradients = tape.gradient(generator_loss, generator.trainable_variables)
        generator_optimizer.apply_gradients(
            zip(gradients, generator.trainable_variables)
        )
        # Scores accumulate on each replica; reading them averages over all images.
        train_real_score.update_state(tf.sigmoid(real_logits))
        train_fake_score.update_state(tf.sigmoid(fake_logits))
        return discriminator_loss, generator_loss, batch_size

    @tf.function
    def train_step(images):
        """One GAN step on every replica."""
        losses = strategy.run(replica_train_step, args=(images,))
        # Each replica's losses are its shares of the global batch's: their sums are the means.
        discriminator_loss, generator_loss, batch_size = [
            strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
            for value in losses
        ]
        train_discriminator_loss.update_state(
            discriminator_loss, sample_weight=batch_size
        )
        train_generator_loss.update_state(generator_loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note the first step it happens at, so that the
        # loop stops before a checkpoint saves them.
        if nonfinite_step < 0 and not tf.math.is_finite(
            discriminator_loss + generator_loss
        ):
            nonfinite_step.assign(step)

    # Traced once: num_steps is a tensor (each new Python int would trace again), and the
    # batches all have one shape. A call runs num_steps steps on the device, so Python pays
    # its overhead once per call, not once per step.
    @tf.function
    def train_loop(iterator, num_steps):
        # The next batch is taken while the current step computes (nothing orders the two),
        # and the last step takes none: the iterator stops exactly after num_steps batches.
        batch = next(iterator)
        for _ in tf.range(num_steps - 1):
            train_step(batch)
            batch = next(iterator)
        train_step(batch)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        # Both networks and both optimizers (slots, iterations).
        generator=generator,
        discriminator=discriminator,
        generator_optimizer=generator_optimizer,
        discriminator_optimizer=discriminator_optimizer,
        # The noise generator's state: a resumed run continues its random stream.
        noise=noise,
        # The step also fixes the position in the data: see training_batches().
        step=step,
    )
    checkpoint_dir = os.path.join(args.output_dir, "checkpoints")
    manager = tf.train.CheckpointManager(
        checkpoint, checkpoint_dir, max_to_keep=KEEP_CHECKPOINTS
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    latest = restore_newest(checkpoint, manager.checkpoints)
    if latest:
        print(f"Resumed from {latest} at step {int(step.numpy())}")

    # --- Training loop ----------------------------------------------------------------
    os.makedirs(args.output_dir, exist_ok=True)
    # TensorBoard: tensorboard --logdir <output-dir>/logs
    train_writer = tf.summary.create_file_writer(
        os.path.join(args.output_dir, "logs", "train")
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
    signal.signal(signal.SIGTERM, lambda signum, frame: preempted.set())

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
            stateful_metrics=[
                "discriminator_loss",
                "generator_loss",
                "real_score",
                "fake_score",
                "generator_learning_rate",
                "discriminator_learning_rate",
                "steps_per_second",
            ],
        )
        for metric in [
            train_discriminator_loss,
            train_generator_loss,
            train_real_score,
            train_fake_score,
        ]:
            metric.reset_state()
        # Throughput is timed from log point to log point (validation is not counted).
        timer_start, timer_step = time.perf_counter(), global_step
        while global_step < epoch_end:
            num_steps = steps_to_run(global_step, epoch_end)
            train_loop(train_iterator, tf.constant(num_steps))
            global_step += num_steps
            if global_step % LOG_EVERY_STEPS == 0 or global_step == epoch_end:
                logs = results(
                    [
                        train_discriminator_loss,
                        train_generator_loss,
                        train_real_score,
                        train_fake_score,
                    ]
                )
                for name, network_optimizer in (
                    ("generator", generator_optimizer),
                    ("discriminator", discriminator_optimizer),
                ):
                    logs[f"{name}_learning_rate"] = float(
                        network_optimizer.learning_rate.numpy()
                    )
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
                append_jsonl(
                    metrics_path, {"step": global_step, "epoch": epoch + 1, **logs}
                )
                stop_if_diverged()
            if preempted.is_set():
                break
        if preempted.is_set():
            break

        # Samples from the same noise every epoch: the generator's progress at a glance.
        samples = generator(sample_noise, training=False)
        with train_writer.as_default(step=global_step):
            tf.summary.image("samples", (samples + 1) / 2, max_outputs=NUM_SAMPLES)
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
    export_dir = os.path.join(args.output_dir, "export")
    # The generator is what a GAN is trained for: noise vectors (LATENT_DIM) in, images out.
    # A SavedModel, loaded without this script's classes, nor a strategy.
    generator.export(os.path.join(export_dir, "generator"), verbose=False)


if __name__ == "__main__":
    main()
