"""Encode and draw the demo's shapes with a variational autoencoder (offline).

Written by loopgen 0.1.0 from examples/shapes_vae.py
(spec sha256 a8edcbcd53c0cac6, script sha256 d8a2153bf304381f).
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

SEED = 13
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
EPOCHS = 60
# training=VAE: each image is encoded into a distribution over codes of LATENT_DIM numbers;
# its loss is the negative log-likelihood of its reconstruction from a code drawn from it
# (Bernoulli pixels: the decoder outputs logits) plus a weight times the KL
# divergence of that distribution from the prior N(0, I).
LATENT_DIM = 8
BETA = 1.0  # the KL term's weight (1: the evidence lower bound)
KL_WARMUP_STEPS = 300  # the weight rises from 0 to BETA over these steps
NUM_SAMPLES = 16  # images in the grids written at each validation
LOG_EVERY_STEPS = 10
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 10
CHECKPOINT_EVERY_EPOCHS = 10
KEEP_CHECKPOINTS = 2
OUTPUT_DIR = "runs/shapes_vae"
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
    # sample: a grid of images decoded from codes drawn from the prior, of a checkpoint's weights.
    parser.add_argument("--count", type=int, default=16, help="sample: how many images")
    parser.add_argument(
        "--seed", type=int, default=0, help="sample: the seed of their codes"
    )
    parser.add_argument(
        "--grid",
        metavar="FILE",
        help="sample: the PNG file (default: samples.png in the output directory)",
    )
    # The commands, resuming, determinism, the lock and the debugging flags (how the run
    # executes, never what it trains): loopgen_runtime.py, before TensorFlow loads.
    return parse_run_flags(
        parser,
        argv,
        commands=["evaluate", "sample"],
        init_from=True,
        new_data=True,
        sample="decode images of codes drawn from the prior",
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
    train_examples = draw_shapes(count=2000, image_size=16, seed=31)
    validation_examples = draw_shapes(count=256, image_size=16, seed=32)
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
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch)."""
    images = tf.cast(images, tf.float32)
    return images, labels


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


def build_encoder():
    """Images to the mean and the log-variance of their codes: 2 * LATENT_DIM numbers, the
    first half and the second."""
    return keras.Sequential(
        [
            keras.Input(shape=(16, 16, 3)),
            layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
            layers.Conv2D(64, 3, strides=2, padding="same", activation="relu"),
            layers.Flatten(),
            layers.Dense(16),
        ],
        name="encoder",
    )


def build_decoder():
    """Codes (LATENT_DIM) to images: the logits of their pixels."""
    return keras.Sequential(
        [
            keras.Input(shape=(8,)),
            layers.Dense(1024, activation="relu"),
            layers.Reshape((4, 4, 64)),
            layers.Conv2DTranspose(64, 3, strides=2, padding="same", activation="relu"),
            layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu"),
            layers.Conv2D(3, 3, padding="same"),
        ],
        name="decoder",
    )


def build_model():
    """The VAE: the encoder and the decoder in one model, whose weights train, average and
    save together. In: the images, and the noise of the codes drawn (LATENT_DIM numbers per
    image); out: the codes' mean and log-variance, and the images decoded from the codes.
    """
    encoder, decoder = build_encoder(), build_decoder()
    images = keras.Input(shape=(16, 16, 3), name="image")
    noise = keras.Input(shape=(LATENT_DIM,), name="noise")
    mean, log_variance = keras.ops.split(encoder(images), 2, axis=-1)
    # The reparameterization trick: the code z ~ N(mean, exp(log_variance)) as a function of
    # the noise, differentiable in the mean and the variance.
    codes = mean + keras.ops.exp(0.5 * log_variance) * noise
    outputs = {
        "mean": mean,
        "log_variance": log_variance,
        "reconstruction": decoder(codes),
    }
    return keras.Model({"image": images, "noise": noise}, outputs, name="shapes_vae")


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def code_noise(seed, size, first, count):
    """The noise of the codes drawn for examples first .. first + size - 1 of a batch of
    `count`: N(0, I) drawn for the whole (global) batch from `seed` and sliced, so that a
    resumed run, a replayed step and every replica draw what one device draws for them.
    """
    return tf.random.stateless_normal([count, LATENT_DIM], seed)[first : first + size]


