"""TensorFlow-side checks that the tests run in a fresh process: `python tf_checks.py CHECK ...`.

Each check prints one JSON object on its last line of stdout."""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import itertools
import json
import math
import os
import pickle
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf


def load_script(path: str):
    """Imports a generated script as a module (its main() does not run), its folder on the
    path as `python train.py` has it (a module of yours beside it, e.g. reward functions)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("generated_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def training_examples(module):
    """The training examples of a script's load_examples() (it also returns the validation
    examples when the script validates)."""
    examples = module.load_examples()
    return examples[0] if hasattr(module, "validation_batches") else examples


def global_batches(script: str, epochs: str) -> dict:
    """The example indices of each global batch of the first `epochs` epochs, from the
    script's own epoch_order() (a source read by index)."""
    module = load_script(script)
    count = module.num_examples(training_examples(module))
    batches = []
    for epoch in range(int(epochs)):
        order = module.epoch_order(tf.constant(epoch, tf.int64), count).numpy().tolist()
        batches += [order[i : i + module.BATCH_SIZE] for i in range(0, count, module.BATCH_SIZE)]
    return {"batches": batches}


def epoch_labels(script: str, epochs: str, start_step: str = "0") -> dict:
    """The labels of the training batches the script's pipeline (training_batches) makes from
    `start_step` on, for `epochs` epochs' worth of steps, epoch by epoch: with labels that
    number the examples, which examples each epoch reads, in its order."""
    module = load_script(script)
    train = training_examples(module)
    steps = -(-module.num_examples(train) // module.BATCH_SIZE)
    start = int(start_step)
    batches = module.training_batches(train, start_step=start).take(int(epochs) * steps - start)
    labels = [batch[1].numpy().tolist() for batch in batches]
    # A resumed run's first epoch is its rest only.
    firsts = [steps - start % steps] + [steps] * (int(epochs) - 1 - start // steps)
    found, at = [], 0
    for count in firsts:
        found.append([label for batch in labels[at : at + count] for label in batch])
        at += count
    return {"epochs": found, "steps_per_epoch": steps}


def checkpoint_values(directory: str) -> dict[str, np.ndarray]:
    """The values of a directory's newest checkpoint, or of the checkpoint `directory` names
    (.../ckpt-6)."""
    named = os.path.exists(f"{directory}.index")
    reader = tf.train.load_checkpoint(directory if named else tf.train.latest_checkpoint(directory))
    dtypes = reader.get_variable_to_dtype_map()
    return {
        name: reader.get_tensor(name)
        for name, dtype in dtypes.items()
        if dtype.is_numpy_compatible and dtype != tf.string and "save_counter" not in name
    }


def compare_saved_states(dir_a: str, dir_b: str) -> dict:
    """Whether the Python states of two directories' newest checkpoints (a PythonState's
    pickled bytes: an RL run's environments, its replay buffer) hold the same values: arrays,
    random generators' states and every attribute of every object, unpickled (equal states
    may pickle to different bytes). An environment of the user's unpickles from its module in
    the current directory, beside the scripts."""
    sys.path.insert(0, os.getcwd())
    found = {}
    for directory in (dir_a, dir_b):
        reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(directory))
        found[directory] = {
            name: pickle.loads(reader.get_tensor(name))
            for name, dtype in reader.get_variable_to_dtype_map().items()
            if dtype == tf.string and name.endswith("/.ATTRIBUTES/py_state")
        }
    for states in found.values():
        for state in (state for state in states.values() if isinstance(state, dict)):
            # An Atari game unpickles as a new one: the script gives it its saved generator
            # of no-op starts (and its emulator's state, compared as saved).
            for i, (_, generator) in enumerate(state.get("emulators", [])):
                state["envs"][i].unwrapped.np_random = generator
    a, b = found[dir_a], found[dir_b]
    differ = [k for k in a if k not in b or not same_state(a[k], b[k])]
    return {"states": sorted(a), "same": a.keys() == b.keys() and not differ, "differ": differ}


def same_state(a, b, depth: int = 0) -> bool:
    """Deep equality of unpickled objects."""
    if depth > 40:
        raise RecursionError("the state nests too deep to compare")
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, np.random.Generator):
        return isinstance(b, np.random.Generator) and a.bit_generator.state == b.bit_generator.state
    if isinstance(a, list | tuple | collections.deque):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        return all(same_state(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k], depth + 1) for k in a)
    if type(a).__module__.startswith("ale_py"):
        # An Atari emulator's saved state, by its bytes; the interface of an unpickled game
        # holds none of its own (the script saves the emulator's state beside the game).
        serialized = getattr(a, "serialize", None)
        return type(a) is type(b) and (serialized is None or serialized() == b.serialize())
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return type(a) is type(b) and same_state(vars(a), vars(b), depth + 1)
    return a == b


LOGGED_MEANS = ("train_values/",)
"""The checkpointed running means of the logged values: sums that replicas keep apart and a
restore shares out anew, so that their rounding differs after a resume on replicas. Compared
apart (values_diff), never exactly."""


def checkpoint_step(values: dict[str, np.ndarray]) -> int | None:
    """The `step` variable a checkpoint holds, if it holds one."""
    step = [v for k, v in values.items() if k.startswith("step/")]
    return int(step[0]) if step else None


def compare_checkpoints(dir_a: str, dir_b: str) -> dict:
    """Max abs difference over every saved value (weights, slots, step, iterator excluded), and
    apart over the logged running means (values_diff, relative)."""
    a, b = checkpoint_values(dir_a), checkpoint_values(dir_b)
    means = [k for k in a if k in b and k.startswith(LOGGED_MEANS)]
    values_diff = max(
        (float(np.max(np.abs(a[k] - b[k]) / np.maximum(1.0, np.abs(a[k])))) for k in means),
        default=0.0,
    )
    numeric = [k for k in a if k in b and a[k].dtype.kind in "fiu" and k not in means]
    # Empty values (an unused lookup layer's idf weights) differ in nothing but their shape.
    diffs = {
        k: float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) if a[k].size else 0.0
        for k in numeric
        if a[k].shape == b[k].shape
    }
    diffs.update({k: float("inf") for k in numeric if a[k].shape != b[k].shape})
    # Relative where a value is larger than 1 (an Adam slot of a gradient penalty's squared
    # gradients reaches thousands, whose float32 rounding alone is 1e-4).
    sizes = {k: max(1.0, float(np.max(np.abs(a[k])))) if a[k].size else 1.0 for k in diffs}
    return {
        "same_keys": sorted(k for k in a if not k.startswith(LOGGED_MEANS))
        == sorted(k for k in b if not k.startswith(LOGGED_MEANS)),
        "count": len(numeric),
        "max_diff": max(diffs.values()),
        "max_scaled_diff": max(d / sizes[k] for k, d in diffs.items()),
        "worst": max(diffs, key=diffs.get),
        "step": checkpoint_step(a),
        "values_diff": values_diff,
        "means": len(means),
    }


def networks_diff(dir_a: str, dir_b: str, prefixes: str) -> dict:
    """Max abs difference between the newest checkpoints' values whose names start with one of
    `prefixes` (a JSON list: the networks' objects), and their steps."""
    a, b = checkpoint_values(dir_a), checkpoint_values(dir_b)
    chosen = [k for k in a if k.startswith(tuple(json.loads(prefixes))) and a[k].dtype.kind == "f"]
    return {
        "count": len(chosen),
        "max_diff": max((float(np.max(np.abs(a[k] - b[k]))) for k in chosen), default=None),
        "steps": [checkpoint_step(a), checkpoint_step(b)],
    }


def finite_checkpoint(directory: str) -> dict:
    """Whether every float in the newest checkpoint of `directory` is finite, and its step."""
    values = checkpoint_values(directory)
    floats = [v for v in values.values() if v.dtype.kind == "f"]
    return {
        "all_finite": all(bool(np.all(np.isfinite(v))) for v in floats),
        "count": len(floats),
        "step": checkpoint_step(values),
    }


def output_shape(script: str) -> dict:
    """The output shape (without the batch dimension) of the script's build_model()."""
    model = load_script(script).build_model()
    return {"shape": list(model.output_shape[1:])}


def model_layers(script: str) -> dict:
    """The layers `build_model()` makes: names, how many times each is applied, output names;
    and the model's parameters."""
    model = load_script(script).build_model()
    outputs = model.output if isinstance(model.output, dict) else {}
    return {
        "layers": [layer.name for layer in model.layers],
        "parameters": model.count_params(),
        "inbound": {layer.name: len(layer._inbound_nodes) for layer in model.layers},
        "outputs": list(outputs),
        "output_shapes": {k: list(v.shape[1:]) for k, v in outputs.items()},
    }


def write_image_tfrecords(
    folder: str,
    prefix: str,
    shards: str,
    per_shard: str,
    classes: str,
    compression: str = "",
    encodings: str = "jpeg",
    stats: str = "",
):
    """TFRecord shards of tf.train.Examples: a JPEG `image` (40x40, its brightness telling the
    class) and an int64 `label`. `per_shard`: one count for every shard, or one per shard
    ("7,3,12"); `compression`: GZIP or ZLIB, or none; `encodings`: "jpeg", or "png,jpeg" for
    PNG and JPEG images alternately; `stats`: "yes" for a float `stats` feature too, two
    numbers (the image's mean brightness in [0, 255] and a random number)."""
    import os

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(len(prefix))
    counts = [int(n) for n in per_shard.split(",")]
    counts = counts * int(shards) if len(counts) == 1 else counts
    count = 0
    for shard in range(int(shards)):
        path = os.path.join(folder, f"{prefix}-{shard}.tfrecord")
        with tf.io.TFRecordWriter(path, compression or None) as writer:
            for _ in range(counts[shard]):
                label = int(rng.integers(0, int(classes)))
                pixels = label * (200 // int(classes)) + rng.integers(0, 50, (40, 40, 3))
                pixels = np.clip(pixels, 0, 255).astype("uint8")
                encoding = encodings.split(",")[count % len(encodings.split(","))]
                image = getattr(tf.io, f"encode_{encoding}")(pixels).numpy()
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }
                if stats:
                    values = [float(pixels.mean()), float(rng.normal())]
                    feature["stats"] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
                count += 1
    return {"records": count}


def stream_seek(script: str, epochs: str) -> dict:
    """A streamed source's seek, against one unbroken pass: the first batch of
    training_batches(examples, s) for every step s of the first `epochs` epochs, compared with
    step s of a pass from step 0 (steps that differ are listed); then the files that the seek
    to the last step may not read (the groups of four files, in that epoch's shard order,
    that end before its shuffle window starts) are deleted, and the seek is made again."""
    import hashlib
    import math
    import os

    module = load_script(script)
    examples = training_examples(module)

    def digest(batch):
        parts = [tf.io.serialize_tensor(part).numpy() for part in tf.nest.flatten(batch)]
        return hashlib.sha256(b"".join(parts)).hexdigest()

    steps = math.ceil(examples.count / module.BATCH_SIZE)
    total = int(epochs) * steps
    unbroken = iter(module.training_batches(examples, 0))
    expected = [digest(next(unbroken)) for _ in range(total)]

    def seek(step):
        return digest(next(iter(module.training_batches(examples, step))))

    differ = [step for step in range(total) if seek(step) != expected[step]]

    last = total - 1
    epoch = last // steps
    window_start = (last - epoch * steps) * module.BATCH_SIZE
    window_start -= window_start % module.SHUFFLE_BUFFER
    order = module.shard_order(len(examples.files), tf.constant(epoch, tf.int64)).numpy()
    groups = [order[i : i + 4] for i in range(0, len(order), 4)]
    end, unread = 0, []
    for group in groups:
        end += sum(examples.counts[i] for i in group)
        if end <= window_start:
            unread += [examples.files[i] for i in group]
    for path in unread:
        os.remove(path)
    return {
        "steps": total,
        "differ": differ,
        "removed": len(unread),
        "files": len(examples.files),
        "seek_without_them": seek(last) == expected[last],
    }


