"""Rules of reinforcement learning: an environment to act in and a way of training that acts
(PPO, A2C, DQN, SAC, TD3) go together, the networks fit the environment's spaces, and the
sections made for datasets (epochs, validation, losses, metrics) are not set. `check` runs
instead of the rules of learning from data."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from ..model import OPAQUE
from ..shapes import check_graph_shapes, check_shapes
from ..ways import RL_KINDS
from .strategy import check_device_names
from .training import check_sam

NAMES = {"ppo": "PPO", "actor_critic": "A2C", "dqn": "DQN", "sac": "SAC", "td3": "TD3"}
ON_POLICY = ("ppo", "actor_critic")
"""The ways that learn a policy and a value network from rollouts of the current policy."""
CONTINUOUS = ("sac", "td3")
"""The ways that learn a policy for continuous actions and its critics from a replay buffer."""
STRATEGY_CLASSES = {
    "single_device": "SingleDevice", "mirrored": "Mirrored", "multi_worker": "MultiWorker",
}  # fmt: skip

if TYPE_CHECKING:
    from ..spec import Spec


def check(spec: Spec) -> None:
    """Raises ValueError at the first rule the spec breaks."""
    for rule in (check_pairing, check_sections, check_loop, check_networks, check_way,
                 check_memory):  # fmt: skip
        rule(spec)


def check_pairing(spec: Spec) -> None:
    kind = spec.training.kind
    if getattr(spec.data, "kind", None) != "environment":
        raise ValueError(
            f"training is {NAMES.get(kind, kind)}, which learns by acting in an environment, but "
            "data is a dataset: set data=Environment(id='CartPole-v1', ...) (or use another way "
            "of training)"
        )
    if kind not in RL_KINDS:
        raise ValueError(
            f"data is an Environment, but training is {kind!r}, which learns from examples: "
            "set training=PPO(...), ActorCritic(...), DQN(), SAC(critic=...) or TD3(critic=...)"
        )


def check_sections(spec: Spec) -> None:
    """What a run that acts does not have, and what loopgen does not write for it yet."""
    kind = NAMES[spec.training.kind]
    unused = {
        "loss": f"{kind}'s losses are its own",
        "metrics": "the run logs its episodes' returns and lengths and its losses",
        "early_stopping": "there is no validation",
        "reduce_on_plateau": "there is no validation",
        "best_model": "there is no validation",
        "fine_tune": "it unfreezes a backbone by epochs of a dataset",
    }
    for field, why in unused.items():
        if getattr(spec, field):
            raise ValueError(f"{field} is set, but training is {kind} ({why}): remove it")
    if spec.optimizer is None:
        raise ValueError(f"optimizer is not set: {kind} needs one, e.g. Adam(learning_rate=3e-4)")
    check_sam(spec)
    check_strategy(spec)
    if spec.gradients.clipped:
        raise ValueError(
            f"gradients is set, but training is {kind}: clip with training.max_grad_norm (the "
            "global norm of each gradient step's gradient); remove gradients"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            f"gradients.accumulate_steps: training is {kind}, which takes one gradient step on "
            "each of its minibatches; remove gradients"
        )
    if spec.logging.inspect:
        raise ValueError(
            f"logging.inspect: training is {kind}, whose updates loopgen does not inspect (a "
            "PPO update takes its gradient steps inside a compiled loop); `python train.py "
            "replay --step N` prints any update's layers (weight norms, gradient norms, "
            "update ratios) instead: remove logging.inspect"
        )
    if spec.logging.csv or spec.logging.comet or spec.logging.histograms:
        raise ValueError(
            f"logging: training is {kind}, which logs to TensorBoard and metrics.jsonl (and "
            "MLflow with logging.mlflow); set logging.csv, logging.comet and "
            "logging.histograms off"
        )
    if spec.export.tflite or spec.export.keras:
        raise ValueError(
            f"export.{'tflite' if spec.export.tflite else 'keras'}: training is {kind}, whose "
            "export is the SavedModel that acts (export.saved_model); set it False"
        )
    if spec.performance.precision != "float32":
        raise ValueError(
            f"performance.precision={spec.performance.precision!r}: reinforcement learning "
            "runs in float32; remove it"
        )
    if spec.performance.xla == "on" and (kind != "DQN" or spec.distribute.kind != "single_device"):
        where = (
            f"training is {kind}" if kind != "DQN" else f"distribute.kind={spec.distribute.kind!r}"
        )
        raise ValueError(
            f"performance.xla='on' but {where}: of the ways that act, loopgen compiles DQN's "
            "greedy call and train step on one device only (measured to gain there); set "
            "performance.xla='auto' or 'off'"
        )


def strategies(spec: Spec) -> tuple[str, ...]:
    """The strategies loopgen writes this way of training for."""
    if running_statistics(spec) or spec.data.spaces().pixels:
        return ("single_device", "mirrored")
    if spec.training.kind in CONTINUOUS:
        return ("single_device", "mirrored")
    return ("single_device", "mirrored", "multi_worker")


def check_strategy(spec: Spec) -> None:
    kind, way, allowed = spec.distribute.kind, NAMES[spec.training.kind], strategies(spec)
    names = [f"{STRATEGY_CLASSES[k]}()" for k in allowed]
    choices = ", ".join(names[:-1]) + " or " + names[-1]
    if kind == "tpu":
        raise ValueError(
            f"distribute.kind='tpu': {way} steps its environments in Python between updates, "
            f"which the TPU would wait on at every step; set {choices}"
        )
    if kind not in allowed and spec.training.kind in CONTINUOUS:
        raise ValueError(
            f"distribute.kind='multi_worker': {way} trains every training.train_every vector "
            "steps on transitions from every sub-environment, so the workers would exchange "
            "their transitions that often (5 ms an exchange on loopback, every step with the "
            f"default train_every=1), longer than the step itself; set {choices}"
        )
    if kind not in allowed and not running_statistics(spec):
        raise ValueError(
            f"distribute.kind='multi_worker': the environment's observations are uint8 "
            f"pixels of shape {spec.data.spaces().observation_shape}, which the workers would "
            "exchange at every update, and collectives carry no uint8; set "
            f"{choices}"
        )
    if kind not in allowed:
        field = running_statistics(spec)[0]
        what = "observation" if field == "normalize_observations" else "discounted return"
        raise ValueError(
            f"distribute.kind='multi_worker' with training.{field}: the workers exchange "
            "whole rollouts between updates, but the running statistics take every "
            f"sub-environment's {what} at every step; set {field}=False, or use {choices}"
        )


def running_statistics(spec: Spec) -> list[str]:
    """The way's fields that keep running statistics over every sub-environment's steps."""
    fields = ("normalize_observations", "normalize_rewards")
    return [field for field in fields if getattr(spec.training, field, False)]


def check_loop(spec: Spec) -> None:
    if spec.loop.epochs is not None:
        raise ValueError(
            f"loop.epochs={spec.loop.epochs}: an environment has no epochs; set loop.steps, the "
            "environment steps to train (over all sub-environments)"
        )
    if spec.checkpoint and spec.checkpoint.every_epochs is not None:
        raise ValueError(
            "checkpoint.every_epochs: an environment has no epochs; set checkpoint.every_steps "
            "(environment steps)"
        )
    way, envs = spec.training, spec.data.num_envs
    if way.kind in ON_POLICY:
        rollout = envs * way.rollout_steps
        if spec.loop.steps < rollout:
            raise ValueError(
                f"loop.steps={spec.loop.steps} is less than one rollout (data.num_envs x "
                f"training.rollout_steps = {rollout} steps): train at least that many"
            )
        if way.kind == "ppo":
            check_minibatches(way, rollout)
    if way.kind == "dqn" and way.learning_starts < way.batch_size:
        raise ValueError(
            f"training.learning_starts={way.learning_starts} is less than training.batch_size="
            f"{way.batch_size}: the first minibatch is drawn from the buffer then; start later"
        )
    if way.kind in CONTINUOUS and spec.loop.steps <= way.learning_starts:
        raise ValueError(
            f"loop.steps={spec.loop.steps} does not go past training.learning_starts="
            f"{way.learning_starts}: no gradient step would be taken; train longer, or start "
            "learning sooner"
        )


def check_minibatches(way, rollout: int) -> None:
    """PPO's minibatches, by their count or their size (or both, if they agree)."""
    if way.batch_size is not None:
        if rollout % way.batch_size or way.batch_size > rollout:
            raise ValueError(
                f"training.batch_size={way.batch_size} does not divide a rollout of {rollout} "
                "transitions (data.num_envs x training.rollout_steps) evenly; pick a divisor"
            )
        count = rollout // way.batch_size
        if way.minibatches is not None and way.minibatches != count:
            raise ValueError(
                f"training.minibatches={way.minibatches} and training.batch_size="
                f"{way.batch_size} disagree: a rollout of {rollout} transitions in minibatches "
                f"of {way.batch_size} is {count} of them; set one (minibatches=None where "
                "batch_size says it)"
            )
    elif rollout % way.minibatches:
        raise ValueError(
            f"training.minibatches={way.minibatches} does not divide a rollout of {rollout} "
            "transitions (data.num_envs x training.rollout_steps) evenly; pick a divisor"
        )


