"""Classify reviews as positive or negative with BERT fine-tuned by LoRA.

Written by loopgen 0.1.0 from examples/reviews_bert_lora.py
(spec sha256 41eea4704fa30f19, script sha256 c40c1bb4be94adae).
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
import contextlib
import functools
import glob
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
        preset_download,
        read_text_inputs,
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

SEED = 4
GLOBAL_BATCH_SIZE = 16  # over all replicas: each takes a slice
# The pretrained model: a KerasHub preset's name or handle (downloaded once into KerasHub's
# cache) or a local preset directory.
PRESET = "bert_tiny_en_uncased"
SEQUENCE_LENGTH = 64  # tokens an example: shorter pad, longer truncate
LORA_RANK = 4
EPOCHS = 3
LOG_EVERY_STEPS = 20
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/reviews_bert_lora"


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
        inputs="predict: text files (a text per line, as the training file), and directories of them",
        init_from=True,
        new_data=True,
        multi_worker=True,
    )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import keras
import keras_hub
import numpy as np
import tensorflow as tf


def read_text_lines(path, delimiter, text_column, label_column, field):
    """The examples of a file of lines: each line's text and label, held in memory. Labels are
    class ids, or class names numbered in alphabetical order."""
    if not os.path.isfile(path):
        raise SystemExit(f"{field}: no file {path!r}")
    texts, names = [], []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            columns = line.rstrip("\n").split(delimiter)
            if columns == [""]:
                continue  # an empty line
            if len(columns) <= max(text_column, label_column):
                raise SystemExit(
                    f"{path}:{number}: {len(columns)} column(s) split by {delimiter!r}, but the "
                    f"text is in column {text_column} and the label in column {label_column}"
                )
            texts.append(columns[text_column])
            names.append(columns[label_column].strip())
    if not texts:
        raise SystemExit(f"{path} holds no example (no line of text)")
    if all(name.isdigit() for name in names):
        labels = [int(name) for name in names]
    else:
        classes = sorted(set(names))
        print(f"{path}: classes {classes}, numbered from 0")
        labels = [classes.index(name) for name in names]
    return np.array(texts), np.array(labels, dtype=np.int32)


def label_names(path, delimiter, label_column):
    """The class names of a file of lines, sorted (None when its labels are class ids)."""
    with open(path, encoding="utf-8") as file:
        rows = [line.rstrip("\n").split(delimiter) for line in file if line.strip()]
    names = {row[label_column].strip() for row in rows if len(row) > label_column}
    return None if all(name.isdigit() for name in names) else sorted(names)


def load_examples():
    """Training and validation examples: (features, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    train_examples = read_text_lines(
        "data/reviews.tsv",
        delimiter="\t",
        text_column=0,
        label_column=1,
        field="data.train.path",
    )
    # Hold out the last 10.0% of the examples (before any shuffling) for validation,
    # like Keras' validation_split: int(n * fraction) of them (Keras holds out
    # n - floor(n * (1 - fraction)), one more where n * fraction is not whole).
    total = num_examples(train_examples)
    held_out = int(total * 0.1)
    validation_examples = tf.nest.map_structure(
        lambda a: a[total - held_out :], train_examples
    )
    train_examples = tf.nest.map_structure(
        lambda a: a[: total - held_out], train_examples
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


@functools.cache
def preprocessor():
    """KerasHub's preprocessor of the preset (its tokenizer), made once."""
    # Made outside any trace, even when a tf.data function or the serving signature asks
    # first: its vocabulary tables are resources that those functions capture.
    with tf.init_scope(), downloading(*preset_download(PRESET)):
        return keras_hub.models.TextClassifierPreprocessor.from_preset(
            PRESET, sequence_length=SEQUENCE_LENGTH
        )


def preprocess(features, labels):
    """Prepares a batch, inside the tf.data pipeline (one vectorized op per batch): its inputs
    by prepare_inputs(), which the exported model's serving signature applies too."""
    features = prepare_inputs(features)
    return features, labels


def prepare_inputs(features):
    """The model's inputs from a batch of examples as read: in training and validation
    (preprocess), and in the exported model's serving signature, so that a served example is
    prepared exactly as the training examples were (never augmented)."""
    # The preset's tokenizer, its special tokens, padding and truncation to SEQUENCE_LENGTH:
    # strings in, the backbone's inputs (token ids, padding mask, ...) out.
    features = preprocessor()(features)
    return features


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
    """KerasHub's text_classifier of the preset, its weights as pretrained, with a new head
    of 2 logits; the preprocessor runs in the input pipeline (preprocessor())."""
    with downloading(*preset_download(PRESET)):
        model = keras_hub.models.TextClassifier.from_preset(
            PRESET,
            num_classes=2,
            preprocessor=None,
        )
    # LoRA: the backbone's weights freeze, and adapters W + A·B (B starts at zero, so the
    # model starts as loaded) train on its attention's query and value projections; the head
    # trains in full. Only the adapters and the head are in model.trainable_variables.
    model.backbone.enable_lora(rank=LORA_RANK)
    if not any(
        "lora_kernel" in variable.path for variable in model.trainable_variables
    ):
        raise SystemExit(
            f"model.lora_rank: {model.backbone.name} has no layer that LoRA applies to "
            "(no attention query or value projection); remove lora_rank"
        )
    return model


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
        batch_size = tf.shape(labels)[0]
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
        return predict(
            serving_function(model, label_names("data/reviews.tsv", "\t", 1)), args
        )
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
            num_steps = steps_in_call(
                global_step, epoch_end, run.bound, smaller_last_batch
            )
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
    export(model, export_dir, label_names("data/reviews.tsv", "\t", 1))
    if not chief:
        shutil.rmtree(export_dir)


def export(model, directory, classes):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs already prepared as
      prepare_inputs() does.

    Both SavedModels load without this script's classes. `classes`: the class names, in the
    order of their ids (None where the training file's labels are ids)."""
    with written_whole(directory) as partial:
        # The LoRA adapters merged into the kernels they adapt: the exported network computes one
        # projection where training computed two, with the same function.
        with lora_merged(model):
            served = keras.export.ExportArchive()
            served.track(model)
            served.track(preprocessor())  # its vocabulary's tables
            served.add_endpoint("serving_default", serving_function(model, classes))
            served.write_out(os.path.join(partial, "saved_model", "1"), verbose=False)
            model.export(os.path.join(partial, "network"), verbose=False)


@contextlib.contextmanager
def lora_merged(model):
    """The model with its LoRA adapters merged into their kernels, W + (alpha / rank) A B (the
    kernel Keras computes for an adapted layer), and the adapters off; as it was afterwards, so
    that the checkpoints and a later export see the unmerged model. Keras keeps the layer's own
    kernel as `_kernel` and offers no public merge."""
    adapted = [
        layer
        for layer in model._flatten_layers()
        if getattr(layer, "lora_enabled", False)
    ]
    kernels = [layer._kernel.numpy() for layer in adapted]
    for layer in adapted:
        layer._kernel.assign(layer.kernel)
        layer.lora_enabled = False
    try:
        yield model
    finally:
        for layer, kernel in zip(adapted, kernels):
            layer._kernel.assign(kernel)
            layer.lora_enabled = True


def serving_function(model, classes):
    """The exported model's serving_default: a batch of texts (tf.string), which the network
    gets as the training pipeline gives it the file's texts: as they are (it tokenizes them
    itself). Named outputs: "scores", the network's output; "probabilities", "class_ids"
    and "class_names", the training file's label of each class where its labels are names.
    """

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.string, name="texts")])
    def serve(texts):
        scores = model(prepare_inputs(texts), training=False)
        probabilities = tf.nn.softmax(scores)
        class_ids = tf.argmax(scores, axis=-1)
        outputs = {
            "scores": scores,
            "probabilities": probabilities,
            "class_ids": class_ids,
        }
        if classes is not None:  # the training file's labels are class names, not ids
            outputs["class_names"] = tf.gather(tf.constant(classes), class_ids)
        return outputs

    return serve


