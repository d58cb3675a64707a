"""Learn 5-way 1-shot MNIST digit tasks by Reptile.

Written by loopgen 0.1.0 from examples/mnist_reptile.py
(spec sha256 8b450e7775ef033b, script sha256 a94a8d4dafae8cc9).
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
import math
import os
import shutil
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        downloading,
        execution_modes,
        fast_dev_stages,
        is_chief,
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

SEED = 11
GLOBAL_BATCH_SIZE = 20  # over all replicas: each takes a slice
RESCALE = 1 / 255
EPOCHS = 4
# Few-shot tasks (training): WAYS classes each, SHOTS examples of a class to adapt on (the
# support set) and QUERIES more to score the adapted network on (the query set).
WAYS = 5
SHOTS = 1
QUERIES = 5
TEST_CLASSES = [5, 6, 7, 8, 9]  # held out of training: the evaluation's classes
TASKS_PER_STEP = 4
INNER_STEPS = 5  # of plain SGD on a task's support set
INNER_LEARNING_RATE = 0.05
EVALUATION_TASKS = 100  # of the held-out classes, each validation
LOG_EVERY_STEPS = 100
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/mnist_reptile"


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
        (x_train, y_train), _ = keras.datasets.mnist.load_data()
    train_examples = (x_train, y_train)
    # The evaluation's classes are held out of training: its tasks are drawn from them alone.
    # Only the data tells its classes: a held-out class it lacks is refused now, not left out.
    classes = sorted(np.unique(train_examples[1]).tolist())
    absent = [label for label in TEST_CLASSES if label not in classes]
    if absent:
        raise SystemExit(
            f"training.test_classes: class {absent[0]} is not in data.train (its classes: "
            f"{classes}); hold out classes the data has"
        )
    labels = tf.reshape(tf.cast(train_examples[1], tf.int64), [-1, 1])
    held_out = tf.reduce_any(labels == tf.constant(TEST_CLASSES, tf.int64), axis=1)
    validation_examples = tf.nest.map_structure(
        lambda array: tf.boolean_mask(array, held_out).numpy(), train_examples
    )
    train_examples = tf.nest.map_structure(
        lambda array: tf.boolean_mask(array, ~held_out).numpy(), train_examples
    )
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


def fold(seed, number):
    """A seed of its own for the `number`-th use of `seed`."""
    return tf.random.experimental.stateless_fold_in(seed, number)


def class_members(labels, field):
    """The positions of each class's examples: one row per class present, padded with -1."""
    labels = tf.reshape(tf.cast(labels, tf.int64), [-1])
    classes, class_of = tf.unique(labels)
    positions = tf.range(tf.size(labels, out_type=tf.int64))
    members = tf.ragged.stack_dynamic_partitions(positions, class_of, tf.size(classes))
    fewest = int(tf.reduce_min(members.row_lengths()))
    if len(classes) < WAYS:
        raise SystemExit(
            f"{field} holds {len(classes)} classes, fewer than training.ways={WAYS}: a task "
            "needs WAYS classes; lower ways or change training.test_classes"
        )
    if fewest < SHOTS + QUERIES:
        raise SystemExit(
            f"{field}: a class has {fewest} examples, fewer than training.shots + "
            f"training.queries = {SHOTS + QUERIES}; lower shots or queries"
        )
    return members.to_tensor(default_value=-1)


def draw_tasks(members, seed, count, per_class):
    """`count` tasks of WAYS distinct classes and `per_class` distinct examples of each, drawn
    from `seed` alone: the positions of their examples, [count, WAYS, per_class]. Task t uses
    (seed, t), whatever replica reads it."""

    def draw(task):
        task_seed = fold(seed, task)
        shuffled = tf.random.stateless_uniform(
            [tf.shape(members)[0]], fold(task_seed, 0)
        )
        rows = tf.gather(members, tf.argsort(shuffled)[:WAYS])
        # A random order of each class's examples, the padding (-1) last.
        keys = tf.random.stateless_uniform(tf.shape(rows), fold(task_seed, 1))
        keys = tf.where(rows < 0, 2.0, keys)
        return tf.gather(rows, tf.argsort(keys, axis=1)[:, :per_class], batch_dims=1)

    return tf.map_fn(
        draw, tf.range(count, dtype=tf.int64), fn_output_signature=tf.int64
    )