def check_networks(spec: Spec) -> None:
    """The networks take the environment's observations and answer for its actions."""
    spaces = spec.data.spaces()
    way = spec.training
    networks = {"model": spec.model}
    if way.kind in ON_POLICY:
        networks["training.value"] = way.value
    if way.kind in CONTINUOUS:
        check_continuous(spec, spaces)
        networks["training.critic"] = way.critic
    classes = {c.name: c for c in spec.custom_layers}
    outputs = {}
    for path, network in networks.items():
        if network is None:
            raise ValueError(f"{path} is not set: {NAMES[way.kind]} needs the network")
        if isinstance(network, OPAQUE):
            raise ValueError(
                f"{path}: reinforcement learning takes a Sequential or Functional network (a "
                "Graph for a Dict observation)"
            )
        if path == "training.critic":
            outputs[path] = check_critic_input(network, spaces, path, classes)
            continue
        outputs[path] = (
            check_named_inputs(network, spaces, path, classes)
            if spaces.named
            else check_input(network, spaces, path, classes)
        )
    if spaces.named:
        check_keyed_way(spec, spaces)
    if spaces.pixels:
        check_pixels(spec, spaces, networks)
    policy = outputs["model"]
    if way.kind == "dqn" and not spaces.discrete:
        raise ValueError(
            f"training is DQN, but the environment's actions are continuous (a Box of width "
            f"{spaces.actions}): DQN values a finite set of actions; use PPO for continuous actions"
        )
    what = "one logit per action" if spaces.discrete else "the mean of each action dimension"
    width = spaces.actions
    if way.kind == "dqn":
        what = "one value per action"
    elif way.kind == "sac":
        what, width = "each action dimension's mean, then its log standard deviation", 2 * width
    elif way.kind == "td3":
        what = "one value per action dimension (the script squashes it by tanh)"
    if tuple(policy) != (width,):
        raise ValueError(
            f"model outputs shape {tuple(policy)}, but the environment has "
            f"{spaces.actions} {'actions' if spaces.discrete else 'action dimensions'}: "
            f"the last layer must give {what} (Dense(units={width}))"
        )
    if way.kind in CONTINUOUS and tuple(outputs["training.critic"]) != (1,):
        raise ValueError(
            f"training.critic outputs shape {tuple(outputs['training.critic'])}: it must give "
            "one value per observation and action; end it in Dense(units=1)"
        )
    if way.kind in ON_POLICY and tuple(outputs["training.value"]) != (1,):
        raise ValueError(
            f"training.value outputs shape {tuple(outputs['training.value'])}: it must give one "
            "value per observation; end it in Dense(units=1)"
        )