def predict(serve, args):
    """predict: a JSON line of the served model's outputs for each input, in input order,
    written whole to --predictions; the inputs read by loopgen_runtime's reader."""
    read = functools.partial(read_text_inputs, args.inputs, "\t")
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

    def fresh_preprocessor():
        """The next stage seeds TensorFlow again, which deletes the kernels this one ran: a
        SentencePiece tokenizer's model (Gemma's, Llama 2's) is one's own. It makes the
        preprocessor anew."""
        preprocessor.cache_clear()

    fast_dev_stages(
        args,
        stages,
        train,
        RunDirectory,
        serve=functools.partial(serve_once, examples=examples, count=n),
        after_stage=fresh_preprocessor,
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
    # In the dtypes of the signature: KerasHub's backbones take their padding mask as int32,
    # the preprocessor gives booleans (the model casts them; a SavedModel's signature does not).
    (signature,), _ = network.serve.concrete_functions[0].structured_input_signature
    inputs = tf.nest.map_structure(
        lambda part, spec: tf.cast(part[:count], spec.dtype), batch[0], signature
    )
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
    "spec": "reviews_bert_lora",
    "spec_sha256": "41eea4704fa30f19",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "1c598b7c9f2a6e07",
    "data.train": "77b0874ea38b93e1",
    "data.validation": "5d14c1474b9d3169",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "loss": "071318bbec99592d",
}
# The training data's files, as the spec names them: setup.json records their sizes and times.
TRAIN_FILES = "data/reviews.tsv"


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    train_files = TRAIN_FILES
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
