"""Teach a causal language model to answer sums, by SFT with LoRA.

Written by loopgen 0.1.0 from examples/sums_sft.py
(spec sha256 3718d25fce308900, script sha256 8eecc43223f61788).
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
        read_records,
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

SEED = 5
GLOBAL_BATCH_SIZE = 16  # over all replicas: each takes a slice
# The pretrained model: a KerasHub preset's name or handle (downloaded once into KerasHub's
# cache) or a local preset directory.
PRESET = "llama3.2_instruct_1b"
SEQUENCE_LENGTH = 32  # tokens an example: shorter pad, longer truncate
LORA_RANK = 8
EPOCHS = 3
LOG_EVERY_STEPS = 10
# Train steps per call of the compiled train_loop: Python runs once per call, not per step.
STEPS_PER_LOOP = 50
VALIDATE_EVERY_EPOCHS = 1
CHECKPOINT_EVERY_EPOCHS = 1
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/sums_sft"


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
        commands=["evaluate", "replay"],
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


def token_counts(texts):
    """Each text's tokens, by the preset's tokenizer as the pipeline runs it (in a graph),
    traced at each call: the preprocessor of the moment (--fast-dev-run's stages make theirs).
    """
    count = tf.function(
        lambda texts: preprocessor().tokenizer(texts).row_lengths(), autograph=False
    )
    return count(tf.constant(texts, tf.string))


def check_lengths(examples, path, field):
    """The records that SEQUENCE_LENGTH cuts, tokenized as preprocess() packs them (the start
    token, the prompt's and the response's tokens, the end token): KerasHub's packer keeps a
    longer record's start and cuts its end, the response's tokens first (TRL's
    truncation_side "right"). Says how many lost tokens, and stops at a record that keeps no
    token of its response: it would train the model to end a cut prompt, nothing of the
    response."""
    preset = preprocessor()
    # The packer's SEQUENCE_LENGTH + 1 tokens (the inputs and their next tokens), less the
    # start and end tokens.
    room = SEQUENCE_LENGTH + 1 - preset.add_start_token - preset.add_end_token
    prompts = token_counts(examples[0]).numpy()
    cut = np.zeros(len(prompts), bool)
    responses = {"response": examples[1]}
    for name, texts in responses.items():
        whole = token_counts(tf.strings.join([examples[0], texts])).numpy()
        cut |= whole > room
        lost = np.flatnonzero((whole > room) & (prompts >= room))
        if lost.size:
            raise SystemExit(
                f"{field}.{name}: record {lost[0] + 1} of {path} keeps no token of its "
                f"response: its prompt has {prompts[lost[0]]} tokens, and "
                f"model.sequence_length={SEQUENCE_LENGTH} holds {room} besides the start and end "
                f"tokens ({lost.size} record(s) so); raise model.sequence_length or shorten the "
                "prompts"
            )
    if cut.any():
        print(
            f"{path}: {cut.sum()} of {cut.size} records longer than "
            f"model.sequence_length={SEQUENCE_LENGTH} tokens lost their ends (the packer keeps "
            "each record's start and cuts its end); raise model.sequence_length to keep them whole"
        )


def load_examples():
    """Training and validation examples: (features, labels) arrays held in
    memory, from which the batches pick theirs by index."""
    # (prompts, responses): SFT learns to write each response after its prompt.
    train_examples = read_records(
        "data/sums.jsonl",
        "jsonl",
        {"prompt": "prompt", "response": "completion"},
        field="data.train",
    )
    train_examples = (train_examples["prompt"], train_examples["response"])
    check_lengths(train_examples, "data/sums.jsonl", "data.train")
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
        return keras_hub.models.CausalLMPreprocessor.from_preset(
            PRESET, sequence_length=SEQUENCE_LENGTH
        )


def generation_inputs(prompts):
    """Prompts as the model generates from them: tokenized by the preset's preprocessor for
    generation (generate_preprocess: the start token, no end token, padding and truncation to
    SEQUENCE_LENGTH), the padding's ids replaced by a token other than the end token. KerasHub's
    sampler stops a row at an end token anywhere past its prompt, where the model has yet to
    write: a preset whose tokenizer pads with its end token's id (GPT-2's and others pad with
    id 0, some vocabularies' end token) would find one there before the first token, and every
    completion would be empty. The model writes each of those positions before it reads it.
    """
    inputs = preprocessor().generate_preprocess(prompts)
    tokenizer = preprocessor().tokenizer
    filler = (tokenizer.end_token_id + 1) % tokenizer.vocabulary_size()
    token_ids = inputs["token_ids"]
    inputs["token_ids"] = tf.where(
        inputs["padding_mask"], token_ids, tf.cast(filler, token_ids.dtype)
    )
    return inputs


# A tf.function: the validation pipeline calls the graph traced for the training pipeline,
# where each would trace its own (KerasHub's tokenizer takes seconds to trace).
@tf.function
def preprocess(prompts, responses):
    """A batch of (prompt, response) pairs as the model trains on them: prompt and response
    tokenized together by the preset's preprocessor (start and end tokens, padding and
    truncation to SEQUENCE_LENGTH), the next token of each position (its target), and the
    weights of the targets the loss counts."""
    texts = tf.strings.join([prompts, responses])
    count = tf.shape(texts)[0]
    # The prompts alone after the texts, in the same call (each string is tokenized on its
    # own): KerasHub's tokenizer, a graph of byte-pair merges, is traced once, not twice.
    features, next_tokens, weights = preprocessor()(tf.concat([texts, prompts], axis=0))
    weights = response_targets(weights[:count], weights[count:])
    features = {name: tensor[:count] for name, tensor in features.items()}
    next_tokens = next_tokens[:count]
    return features, {
        "next_tokens": next_tokens,
        "weights": tf.cast(weights, tf.float32),
    }


def response_targets(weights, prompt_weights):
    """The targets of the response's tokens alone: the prompt's are masked out of `weights`
    (the preprocessor's, which mark every target but padding). `prompt_weights` are the
    prompt's own, tokenized alone: a target for each of its tokens after the first, and the
    end token's. Target t is token t + 1, so the response's first target comes right after
    the prompt's own: as many targets in as the prompt's weights count, less the end
    token's. Counted, the prompt's tokens would teach the model to write prompts."""
    first = tf.reduce_sum(tf.cast(prompt_weights, tf.int32), axis=-1, keepdims=True)
    if preprocessor().add_end_token:
        first -= 1
    positions = tf.range(tf.shape(weights)[1])[tf.newaxis, :]
    return tf.logical_and(weights, positions >= first)


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
    """KerasHub's causal language model of the preset, its weights as pretrained: token ids
    in, each position's logits for the next token out. The preprocessor runs in the input
    pipeline (preprocessor())."""
    with downloading(*preset_download(PRESET)):
        model = keras_hub.models.CausalLM.from_preset(
            PRESET,
            preprocessor=None,
        )
    # LoRA: the backbone's weights freeze, and adapters W + A·B (B starts at zero, so the
    # model starts as loaded) train on its attention's query and value projections.
    # Only the adapters (and those projections' biases) are in model.trainable_variables.
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


class Perplexity(keras.metrics.Mean):
    """exp of the mean loss over the tokens it saw: the number of tokens the model hesitates
    between, on average, where a uniform guess over the vocabulary would score its size.
    """

    def result(self):
        return tf.exp(super().result())


def make_metrics():
    """The values logged of a split, training or validation: the loss (the mean over response
    tokens), the share of those tokens predicted right (TRL's mean_token_accuracy), and in
    validation the perplexity."""
    loss = keras.metrics.Mean(name="loss")
    extras = {"mean_token_accuracy": keras.metrics.Mean(name="mean_token_accuracy")}
    extras["perplexity"] = Perplexity(name="perplexity")
    return loss, extras


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
        optimizer = keras.optimizers.Adam(learning_rate=0.0002)
        # The slot variables now, not in the first traced step, which would trace it twice and
        # leave a restored checkpoint nothing to fill.
        optimizer.build(model.trainable_variables)
        # Metrics are summed over replicas when read.
        train_loss, train_extras = make_metrics()
        del train_extras[
            "perplexity"
        ]  # validation's alone: the training loss moves within a step
        validation_loss, validation_extras = make_metrics()
        train_values = [train_loss, *train_extras.values()]
        validation_values = [validation_loss, *validation_extras.values()]
        # Counts train steps: checkpointed, it fixes the epoch, data position and cadences.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # --- Train and eval steps ---------------------------------------------------------
    def replica_train_step(features, labels):
        """One replica's part of a train step, on its slice of the global batch."""
        # The size of this global batch: the last batch of an epoch is smaller than
        # GLOBAL_BATCH_SIZE, and a replica's slice may even be empty.
        batch_size = tf.shape(labels["weights"])[0]
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            # Each position's logits predict the next token: its loss there, counted where
            # preprocess() marked the target (the response's tokens, not the prompt's).
            token_losses = keras.losses.sparse_categorical_crossentropy(
                labels["next_tokens"], logits, from_logits=True
            )
            weights = labels["weights"]
            # The mean over the counted tokens of the global batch (TRL's, and what one device
            # computes): each replica divides its sum by the count over all replicas, and
            # apply_gradients sums the replicas' gradients. A replica's own count would weigh
            # a token of a short response more than one of a long response elsewhere.
            tokens = tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.reduce_sum(weights)
            )
            loss = tf.reduce_sum(token_losses * weights) / tf.maximum(tokens, 1.0)
        gradients = tape.gradient(loss, model.trainable_variables)
        # Sums the gradients over all replicas, then applies the same update on each.
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Metrics accumulate on each replica; reading them sums over replicas.
        predicted = tf.argmax(logits, axis=-1, output_type=labels["next_tokens"].dtype)
        correct = tf.cast(predicted == labels["next_tokens"], tf.float32)
        train_extras["mean_token_accuracy"].update_state(
            correct, sample_weight=labels["weights"]
        )
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
        logits = model(features, training=False)
        token_losses = keras.losses.sparse_categorical_crossentropy(
            labels["next_tokens"], logits, from_logits=True
        )
        # The mean over the validation responses' tokens, and its exp, the perplexity.
        validation_loss.update_state(token_losses, sample_weight=labels["weights"])
        validation_extras["perplexity"].update_state(
            token_losses, sample_weight=labels["weights"]
        )
        predicted = tf.argmax(logits, axis=-1, output_type=labels["next_tokens"].dtype)
        correct = tf.cast(predicted == labels["next_tokens"], tf.float32)
        validation_extras["mean_token_accuracy"].update_state(
            correct, sample_weight=labels["weights"]
        )

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
    export(model, export_dir)
    if not chief:
        shutil.rmtree(export_dir)


def export(model, directory):
    """The trained network, written whole into `directory`:

    - saved_model/1/: the SavedModel to serve, version 1 of the model (TF Serving serves the
      highest numbered directory under saved_model/; a new export replaces this one). Its
      serving_default signature takes raw examples and prepares them as the training
      examples were (serving_function).
    - network/: the bare network (model.export), for inputs as the training batches give
      them.

    Both SavedModels load without this script's classes."""
    with written_whole(directory) as partial:
        # The LoRA adapters merged into the kernels they adapt: the exported network computes one
        # projection where training computed two, with the same function.
        with lora_merged(model):
            served = keras.export.ExportArchive()
            served.track(model)
            served.track(preprocessor())  # its vocabulary's tables
            served.add_endpoint("serving_default", serving_function(model))
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


def serving_function(model):
    """The exported model's serving_default: a batch of prompts (tf.string), each answered by
    greedy decoding (KerasHub's GreedySampler through the model's generate_step) until the
    end token or SEQUENCE_LENGTH tokens in all. Named outputs: "completions", the text
    generated after each prompt."""
    # The most likely token each time: the export answers a prompt the same way every time.
    model.sampler = keras_hub.samplers.GreedySampler()
    end_token = preprocessor().tokenizer.end_token_id

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.string, name="prompts")])
    def serve(prompts):
        inputs = generation_inputs(prompts)
        outputs = model.generate_step(inputs, stop_token_ids=[end_token])
        # The generated tokens: those the prompt did not hold, up to the end token.
        generated = tf.logical_and(
            outputs["padding_mask"], tf.logical_not(inputs["padding_mask"])
        )
        generated = tf.logical_and(generated, outputs["token_ids"] != end_token)
        tokens = tf.ragged.boolean_mask(outputs["token_ids"], generated)
        return {"completions": preprocessor().tokenizer.detokenize(tokens)}

    return serve


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

    def fresh_preprocessor():
        """The next stage seeds TensorFlow again, which deletes the kernels this one ran: a
        SentencePiece tokenizer's model (Gemma's, Llama 2's) is one's own. It makes the
        preprocessor anew, and traces preprocess() anew."""
        global preprocess
        preprocessor.cache_clear()
        preprocess = tf.function(preprocess.python_function)

    fast_dev_stages(
        args,
        stages,
        train,
        RunDirectory,
        serve=functools.partial(serve_once, examples=examples, count=n),
        after_stage=fresh_preprocessor,
    )


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
    "spec": "sums_sft",
    "spec_sha256": "3718d25fce308900",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "50f33903c8846e11",
    "data.train": "e589aa6a65b17a6b",
    "data.validation": "5d14c1474b9d3169",
    "data.batch_size": GLOBAL_BATCH_SIZE,
    "data.shuffle_buffer": 1024,
    "data.labels": "sparse",
    "seed": SEED,
    "optimizer": "6a409bcfb90e38d5",
    "training": "f6b5b6aed0bff51f",
}
# The training data's files, as the spec names them: setup.json records their sizes and times.
TRAIN_FILES = "data/sums.jsonl"


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    num_examples = staticmethod(num_examples)
    train_files = TRAIN_FILES
    readers = ("evaluate", "replay")
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