def check_continuous(spec: Spec, spaces) -> None:
    """SAC and TD3 act in a bounded Box of actions, on an array observation."""
    way = NAMES[spec.training.kind]
    if spaces.discrete:
        raise ValueError(
            f"training is {way}, but the environment's actions are Discrete ({spaces.actions} "
            f"of them): {way} learns a policy for continuous (Box) actions; use DQN or PPO for "
            "discrete actions"
        )
    unbounded = [
        i for i, (low, high) in enumerate(zip(spaces.action_low, spaces.action_high, strict=True))
        if not (math.isfinite(low) and math.isfinite(high))
    ]  # fmt: skip
    if unbounded:
        raise ValueError(
            f"training is {way}, but the environment's actions are unbounded in dimension(s) "
            f"{unbounded} (low {list(spaces.action_low)}, high {list(spaces.action_high)}): "
            f"{way}'s policy squashes its actions by tanh into the Box's bounds; give the Box "
            "finite bounds (gymnasium.wrappers.RescaleAction or ClipAction in your target "
            "function)"
        )
    if spaces.pixels:
        raise ValueError(
            f"training is {way}, but the environment's observations are uint8 (of shape "
            f"{spaces.observation_shape}): {way}'s critic takes an observation and an action "
            "side by side, as floats; make them float32 with a wrapper "
            "(gymnasium.wrappers.DtypeObservation) in your target function"
        )
    if spaces.named or len(spaces.observation_shape) != 1:
        seen = f"a Dict of {sorted(dict(spaces.named))}" if spaces.named else (
            f"arrays of shape {spaces.observation_shape}"
        )  # fmt: skip
        raise ValueError(
            f"training is {way}, but the environment's observations are {seen}: {way}'s critic "
            "takes an observation and an action side by side, so loopgen writes it for vector "
            "observations; flatten them with a wrapper (gymnasium.wrappers.FlattenObservation) "
            "in your target function"
        )