def backbone_state(script: str, checkpoint: str, backbone: str, from_layer: str) -> dict:
    """How far the weights of `checkpoint` moved from the model's initial weights (the script's
    seed), by group: the backbone's BatchNormalization statistics, its layers before
    `from_layer` and from it on, and the layers after the backbone."""
    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    initial = module.build_model()
    trained = module.build_model()
    tf.train.Checkpoint(model=trained).restore(checkpoint).expect_partial()
    names = [layer.name for layer in initial.get_layer(backbone).layers]
    cut = names.index(from_layer)

    def moved(pairs):
        return max((float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in pairs), default=0.0)

    groups = {"statistics": [], "before": [], "from": [], "head": []}
    base, done = initial.get_layer(backbone), trained.get_layer(backbone)
    for i, (a, b) in enumerate(zip(base.layers, done.layers, strict=True)):
        for va, vb in zip(a.weights, b.weights, strict=True):
            if "moving_" in va.path:
                groups["statistics"].append((va, vb))
            else:
                groups["before" if i < cut else "from"].append((va, vb))
    for a, b in zip(initial.layers, trained.layers, strict=True):
        if a.name != backbone:
            groups["head"] += list(zip(a.weights, b.weights, strict=True))
    return {name: moved(pairs) for name, pairs in groups.items()}


def unfrozen_layers(script: str, backbone: str) -> dict:
    """The backbone's layers after the script's unfreeze(): all, in order, which are
    BatchNormalization, which are trainable and which have trainable weights; and the message
    of an unfreeze of more layers than the backbone has."""
    import keras

    module = load_script(script)
    model = module.build_model()
    layer = model.get_layer(backbone)
    module.unfreeze(layer)
    found = {
        "names": [x.name for x in layer.layers],
        "batch_norm": [
            x.name for x in layer.layers if isinstance(x, keras.layers.BatchNormalization)
        ],
        "trainable": [x.name for x in layer.layers if x.trainable],
        "with_trainable_weights": [x.name for x in layer.layers if x.trainable_weights],
    }
    module.UNFREEZE_TOP_LAYERS = len(layer.layers) + 1
    try:
        module.unfreeze(layer)
    except SystemExit as stop:
        found["too_many"] = str(stop)
    return found


def augmented_batches(script: str) -> dict:
    """The pipeline's augmentation: reproducible (the same batches twice, and from a resumed
    step), different from the unaugmented images, different from one epoch to the next, and
    absent from validation."""
    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    train, validation = module.load_examples()

    def first(batches, count):
        return [b[0].numpy() for b in batches.take(count)]

    steps = module.math.ceil(module.num_examples(train) / module.BATCH_SIZE)
    assert steps >= 2, "resumed in the middle of an epoch needs epochs of two batches or more"
    run1 = first(module.training_batches(train, start_step=0), steps + 2)
    run2 = first(module.training_batches(train, start_step=0), steps + 2)
    # Resumed at the second batch of epoch 1: inside an epoch, its positions not from 0.
    resumed = first(module.training_batches(train, start_step=steps + 1), 1)[0]
    original_augment = module.augment
    module.augment = lambda images, labels, seeds, augmentation: (images, labels)
    plain = first(module.training_batches(train, start_step=0), 1)[0]
    module.augment = original_augment
    # The same example in epoch 1 and epoch 2 (unshuffled data: the same position).
    validation_batch = first(module.validation_batches(validation), 1)[0]
    x, y = module.read_arrays(module.as_tensors(validation), tf.range(len(validation_batch)))
    expected_validation = module.preprocess(x, y)[0].numpy()
    return {
        "repeatable": max(float(np.max(np.abs(a - b))) for a, b in zip(run1, run2, strict=True)),
        "resumed": float(np.max(np.abs(resumed - run1[steps + 1]))),
        "augmented": float(np.max(np.abs(run1[0] - plain))),
        "epochs_differ": float(np.max(np.abs(run1[0] - run1[steps]))),
        "validation": float(np.max(np.abs(validation_batch - expected_validation))),
    }


def resumed_batch(script: str, step: str) -> dict:
    """The batch a run resumed at `step` trains on first (training_batches from that step)
    against the one an uninterrupted run trains on at `step`, augmentation included: the
    largest difference of any of their tensors; and how far augmentation moved that batch's
    images (the same batch with augment() doing nothing)."""
    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    train = training_examples(module)
    at = int(step)
    straight = next(iter(module.training_batches(train, start_step=0).skip(at).take(1)))
    resumed = next(iter(module.training_batches(train, start_step=at).take(1)))
    original_augment = module.augment
    module.augment = lambda x, labels, seeds, augmentation: (x, labels)
    plain = next(iter(module.training_batches(train, start_step=at).take(1)))
    module.augment = original_augment

    def largest(a, b):
        pairs = zip(tf.nest.flatten(a), tf.nest.flatten(b), strict=True)
        return max(float(np.max(np.abs(np.float64(x) - np.float64(y)))) for x, y in pairs)

    return {"resumed": largest(resumed, straight), "augmented": largest(resumed, plain)}


def restored_model(module, checkpoint: str):
    """build_model() with the weights of a checkpoint: the newest in a folder, or a path."""
    import os

    model = module.build_model()
    if os.path.isdir(checkpoint):
        checkpoint = tf.train.latest_checkpoint(checkpoint)
    tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial()
    return model


def adapted_state(script: str, checkpoint_dir: str, layer: str) -> dict:
    """The statistics an adapted Normalization layer trained with, from the run's checkpoint."""
    assert tf.train.latest_checkpoint(checkpoint_dir), f"no checkpoint in {checkpoint_dir}"
    normalization = restored_model(load_script(script), checkpoint_dir).get_layer(layer)
    return {
        "mean": normalization.adapt_mean.numpy().tolist(),
        "variance": normalization.adapt_variance.numpy().tolist(),
    }


def export_matches(script: str, output_dir: str, x_path: str) -> dict:
    """Predictions of the exported SavedModel (and .keras file, when there is one) vs the
    model restored from the training checkpoint, on the same inputs."""
    import os

    import keras

    module = load_script(script)
    x = np.load(x_path)["x"][:8]
    x = module.preprocess(x, np.zeros(len(x)))[0]
    expected = restored_model(module, os.path.join(output_dir, "checkpoints"))(x, training=False)
    served = tf.saved_model.load(os.path.join(output_dir, "export", "network"))
    result = {"saved_model": float(np.max(np.abs(served.serve(x) - expected)))}
    keras_files = [
        f for f in os.listdir(os.path.join(output_dir, "export")) if f.endswith(".keras")
    ]
    if keras_files:
        reloaded = keras.saving.load_model(os.path.join(output_dir, "export", keras_files[0]))
        result["keras"] = float(np.max(np.abs(reloaded(x, training=False) - expected)))
    result["spread"] = float(np.std(expected))
    return result


def serving_reference(script: str, output_dir: str, reference: str) -> dict:
    """What a run's model to serve (export/saved_model/1) must answer, from the script itself:
    its first training examples as the source holds them (raw_examples: arrays, image files'
    bytes, CSV columns, TFRecord features, texts), and the network restored from the run's
    newest checkpoint applied to them as the training pipeline reads and prepares them (the
    script's reader or parser, then preprocess). Also, where the pipeline rescales, the network
    on the examples as read but not prepared: what a serving signature that forgot
    prepare_inputs would answer. Saved to `reference` (.npz) for a process that imports
    neither the script nor loopgen."""
    import contextlib
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # the modules it imports
    module = load_script(script)
    text_files = record_text_files(module)
    served = contextlib.nullcontext()
    if "keras.datasets.imdb" in open(script).read():
        import keras_datasets_mock  # the download, served by its test double

        served = keras_datasets_mock.served()
    elif "tfds.load(" in open(script).read():
        import tfds_mock  # the dataset, served by its test double

        served = tfds_mock.served()
    with served:
        examples = training_examples(module)
        raw, read = raw_examples(module, examples, 8, open(script).read())
        tfds_classes = tfds_class_names(open(script).read())
    model = adapted_model(module, script, examples)
    tf.train.Checkpoint(model=model).restore(
        tf.train.latest_checkpoint(os.path.join(output_dir, "checkpoints"))
    ).expect_partial()
    expected = model(module.preprocess(*read)[0], training=False)
    found = {"expected": expected}
    if "RESCALE = " in open(script).read():
        found["unprepared"] = model(tf.cast(read[0], tf.float32), training=False)
    # A multi-task network's heads: "expected:<task>" (and "unprepared:<task>").
    for key, value in list(found.items()):
        if isinstance(value, dict):
            found.update({f"{key}:{head}": scores for head, scores in found.pop(key).items()})
            expected = next(iter(value.values()))
    if tfds_classes:  # a TFDS ClassLabel's names, as the dataset's info has them
        found["class_names"] = tfds_classes
    elif text_files:  # a text file's labels: class names, sorted, unless they are ids
        path, delimiter, column = text_files[0]
        with open(path, encoding="utf-8") as file:
            rows = [line.rstrip("\n").split(delimiter) for line in file if line.strip()]
        names = sorted({row[column].strip() for row in rows})
        if not all(name.isdigit() for name in names):
            found["class_names"] = names
    elif hasattr(module, "read_images") and "input" in raw:
        # Image files: the classes are the training directory's sub-directories.
        root = os.path.dirname(os.path.dirname(examples[0][0]))
        found["class_names"] = sorted(e.name for e in os.scandir(root) if e.is_dir())
    np.savez(reference, **found, **raw)
    return {"examples": int(tf.shape(expected)[0]), "spread": float(np.std(expected))}


def tfds_class_names(source: str) -> list[str] | None:
    """The names of the classes of a TFDS label where the script serves them: TFDS's own
    ClassLabel names of the dataset and label the script reads."""
    import re

    found = re.search(r'getattr\(features\[("[^"]+")\], "names"', source)
    if found is None:
        return None
    import tensorflow_datasets as tfds

    name = re.search(r'tfds\.load\(\s*"([^"]+)"', source)[1]
    return list(tfds.builder(name).info.features[json.loads(found[1])].names)


def adapted_model(module, script: str, examples):
    """build_model(), its layers that learn from the training data adapted by the script's own
    statements (between build_model() and model.summary() in train()), as a run does before
    it restores a checkpoint: a learnt vocabulary is no variable of the checkpoint, and a
    Normalization layer's mean is computed from the variables only when it adapts."""
    import re
    import textwrap

    model = module.build_model()
    found = re.search(
        r"\n( +)model = build_model\(\)\n(.*?)\n\1model\.summary\(\)", open(script).read(), re.S
    )
    if found and ".adapt(" in found[2]:
        names = {**vars(module), "model": model, "train_examples": examples}
        exec(textwrap.dedent(found[2]), names)
    return model


