"""Draw shapes of a chosen class with class-conditional flow matching (offline).

Written by loopgen 0.1.0 from examples/shapes_flow.py
(spec sha256 972ecd45338f1ff5, script sha256 7a9c5b14c4b1b850).
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
        replay,
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

SEED = 11
GLOBAL_BATCH_SIZE = 64  # over all replicas: each takes a slice
EPOCHS = 190
# training=FlowMatching: straight paths x_t = (1 - t) x0 + t * noise, t in [0, 1); the
# denoiser predicts their velocity, noise - x0, and sampling follows it from t = 1 to 0.
# Classifier-free guidance: labels 0 .. CLASSES - 1; NO_LABEL (= CLASSES) is "no class",
# which replaces a training label with probability LABEL_DROPOUT.
CLASSES = 3
NO_LABEL = CLASSES
LABEL_DROPOUT = 0.1
GUIDANCE = 4.0  # the samples' guidance scale, sample --guidance
SAMPLE_STEPS = 30  # the sampler's steps, sample --steps
NUM_SAMPLES = 12  # images in the grid written at each validation
LOG_EVERY_STEPS = 50
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
EMA_DECAY = 0.995  # ema=EMA: the average's share kept at each step
VALIDATE_EVERY_EPOCHS = 10
CHECKPOINT_EVERY_EPOCHS = 10
KEEP_CHECKPOINTS = 2
OUTPUT_DIR = "runs/shapes_flow"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="epochs to train")
    parser.add_argument("--max-steps", type=int, help="stop after this many steps")
    parser.add_argument("--output-dir", default=OUTPUT_DIR, help="where the run writes")
    # sample: a grid of images drawn by the sampler of a checkpoint's weights.
    parser.add_argument("--count", type=int, default=16, help="sample: how many images")
    parser.add_argument(
        "--steps", type=int, default=SAMPLE_STEPS, help="sample: the sampler's steps"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="sample: the seed of their noise"
    )
    parser.add_argument(
        "--label",
        type=int,
        help="sample: the class of every image (default: each in turn)",
    )
    parser.add_argument(
        "--guidance", type=float, help="sample: the guidance scale (default: GUIDANCE)"
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
        commands=["evaluate", "sample", "replay"],
        init_from=True,
        new_data=True,
        sample="draw images with a checkpoint's sampler",
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
    """Prepares a batch, inside the tf.data pipeline: the images in [-1, 1], the range the
    noise is added in and the sampler draws in, and their class ids."""
    images = tf.cast(images, tf.float32)
    # From [0, 1] to [-1, 1]: the noise is a standard normal, and the sampler's output range.
    images = images * 2.0 - 1.0
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
    image = keras.Input(shape=(16, 16, 3), name="image")
    t = keras.Input(shape=(1,), name="t")
    label = keras.Input(shape=(), dtype="int32", name="label")
    time_hidden = layers.Dense(48, activation="swish", name="time_hidden")(t)
    time_vector = layers.Dense(48, name="time_vector")(time_hidden)
    label_vectors = layers.Embedding(4, 48, name="label_vectors")(label)
    label_vector = layers.Flatten(name="label_vector")(label_vectors)
    condition_sum = layers.Add(name="condition_sum")([time_vector, label_vector])
    condition = layers.Activation("swish", name="condition")(condition_sum)
    condition_16 = layers.Dense(48, name="condition_16")(condition)
    bias_16 = layers.Reshape((1, 1, 48), name="bias_16")(condition_16)
    condition_8 = layers.Dense(96, name="condition_8")(condition)
    bias_8 = layers.Reshape((1, 1, 96), name="bias_8")(condition_8)
    stem = layers.Conv2D(48, 3, padding="same", activation="swish", name="stem")(image)
    conditioned_16 = layers.Add(name="conditioned_16")([stem, bias_16])
    encoded_16 = layers.Conv2D(
        48, 3, padding="same", activation="swish", name="encoded_16"
    )(conditioned_16)
    down = layers.Conv2D(
        96, 3, strides=2, padding="same", activation="swish", name="down"
    )(encoded_16)
    conditioned_8 = layers.Add(name="conditioned_8")([down, bias_8])
    middle_1 = layers.Conv2D(
        96, 3, padding="same", activation="swish", name="middle_1"
    )(conditioned_8)
    middle_2 = layers.Conv2D(
        96, 3, padding="same", activation="swish", name="middle_2"
    )(middle_1)
    up = layers.Conv2DTranspose(48, 2, strides=2, name="up")(middle_2)
    joined = layers.Concatenate(name="joined")([up, encoded_16])
    decoded = layers.Conv2D(48, 3, padding="same", activation="swish", name="decoded")(
        joined
    )
    velocity = layers.Conv2D(3, 3, padding="same", name="velocity")(decoded)
    return keras.Model(
        inputs={"image": image, "t": t, "label": label},
        outputs=velocity,
        name="shapes_flow",
    )


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device)."""
    return {metric.name: float(metric.result()) for metric in metrics}