def read_tasks(examples, positions):
    """The tasks' examples, read and preprocessed, as (support images, support labels, query
    images, query labels), each [tasks, WAYS * examples, ...]. A label is its class's place in
    its task (0 to WAYS - 1), not its id."""
    tasks, per_class = tf.shape(positions)[0], tf.shape(positions)[2]
    images, _ = preprocess(*read_arrays(examples, tf.reshape(positions, [-1])))
    images = tf.reshape(
        images, tf.concat([[tasks, WAYS, per_class], tf.shape(images)[1:]], 0)
    )
    labels = tf.broadcast_to(tf.range(WAYS)[None, :, None], [tasks, WAYS, per_class])

    def flat(part):  # [tasks, WAYS, examples, ...] -> [tasks, WAYS * examples, ...]
        shape = tf.shape(part)
        return tf.reshape(
            part, tf.concat([[shape[0], shape[1] * shape[2]], shape[3:]], 0)
        )

    return (
        flat(images[:, :, :SHOTS]),
        flat(labels[:, :, :SHOTS]),
        flat(images[:, :, SHOTS:]),
        flat(labels[:, :, SHOTS:]),
    )


def training_batches(examples, start_step, context):
    """Batches of TASKS_PER_STEP tasks of the training classes, one per step from `start_step` on,
    without end. Step s draws its tasks from (SEED, s) alone: a resumed run draws what an
    unbroken one does. Each replica reads its share of the tasks."""
    examples = as_tensors(examples)
    members = class_members(
        examples[1], "data.train (its classes outside test_classes)"
    )
    steps = tf.data.Dataset.counter(start_step)
    batches = steps.map(
        lambda step: draw_tasks(
            members,
            tf.stack([tf.constant(SEED, tf.int64), step]),
            TASKS_PER_STEP,
            SHOTS,
        )
    )
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
    return batches.map(
        # Reptile adapts on the support sets alone: no query set is drawn.
        lambda positions: read_tasks(examples, positions)[:2],
        num_parallel_calls=tf.data.AUTOTUNE,
    ).prefetch(tf.data.AUTOTUNE)


def validation_batches(examples, context):
    """The few-shot evaluation's EVALUATION_TASKS tasks of the held-out classes, as one batch,
    repeated: drawn from (SEED, -1), no training step's seed, the same at every validation.
    """
    examples = as_tensors(examples)
    members = class_members(examples[1], "training.test_classes")
    seed = tf.constant([SEED, -1], tf.int64)
    tasks = draw_tasks(members, seed, EVALUATION_TASKS, SHOTS + QUERIES)
    batches = tf.data.Dataset.from_tensors(tasks)
    batches = batches.flat_map(lambda batch: replica_slices(batch, context))
    return (
        batches.map(lambda positions: read_tasks(examples, positions)).cache().repeat()
    )


def build_model():
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28)),
            layers.Reshape((28, 28, 1)),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(5, name="logits"),
        ],
        name="mnist_reptile",
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