def record_text_files(module) -> list[tuple[str, str, int]]:
    """Has the script's read_text_lines note (path, delimiter, label column) of each text file
    it reads, the training file first; the list it fills."""
    files = []
    if hasattr(module, "read_text_lines"):
        read_text_lines = module.read_text_lines

        def recorded(path, delimiter, text_column, label_column, field, **kwargs):
            files.append((path, delimiter, label_column))
            return read_text_lines(path, delimiter, text_column, label_column, field, **kwargs)

        module.read_text_lines = recorded
    return files


def raw_examples(module, examples, count: int, source: str) -> tuple[dict, tuple]:
    """The first `count` training examples as a client would send them, for the .npz of
    serving_reference ("input": the one input, whatever the signature names it; "input:<name>":
    one of several, strings as bytes), and the same examples as the script's training pipeline
    reads them, before preprocess. `source`: the script's text."""

    def as_bytes(strings):
        return np.array([bytes(s) for s in strings], dtype=object)

    if isinstance(examples, getattr(module, "Records", ())):
        if examples.columns is not None:  # CSV: every column read, the label's too
            lines = next(iter(module.csv_stream(examples).batch(count)))
            columns = module.decode_csv(lines, examples.columns)
            columns = dict(zip(module.COLUMNS, columns, strict=True))
            raw = {
                f"input:{name}": as_bytes(column.numpy()) if column.dtype == tf.string
                else column.numpy()
                for name, column in columns.items()
            }  # fmt: skip
            return raw, module.parse_csv_lines(lines, examples.columns)
        # TFRecord: every feature of the records, as tf.train.Example holds it
        serialized = next(iter(module.tfrecord_stream(examples).batch(count)))
        features = {}
        for record in serialized.numpy():
            for name, feature in tf.train.Example.FromString(record).features.feature.items():
                kind = feature.WhichOneof("kind")
                values = list(getattr(feature, kind).value)
                features.setdefault(name, ([], kind))[0].append(values)
        raw = {}
        for name, (values, kind) in features.items():
            if kind == "bytes_list":
                raw[f"input:{name}"] = as_bytes(value for (value,) in values)
            else:
                dtype = np.int64 if kind == "int64_list" else np.float32
                raw[f"input:{name}"] = np.array(values, dtype=dtype)
        return raw, module.parse_tfrecords(serialized)
    if isinstance(examples, tf.data.Dataset):  # TFDS: the feature as TFDS decodes it
        import re

        import tensorflow_datasets as tfds

        name, split = re.search(r'tfds\.load\(\s*"([^"]+)", split="([^"]+)"', source).groups()
        key = re.search(r"lambda example: \(\s*\w*\(?example\[(\"[^\"]+\")\]", source)[1]
        first = next(iter(tfds.load(name, split=split, shuffle_files=False)))[json.loads(key)]
        # The images differ in size, and a batch is of one size: the first example.
        return {"input": first.numpy()[None]}, next(iter(examples.batch(1)))
    inputs, labels = examples
    indices = tf.range(min(count, len(tf.nest.flatten(labels)[0])))  # a dict per task too
    if hasattr(module, "read_images") and inputs.dtype.kind in "USO":  # image files' paths
        files = [open(path, "rb").read() for path in inputs[:count]]
        return {"input": np.array(files, dtype=object)}, module.read_images(examples, indices)
    if isinstance(inputs, dict):
        raw = {f"input:{name}": array[:count] for name, array in inputs.items()}
    else:
        raw = {"input": inputs[:count]}  # arrays, or texts
    return raw, module.read_arrays(examples, indices)


def write_image_files(folder: str, per_class: str) -> dict:
    """Two class sub-directories of PNG and JPEG files (alternately) of varied sizes, 20 to 48
    pixels a side, whose brightness tells the class."""
    import os

    rng = np.random.default_rng(3)
    for label, name in enumerate(("dark", "light")):
        os.makedirs(os.path.join(folder, name))
        for index in range(int(per_class)):
            height, width = rng.integers(20, 49, 2)
            pixels = label * 150 + rng.integers(0, 100, (height, width, 3))
            pixels = np.clip(pixels, 0, 255).astype("uint8")
            if index % 2:
                encoded, suffix = tf.io.encode_jpeg(pixels), "jpg"
            else:
                encoded, suffix = tf.io.encode_png(pixels), "png"
            tf.io.write_file(os.path.join(folder, name, f"{index}.{suffix}"), encoded)
    return {"folder": folder}


def fit_equivalence(script: str, output_dir: str, compile_args: str) -> dict:
    """The same model, initial weights and batches trained by compile().fit() for one epoch,
    compared with the weights the generated loop saved."""
    import os

    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    tf.config.experimental.enable_op_determinism()
    # fit gets the batches straight from the arrays, in order (the loop ran unshuffled).
    x, y = training_examples(module)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(module.BATCH_SIZE)
    dataset = dataset.map(module.preprocess)
    model = module.build_model()
    loop_model = restored_model(module, os.path.join(output_dir, "checkpoints"))
    initial = [w.copy() for w in model.get_weights()]
    spec = json.loads(compile_args)
    model.compile(
        optimizer=keras.optimizers.get(spec["optimizer"]), loss=keras.losses.get(spec["loss"])
    )
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    weights = model.get_weights()
    moved = max(float(np.max(np.abs(w - i))) for w, i in zip(weights, initial, strict=True))
    diff = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(model.get_weights(), loop_model.get_weights(), strict=True)
    )
    return {"max_diff": diff, "moved": moved}


def kernel_norm(script: str, output_dir: str) -> dict:
    import os

    module = load_script(script)
    model = restored_model(module, os.path.join(output_dir, "checkpoints"))
    kernels = [v.numpy() for v in model.trainable_variables if "kernel" in v.path]
    return {"norm": float(np.sqrt(sum(np.sum(k**2) for k in kernels)))}


def scalar_tags(logdir: str) -> dict:
    """Scalar tags and their step counts in a TensorBoard event directory."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(logdir)
    accumulator.Reload()
    return {tag: len(accumulator.Tensors(tag)) for tag in accumulator.Tags()["tensors"]}


def scalar_tags_of(*logdirs: str) -> dict:
    """scalar_tags of each event directory that exists, by its path (one process for a run's
    train and validation logs)."""
    return {logdir: scalar_tags(logdir) for logdir in logdirs if Path(logdir).is_dir()}


def trace_counts(script: str, *argv: str) -> dict:
    """Runs the script's main(argv) in this process with tf.function wrapped to count how many
    times each function's Python body runs: once per trace."""
    import collections
    import functools

    counts: collections.Counter[str] = collections.Counter()
    original = tf.function

    def counting(func=None, **options):
        def wrap(python_function):
            @functools.wraps(python_function)
            def traced(*args, **kwargs):
                counts[python_function.__name__] += 1
                return python_function(*args, **kwargs)

            return original(traced, **options)

        return wrap(func) if func is not None else wrap

    tf.function = counting
    try:
        load_script(script).main(list(argv))
    finally:
        tf.function = original
    return dict(counts)