def check_pixels(spec: Spec, spaces, networks: dict) -> None:
    """uint8 observations stay bytes up to the networks, whose first layer rescales them."""
    shape = spaces.observation_shape
    if getattr(spec.training, "normalize_observations", False):
        raise ValueError(
            f"training.normalize_observations=True, but the environment's observations are "
            f"uint8 pixels of shape {shape}: they are rescaled by the networks' first layer, "
            "Rescaling(scale=1 / 255), not by running statistics; set it False"
        )
    for path, network in networks.items():
        first = network.layers[0] if network.kind != "graph" else None
        if getattr(first, "kind", None) != "rescaling":
            raise ValueError(
                f"{path}.layers[0]: the environment's observations are uint8 pixels of shape "
                f"{shape} (0 to 255), which the script keeps as bytes up to the networks: begin "
                f"{path} with Rescaling(scale=1 / 255), which makes them floats in [0, 1]"
            )


def replay_bytes(spec: Spec) -> int:
    """The memory of an off-policy way's replay buffer: every transition's observation and
    the observation reached, kept apart, besides its action, reward and end."""
    spaces, way = spec.data.spaces(), spec.training
    sizes = [math.prod(shape) for _, shape in spaces.named] or [math.prod(spaces.observation_shape)]
    item = 1 if spaces.pixels else 4
    action = 8 if spaces.discrete else 4 * spaces.actions
    return way.buffer_size * (2 * sum(sizes) * item + action + 8)


MEMORY_VARIABLE = "LOOPGEN_MACHINE_MEMORY"
"""An environment variable that stands for this machine's memory, in bytes: the tests give
one, so that what check_memory says (`make it at most N`) is the same on every machine."""


def machine_memory() -> int:
    """This machine's physical memory in bytes (or the MEMORY_VARIABLE given instead)."""
    given = os.environ.get(MEMORY_VARIABLE)
    if given is None:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if not given.strip().isdigit() or int(given) == 0:
        raise ValueError(
            f"{MEMORY_VARIABLE}={given!r} is not a memory in bytes; give a whole number of "
            "bytes, or unset it to use this machine's memory"
        )
    return int(given)


def gib(size: float) -> str:
    return f"{size / 2**30:,.1f} GiB"


def check_memory(spec: Spec) -> None:
    """A replay buffer (and the copy a checkpoint pickles of it) fits this machine."""
    if spec.training.kind not in ("dqn", *CONTINUOUS):
        return
    size, memory = replay_bytes(spec), machine_memory()
    peak = 2 * size if spec.checkpoint else size
    if peak > memory:
        spaces, way = spec.data.spaces(), spec.training
        what = f"{spaces.observation_dtype} observations of shape {spaces.observation_shape}"
        copy = " and as much again while a checkpoint pickles it" if spec.checkpoint else ""
        fits = way.buffer_size * memory // peak
        raise ValueError(
            f"training.buffer_size={way.buffer_size:,}: a replay buffer of {way.buffer_size:,} "
            f"transitions of {what} (each kept twice: observed and reached) takes "
            f"{gib(size)}{copy}, more than this machine's {gib(memory)} of memory; make it "
            f"at most {fits:,}"
        )


def check_critic_input(network, spaces, path: str, classes: dict) -> tuple:
    """A critic takes an observation and an action side by side; returns its output shape."""
    width = spaces.observation_shape[0] + spaces.actions
    if tuple(network.input_shape) != (width,):
        raise ValueError(
            f"{path}.input_shape={tuple(network.input_shape)}, but a critic takes an observation "
            f"({spaces.observation_shape[0]} values) and an action ({spaces.actions}) side by "
            f"side; set input_shape=({width},)"
        )
    if getattr(network, "heads", None):
        raise ValueError(f"{path}.heads: the network has one output; remove the heads")
    return check_shapes(network.input_shape, network.layers, classes, f"{path}.layers")


def check_input(network, spaces, path: str, classes: dict) -> tuple:
    """A Sequential or Functional network on an array observation; returns its output shape."""
    if network.kind == "graph":
        raise ValueError(
            f"{path}: a Graph's named inputs take the parts of a Dict observation, but the "
            f"environment's observations are one array of shape {spaces.observation_shape}: "
            f"use Sequential or Functional with input_shape={spaces.observation_shape}"
        )
    if tuple(network.input_shape) != spaces.observation_shape:
        raise ValueError(
            f"{path}.input_shape={tuple(network.input_shape)}, but the environment's "
            f"observations have shape {spaces.observation_shape}; set input_shape="
            f"{spaces.observation_shape}"
        )
    if getattr(network, "heads", None):
        raise ValueError(f"{path}.heads: the network has one output; remove the heads")
    return check_shapes(network.input_shape, network.layers, classes, f"{path}.layers")