def draw(sample, seed, use, shape, first, count):
    """`sample` (a stateless random op) of `shape` for examples first, first + 1, ... of a
    batch of `count`: drawn for the whole (global) batch from (seed, use), so that a resumed
    run, a replayed step and every replica draw what one device draws for the same examples.
    """
    seed = tf.random.experimental.stateless_fold_in(seed, use)
    values = sample(tf.concat([[count], shape[1:]], axis=0), seed)
    return values[first : first + shape[0]]


def noised(images, labels, seed, first, count):
    """A training example of the denoiser from clean images x0 in [-1, 1]: its inputs (the noisy
    images, the times, the labels, some dropped) and its target. Every draw is a
    function of `seed` and the image's position in the batch (`first`, of `count`)."""
    noise = draw(tf.random.stateless_normal, seed, 0, tf.shape(images), first, count)
    batch = tf.shape(images)[:1]
    times = draw(
        tf.random.stateless_uniform, seed, 1, tf.concat([batch, [1]], 0), first, count
    )
    t = times[:, :, tf.newaxis, tf.newaxis]
    inputs = {"image": (1.0 - t) * images + t * noise, "t": times}
    target = noise - images  # the velocity d x_t / dt of the straight path
    # Classifier-free guidance: one label in 1 / LABEL_DROPOUT becomes NO_LABEL, so the same
    # network learns the unconditional prediction too.
    dropped = (
        draw(tf.random.stateless_uniform, seed, 2, batch, first, count) < LABEL_DROPOUT
    )
    inputs["label"] = tf.where(dropped, NO_LABEL, tf.cast(labels, tf.int32))
    return inputs, target


def squared_errors(predictions, target):
    """The mean squared error of each image's prediction (over its pixels and channels)."""
    errors = tf.square(tf.cast(predictions, tf.float32) - target)
    return tf.reduce_mean(errors, axis=list(range(1, errors.shape.rank)))


def denoise(network, images, times, labels, guidance):
    """The network's prediction for `images` at `times`, guided towards `labels`: one call on
    the batch twice, with its labels and with none, then uncond + guidance * (cond - uncond)
    (Ho & Salimans, 2022). Inference mode: no label is dropped, no Dropout mask drawn.
    """
    both = network(
        {
            "image": tf.concat([images, images], 0),
            "t": tf.concat([times, times], 0),
            "label": tf.concat([labels, tf.fill(tf.shape(labels), NO_LABEL)], 0),
        },
        training=False,
    )
    conditional, unconditional = tf.split(tf.cast(both, tf.float32), 2)
    return unconditional + guidance * (conditional - unconditional)


def sample_images(network, noise, labels, guidance, num_steps):
    """Images from `noise` by num_steps Euler steps along the learned velocity, from t = 1
    (noise) to t = 0 (images): x <- x - dt * v(x, t), clipped to [-1, 1] at the end."""
    images = noise
    dt = 1.0 / tf.cast(num_steps, tf.float32)
    times = tf.ones([tf.shape(noise)[0], 1])
    for _ in tf.range(num_steps):
        images -= dt * denoise(network, images, times, labels, guidance)
        times -= dt
    return tf.clip_by_value(images, -1.0, 1.0)