def checkpoint_dtypes(directory: str) -> dict:
    """Names (without the /.ATTRIBUTES suffix) and dtypes of the newest checkpoint's values."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(directory))
    return {
        name.removesuffix("/.ATTRIBUTES/VARIABLE_VALUE"): dtype.name
        for name, dtype in reader.get_variable_to_dtype_map().items()
    }


def model_dtypes(script: str, policy: str) -> dict:
    """The compute dtypes of build_model()'s layers under a mixed precision `policy`, its
    variables' dtypes and its output's."""
    import keras

    keras.mixed_precision.set_global_policy(policy)
    model = load_script(script).build_model()
    return {
        "compute": sorted({layer.compute_dtype for layer in model.layers}),
        "variables": sorted({v.dtype for v in model.weights}),
        "output": model(tf.zeros((1, *model.input_shape[1:]))).dtype.name,
    }


def validation_loss(script: str, output_dir: str, x_path: str) -> dict:
    """The loss of the checkpointed model over every example of the npz file, computed
    directly (the script's preprocess and loss, no batching)."""
    import os

    module = load_script(script)
    model = restored_model(module, os.path.join(output_dir, "checkpoints"))
    arrays = np.load(x_path)
    images, labels = module.preprocess(arrays["x"], arrays["y"])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {"loss": float(loss_fn(labels, model(images, training=False))), "count": len(labels)}


def weight_delta_norm(checkpoint_a: str, checkpoint_b: str) -> dict:
    """The global norm of the change of the model's weights between two checkpoint files."""
    a, b = tf.train.load_checkpoint(checkpoint_a), tf.train.load_checkpoint(checkpoint_b)
    names = [
        name
        for name, dtype in a.get_variable_to_dtype_map().items()
        # The weights are saved once, under the first path that reaches them: the optimizer's.
        if "_trainable_variables/" in name and dtype == tf.float32
    ]
    squares = [np.sum((a.get_tensor(n).astype(np.float64) - b.get_tensor(n)) ** 2) for n in names]
    return {"norm": float(np.sqrt(sum(squares))), "count": len(names)}


def weight_steps(checkpoint_a: str, checkpoint_b: str) -> dict:
    """How far each element of the model's weights moved between two checkpoint files: the
    distinct sizes of the moves, rounded to 1e-7, float32's rounding of the weights (sign
    descent moves each by the rate, or 0)."""
    a, b = tf.train.load_checkpoint(checkpoint_a), tf.train.load_checkpoint(checkpoint_b)
    names = [
        name
        for name, dtype in a.get_variable_to_dtype_map().items()
        if "_trainable_variables/" in name and dtype == tf.float32
    ]
    moves = np.concatenate(
        [np.abs(a.get_tensor(n).astype(np.float64) - b.get_tensor(n)).ravel() for n in names]
    )
    return {"sizes": sorted({round(float(m), 7) for m in moves}), "count": int(moves.size)}


def train_teacher(script: str) -> dict:
    """A distillation script's teacher, trained briefly by fit on the script's own training
    data (its pipeline, its first epoch) and saved to TEACHER_WEIGHTS, unless it is there."""
    import os

    module = load_script(script)
    if not os.path.exists(module.TEACHER_WEIGHTS):
        # Seeded, so that every run trains the same teacher: with an unseeded one, a CI run's
        # student came out answering the same whatever its inputs.
        keras.utils.set_random_seed(0)
        teacher = module.build_teacher()
        teacher.compile(
            optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        examples = training_examples(module)
        import inspect

        # A distributed script's pipeline takes an input context: one pipeline, one replica.
        context = {"context": tf.distribute.InputContext()}
        if "context" not in inspect.signature(module.training_batches).parameters:
            context = {}
        batches = module.training_batches(examples, start_step=0, **context)
        batch_size = getattr(module, "BATCH_SIZE", None) or module.GLOBAL_BATCH_SIZE
        steps = -(-module.num_examples(examples) // batch_size)
        teacher.fit(batches, epochs=15, steps_per_epoch=steps, verbose=0)
        teacher.save_weights(module.TEACHER_WEIGHTS)
    return {"path": module.TEACHER_WEIGHTS}


def frozen_teacher(script: str, output_dir: str, *argv: str) -> dict:
    """Runs a distillation script's main() here, keeping the teacher load_teacher() gives it:
    how far its weights (BatchNormalization statistics included) moved during training."""
    module = load_script(script)
    loaded = {}

    def load_teacher(*args):  # the student, when the script checks the teacher's shape
        teacher = loaded["teacher"] = original(*args)
        loaded["before"] = {v.path: v.numpy().copy() for v in teacher.weights}
        # Every call's `training`, as the steps are traced.
        called = loaded["training"] = []
        cls = type(teacher)

        def watched(self, *args, **kwargs):
            called.append(kwargs.get("training", "not given"))
            return cls.__call__(self, *args, **kwargs)

        teacher.__class__ = type(cls.__name__, (cls,), {"__call__": watched})
        return teacher

    original, module.load_teacher = module.load_teacher, load_teacher
    module.main(["--output-dir", output_dir, *argv])
    after = {v.path: v.numpy() for v in loaded["teacher"].weights}
    moved = {path: float(np.max(np.abs(after[path] - before)))
             for path, before in loaded["before"].items()}  # fmt: skip
    statistics = [path for path in moved if "moving_" in path]
    return {"max_moved": max(moved.values()), "count": len(moved), "statistics": statistics,
            "training": loaded["training"]}  # fmt: skip


def save_teacher(script: str, keras_file: str, saved_model: str) -> dict:
    """A distillation script's teacher (its weights from TEACHER_WEIGHTS) saved whole as a
    .keras file and exported as a SavedModel: the other two ways to give a teacher."""
    module = load_script(script)
    teacher = module.build_teacher()
    teacher.load_weights(module.TEACHER_WEIGHTS)
    teacher.save(keras_file)
    teacher.export(saved_model, verbose=False)
    return {"keras_file": keras_file, "saved_model": saved_model}


def nt_xent_reference(script: str) -> dict:
    """The script's contrastive_losses() on fixed projections against NT-Xent written out in
    NumPy as the SimCLR paper states it: the 2N views, cosine similarities over the
    temperature, each view's positive its twin and its negatives the 2N - 2 others, the loss of
    an image the mean of its two views'."""
    module = load_script(script)
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    losses = module.contrastive_losses(
        tf.constant(first, tf.float32), tf.constant(second, tf.float32)
    )
    views = np.concatenate([first, second])
    views /= np.linalg.norm(views, axis=1, keepdims=True)
    similarity = views @ views.T / module.TEMPERATURE
    n = len(first)
    expected = []
    for i in range(2 * n):
        twin = (i + n) % (2 * n)
        others = [j for j in range(2 * n) if j != i]
        log_sum = np.log(np.sum(np.exp(similarity[i, others])))
        expected.append(log_sum - similarity[i, twin])
    expected = (np.array(expected[:n]) + np.array(expected[n:])) / 2
    return {
        "max_diff": float(np.max(np.abs(losses.numpy() - expected))),
        "mean": float(np.mean(expected)),
    }


def contrastive_views(script: str) -> dict:
    """The two views of the training batches as the script's pipeline makes them: batch 2 read
    from the start and from a pipeline started at step 2 (a resumed run), twice; and how far
    the two views of an image are apart."""
    module = load_script(script)
    examples = training_examples(module)

    def batch(start, index):
        batches = iter(module.training_batches(examples, start_step=start))
        for _ in range(index):
            next(batches)
        return [t.numpy() for t in next(batches)]

    straight, resumed, again = batch(0, 2), batch(2, 0), batch(2, 0)
    first, second, labels = straight
    return {
        "resumed_diff": max(
            float(np.max(np.abs(a - b))) for a, b in zip(straight, resumed, strict=True)
        ),
        "rerun_diff": max(
            float(np.max(np.abs(a - b))) for a, b in zip(resumed, again, strict=True)
        ),
        "views_apart": float(np.mean(np.abs(first - second))),
        "shapes": [list(first.shape), list(second.shape), list(labels.shape)],
    }


def attack_reference(script: str, checkpoint_dir: str) -> dict:
    """The script's perturb() and random_start() on its first training batch, against the
    attack written out here (PGD from the same start: sign steps, each projected back within
    EPSILON, then into INPUT_RANGE), with the checkpointed model; and how far it moved."""
    module = load_script(script)
    model = restored_model(module, checkpoint_dir)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    inputs, labels = next(iter(module.training_batches(training_examples(module), 0)))
    seed = tf.constant([module.SEED, 0], tf.int64)
    start = module.random_start(seed, inputs)
    attacked = module.perturb(model, loss_fn, inputs, labels, start)
    expected = inputs + start
    for _ in range(module.ATTACK_STEPS):
        with tf.GradientTape() as tape:
            tape.watch(expected)
            loss = tf.reduce_sum(loss_fn(labels, model(expected, training=False)))
        expected = expected + module.STEP_SIZE * tf.sign(tape.gradient(loss, expected))
        expected = tf.minimum(
            tf.maximum(expected, inputs - module.EPSILON), inputs + module.EPSILON
        )
    expected = tf.minimum(tf.maximum(expected, module.INPUT_RANGE[0]), module.INPUT_RANGE[1])
    moved = tf.reduce_max(tf.abs(attacked - inputs))
    return {
        "max_diff": float(tf.reduce_max(tf.abs(attacked - expected))),
        "moved": float(moved),
        "loss_before": float(loss_fn(labels, model(inputs, training=False))),
        "loss_after": float(loss_fn(labels, model(attacked, training=False))),
    }


def attack_statistics(script: str, before: str, after: str) -> dict:
    """BatchNormalization statistics after one adversarial step, against one training-mode pass
    over the attacked batch from the statistics before it: the attack's own passes over the
    model must leave them alone."""
    module = load_script(script)
    inputs, labels = next(iter(module.training_batches(training_examples(module), 0)))
    start = module.random_start(tf.constant([module.SEED, 0], tf.int64), inputs)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # The attack on a copy of the model, which it may not change; the step's one training
    # pass on the model itself, from the statistics before the step.
    attacked = module.perturb(restored_model(module, before), loss_fn, inputs, labels, start)
    model = restored_model(module, before)
    model(attacked, training=True)
    expected = [v.numpy() for v in model.non_trainable_variables if "moving" in v.path]
    stepped = restored_model(module, after)
    found = [v.numpy() for v in stepped.non_trainable_variables if "moving" in v.path]
    return {
        "count": len(expected),
        "max_diff": max(float(np.max(np.abs(f - e))) for f, e in zip(found, expected, strict=True)),
    }


def summary_plugins(logdir: str) -> dict:
    """The plugin (scalars, histograms, ...) of every summary tag in an event directory."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(logdir, size_guidance={"tensors": 0})
    accumulator.Reload()
    return {
        tag: accumulator.SummaryMetadata(tag).plugin_data.plugin_name
        for tag in accumulator.Tags()["tensors"]
    }


def best_export_matches(script: str, output_dir: str, x_path: str) -> dict:
    """Predictions of export/best (vs the model restored from checkpoints/best) and of the last
    export, on the same inputs."""
    import os

    module = load_script(script)
    x = np.load(x_path)["x"][:16] if x_path.endswith(".npz") else None
    if x is None:
        x = module.draw_shapes(16, int(x_path), seed=5)[0]
    x = module.preprocess(x, np.zeros(len(x)))[0]
    best = restored_model(module, os.path.join(output_dir, "checkpoints", "best"))(x)
    export = os.path.join(output_dir, "export")
    # Keep the loaded objects: their functions reference their variables.
    loaded_best = tf.saved_model.load(os.path.join(export, "best", "network"))
    loaded_last = tf.saved_model.load(os.path.join(export, "network"))
    served_best, served_last = loaded_best.serve(x), loaded_last.serve(x)
    return {
        "best": float(np.max(np.abs(served_best - best))),
        "last_vs_best": float(np.max(np.abs(served_last - best))),
    }


def multitask_first_step(script: str, output_dir: str, learning_rate: str) -> dict:
    """Recomputes the first plain-SGD step of a multi-task script by hand, from the weights in
    ckpt-0 and the first training batch: the gradient of sum(LOSS_WEIGHTS[t] * loss_t). Returns
    how far the weights in ckpt-1 are from that."""
    import os

    import keras

    module = load_script(script)
    # The shuffle's order depends on the global seed too, as in the script.
    keras.utils.set_random_seed(module.SEED)
    examples = training_examples(module)
    images, labels = next(iter(module.training_batches(examples, start_step=0)))
    model = module.build_model()
    checkpoints = os.path.join(output_dir, "checkpoints")
    tf.train.Checkpoint(model=model).restore(os.path.join(checkpoints, "ckpt-0")).expect_partial()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = tf.add_n([
            weight * loss_fn(labels[task], predictions[task])
            for task, weight in module.LOSS_WEIGHTS.items()
        ])  # fmt: skip
    gradients = tape.gradient(loss, model.trainable_variables)
    expected = [
        v - float(learning_rate) * g
        for v, g in zip(model.trainable_variables, gradients, strict=True)
    ]
    trained = module.build_model()
    tf.train.Checkpoint(model=trained).restore(os.path.join(checkpoints, "ckpt-1")).expect_partial()
    moved = max(
        float(np.max(np.abs(v - w)))
        for v, w in zip(model.trainable_variables, expected, strict=True)
    )
    diff = max(
        float(np.max(np.abs(e - t)))
        for e, t in zip(expected, trained.trainable_variables, strict=True)
    )
    return {"max_diff": diff, "moved": moved, "weights": dict(module.LOSS_WEIGHTS)}


def sam_first_step(script: str, output_dir: str, learning_rate: str, rho: str) -> dict:
    """Recomputes the first step of a script trained by SAM around plain SGD, by hand, from the
    weights in ckpt-0 and the first training batch: the gradient g at w, the ascent
    e = rho * g / ||g|| (||g||: the global norm of the gradient, not of the weights), the
    gradient g' at w + e (on a copy of the model of its own, with its own loss object, not the
    script's step), then w - lr * g'. Returns how far ckpt-1 is from that and from plain SGD's
    w - lr * g, and the loss at w (what the step logs)."""
    module = load_script(script)
    # The shuffle's order depends on the global seed too, as in the script.
    keras.utils.set_random_seed(module.SEED)
    examples = training_examples(module)
    images, labels = next(iter(module.training_batches(examples, start_step=0)))
    checkpoints = os.path.join(output_dir, "checkpoints")

    def restored(name):
        model = module.build_model()
        tf.train.Checkpoint(model=model).restore(os.path.join(checkpoints, name)).expect_partial()
        return model

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss_and_gradient(model):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        return float(loss), [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]

    model = restored("ckpt-0")
    weights = [v.numpy() for v in model.trainable_variables]
    loss_at_weights, gradient = loss_and_gradient(model)
    norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in gradient))
    perturbed = restored("ckpt-0")
    for variable, w, g in zip(perturbed.trainable_variables, weights, gradient, strict=True):
        variable.assign(w + float(rho) * g / norm)
    _, sharp_gradient = loss_and_gradient(perturbed)
    rate = float(learning_rate)
    expected = [w - rate * g for w, g in zip(weights, sharp_gradient, strict=True)]
    plain = [w - rate * g for w, g in zip(weights, gradient, strict=True)]
    trained = [v.numpy() for v in restored("ckpt-1").trainable_variables]

    def furthest(a, b):
        return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))

    return {
        "max_diff": furthest(expected, trained),
        "from_plain": furthest(plain, trained),
        "loss_at_weights": loss_at_weights,
    }


def _furthest(pairs) -> float:
    return max(float(np.max(np.abs(a - b))) for a, b in pairs)


def averaged_states(output_dir: str, decay: str, raw, average, raw_name: str, name: str) -> dict:
    """ema=EMA, from every checkpoint of a run (in step order): the network `raw_name` and its
    average `name` restored into the copies `raw` and `average`; how far the first checkpoint's
    average is from its weights (`start`), how far each step's average is from decay *
    average + (1 - decay) * weights (`follows`), and the last one's (`apart`)."""
    checkpoints = os.path.join(output_dir, "checkpoints")
    paths = sorted(
        (p[: -len(".index")] for p in os.listdir(checkpoints) if p.endswith(".index")),
        key=lambda p: int(p.split("-")[1]),
    )

    def networks(path):
        tf.train.Checkpoint(**{raw_name: raw, name: average}).restore(
            os.path.join(checkpoints, path)
        ).expect_partial()
        pairs = zip(raw.weights, average.weights, strict=True)
        return [(w.numpy(), a.numpy()) for w, a in pairs if "float" in w.dtype]

    d = float(decay)
    states = [networks(path) for path in paths]
    follows = max(
        (_furthest((after, d * before + (1 - d) * weight)
                   for (_, before), (weight, after) in zip(earlier, later, strict=True))
         for earlier, later in itertools.pairwise(states)),
        default=0.0,
    )  # fmt: skip
    return {
        "checkpoints": len(paths),
        "weights": len(states[0]),
        "start": _furthest(states[0]),
        "follows": follows,
        "apart": _furthest(states[-1]),
    }


def ema_state(script: str, output_dir: str, decay: str, x_path: str) -> dict:
    """ema=EMA, from the checkpoints (every step's), the networks restored into build_model()
    copies (not through the script's step): how far each step's average is from
    decay * average + (1 - decay) * weights; the export's answers against the average's and
    the raw weights'; and the validation loss of each over the npz file (the script's
    preprocess, a loss of its own)."""
    module = load_script(script)
    average_model, raw_model = module.build_model(), module.build_model()
    found = averaged_states(output_dir, decay, raw_model, average_model, "model", "ema_model")
    arrays = np.load(x_path)
    images, labels = module.preprocess(arrays["x"], arrays["y"])
    served = tf.saved_model.load(os.path.join(output_dir, "export", "network"))
    answers = served.serve(tf.constant(images)).numpy()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {
        **found,
        "export_from_average": float(np.max(np.abs(answers - average_model(images).numpy()))),
        "export_from_weights": float(np.max(np.abs(answers - raw_model(images).numpy()))),
        "average_loss": float(loss_fn(labels, average_model(images, training=False))),
        "weights_loss": float(loss_fn(labels, raw_model(images, training=False))),
    }


def gan_ema_state(script: str, output_dir: str, decay: str) -> dict:
    """ema=EMA on a GAN, from the checkpoints (every step's), the generators restored into
    build_generator() copies: how far each step's average is from decay * average +
    (1 - decay) * weights, and the exported generator's images of fixed noise against the
    average's and the raw generator's."""
    module = load_script(script)
    average, raw = module.build_generator(), module.build_generator()
    found = averaged_states(output_dir, decay, raw, average, "generator", "ema_generator")
    noise = tf.random.stateless_normal((8, module.LATENT_DIM), seed=[1, 2])
    served = tf.saved_model.load(os.path.join(output_dir, "export", "generator"))
    images = served.serve(noise).numpy()
    return {
        **found,
        "export_from_average": float(np.max(np.abs(images - average(noise, training=False)))),
        "export_from_weights": float(np.max(np.abs(images - raw(noise, training=False)))),
    }


def gan_steps(script: str, output_dir: str, learning_rate: str, precision: str, steps: str) -> dict:
    """Recomputes the first `steps` steps of a GAN script trained by plain SGD, by hand, from
    ckpt-0: each CRITIC_STEPS discriminator steps on the step's real batch and generated images
    (DCGAN: cross-entropies, real labelled REAL_LABEL; WGAN-GP: the Wasserstein loss plus the
    gradient penalty by a nested tape), then the generator's through the updated discriminator.
    The noise and penalty points are drawn as the docs say: stateless, from (SEED, step, use),
    use 2k and 2k + 1 for critic step k's noise and points, 2 * CRITIC_STEPS the generator's.
    Under mixed_float16 the losses (and the penalty's inner scores) are scaled, and a step whose
    gradients overflow is skipped, as Keras' LossScaleOptimizer does. Returns how far every
    variable of both networks in ckpt-<steps> is from that."""
    import itertools
    import os

    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    keras.mixed_precision.set_global_policy(precision)
    batches = module.training_batches(training_examples(module), start_step=0)
    checkpoints = os.path.join(output_dir, "checkpoints")

    def restored(path):
        nets = {
            "generator": module.build_generator(),
            "discriminator": module.build_discriminator(),
        }
        tf.train.Checkpoint(**nets).restore(path).expect_partial()
        return nets["generator"], nets["discriminator"]

    generator, discriminator = restored(os.path.join(checkpoints, "ckpt-0"))
    cross_entropy = keras.losses.BinaryCrossentropy(from_logits=True)
    rate = float(learning_rate)
    critic_steps = getattr(module, "CRITIC_STEPS", 1)
    wasserstein = hasattr(module, "gradient_penalty")
    # Keras' LossScaleOptimizer: each network's scale starts at 2**15, and a step whose
    # gradients overflow is skipped and halves it.
    mixed = precision == "mixed_float16"
    scales = {"generator": 2.0**15 if mixed else 1.0, "discriminator": 2.0**15 if mixed else 1.0}
    updates = {"generator": 0, "discriminator": 0}

    def sgd(scaled_loss, tape, network):
        weights = network.trainable_variables
        gradients = tape.gradient(scaled_loss, weights)
        if not all(bool(tf.reduce_all(tf.math.is_finite(g))) for g in gradients):
            scales[network.name] /= 2
            return
        updates[network.name] += 1
        for v, g in zip(weights, gradients, strict=True):
            v.assign_sub(rate * (g / scales[network.name]))

    for step, images in enumerate(itertools.islice(batches, int(steps))):
        batch = images.shape[0]
        seed = tf.constant([module.SEED, step], tf.int64)

        def draw(sample, use, shape, seed=seed):
            return sample(shape, tf.random.experimental.stateless_fold_in(seed, use))

        for k in range(critic_steps):
            z = draw(tf.random.stateless_normal, 2 * k, (batch, module.LATENT_DIM))
            with tf.GradientTape() as tape:
                generated = generator(z, training=True)
                real = discriminator(images, training=True)
                fake = discriminator(generated, training=True)
                if wasserstein:
                    loss = tf.reduce_mean(fake - real)
                    epsilon = draw(tf.random.stateless_uniform, 2 * k + 1, (batch, 1, 1, 1))
                    points = generated + epsilon * (images - generated)
                    with tf.GradientTape() as inner:
                        inner.watch(points)
                        scores = discriminator(points, training=True) * scales["discriminator"]
                    gradients = inner.gradient(scores, points) / scales["discriminator"]
                    norms = tf.sqrt(tf.reduce_sum(tf.square(gradients), axis=[1, 2, 3]))
                    loss += module.PENALTY_WEIGHT * tf.reduce_mean(tf.square(norms - 1.0))
                else:
                    real_label = getattr(module, "REAL_LABEL", 1.0)
                    loss = cross_entropy(tf.fill(tf.shape(real), real_label), real)
                    loss += cross_entropy(tf.zeros_like(fake), fake)
                scaled_loss = loss * scales["discriminator"]
            sgd(scaled_loss, tape, discriminator)
        with tf.GradientTape() as tape:
            z = draw(tf.random.stateless_normal, 2 * critic_steps, (batch, module.LATENT_DIM))
            scores = discriminator(generator(z, training=True), training=True)
            if wasserstein:
                loss = -tf.reduce_mean(scores)
            else:
                loss = cross_entropy(tf.ones_like(scores), scores)
            scaled_loss = loss * scales["generator"]
        sgd(scaled_loss, tape, generator)

    trained = restored(os.path.join(checkpoints, f"ckpt-{steps}"))
    first = restored(os.path.join(checkpoints, "ckpt-0"))

    def gap(networks, others):
        return max(
            float(np.max(np.abs(a - b)))
            for net, other in zip(networks, others, strict=True)
            for a, b in zip(net.variables, other.variables, strict=True)
        )

    return {
        "max_diff": gap((generator, discriminator), trained),
        "moved": gap(first, trained),
        "updates": updates,
        "count": len(generator.variables) + len(discriminator.variables),
    }


def r1_reference(script: str) -> dict:
    """The script's r1_penalty() on a fixed batch against ||grad D(x)||^2 / 2 per image, the
    gradient taken by hand, image by image."""
    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    critic = module.build_discriminator()
    real = tf.random.stateless_uniform((4, *critic.input_shape[1:]), [1, 2], -1.0, 1.0)
    penalty = module.r1_penalty(critic, real).numpy()
    expected = []
    for image in tf.unstack(real):
        image = image[None]
        with tf.GradientTape() as tape:
            tape.watch(image)
            score = critic(image, training=True)[0, 0]
        expected.append(float(tf.reduce_sum(tape.gradient(score, image) ** 2)) / 2)
    return {
        "max_diff": float(np.max(np.abs(penalty - np.array(expected)))),
        "penalty": float(np.mean(expected)),
    }


def penalty_under_loss_scaling(script: str) -> dict:
    """The script's gradient_penalty() under mixed_float16, on a fixed batch, for a critic whose
    scores are small (its last kernel times 1e-6, as a young critic's can be): the penalty and
    its gradients for the critic's weights, against a hand-written nested-tape reference that
    scales the inner scores by the loss scale, and against one that does not (float16
    gradients of small scores underflow: what the scaling guards against)."""
    import keras

    module = load_script(script)
    keras.utils.set_random_seed(module.SEED)
    keras.mixed_precision.set_global_policy("mixed_float16")
    critic = module.build_discriminator()
    last = (
        critic.layers[-2] if critic.layers[-1].name.startswith("activation") else critic.layers[-1]
    )
    last.kernel.assign(last.kernel * 1e-6)
    shape = (8, *critic.input_shape[1:])
    real = tf.random.stateless_uniform(shape, [1, 2], -1.0, 1.0)
    generated = tf.random.stateless_uniform(shape, [3, 4], -1.0, 1.0)
    epsilon = tf.random.stateless_uniform((8, 1, 1, 1), [5, 6])
    scale = tf.constant(2.0**15)

    def reference(inner_scale):
        with tf.GradientTape() as outer:
            points = generated + epsilon * (real - generated)
            with tf.GradientTape() as inner:
                inner.watch(points)
                scores = critic(points, training=True) * inner_scale
            gradients = inner.gradient(scores, points) / inner_scale
            norms = tf.sqrt(tf.reduce_sum(tf.square(gradients), axis=[1, 2, 3]))
            penalty = tf.reduce_mean(tf.square(norms - 1.0))
        return penalty, outer.gradient(penalty, critic.trainable_variables)

    with tf.GradientTape() as tape:
        penalty = tf.reduce_mean(module.gradient_penalty(critic, real, generated, epsilon, scale))
    gradients = tape.gradient(penalty, critic.trainable_variables)
    expected, expected_gradients = reference(scale)
    _, unscaled_gradients = reference(tf.constant(1.0))

    def gap(a, b):
        # None: a variable the penalty does not depend on (the last bias), in both or neither.
        pairs = [(x, y) for x, y in zip(a, b, strict=True) if not (x is None and y is None)]
        return max(float(np.max(np.abs(np.nan_to_num(x - y, nan=np.inf)))) for x, y in pairs)

    return {
        "penalty_diff": abs(float(penalty - expected)),
        "gradient_diff": gap(gradients, expected_gradients),
        "unscaled_gradient_diff": gap(unscaled_gradients, expected_gradients),
    }


def model_weights_diff(script: str, dir_a: str, dir_b: str) -> dict:
    """Max abs difference between the model weights of the newest checkpoints of two
    directories, and how far those of `dir_b` are from the script's initial weights."""
    import os

    import keras

    module = load_script(script)
    a = restored_model(module, os.path.join(dir_a, "checkpoints")).get_weights()
    b = restored_model(module, os.path.join(dir_b, "checkpoints")).get_weights()
    keras.utils.set_random_seed(module.SEED)  # as the script seeds before build_model()
    initial = module.build_model().get_weights()
    return {
        "max_diff": max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True)),
        "from_initial": max(float(np.max(np.abs(x - y))) for x, y in zip(b, initial, strict=True)),
        "count": len(a),
    }


def lock_without_locks(script: str, output_dir: str) -> dict:
    """What the script's RunDirectory.lock answers on a file system without locks: flock
    raising ENOLCK, as some network and FUSE file systems do."""
    import errno
    import os

    module = load_script(script)

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    sys.modules["loopgen_runtime"].fcntl.flock = no_locks  # the runtime beside the script locks
    run = module.RunDirectory(module.parse_args(["--output-dir", output_dir]))
    try:
        refusal = run.lock()
    except SystemExit as refused:
        refusal = str(refused)
    return {"lock": refusal is None, "refusal": refusal}


def keras_text_dataset(script: str) -> dict:
    """What the script's load_examples() gives for an imdb source, with the download served by
    keras_datasets_mock, beside the raw reviews of the file it read."""
    import keras_datasets_mock

    with keras_datasets_mock.served() as path:
        module = load_script(script)
        (x_train, y_train), (x_test, _) = module.load_examples()
        raw = np.load(path, allow_pickle=True)
        lengths = sorted(len(review) for review in raw["x_train"])
    return {
        "train_shape": list(np.shape(x_train)),
        "test_shape": list(np.shape(x_test)),
        "dtype": str(np.asarray(x_train).dtype),
        "labels": len(y_train),
        "first_ids": sorted({int(row[0]) for row in x_train}),
        "max_id": int(np.max(x_train)),
        "out_of_vocabulary": int(np.sum(x_train == 2)),
        "padding_at_end": int(sum(np.all(row[-5:] == 0) for row in x_train)),
        "raw_lengths": [lengths[0], lengths[-1]],
    }


def write_backbone_weights(path: str, application: str, args: str, size: str) -> dict:
    """A weights file of a keras.applications model without its top, as a user would save one
    (`save_weights`), initialized from a seed of its own (7): weights no script seed gives."""
    import keras

    keras.utils.set_random_seed(7)
    model = getattr(keras.applications, application)(
        include_top=False, weights=None, input_shape=(int(size), int(size), 3), **json.loads(args)
    )
    model.save_weights(path)
    return {"weights": len(model.weights)}


def backbone_from_file(script: str, backbone: str, application: str, args: str, path: str):
    """How far the backbone of the script's model starts from the weights in `path` (loaded by
    Keras into the application, apart from the script)."""
    import keras

    model = load_script(script).build_model()
    ours = model.get_layer(backbone)
    reference = getattr(keras.applications, application)(
        include_top=False, weights=path, input_shape=ours.input_shape[1:], **json.loads(args)
    )
    pairs = list(zip(ours.weights, reference.weights, strict=True))
    diff = max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in pairs)
    return {"weights": len(pairs), "max_diff": diff}