def vae_terms(images, outputs):
    """Each image's two loss terms: the negative log-likelihood of the image given the code
    drawn, summed over its pixels (the sigmoid cross-entropy of the decoder's logits), and
    the KL divergence of its code's N(mean, exp(log_variance)) from N(0, I), summed over the
    code: -1/2 * sum(1 + log_variance - mean^2 - exp(log_variance)) (Kingma & Welling).
    """
    reconstructed = tf.cast(outputs["reconstruction"], tf.float32)
    axes = list(range(1, images.shape.rank))  # each image's pixels
    errors = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=images, logits=reconstructed
    )
    mean = tf.cast(outputs["mean"], tf.float32)
    log_variance = tf.cast(outputs["log_variance"], tf.float32)
    kl = -0.5 * (1.0 + log_variance - tf.square(mean) - tf.exp(log_variance))
    return tf.reduce_sum(errors, axis=axes), tf.reduce_sum(kl, axis=-1)


def kl_weight(step):
    """The KL term's weight in the train step after `step` steps: BETA * step / KL_WARMUP_STEPS
    up to BETA (KL annealing, Bowman et al., 2016), so that the decoder learns to use the codes
    before the prior pulls them together. A function of the step alone: a resumed run goes on.
    """
    return BETA * tf.minimum(1.0, tf.cast(step, tf.float32) / KL_WARMUP_STEPS)


def pixels(outputs):
    """The decoder's outputs as images in [0, 1]: the sigmoid of its logits."""
    outputs = tf.cast(outputs, tf.float32)
    return tf.sigmoid(outputs)


def decoded(decoder, codes):
    """Images in [0, 1] decoded from `codes`, in inference mode."""
    return pixels(decoder(codes, training=False))


@tf.function(reduce_retracing=True)
def samples(network, seed, count):
    """`count` images decoded from codes drawn from the prior N(0, I) with `seed`: the same
    (seed, count) give the same images, here, in `sample` and from the export's decoder.
    """
    codes = tf.random.stateless_normal(
        [count, LATENT_DIM], tf.stack([tf.cast(seed, tf.int64), 0])
    )
    return decoded(network.get_layer("decoder"), codes)


def reconstructions(network, images):
    """The images' reconstructions from their codes' means (no noise drawn), in [0, 1]."""
    outputs = network(
        {"image": images, "noise": tf.zeros([tf.shape(images)[0], LATENT_DIM])},
        training=False,
    )
    return pixels(outputs["reconstruction"])