@tf.function(reduce_retracing=True)
def samples(network, seed, labels, guidance, num_steps):
    """Images in [0, 1] drawn by the sampler from the noise of `seed`, one per label: the same
    (seed, labels, guidance, steps) give the same images, here, in `sample` and in the export.
    """
    count = tf.shape(labels)[0]
    shape = network.input["image"].shape[1:]  # one image's
    noise = tf.random.stateless_normal(
        tf.concat([[count], shape], 0), tf.stack([seed, 0])
    )
    images = sample_images(network, noise, labels, guidance, num_steps)
    return (images + 1.0) / 2.0


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
    """sample: a PNG grid of --count images (--label, --guidance) drawn in --steps sampler
    steps from the noise of --seed, written whole to --grid (default: samples.png in the
    output directory)."""
    if args.count < 1:
        raise SystemExit(f"sample --count {args.count}: draw at least one image")
    if args.label is not None and not 0 <= args.label < CLASSES:
        raise SystemExit(
            f"sample --label {args.label}: the classes are 0 .. {CLASSES - 1}"
        )
    # One class for all, or the classes in turn.
    labels = (
        [args.label] * args.count
        if args.label is not None
        else [i % CLASSES for i in range(args.count)]
    )
    guidance = GUIDANCE if args.guidance is None else args.guidance
    images = samples(
        network, args.seed, tf.constant(labels, tf.int32), guidance, args.steps
    )
    path = args.grid or os.path.join(args.output_dir, "samples.png")
    png = tf.io.encode_png(tf.cast(tf.round(grid(images.numpy()) * 255), tf.uint8))
    written = f"{path}.partial"
    tf.io.write_file(written, png)
    os.replace(written, path)
    print(f"Wrote {args.count} samples to {path}")


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