def validation_stream(script: str) -> dict:
    """How many validation examples the script's load_examples() counts, and the first one its
    validation stream yields (a generator source)."""
    sys.path.insert(0, str(Path(script).parent))  # the script's own imports, as when it runs
    module = load_script(script)
    _, validation = module.load_examples()
    first = next(iter(module.generator_stream(validation)))
    return {
        "count": module.num_examples(validation),
        "first": [np.asarray(part).ravel().tolist() for part in first],
    }


def class_ids(script: str) -> dict:
    """The labels of the validation examples the script's load_examples() gives (a source
    whose labels are class names or class sub-directories)."""
    _, (_, labels) = load_script(script).load_examples()
    return {"validation": np.asarray(labels).tolist()}


def split_files(script: str) -> dict:
    """The files and labels of the training and validation examples that the script's
    load_examples() gives (an image or text directory split into both)."""
    (train_paths, train_labels), (paths, labels) = load_script(script).load_examples()
    return {
        "train": [p.decode() if isinstance(p, bytes) else str(p) for p in train_paths],
        "train_labels": np.asarray(train_labels).tolist(),
        "validation": [p.decode() if isinstance(p, bytes) else str(p) for p in paths],
        "validation_labels": np.asarray(labels).tolist(),
    }


def meta_step(script: str, output_dir: str, learning_rate: str) -> dict:
    """Recomputes the first meta-step of a Reptile or MAML script trained by an outer SGD, by
    hand, from ckpt-0 and the step's tasks; returns how far ckpt-1 is from it.

    Reptile: each task's weights adapted by Keras' SGD(INNER_LEARNING_RATE) on a fresh copy of
    the network, INNER_STEPS steps on its support set; the step moves the weights by
    learning_rate * mean(weights - adapted). MAML (a Flatten-Dense-tanh-Dense network written
    out here as matrix products): the meta-gradient of the query loss through the inner SGD
    by nested tapes, second order, and its first-order variant; both are returned, against the
    script's (weights - ckpt-1) / learning_rate."""
    import os

    module = load_script(script)
    rate = float(learning_rate)
    examples = module.load_examples()[0]
    tasks = next(iter(module.training_batches(examples, start_step=0)))
    checkpoints = os.path.join(output_dir, "checkpoints")

    def restored(name):
        model = module.build_model()
        tf.train.Checkpoint(model=model).restore(os.path.join(checkpoints, name)).expect_partial()
        return model

    start, trained = restored("ckpt-0"), restored("ckpt-1")
    weights = [v.numpy().astype(np.float64) for v in start.trainable_variables]
    after = [v.numpy() for v in trained.trainable_variables]
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    count = int(tasks[0].shape[0])
    if not hasattr(module, "QUERIES") or len(tasks) == 2:  # Reptile
        adapted = []
        for task in range(count):
            model = restored("ckpt-0")
            optimizer = keras.optimizers.SGD(module.INNER_LEARNING_RATE)
            for _ in range(module.INNER_STEPS):
                with tf.GradientTape() as tape:
                    loss = loss_fn(tasks[1][task], model(tasks[0][task], training=True))
                gradients = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            adapted.append([v.numpy() for v in model.trainable_variables])
        expected = [
            w - rate * np.mean([w - a[i] for a in adapted], axis=0) for i, w in enumerate(weights)
        ]
        return {
            "tasks": count,
            "max_diff": max(
                float(np.max(np.abs(e - a))) for e, a in zip(expected, after, strict=True)
            ),
            "moved": max(
                float(np.max(np.abs(e - w))) for e, w in zip(expected, weights, strict=True)
            ),
        }

    def forward(params, x):
        w1, b1, w2, b2 = params
        hidden = tf.tanh(tf.matmul(tf.reshape(x, [x.shape[0], -1]), w1) + b1)
        return tf.matmul(hidden, w2) + b2

    def meta_gradient(first_order):
        total = [np.zeros_like(w) for w in weights]
        for task in range(count):
            params = [tf.constant(w, tf.float32) for w in weights]
            with tf.GradientTape() as outer:
                outer.watch(params)
                fast = params
                for _ in range(module.INNER_STEPS):
                    with tf.GradientTape() as inner:
                        inner.watch(fast)
                        loss = loss_fn(tasks[1][task], forward(fast, tasks[0][task]))
                    grads = inner.gradient(loss, fast)
                    if first_order:
                        grads = [tf.stop_gradient(g) for g in grads]
                    fast = [
                        p - module.INNER_LEARNING_RATE * g for p, g in zip(fast, grads, strict=True)
                    ]
                query = loss_fn(tasks[3][task], forward(fast, tasks[2][task]))
            for i, g in enumerate(outer.gradient(query, params)):
                total[i] += g.numpy() / count
        return total

    script_gradient = [(w - a) / rate for w, a in zip(weights, after, strict=True)]
    second, first = meta_gradient(False), meta_gradient(True)

    def apart(a, b):
        return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))

    return {
        "tasks": count,
        "to_second_order": apart(script_gradient, second),
        "to_first_order": apart(script_gradient, first),
        "orders_apart": apart(second, first),
    }