def check_named_inputs(network, spaces, path: str, classes: dict) -> tuple:
    """A Graph on a Dict observation: an input for each part, of its name and shape."""
    named = dict(spaces.named)
    if network.kind != "graph":
        inputs = ", ".join(f"{name!r}: Input(shape={shape})" for name, shape in named.items())
        raise ValueError(
            f"{path}: the environment's observations are a Dict of {sorted(named)}; take them "
            f"with a Graph whose inputs are its parts, inputs={{{inputs}}}"
        )
    if set(network.inputs) != set(named):
        raise ValueError(
            f"{path}.inputs are {sorted(network.inputs)}, but the environment's Dict observation "
            f"has the parts {sorted(named)}: name one input after each part"
        )
    for name, given in network.inputs.items():
        if tuple(given.shape) != named[name] or given.dtype != "float32":
            raise ValueError(
                f"{path}.inputs[{name!r}] is Input(shape={tuple(given.shape)}, "
                f"dtype={given.dtype!r}), but the observation's part {name!r} is an array of "
                f"shape {named[name]}: set Input(shape={named[name]})"
            )
    for i, node in enumerate(network.nodes):
        if node.adapt:
            raise ValueError(
                f"{path}.nodes[{i}].adapt=True: an environment is no dataset to adapt to; "
                "remove adapt"
            )
    if network.output_names:
        raise ValueError(f"{path}.outputs: the network has one output; name one node")
    return check_graph_shapes(network, classes, path)[network.outputs]


def check_keyed_way(spec: Spec, spaces) -> None:
    """What a Dict observation is not written for yet, and the Graphs' blocks."""
    names = sorted(dict(spaces.named))
    if getattr(spec.training, "normalize_observations", False):
        raise ValueError(
            f"training.normalize_observations=True, but the environment's observations are a "
            f"Dict of {names}: loopgen normalizes array observations; normalize inside the "
            "Graph, or set it False"
        )
    model = {block.name: block for block in spec.model.blocks}
    value = getattr(spec.training, "value", None)
    for block in getattr(value, "blocks", []):
        if block.name in model and block != model[block.name]:
            raise ValueError(
                f"training.value.blocks: a block named {block.name!r} is in model.blocks too, "
                "defined otherwise; the script writes one function for each name: rename one"
            )


def check_way(spec: Spec) -> None:
    way = spec.training
    if way.kind in ON_POLICY and way.anneal_learning_rate and spec.optimizer.schedule is not None:
        raise ValueError(
            "training.anneal_learning_rate=True lowers optimizer.learning_rate linearly to 0, "
            "but optimizer.learning_rate is a schedule: give a number, or set "
            "anneal_learning_rate=False to keep the schedule"
        )
    check_device_names(spec)
    devices = getattr(spec.distribute, "devices", None) or []
    if len(devices) > 1:  # the replicas are known: each takes an equal share of the batch
        shared, what = replica_batch(spec)
        if shared % len(devices):
            raise ValueError(
                f"distribute.devices lists {len(devices)} replicas, but {what} is {shared}, "
                f"which they cannot share equally: make it a multiple of {len(devices)}, or "
                "list other devices"
            )


SHARED_BATCH = {
    "ppo": (
        "MINIBATCH_SIZE",
        "data.num_envs, training.rollout_steps, training.minibatches or training.batch_size",
    ),
    "actor_critic": ("ROLLOUT_SIZE", "data.num_envs or training.rollout_steps"),
    "dqn": ("BATCH_SIZE", "training.batch_size"),
    "sac": ("BATCH_SIZE", "training.batch_size"),
    "td3": ("BATCH_SIZE", "training.batch_size"),
}
"""Each way's batch that the replicas share in a gradient step: the script's constant, and the
spec fields that make it (render/rl.py writes both into the script's check)."""


def replica_batch(spec: Spec) -> tuple[int, str]:
    """The batch of transitions the replicas share in each gradient step, and what makes it."""
    way, envs = spec.training, spec.data.num_envs
    if way.kind == "ppo":
        return (
            envs * way.rollout_steps // way.minibatch_count(envs),
            "the minibatch (data.num_envs x training.rollout_steps / training.minibatches, or "
            "training.batch_size)",
        )
    if way.kind == "actor_critic":
        return envs * way.rollout_steps, "the rollout (data.num_envs x training.rollout_steps)"
    return way.batch_size, "training.batch_size"