def grid(images):
    """A batch of images as one image, tiled in rows of up to eight, for a PNG file and
    TensorBoard."""
    count, height, width, channels = images.shape
    columns = min(count, 8)
    rows = -(-count // columns)
    padded = np.zeros((rows * columns, height, width, channels), images.dtype)
    padded[:count] = images
    tiles = padded.reshape(rows, columns, height, width, channels).swapaxes(1, 2)
    return tiles.reshape(rows * height, columns * width, channels)


def write_samples(network, args):
    """sample: a PNG grid of --count images decoded from codes drawn from the prior with
    --seed, written whole to --grid (default: samples.png in the output directory)."""
    if args.count < 1:
        raise SystemExit(f"sample --count {args.count}: draw at least one image")
    images = samples(network, args.seed, args.count)
    path = args.grid or os.path.join(args.output_dir, "samples.png")
    png = tf.io.encode_png(tf.cast(tf.round(grid(images.numpy()) * 255), tf.uint8))
    written = f"{path}.partial"
    tf.io.write_file(written, png)
    os.replace(written, path)
    print(f"Wrote {args.count} samples to {path}")


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
        # The VAE: the images (and the noise of the codes drawn) in, the codes' mean and
        # log-variance and the reconstructions out.
        model = build_model()
        model.summary()
        optimizer = keras.optimizers.Adam(learning_rate=0.001)
        # The slot variables now, not in the first traced step, which would trace it twice and
        # leave a restored checkpoint nothing to fill.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss = keras.metrics.Mean(name="loss")
        train_terms = {
            name: keras.metrics.Mean(name=name) for name in ("reconstruction", "kl")
        }
        validation_loss = keras.metrics.Mean(name="loss")
        validation_terms = {
            name: keras.metrics.Mean(name=name) for name in ("reconstruction", "kl")
        }
        # The images whose reconstructions TensorBoard shows, the same at each validation: the first
        # of the validation set.
        shown = next(
            iter(validation_batches(validation_examples, tf.distribute.InputContext()))
        )[0][:NUM_SAMPLES]
        train_values = [train_loss, *train_terms.values()]
        validation_values = [validation_loss, *validation_terms.values()]
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
            # The codes' noise: a function of (SEED, step, position in the global batch).
            seed = tf.stack([tf.constant(SEED, tf.int64), step])
            noise = code_noise(
                seed,
                tf.shape(images)[0],
                tf.distribute.get_replica_context().replica_id_in_sync_group
                * global_batch_size
                // strategy.num_replicas_in_sync,
                global_batch_size,
            )
            predictions = model({"image": images, "noise": noise}, training=True)
            reconstruction, kl = vae_terms(images, predictions)
            # Divided by the global batch size, not this replica's: apply_gradients sums the
            # replicas' gradients, and the sum is then the gradient of the global batch's mean.
            loss = tf.nn.compute_average_loss(
                reconstruction + kl_weight(step) * kl,
                global_batch_size=global_batch_size,
            )
            terms = {
                "reconstruction": tf.nn.compute_average_loss(
                    reconstruction, global_batch_size=global_batch_size
                ),
                "kl": tf.nn.compute_average_loss(
                    kl, global_batch_size=global_batch_size
                ),
            }
        gradients = tape.gradient(loss, model.trainable_variables)
        # Sums the gradients over all replicas, then applies the same update on each.
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.

        return loss, terms, batch_size

    @tf.function
    def train_step(images, labels):
        """One train step on every replica."""
        replica_losses, terms, batch_sizes = strategy.run(
            replica_train_step, args=(images, labels)
        )
        # Each replica's loss is its share of the global batch's mean: their sum is the mean.
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, replica_losses, axis=None)
        batch_size = strategy.reduce(tf.distribute.ReduceOp.SUM, batch_sizes, axis=None)
        train_loss.update_state(loss, sample_weight=batch_size)
        for term, term_loss in terms.items():
            term_loss = strategy.reduce(
                tf.distribute.ReduceOp.SUM, term_loss, axis=None
            )
            train_terms[term].update_state(term_loss, sample_weight=batch_size)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step)

    def replica_eval_step(images, labels, seed):
        batch_size = tf.shape(images)[0]
        global_batch_size = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, batch_size
        )
        first = (
            tf.distribute.get_replica_context().replica_id_in_sync_group
            * global_batch_size
            // strategy.num_replicas_in_sync
        )
        noise = code_noise(seed, tf.shape(images)[0], first, global_batch_size)
        outputs = model({"image": images, "noise": noise}, training=False)
        reconstruction, kl = vae_terms(images, outputs)
        validation_loss.update_state(reconstruction + BETA * kl)
        validation_terms["reconstruction"].update_state(reconstruction)
        validation_terms["kl"].update_state(kl)

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the validation set in one call: num_steps batches, each with codes
        drawn by seeds of its own (below every step's), the same in every pass. The loss
        weighs the KL term by BETA, the objective after any warm-up."""
        for i in tf.range(num_steps):
            seed = tf.stack([tf.constant(SEED, tf.int64), -1 - tf.cast(i, tf.int64)])
            images, labels = next(iterator)
            strategy.run(replica_eval_step, args=(images, labels, seed))

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(checkpoint, train_examples, model=model)
    if args.command == "evaluate":  # one validation pass of the restored weights
        validation_pass(validation_iterator, tf.constant(validation_steps))
        return run.evaluated(results(validation_values))
    if (
        args.command == "sample"
    ):  # a PNG grid decoded from the prior, of the restored weights
        return write_samples(model, args)

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
            # Decoded from the same codes, and the same images reconstructed (the first rows: the
            # images, the next: their reconstructions), each time: the progress at a glance.
            images = samples(model, SEED, NUM_SAMPLES).numpy()
            pairs = np.concatenate([shown, reconstructions(model, shown)])
            with run.writer("validation").as_default(step=global_step):
                tf.summary.image("samples", grid(images)[np.newaxis], max_outputs=1)
                tf.summary.image(
                    "reconstructions", grid(pairs)[np.newaxis], max_outputs=1
                )
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
        if run.preempted:
            break
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    export(model, os.path.join(args.output_dir, "export"))


def export(model, directory):
    """The trained VAE, written whole into `directory`:

    - decoder/: a SavedModel whose serving_default signature decodes codes (LATENT_DIM numbers
      each) into images in [0, 1]. Codes drawn from N(0, I) give new images: those of
      `sample --seed S` are tf.random.stateless_normal([count, LATENT_DIM], [S, 0]).
    - encoder/: a SavedModel whose serving_default signature encodes images in [0, 1] into the
      mean and the log-variance of their codes.

    Both SavedModels load without this script's classes."""
    decoder = model.get_layer("decoder")
    decoding = keras.export.ExportArchive()
    decoding.track(decoder)
    decoding.add_endpoint(
        "serving_default",
        lambda codes: {"images": decoded(decoder, codes)},
        input_signature=[tf.TensorSpec([None, LATENT_DIM], tf.float32, name="codes")],
    )
    encoder = model.get_layer("encoder")
    encoding = keras.export.ExportArchive()
    encoding.track(encoder)
    encoding.add_endpoint(
        "serving_default",
        lambda images: dict(
            zip(
                ("mean", "log_variance"),
                tf.split(encoder(images, training=False), 2, axis=-1),
            )
        ),
        input_signature=[
            tf.TensorSpec([None, *(16, 16, 3)], tf.float32, name="images")
        ],
    )
    with written_whole(directory) as partial:
        decoding.write_out(os.path.join(partial, "decoder"), verbose=False)
        encoding.write_out(os.path.join(partial, "encoder"), verbose=False)


# --- Debugging (the flags and replay: loopgen_runtime.py) ---------------------------


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run on N steps, each a run of its own in a scratch
    directory (loopgen_runtime.fast_dev_stages)."""
    n = args.fast_dev_run
    examples = load_examples()[0]
    stages = [
        (
            {"max_steps": n},
            f"train {n} steps, validate {n} batches, save a checkpoint, export",
        ),
        ({"max_steps": 2 * n}, f"resume from the checkpoint, train {n} more"),
        ({"command": "evaluate"}, "evaluate the checkpoint"),
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
    codes of the prior."""
    decoder = tf.saved_model.load(os.path.join(directory, "decoder")).signatures[
        "serving_default"
    ]
    outputs = decoder(codes=tf.random.normal((count, LATENT_DIM)))
    if not all(np.isfinite(output).all() for output in tf.nest.flatten(outputs)):
        raise SystemExit(
            f"--fast-dev-run: the network in {directory} answers NaN or Inf"
        )


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "shapes_vae",
    "spec_sha256": "a8edcbcd53c0cac6",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "ca72238b191df219",
    "data.train": "5d026731d41f36bb",
    "data.validation": "50d8deb1c3c162dc",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 2000,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "training": "b7314c89dc8fe54f",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    readers = ("evaluate", "sample")
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