def meta_tasks(script: str) -> dict:
    """The tasks of a MAML script's training and evaluation: step 2's read from the start, from
    a pipeline started at step 2 (a resumed run), and again; whether a task's classes are
    distinct and its support and query sets disjoint; the classes of each side."""
    module = load_script(script)
    train, held_out = module.load_examples()
    members = module.class_members(train[1], "train")

    def positions(step):
        seed = tf.constant([module.SEED, step], tf.int64)
        per_class = module.SHOTS + module.QUERIES
        return module.draw_tasks(members, seed, module.TASKS_PER_STEP, per_class)

    def step_tasks(start, index):
        batches = iter(module.training_batches(train, start_step=start))
        for _ in range(index):
            next(batches)
        return [t.numpy() for t in next(batches)]

    straight, resumed, again = step_tasks(0, 2), step_tasks(2, 0), step_tasks(2, 0)
    drawn = positions(2).numpy()
    labels = np.asarray(train[1])
    task_classes = [sorted(set(labels[drawn[t]].reshape(-1).tolist())) for t in range(len(drawn))]
    return {
        "shapes": [list(part.shape) for part in straight],
        "resumed_diff": max(
            float(np.max(np.abs(a - b))) for a, b in zip(straight, resumed, strict=True)
        ),
        "rerun_diff": max(
            float(np.max(np.abs(a - b))) for a, b in zip(resumed, again, strict=True)
        ),
        "distinct_classes": all(len(c) == module.WAYS for c in task_classes),
        "disjoint_sets": all(
            len(set(drawn[t].reshape(-1).tolist())) == drawn[t].size for t in range(len(drawn))
        ),
        "train_classes": sorted(set(labels.tolist())),
        "test_classes": sorted(set(np.asarray(held_out[1]).tolist())),
        "tasks_differ": bool(np.any(positions(2).numpy() != positions(3).numpy())),
    }


def generated_distance(script: str, checkpoint_dir: str) -> dict:
    """How far a GAN's generated images are from the data, at each checkpoint: the mean
    absolute difference between the mean image of 256 generated images (fixed noise) and that
    of a training batch, as the pipeline prepares it; by step."""
    import os

    module = load_script(script)
    real = next(iter(module.training_batches(training_examples(module), start_step=0)))
    real = (real[0] if isinstance(real, tuple) else real).numpy()
    noise = tf.random.stateless_normal((256, module.LATENT_DIM), seed=[1, 2])
    distances = {}
    for index in sorted(p for p in os.listdir(checkpoint_dir) if p.endswith(".index")):
        generator = module.build_generator()
        path = os.path.join(checkpoint_dir, index.removesuffix(".index"))
        tf.train.Checkpoint(generator=generator).restore(path).expect_partial()
        fake = generator(noise, training=False).numpy()
        step = int(index.removesuffix(".index").rsplit("-", 1)[1])
        distances[step] = float(np.mean(np.abs(fake.mean(axis=0) - real.mean(axis=0))))
    return {"distances": [distances[step] for step in sorted(distances)]}