def steps_in_call(global_step, epoch_end, bound, smaller_last_batch):
    """The steps of the next train_loop call: STEPS_PER_LOOP, or fewer to stop at the next log
    point, epoch end or run.bound: each of them then happens at its exact step."""
    return min(
        STEPS_PER_LOOP,
        epoch_end - global_step,
        LOG_EVERY_STEPS - global_step % LOG_EVERY_STEPS,
        bound(global_step) - global_step,
        # Sparse gradients need one batch size per call: the smaller last batch goes alone.
        (epoch_end - 1 - global_step or 1) if smaller_last_batch else STEPS_PER_LOOP,
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
    # An embedding's gradient is sparse (the rows of the tokens seen), and replicas gather
    # sparse gradients with collectives that need the same batch size on every step of a
    # train_loop call: the smaller last batch of an epoch gets a call of its own.
    smaller_last_batch = num_examples(train_examples) % GLOBAL_BATCH_SIZE != 0
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
        # The denoiser: the noisy image and its time (and class) in, the prediction out.
        model = build_model()
        model.summary()
        # ema=EMA: the exponential moving average of the weights, a copy of the denoiser that
        # follows them after every step (ema = EMA_DECAY * ema + (1 - EMA_DECAY) * weights), from
        # the initial weights. Validation, the samples and the export use it; the weights train.
        ema_model = build_model()
        ema_model.set_weights(model.get_weights())
        optimizer = keras.optimizers.Adam(learning_rate=0.001)
        # The slot variables now, not in the first traced step, which would trace it twice and
        # leave a restored checkpoint nothing to fill.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss = keras.metrics.Mean(name="loss")
        validation_loss = keras.metrics.Mean(name="loss")
        train_values = [train_loss]
        validation_values = [validation_loss]
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
            # Every draw is a function of (SEED, step, position in the global batch).
            seed = tf.stack([tf.constant(SEED, tf.int64), step])
            # Draws for the global batch, sliced where this replica's images start in it.
            inputs, denoised = noised(
                images,
                labels,
                seed,
                tf.distribute.get_replica_context().replica_id_in_sync_group
                * global_batch_size
                // strategy.num_replicas_in_sync,
                global_batch_size,
            )
            predictions = model(inputs, training=True)
            # Divided by the global batch size, not this replica's: apply_gradients sums the
            # replicas' gradients, and the sum is then the gradient of the global batch's mean.
            loss = tf.nn.compute_average_loss(
                squared_errors(predictions, denoised),
                global_batch_size=global_batch_size,
            )
        gradients = tape.gradient(loss, model.trainable_variables)
        # Sums the gradients over all replicas, then applies the same update on each.
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.

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
        # ema=EMA: the average moves 1 - EMA_DECAY of the way to the weights just updated
        # (in the cross-replica context: every replica's copy alike).
        # Floats only: a random generator's state is an integer, and stays the copy's own.
        for average, weight in zip(ema_model.weights, model.weights):
            if "float" in average.dtype:
                average.assign(EMA_DECAY * average + (1.0 - EMA_DECAY) * weight)
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
        inputs, denoised = noised(images, labels, seed, first, global_batch_size)
        predictions = ema_model(inputs, training=False)
        validation_loss.update_state(squared_errors(predictions, denoised))

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the validation set in one call: num_steps batches, each noised by
        draws of its own (seeds below every step's), the same in every pass."""
        for i in tf.range(num_steps):
            seed = tf.stack([tf.constant(SEED, tf.int64), -1 - tf.cast(i, tf.int64)])
            images, labels = next(iterator)
            strategy.run(replica_eval_step, args=(images, labels, seed))

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        # The average of the weights: a resumed run continues it, not restarts it.
        ema_model=ema_model,
        # Slots and optimizer.iterations, which drives the learning-rate schedule.
        optimizer=optimizer,
        # The step also fixes the position in the data: see training_batches().
        step=step,
        # The epoch's running means: a run resumed mid-epoch continues them.
        train_values=[v for value in train_values for v in value.variables],
    )
    # Checkpoints do not depend on the strategy: they may come from any variant.
    run.restore(checkpoint, train_examples, model=model)
    if (
        run.init_from
    ):  # --init-from: the average starts from the weights loaded, not drawn
        ema_model.set_weights(model.get_weights())
    if args.command == "evaluate":  # one validation pass of the restored weights
        validation_pass(validation_iterator, tf.constant(validation_steps))
        return run.evaluated(results(validation_values))
    if (
        args.command == "sample"
    ):  # a PNG grid drawn by the sampler, of the restored weights
        return write_samples(ema_model, args)

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
            num_steps = steps_in_call(
                global_step, epoch_end, run.bound, smaller_last_batch
            )
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
            # Samples from the same noise and classes each time: the sampler's progress at a glance.
            labels = tf.range(NUM_SAMPLES) % CLASSES
            images = samples(ema_model, SEED, labels, GUIDANCE, SAMPLE_STEPS)
            with run.writer("validation").as_default(step=global_step):
                tf.summary.image(
                    "samples", grid(images.numpy())[np.newaxis], max_outputs=1
                )
        if (epoch + 1) % CHECKPOINT_EVERY_EPOCHS == 0:
            run.save(global_step)
        if run.preempted:
            break
    run.finish(global_step)

    # --- Export -----------------------------------------------------------------------
    export(ema_model, os.path.join(args.output_dir, "export"))


def export(model, directory):
    """The trained denoiser (its average, ema) and its sampler, written whole into `directory`:

    - sampler/: a SavedModel whose serving_default signature draws images in [0, 1] from
      (seed, labels, guidance, steps), the same images as `sample` draws.
    - network/: the bare denoiser (model.export), for a sampler of your own.

    Both SavedModels load without this script's classes."""
    served = keras.export.ExportArchive()
    served.track(model)
    served.add_endpoint(
        "serving_default",
        lambda seed, labels, guidance, steps: {
            "images": samples(model, seed, labels, guidance, steps)
        },
        input_signature=[
            tf.TensorSpec([], tf.int64, name="seed"),
            tf.TensorSpec([None], tf.int32, name="labels"),
            tf.TensorSpec([], tf.float32, name="guidance"),
            tf.TensorSpec([], tf.int32, name="steps"),
        ],
    )
    with written_whole(directory) as partial:
        served.write_out(os.path.join(partial, "sampler"), verbose=False)
        model.export(os.path.join(partial, "network"), verbose=False)


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
    images drawn in two steps."""
    sampler = tf.saved_model.load(os.path.join(directory, "sampler")).signatures[
        "serving_default"
    ]
    labels = tf.range(count) % CLASSES
    outputs = sampler(
        seed=tf.constant(0, tf.int64),
        labels=labels,
        guidance=tf.constant(GUIDANCE),
        steps=tf.constant(2),
    )
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
    "spec": "shapes_flow",
    "spec_sha256": "972ecd45338f1ff5",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "f8c729e259253ace",
    "data.train": "5d026731d41f36bb",
    "data.validation": "50d8deb1c3c162dc",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 2000,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "training": "a659dfe9132c2c24",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    readers = ("evaluate", "sample", "replay")
    strategy = "MirroredStrategy"
    preemptible = True
    means_checkpointed = True
    results = staticmethod(results)
    batch_names, batch_of_step = ("images", "labels"), staticmethod(batch_of_step)


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
