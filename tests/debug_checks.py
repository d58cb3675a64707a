"""TensorFlow-side checks of the debugging flags and `replay` (test_debugging.py), run in a
fresh process as tf_checks.py's are: `python debug_checks.py CHECK ...`; each prints one JSON
object on its last line. They compute their references with Keras and NumPy, from the
checkpoints and files a run wrote, not with the script's debugging code."""

from __future__ import annotations

import json
import sys

import keras
import numpy as np
import tensorflow as tf
from tf_checks import load_script


def first_nonfinite_layer(script: str, checkpoint: str, batch: str) -> dict:
    """The first layer of the script's (Sequential) network whose output on the batch in
    `batch` (a debug/step-N/batch.npz) is not finite, the weights of `checkpoint` restored:
    each layer called in turn, as the step calls them (training=True). A wrapper's output is
    the layer it wraps applied to each time step: that layer is named."""
    module = load_script(script)
    model = module.build_model()
    tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial()
    with np.load(batch) as arrays:
        names = list(arrays.files)
        x = arrays[names[0]]
    outputs, found = tf.constant(x), None
    for layer in model.layers:
        outputs = layer(outputs, training=True)
        if not np.isfinite(outputs.numpy()).all():
            found = layer.layer.name if isinstance(layer, keras.layers.Wrapper) else layer.name
            break
    return {"layer": found, "parts": names}


def debugger_graphs(dump: str) -> dict:
    """The names of the graphs a Debugger V2 dump (--dump-debug-info) holds, as TensorBoard's
    plugin reads them, and how many of its executions it recorded."""
    from tensorflow.python.debug.lib import debug_events_reader

    with debug_events_reader.DebugDataReader(dump) as reader:
        reader.update()
        names = {graph.name for graph in reader.outermost_graphs()}
        names |= {reader.graph_by_id(t.graph_id).name for t in reader.graph_execution_traces()}
        return {"graphs": sorted(n for n in names if n), "executions": reader.num_executions()}


def restored_weights(script: str, checkpoint: str) -> dict:
    """Each layer's weight norm in `checkpoint`, restored into the script's network."""
    module = load_script(script)
    model = module.build_model()
    tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial()
    return {
        layer.name: float(np.sqrt(sum(np.sum(np.square(w.numpy())) for w in layer.weights)))
        for layer in model.layers
        if layer.weights
    }


def inspection_reference(script: str, before: str, after: str, batch: str) -> dict:
    """What logging.inspect should report for the step between checkpoints `before` and
    `after`, whose batch (images, labels as the step received them) is in `batch` (.npz):
    each layer's output in inference mode (its fraction of zeros and mean), the gradient of
    the mean sparse cross-entropy of the logits at the weights before, each layer's weight
    norm after and ||after - before|| / ||before||. Keras and NumPy, not the script."""
    module = load_script(script)
    model = module.build_model()
    tf.train.Checkpoint(model=model).restore(before).expect_partial()
    with np.load(batch) as arrays:
        x, labels = arrays["x"], arrays["labels"]
    found, outputs = {}, tf.constant(x)
    for layer in model.layers:
        outputs = layer(outputs, training=False)
        found[f"model/{layer.name}/zero_fraction"] = float(np.mean(outputs.numpy() == 0))
        found[f"model/{layer.name}/activation_mean"] = float(np.mean(outputs.numpy()))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_weights)
    gradients = {id(w): g for w, g in zip(model.trainable_weights, grads, strict=True)}
    weights_before = {
        layer.name: [w.numpy() for w in layer.trainable_weights] for layer in model.layers
    }
    for layer in model.layers:
        if layer.trainable_weights:
            squares = [np.sum(np.square(gradients[id(w)])) for w in layer.trainable_weights]
            found[f"model/{layer.name}/gradient_norm"] = float(np.sqrt(sum(squares)))
    tf.train.Checkpoint(model=model).restore(after).expect_partial()
    for layer in model.layers:
        if layer.trainable_weights:
            now = [w.numpy() for w in layer.trainable_weights]
            old = weights_before[layer.name]
            norm = lambda arrays: np.sqrt(sum(np.sum(np.square(a)) for a in arrays))  # noqa: E731
            found[f"model/{layer.name}/weight_norm"] = float(norm(now))
            found[f"model/{layer.name}/update_ratio"] = float(
                norm([a - b for a, b in zip(now, old, strict=True)]) / norm(old)
            )
    return found


def profiled_steps(directory: str) -> dict:
    """The steps a profile (--profile) marks, as TensorBoard's Profile tab finds them: the
    step_num of each "train" event (tf.profiler.experimental.Trace) in its .xplane.pb files."""
    from pathlib import Path

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    steps = []
    for path in Path(directory).rglob("*.xplane.pb"):
        space = xplane_pb2.XSpace.FromString(path.read_bytes())
        for plane in space.planes:
            stat = {k: v.name for k, v in plane.stat_metadata.items()}
            for line in plane.lines:
                for event in line.events:
                    if plane.event_metadata[event.metadata_id].name == "train":
                        found = {
                            stat[s.metadata_id]: s.int64_value or s.uint64_value
                            for s in event.stats
                        }
                        steps.append(found.get("step_num"))
    return {"steps": sorted(steps)}


CHECKS = {
    f.__name__: f
    for f in (
        first_nonfinite_layer,
        debugger_graphs,
        restored_weights,
        inspection_reference,
        profiled_steps,
    )
}

if __name__ == "__main__":
    keras.config.disable_interactive_logging()
    print(json.dumps(CHECKS[sys.argv[1]](*sys.argv[2:])))