def adapt(model, loss_fn, images, labels):
    """INNER_STEPS of plain SGD on one task's support set, from the network's current values:
    the adapted trainable and non-trainable values, the last step's loss and predictions.
    Every task starts from the variables, which are only read (the network runs on the
    values, by stateless_call): nothing of a task outlives it, no optimizer state, no
    BatchNormalization statistics. The network is in training mode throughout a task, as in
    MAML: BatchNormalization normalizes by the task's own examples."""
    weights = [tf.convert_to_tensor(v) for v in model.trainable_variables]
    state = [tf.convert_to_tensor(v) for v in model.non_trainable_variables]
    for _ in range(INNER_STEPS):
        with tf.GradientTape() as tape:
            tape.watch(weights)
            predictions, state = model.stateless_call(
                weights, state, images, training=True
            )
            loss = tf.reduce_mean(loss_fn(labels, predictions))
        gradients = tape.gradient(loss, weights)
        weights = [w - INNER_LEARNING_RATE * g for w, g in zip(weights, gradients)]
    return weights, state, loss, predictions


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
    train_examples, validation_examples = load_examples()
    # An epoch: as many meta-steps as it takes the tasks to draw as many examples as the
    # training classes hold.
    steps_per_epoch = math.ceil(
        num_examples(train_examples) / (TASKS_PER_STEP * WAYS * SHOTS)
    )
    validation_steps = 1  # one batch of all EVALUATION_TASKS tasks
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
        # The schedule is evaluated at optimizer.iterations, which the checkpoint saves
        # with the optimizer: a resumed run continues the schedule, not restarts it.
        learning_rate = keras.optimizers.schedules.CosineDecay(
            initial_learning_rate=1.0, decay_steps=6120
        )
        optimizer = keras.optimizers.SGD(learning_rate=learning_rate)
        # Slots (momentum, moments) now: a restored checkpoint fills them; the step traces once.
        optimizer.build(model.trainable_variables)
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
    def replica_train_step(support_images, support_labels):
        """One replica's part of a meta-step: its share of the step's tasks."""
        gradients = [tf.zeros_like(variable) for variable in model.trainable_variables]
        loss = tf.constant(0.0)
        # This replica's tasks; each adds its 1/TASKS_PER_STEP share, and apply_gradients
        # sums the replicas' shares: the mean over all the step's tasks.
        for task in tf.range(tf.shape(support_images)[0]):
            adapted, _, task_loss, predictions = adapt(
                model, loss_fn, support_images[task], support_labels[task]
            )
            # Reptile's gradient: weights - adapted, whose mean over the tasks the optimizer
            # applies (SGD with learning rate e moves the weights e of the way to the mean).
            gradients = [
                g + (v - a) / TASKS_PER_STEP
                for g, v, a in zip(gradients, model.trainable_variables, adapted)
            ]
            loss += task_loss / TASKS_PER_STEP
            for metric in train_metrics:
                metric.update_state(support_labels[task], predictions)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def train_step(support_images, support_labels):
        """One meta-step on every replica."""
        losses = strategy.run(replica_train_step, args=(support_images, support_labels))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        # The loss logged: the support loss of the tasks' last inner step, averaged.
        train_loss.update_state(loss)
        step.assign_add(1)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)

    train_loop = make_train_loop(train_step, strategy)

    def evaluate_tasks(support_images, support_labels, query_images, query_labels):
        """The few-shot evaluation of held-out tasks: each adapted from the current weights on
        its support set, then scored on its query set. The variables are only read: the
        network is as training left it."""
        for task in tf.range(tf.shape(support_images)[0]):
            weights, state, _, _ = adapt(
                model, loss_fn, support_images[task], support_labels[task]
            )
            predictions, _ = model.stateless_call(
                weights, state, query_images[task], training=True
            )
            validation_loss.update_state(loss_fn(query_labels[task], predictions))
            for metric in validation_metrics:
                metric.update_state(query_labels[task], predictions)

    @tf.function
    def validation_pass(iterator, num_steps):
        """One pass over the evaluation's tasks in one call: num_steps batches of them."""
        for _ in tf.range(num_steps):
            strategy.run(evaluate_tasks, args=next(iterator))

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
    if args.command == "predict":  # the model to serve, of the restored weights
        return predict(serving_function(model, train_examples), args, train_examples)
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

    for epoch in range(first_epoch, epochs):
        epoch_end = min((epoch + 1) * steps_per_epoch, total_steps)
        run.start_epoch(epoch, epochs, epoch * steps_per_epoch, epoch_end, train_values)
        while global_step < epoch_end and not run.preempted:
            num_steps = steps_in_call(global_step, epoch_end, run.bound)
            with run.debugged(global_step, num_steps):  # the debugging flags, replay
                votes = train_loop(
                    train_iterator,
                    tf.constant(num_steps),
                    tf.constant(float(run.sigterm)),
                )
            # Some worker got SIGTERM: every worker stops after this call.
            run.preempted = bool(votes > 0)
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
    # Every worker exports (reading the variables may take all workers), but only the chief's
    # copy is kept: the others write into their scratch directory and delete it.
    export_dir = os.path.join(args.output_dir if chief else run.scratch, "export")
    export(model, export_dir, train_examples)
    if not chief:
        shutil.rmtree(export_dir)


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
    "spec": "mnist_reptile",
    "spec_sha256": "8b450e7775ef033b",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "6fcdc1c9a6064016",
    "data.train": "ac80475db1cd2d63",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.rescale": 1 / 255,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "d9572ac4247d7afa",
    "training": "cd485ac688aa36c8",
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
    multi_worker = True
    strategy = "MultiWorkerMirroredStrategy"
    preemptible = True
    results = staticmethod(results)
    batch_names, batch_of_step = ("support_images", "support_labels"), staticmethod(
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