def served_outputs(saved_model: str, inputs: str) -> dict:
    """The exported model's serving_default (export/saved_model/1) on raw inputs, one at a
    time, read here without the script: `inputs`, a JSON list of [kind, path]. "bytes": a
    file's bytes; "npy": the examples of an .npy file; "png": a PNG decoded; "csv": a CSV
    file's rows (csv module), each input its column; "tfrecord": a TFRecord file's
    tf.train.Examples, each input its feature; "text": a file's lines (not the empty ones),
    up to a tab. What
    predict's records must say."""
    import csv

    with contextlib.suppress(ImportError):  # a KerasHub tokenizer's ops
        import tensorflow_text  # noqa: F401
    serve = tf.saved_model.load(saved_model).signatures["serving_default"]
    signature = serve.structured_input_signature[1]

    def examples(kind: str, path: str):
        """Each example as {input name: value} without the batch dimension."""
        (name, spec), *_ = signature.items()
        if kind == "bytes":
            yield {name: tf.io.read_file(path)}
        elif kind == "png":
            yield {name: tf.reshape(tf.io.decode_png(tf.io.read_file(path)), spec.shape[1:])}
        elif kind == "npy":
            yield from ({name: example} for example in np.load(path))
        elif kind == "csv":
            with open(path, newline="") as f:
                yield from ({n: row[n] for n in signature} for row in csv.DictReader(f))
        elif kind == "text":
            with open(path) as f:
                lines = [line for line in f.read().split("\n") if line]
                yield from ({name: line.split("\t")[0]} for line in lines)
        else:
            for record in tf.data.TFRecordDataset(path):
                feature = tf.train.Example.FromString(record.numpy()).features.feature
                values = {n: feature[n] for n in signature}
                yield {n: getattr(v, v.WhichOneof("kind")).value for n, v in values.items()}

    outputs = []
    for kind, path in json.loads(inputs):
        for example in examples(kind, path):
            batch = {}
            for name, spec in signature.items():
                value = example[name]
                if isinstance(value, str) and spec.dtype != tf.string:
                    value = float(value)  # a CSV field
                value = tf.cast(value, spec.dtype)  # an image of any size: its own shape
                shape = spec.shape[1:] if spec.shape[1:].is_fully_defined() else value.shape
                batch[name] = tf.reshape(value, [1, *shape])
            served = serve(**batch)
            outputs.append({key: value.numpy()[0].tolist() for key, value in served.items()
                            if value.dtype != tf.string})  # fmt: skip
            if "class_names" in served:
                outputs[-1]["class_names"] = served["class_names"].numpy()[0].decode()
    return {"outputs": outputs}


def tflite_matches(saved_model: str, tflite_file: str, reference: str) -> dict:
    """A run's model.tflite against the SavedModel it was converted from, both given the same
    inputs: the raw examples of `reference` (serving_reference's .npz), or for "noise" eight
    standard normal vectors (a GAN generator's). tf.lite.Interpreter runs the .tflite file's
    serving_default, tf.saved_model.load the SavedModel's. Imports neither the script nor
    loopgen. The largest difference of each float output, whether the integer ones are equal,
    and the TFLite input."""
    runner = tf.lite.Interpreter(model_path=tflite_file).get_signature_runner("serving_default")
    ((name, detail),) = runner.get_input_details().items()
    if reference == "noise":
        shape = (8, *detail["shape_signature"][1:])
        raw = np.random.default_rng(0).standard_normal(shape).astype(detail["dtype"])
    else:
        raw = np.load(reference)["input"]  # the one input (serving_reference)
    tflite = runner(**{name: raw})
    served = tf.saved_model.load(saved_model).signatures["serving_default"]
    expected = {key: value.numpy() for key, value in served(**{name: tf.constant(raw)}).items()}
    result = {
        "input": [name, np.dtype(detail["dtype"]).name, detail["shape_signature"].tolist()],
        "outputs": sorted(tflite),
        "served_outputs": sorted(expected),
        "examples": len(raw),
    }
    for key, value in expected.items():
        if value.dtype.kind == "f":
            result[key] = float(np.max(np.abs(tflite[key] - value)))
            result[f"{key}_spread"] = float(np.std(value))
        else:
            result[key] = bool(np.array_equal(tflite[key], value))
    return result


def tflite_layers() -> dict:
    """Which layers convert with TFLite's builtin ops alone on the installed TensorFlow: each
    layer that dsl/rules/export.py refuses for export.tflite (and some it lets through), alone
    in a model exported as the script does and converted. Kinds that converted; kinds that did
    not, with the first TF Select ops the converter named."""
    import tempfile

    from keras import layers

    floats = np.random.default_rng(0).random((2, 6, 4)).astype("float32")
    images = np.random.default_rng(0).random((2, 8, 8, 3)).astype("float32")
    ids = np.array([[3, 7], [11, 5]], "int64")
    cases = {
        "lstm": (lambda: layers.LSTM(4), floats),
        "gru": (lambda: layers.GRU(4), floats),
        "simple_rnn": (lambda: layers.SimpleRNN(4), floats),
        "rnn": (lambda: layers.RNN(layers.SimpleRNNCell(4)), floats),
        "conv_lstm1d": (lambda: layers.ConvLSTM1D(2, 3), floats[..., None]),
        "conv_lstm2d": (lambda: layers.ConvLSTM2D(2, 3), images[:, None].repeat(2, 1)),
        "conv_lstm3d": (lambda: layers.ConvLSTM3D(2, 3), images[:, None, ..., None]),
        "integer_lookup": (lambda: layers.IntegerLookup(vocabulary=[3, 7]), ids),
        "hashing": (lambda: layers.Hashing(num_bins=5), ids),
        "hashed_crossing": (lambda: HashedPair(), ids),
        "category_encoding": (
            lambda: layers.CategoryEncoding(num_tokens=12, output_mode="multi_hot"),
            ids,
        ),
        "text_vectorization": (
            lambda: layers.TextVectorization(vocabulary=["a", "b"]),
            np.array(["a b", "b c"]),
        ),
        "random_flip": (lambda: layers.RandomFlip(), images),
        "random_rotation": (lambda: layers.RandomRotation(0.1), images),
        "random_contrast": (lambda: layers.RandomContrast(0.1), images),
        "random_crop": (lambda: layers.RandomCrop(4, 4), images),
        # Let through: these convert.
        "lstm unrolled": (lambda: layers.LSTM(4, unroll=True), floats),
        "bidirectional gru unrolled": (
            lambda: layers.Bidirectional(layers.GRU(4, unroll=True)),
            floats,
        ),
        "string_lookup": (lambda: layers.StringLookup(vocabulary=["a", "b"]), np.array(["a", "c"])),
        "dropout": (lambda: layers.Dropout(0.5), floats),
        "embedding": (lambda: layers.Embedding(12, 3), ids),
        "multi_head_attention": (lambda: SelfAttention(), floats),
    }

    class HashedPair(layers.Layer):
        def __init__(self):
            super().__init__()
            self.crossing = layers.HashedCrossing(num_bins=5)

        def call(self, x):
            return self.crossing((x[:, 0], x[:, 1]))

    class SelfAttention(layers.Layer):
        def __init__(self):
            super().__init__()
            self.attention = layers.MultiHeadAttention(2, 4)

        def call(self, x):
            return self.attention(x, x)

    converted, refused = [], {}
    for kind, (make, x) in cases.items():
        dtype = "string" if x.dtype.kind in "US" else x.dtype.name
        inputs = keras.Input(shape=x.shape[1:], dtype=dtype)
        model = keras.Model(inputs, make()(inputs))
        with tempfile.TemporaryDirectory() as saved:
            model.export(saved, verbose=False)
            converter = tf.lite.TFLiteConverter.from_saved_model(saved)
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
            try:
                converter.convert()
            except Exception as error:  # the converter's ConverterError
                message = str(error)
                found = message.find("TF Select ops: ")
                ops = message[found:].splitlines()[0] if found >= 0 else "TensorList ops"
                refused[kind] = ops.removeprefix("TF Select ops: ")
                continue
        converted.append(kind)
    return {"converted": converted, "refused": refused}


def generative_formulas(script: str, prediction: str) -> dict:
    """A diffusion or flow-matching script's training example, schedule and sampler against
    references written here (issue 62 #7): the draws taken from TensorFlow's stateless ops
    directly (not the script's draw()), the schedule from the papers' formulas, the noising,
    the targets, the loss and the sampler's steps in NumPy, with a denoiser of plain arithmetic
    in place of the network. Returns the largest differences."""
    module = load_script(script)
    flow = not hasattr(module, "TIMESTEPS")
    guided = hasattr(module, "NO_LABEL")
    rng = np.random.default_rng(0)
    n = 6
    images = rng.uniform(-1, 1, size=(n, 4, 4, 3)).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1, 2], np.int32)
    seed = tf.constant([module.SEED, 5], tf.int64)

    def drawn(use, shape, kind="normal", **kwargs):
        key = tf.random.experimental.stateless_fold_in(seed, use)
        op = tf.random.stateless_normal if kind == "normal" else tf.random.stateless_uniform
        return op(shape, key, **kwargs).numpy()

    inputs, target = module.noised(tf.constant(images), tf.constant(labels), seed, 0, n)
    noise = drawn(0, (n, 4, 4, 3)).astype(np.float64)
    x0 = images.astype(np.float64)
    found = {}
    if flow:
        t = drawn(1, (n, 1), "uniform").astype(np.float64)
        tt = t[:, :, None, None]
        reference_inputs = (1 - tt) * x0 + tt * noise
        reference_target = noise - x0
        reference_time = t
    else:
        steps = module.TIMESTEPS
        if hasattr(module, "COSINE_OFFSET"):
            s = module.COSINE_OFFSET

            def f(t):
                return math.cos((t / steps + s) / (1 + s) * math.pi / 2) ** 2

            # Nichol & Dhariwal: alpha_bar_t = f(t) / f(0), t = 1 .. T (index t - 1 here),
            # where no beta reaches the 0.999 cap (the last few levels of T = 1000).
            alpha_bars = np.array([f(t + 1) / f(0) for t in range(steps)])
            uncapped = np.array([1 - f(t + 1) / f(t) < 0.999 for t in range(steps)])
            last = int(np.argmin(uncapped)) if not uncapped.all() else steps
        else:
            # Ho et al.: betas linear from beta_1 to beta_T; alpha_bar_t = prod (1 - beta_s).
            product, alpha_bars = 1.0, []
            for t in range(steps):
                beta = module.BETA_START + (module.BETA_END - module.BETA_START) * t / (steps - 1)
                product *= 1 - beta
                alpha_bars.append(product)
            alpha_bars, last = np.array(alpha_bars), steps
        schedule = module.noise_schedule()
        found["schedule"] = float(np.max(np.abs(schedule[:last] - alpha_bars[:last])))
        found["levels"] = last
        timestep = drawn(1, (n,), "uniform", maxval=steps, dtype=tf.int32)
        a = alpha_bars[timestep][:, None, None, None]
        reference_inputs = np.sqrt(a) * x0 + np.sqrt(1 - a) * noise
        reference_target = {
            "epsilon": noise,
            "v": np.sqrt(a) * noise - np.sqrt(1 - a) * x0,
            "sample": x0,
        }[prediction]
        reference_time = timestep[:, None] / steps
    found["inputs"] = float(np.max(np.abs(inputs["image"].numpy() - reference_inputs)))
    found["target"] = float(np.max(np.abs(target.numpy() - reference_target)))
    found["time"] = float(np.max(np.abs(inputs["t"].numpy() - reference_time)))
    if guided:
        dropped = drawn(2, (n,), "uniform") < module.LABEL_DROPOUT
        reference_labels = np.where(dropped, module.CLASSES, labels)
        found["labels_equal"] = bool((inputs["label"].numpy() == reference_labels).all())
        # Dropped at the rate asked for, over many images.
        many = module.noised(tf.zeros((4000, 1, 1, 1)), tf.zeros(4000, tf.int32), seed, 0, 4000)
        found["dropout_rate"] = float(np.mean(many[0]["label"].numpy() == module.CLASSES))
    predictions = rng.normal(size=images.shape).astype(np.float32)
    errors = module.squared_errors(tf.constant(predictions), target).numpy()
    found["loss"] = float(
        np.max(np.abs(errors - np.mean((predictions - target.numpy()) ** 2, axis=(1, 2, 3))))
    )

    # The sampler, with a denoiser of plain arithmetic (its output depends on the image, the
    # time and the label).
    def network(inputs, training):
        assert not training
        out = 0.5 * inputs["image"] + tf.reshape(inputs["t"], (-1, 1, 1, 1))
        if guided:
            out += 0.1 * tf.reshape(tf.cast(inputs["label"], tf.float32), (-1, 1, 1, 1))
        return out

    def reference_network(x, t, label=None):
        out = 0.5 * x + t
        return out + 0.1 * label if label is not None else out

    scale = 2.5
    x = noise.astype(np.float32)
    extra = (tf.constant(labels), tf.constant(scale)) if guided else ()

    def guided_output(x, t):
        if not guided:
            return reference_network(x, t)
        conditional = reference_network(x, t, labels[:, None, None, None].astype(np.float64))
        unconditional = reference_network(x, t, float(module.CLASSES))
        return unconditional + scale * (conditional - unconditional)

    if flow:
        # Two Euler steps from t = 1: x <- x - dt v(x, t), dt = 1/2.
        sampled = module.sample_images(network, tf.constant(x), *extra, 2).numpy()
        y = x.astype(np.float64)
        for t in (1.0, 0.5):
            y = y - 0.5 * guided_output(y, t)
        found["sampler"] = float(np.max(np.abs(sampled - np.clip(y, -1, 1))))
    else:
        # Two DDIM steps (eta = 0): levels T/2 and 0, then the clean image.
        sampled = module.sample_images(network, tf.constant(x), *extra, 2).numpy()
        y = x.astype(np.float64)
        for level, below in ((steps // 2, 0), (0, None)):
            a = alpha_bars[level]
            a_below = alpha_bars[below] if below is not None else 1.0
            out = guided_output(y, level / steps)
            if prediction == "epsilon":
                eps, clean = out, (y - np.sqrt(1 - a) * out) / np.sqrt(a)
            elif prediction == "v":
                clean, eps = (
                    np.sqrt(a) * y - np.sqrt(1 - a) * out,
                    np.sqrt(a) * out + np.sqrt(1 - a) * y,
                )
            else:
                clean, eps = out, (y - np.sqrt(a) * out) / np.sqrt(1 - a)
            y = np.sqrt(a_below) * np.clip(clean, -1, 1) + np.sqrt(1 - a_below) * eps
        found["sampler"] = float(np.max(np.abs(sampled - y)))
    return found


def image_tags(logdir: str) -> dict:
    """Image summaries and how many steps wrote each, in a TensorBoard event directory."""
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(Path(logdir).glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "images":
                    counts[value.tag] += 1
    return dict(counts)


def compare_sample_grid(
    script: str, export: str, png: str, seed: str, label: str, steps: str, count: str
) -> dict:
    """`sample`'s PNG grid against the export's sampler (loaded as a server loads it) for the
    same seed, label, steps and the script's default guidance; the images of another seed for
    contrast, and the grids validation wrote beside the export's run."""
    guidance = load_script(script).GUIDANCE
    grid = tf.io.decode_png(tf.io.read_file(png)).numpy().astype(np.float64)
    sampler = tf.saved_model.load(os.path.join(export, "sampler")).signatures["serving_default"]

    def served(seed):
        images = sampler(seed=tf.constant(int(seed), tf.int64),
                         labels=tf.fill([int(count)], int(label)),
                         guidance=tf.constant(float(guidance)),
                         steps=tf.constant(int(steps)))["images"].numpy()  # fmt: skip
        return np.concatenate(list(images), axis=1) * 255  # one row

    mine, other = served(seed), served(int(seed) + 1)
    logs = Path(export).parent / "logs" / "validation"
    return {
        "shape": list(grid.shape),
        "max_diff": float(np.max(np.abs(grid - np.round(mine)))),
        "other_seed_diff": float(np.mean(np.abs(other - mine))),
        "validation_grids": image_tags(str(logs)).get("samples", 0),
    }


def recognised_samples(script: str, export: str, per_class: str) -> dict:
    """The share of `per_class` guided samples of each class (the export's sampler, the spec's
    guidance scale and sampler steps) that a small classifier, trained here on real shapes of
    another seed than the training's, labels as that class; and its accuracy on real shapes."""
    module = load_script(script)
    keras.utils.set_random_seed(0)
    size = module.build_model().input["image"].shape[1]
    images, labels = module.draw_shapes(count=6000, image_size=size, seed=1234)
    classifier = keras.Sequential([
        keras.Input((size, size, 3)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(3),
    ])  # fmt: skip
    classifier.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    classifier.fit(images, labels, epochs=30, batch_size=64, verbose=0)
    held_out, held_labels = module.draw_shapes(count=600, image_size=size, seed=4321)
    real = float(np.mean(np.argmax(classifier.predict(held_out, verbose=0), -1) == held_labels))
    sampler = tf.saved_model.load(os.path.join(export, "sampler")).signatures["serving_default"]
    shares = {}
    for label in range(module.CLASSES):
        drawn = sampler(seed=tf.constant(7, tf.int64), labels=tf.fill([int(per_class)], label),
                        guidance=tf.constant(float(module.GUIDANCE)),
                        steps=tf.constant(module.SAMPLE_STEPS))["images"]  # fmt: skip
        predicted = np.argmax(classifier.predict(drawn, verbose=0), -1)
        shares[str(label)] = float(np.mean(predicted == label))
    return {"real_accuracy": real, "recognised": shares}


def vae_formulas(script: str, reconstruction: str) -> dict:
    """A VAE script's training example against references written here (issue 62 #7): the
    codes' noise from TensorFlow's stateless op directly (not the script's code_noise()), the
    mean and log-variance split off the encoder's output, the reparameterized codes, the two
    loss terms (`reconstruction`: bernoulli or gaussian), the KL weight and the prior's samples
    in NumPy. The networks are the script's, of random weights: what is checked is what the
    step does with them. Returns the largest differences."""
    module = load_script(script)
    keras.utils.set_random_seed(0)
    model = module.build_model()
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    latent = module.LATENT_DIM
    n, shape = 6, tuple(model.input["image"].shape[1:])
    images = np.random.default_rng(0).uniform(0, 1, size=(n, *shape)).astype(np.float32)
    seed = tf.constant([module.SEED, 5], tf.int64)
    noise = tf.random.stateless_normal((n, latent), seed).numpy()
    found = {}
    drawn = module.code_noise(seed, n, 0, n).numpy()
    found["noise"] = float(np.max(np.abs(drawn - noise)))
    # A replica's slice (rows 2 .. 4 of the global batch of 6): those rows of the whole draw.
    sliced = module.code_noise(seed, 3, 2, n).numpy()
    found["replica_slice"] = float(np.max(np.abs(sliced - noise[2:5])))
    outputs = model({"image": images, "noise": noise}, training=True)
    statistics = encoder(images, training=True).numpy().astype(np.float64)
    mean, log_variance = statistics[:, :latent], statistics[:, latent:]
    found["mean"] = float(np.max(np.abs(outputs["mean"].numpy() - mean)))
    found["log_variance"] = float(np.max(np.abs(outputs["log_variance"].numpy() - log_variance)))
    codes = mean + np.sqrt(np.exp(log_variance)) * noise  # z = mu + sigma * e
    decoded = decoder(codes.astype(np.float32), training=True).numpy().astype(np.float64)
    found["decoded"] = float(np.max(np.abs(outputs["reconstruction"].numpy() - decoded)))
    nll, kl = (t.numpy() for t in module.vae_terms(tf.constant(images), outputs))
    x, out = images.astype(np.float64), outputs["reconstruction"].numpy().astype(np.float64)
    if reconstruction == "bernoulli":
        p = 1 / (1 + np.exp(-out))
        reference_nll = -(x * np.log(p) + (1 - x) * np.log(1 - p)).reshape(n, -1).sum(1)
    else:
        reference_nll = (0.5 * (x - out) ** 2).reshape(n, -1).sum(1)
    variance = np.exp(log_variance)
    reference_kl = 0.5 * (mean**2 + variance - 1 - log_variance).sum(1)
    found["reconstruction"] = float(np.max(np.abs(nll - reference_nll) / reference_nll))
    found["kl"] = float(np.max(np.abs(kl - reference_kl)))
    warmup = getattr(module, "KL_WARMUP_STEPS", 0)
    weights = []
    for done in (0, 1, warmup // 2, warmup, 3 * warmup + 7):
        expected = module.BETA * (min(1.0, done / warmup) if warmup else 1.0)
        weights.append(abs(float(module.kl_weight(tf.constant(done, tf.int64))) - expected))
    found["kl_weight"] = max(weights)
    found["warmup"] = warmup
    # The prior's samples: codes of N(0, I) from the seed (seed, 0), decoded into [0, 1].
    prior = tf.random.stateless_normal((4, latent), tf.constant([3, 0], tf.int64))
    out = decoder(prior, training=False).numpy().astype(np.float64)
    reference = 1 / (1 + np.exp(-out)) if reconstruction == "bernoulli" else np.clip(out, 0, 1)
    found["samples"] = float(np.max(np.abs(module.samples(model, 3, 4).numpy() - reference)))
    return found


def compare_vae_export(script: str, export: str, png: str, seed: str, count: str) -> dict:
    """`sample`'s PNG grid against the export's decoder (loaded as a server loads it) of codes
    drawn here from N(0, I) with (seed, 0); the export's encoder on those images; the grids
    validation wrote beside the export's run."""
    latent = load_script(script).LATENT_DIM
    grid = tf.io.decode_png(tf.io.read_file(png)).numpy().astype(np.float64)
    decoder = tf.saved_model.load(os.path.join(export, "decoder")).signatures["serving_default"]

    def served(seed):
        key = tf.constant([int(seed), 0], tf.int64)
        codes = tf.random.stateless_normal((int(count), latent), key)
        return decoder(codes=codes)["images"].numpy()

    mine, other = served(seed), served(int(seed) + 1)
    encoder = tf.saved_model.load(os.path.join(export, "encoder")).signatures["serving_default"]
    encoded = encoder(images=tf.constant(mine, tf.float32))
    logs = Path(export).parent / "logs" / "validation"
    return {
        "shape": list(grid.shape),
        "max_diff": float(np.max(np.abs(grid - np.round(np.concatenate(list(mine), 1) * 255)))),
        "other_seed_diff": float(np.mean(np.abs(other - mine)) * 255),
        "encoded": {name: list(value.shape) for name, value in encoded.items()},
        "grids": image_tags(str(logs)),
    }


if __name__ == "__main__":
    check, *args = sys.argv[1:]
    print(json.dumps(globals()[check](*args)))
