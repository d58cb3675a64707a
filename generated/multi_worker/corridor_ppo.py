"""Walk to a goal in a corridor, an environment of your own, with PPO.

Written by loopgen 0.1.0 from examples/corridor_ppo.py
(spec sha256 3d0ba0504265fd53, script sha256 c044d0c0b5154beb).
Rendered with: --variant multi_worker
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MultiWorkerMirroredStrategy. Start this script on every worker, each with
TF_CONFIG naming the cluster and its own index, and the same --output-dir on
storage all workers share. Each worker steps its replicas' shares of the NUM_ENVS
sub-environments; the replicas share each gradient step's MINIBATCH_SIZE.
Run it again to resume from the latest checkpoint (written by any variant).
"""

import argparse
import contextlib
import ctypes
import errno
import fcntl
import glob
import hashlib
import json
import os
import pickle
import re
import shutil
import signal
import socket
import sys
import time
import traceback

SEED = 3
ENV_KWARGS = {"length": 8}
MAX_EPISODE_STEPS = 32  # an episode is truncated after them
NUM_ENVS = 4  # copies of the environment, stepped together
# The observation is a dict of arrays: each feeds the networks' input of its name.
OBSERVATION_SHAPES = {"goal": (8,), "position": (8,)}
# Environment steps to train, over all sub-environments (--max-steps stops sooner).
TOTAL_STEPS = 16384
ROLLOUT_STEPS = 32  # steps in each sub-environment per update
ROLLOUT_SIZE = NUM_ENVS * ROLLOUT_STEPS  # transitions per update
MINIBATCHES = 2
MINIBATCH_SIZE = ROLLOUT_SIZE // MINIBATCHES
UPDATE_EPOCHS = 4  # passes over each rollout
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP = 0.2  # the probability ratio is clipped to 1 +- CLIP
ENTROPY_COEF = 0.01
VALUE_COEF = 0.5
MAX_GRAD_NORM = 0.5
LEARNING_RATE = 0.003  # annealed linearly to 0 over TOTAL_STEPS
LOG_EVERY_STEPS = 1024
CHECKPOINT_EVERY_STEPS = 4096
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/corridor_ppo"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
    parser.add_argument(
        "command",
        nargs="?",
        choices=["train", "evaluate", "replay"],
        default="train",
        help="train (the default; resumes from the newest checkpoint), evaluate a "
        "checkpoint's greedy policy on episodes seeded apart from training, or replay an "
        "update (neither writes checkpoints)",
    )
    parser.add_argument(
        "--checkpoint",
        default="latest",
        help="evaluate: 'latest' or a checkpoint's path",
    )
    parser.add_argument(
        "--episodes", type=int, default=10, help="evaluate: episodes to play"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="evaluate: also write the first episode as an animated GIF into videos/",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        help="stop after this many environment steps (rounded down to whole rollouts of NUM_ENVS x ROLLOUT_STEPS)",
    )
    parser.add_argument("--output-dir", default=OUTPUT_DIR, help="where the run writes")
    parser.add_argument(
        "--init-from",
        metavar="DIR",
        help="start a new run from the weights of the newest checkpoint in DIR (another "
        "run's --output-dir)",
    )
    parser.add_argument(
        "--deterministic", action="store_true", help="make TensorFlow ops deterministic"
    )
    parser.add_argument(
        "--no-lock",
        action="store_true",
        help="do not lock the output directory (for file systems without locks)",
    )
    # Debugging: how the run executes, never what it trains.
    for flag, purpose in [
        ("--eager", "run the steps as plain Python: pdb and print() work in them"),
        ("--check-numerics", "stop at the first op that makes a NaN or Inf (slow)"),
        ("--dump-debug-info", "record every op's outputs in logs/debugger (slow)"),
    ]:
        parser.add_argument(flag, action="store_true", help=purpose)
    parser.add_argument("--profile", metavar="START:STOP", help="trace these updates")
    parser.add_argument(
        "--fast-dev-run",
        nargs="?",
        const="2",
        metavar="N",
        help="every stage on N updates",
    )
    parser.add_argument("--step", metavar="N", help="replay: the update to replay")
    args = parser.parse_args(argv)
    check_debugging_flags(args)
    return args


def check_debugging_flags(args):
    """The debugging flags' mistakes stop the script before TensorFlow loads; --profile's
    range becomes a pair of updates, and --overfit-batches's run gets a directory of its own.
    """
    # Counts of updates or batches.
    for flag in ["--fast-dev-run", "--step"]:
        name = flag[2:].replace("-", "_")
        count = getattr(args, name)
        if count is not None and not (count.isdigit() and int(count) >= 1):
            raise SystemExit(f"{flag} {count}: give a whole number, 1 or more")
        setattr(args, name, count and int(count))
    for flag, why in [
        ("--dump-debug-info", "TensorFlow 2.21 then fails with a RecursionError"),
        ("--deterministic", "its deterministic cross-entropy makes a NaN it drops"),
    ]:
        if args.check_numerics and getattr(args, flag[2:].replace("-", "_")):
            raise SystemExit(f"--check-numerics and {flag} do not combine ({why})")
    if args.profile:
        start, _, stop = args.profile.partition(":")
        if not (start.isdigit() and stop.isdigit() and 0 < int(start) <= int(stop)):
            raise SystemExit(
                f"--profile {args.profile}: give the first and last update to trace, "
                "START:STOP with 1 <= START <= STOP (3:5, say)"
            )
        args.profile = int(start), int(stop)
    if args.command != "train" and (args.fast_dev_run or args.profile):
        raise SystemExit(f"--fast-dev-run, --profile: for training, not {args.command}")
    if (args.command == "replay") != (args.step is not None):
        raise SystemExit(
            "replay takes --step N, the update to replay; the other commands take none"
        )
    if args.command == "replay" and "TF_CONFIG" in os.environ:
        raise SystemExit("replay runs on one device, in one process: unset TF_CONFIG")


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

from envs.corridor import make as make_env  # data.target: your environment


def make_envs(count, first_index=0, evaluation=False, render_mode=None):
    """`count` copies of the environment, stepped together, and their first observations
    (`render_mode="rgb_array"`: each can draw itself, for evaluate --record).

    Sub-environment i (and its spaces' samplers) is seeded by (SEED, first_index + i) alone,
    and evaluation's apart from training's. An episode that ends is reset within the step
    that ends it (SAME_STEP autoreset): the step returns the next episode's first
    observation, and the episode's last one in info["final_obs"]. Gymnasium's default,
    NEXT_STEP, returns the reset one step later, as a step that is no transition of the
    policy's (reward 0, its action ignored): trained on, it would teach that an action earns
    nothing."""

    def make_one():
        # Your function takes render_mode when the script records, as Gymnasium's
        # environments do.
        drawing = {"render_mode": render_mode} if render_mode else {}
        env = make_env(**drawing, **ENV_KWARGS)
        env = gym.wrappers.TimeLimit(env, MAX_EPISODE_STEPS)
        return env

    envs = gym.vector.SyncVectorEnv(
        [make_one] * count, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    streams = [
        np.random.SeedSequence([SEED, int(evaluation), first_index + i])
        for i in range(count)
    ]
    seeds = [int(stream.generate_state(1)[0]) for stream in streams]
    observations, _ = envs.reset(seed=seeds)
    for env, seed in zip(envs.envs, seeds):  # an environment may sample its own spaces
        env.action_space.seed(seed)
        env.observation_space.seed(seed)
    return envs, observations


class Cluster:
    """The workers' shares of the sub-environments, and the exchange that makes what they
    stepped the whole cluster's. Replica r of R steps sub-environments r * NUM_ENVS / R to
    (r + 1) * NUM_ENVS / R - 1, a worker those of its replicas (one each on CPU): seeded by
    their indices, acting on the draws one device makes for them, they step the episodes
    one device stepping all NUM_ENVS does."""

    def __init__(self, strategy):
        self.strategy = strategy
        replicas = strategy.run(
            lambda: tf.distribute.get_replica_context().replica_id_in_sync_group
        )
        local = [
            int(replica) for replica in strategy.experimental_local_results(replicas)
        ]
        self.share = NUM_ENVS // strategy.num_replicas_in_sync  # each replica's
        self.first_replica = local[0]
        self.first, self.count = local[0] * self.share, len(local) * self.share

    def gather(self, values, axis=0):
        """`values`, arrays (or dicts of them) of this worker's sub-environments along
        `axis`, as the whole cluster's: every worker's, in the order of the sub-environments.
        A collective: every worker calls it at the same point."""

        def replica_share(context):
            start = (context.replica_id_in_sync_group - self.first_replica) * self.share
            rows = tf.range(start, start + self.share)
            return tf.nest.map_structure(
                lambda value: tf.gather(value, rows, axis=axis), values
            )

        shares = self.strategy.experimental_distribute_values_from_function(
            replica_share
        )
        return tf.nest.map_structure(
            lambda value: value.numpy(), self.all_gather(shares, axis)
        )

    @tf.function(reduce_retracing=True)
    def all_gather(self, shares, axis):
        def replica_gather(share):
            # Onto the replica's device, where the collective runs.
            share = tf.nest.map_structure(tf.identity, share)
            return tf.distribute.get_replica_context().all_gather(share, axis)

        gathered = self.strategy.run(replica_gather, args=(shares,))
        return self.strategy.experimental_local_results(gathered)[0]

    def any(self, flag):
        """Whether `flag` is true on any worker (a collective too)."""
        return bool(self.gather(np.full(self.count, int(flag))).any())


class Environments(tf.train.experimental.PythonState):
    """The sub-environments as the policy acts in them: the observations the next step acts
    on, each episode's return and length so far, and the episodes finished since the last
    log. The checkpoint keeps all of it, the environments' own state too (their physics,
    step counts, random generators), pickled: a resumed run continues the same episodes.
    On several workers, each holds its share of the sub-environments (`cluster`), and the
    checkpoint all of them, as one device's: a run may resume on another cluster.
    """

    def __init__(self, cluster):
        self.cluster = cluster
        self.envs, self.observations = make_envs(cluster.count, cluster.first)
        self.returns = np.zeros(cluster.count)
        self.lengths = np.zeros(cluster.count, np.int64)
        # (sub-environment, return, length) of each episode since the last log
        self.finished = []

    def step(self, actions):
        """Acts; returns the observations the actions led to (an ended episode's last one,
        not the next episode's first), the rewards, and which episodes terminated (the task
        ended: nothing follows) or were truncated (a time limit: the task went on)."""
        observations, rewards, terminated, truncated, info = self.envs.step(actions)
        reached = {name: part.copy() for name, part in observations.items()}
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                for name, part in reached.items():
                    part[i] = info["final_obs"][i][name]
        self.returns += rewards
        self.lengths += 1
        for i in np.flatnonzero(terminated | truncated):
            self.finished.append(
                (self.cluster.first + i, float(self.returns[i]), int(self.lengths[i]))
            )
            self.returns[i], self.lengths[i] = 0, 0
        self.observations = observations
        return reached, rewards.astype(np.float32), terminated, truncated

    def episodes(self):
        """The mean return and length of the episodes finished since the last call on all
        workers ({} if none), for the log. A collective, as is saving."""
        finished, self.finished = self.finished, []
        # Per sub-environment: its episodes, their returns' and lengths' sums.
        sums = np.zeros((self.cluster.count, 3))
        for i, episode_return, length in finished:
            sums[i - self.cluster.first] += [1, episode_return, length]
        episodes, returns, lengths = self.cluster.gather(sums).sum(0)
        if not episodes:
            return {}
        return {
            "episode_return": float(returns / episodes),
            "episode_length": float(lengths / episodes),
            "episodes": int(episodes),
        }

    def serialize(self):
        """Every worker's sub-environments, pickled one by one and gathered: what one
        device stepping all of them would save."""
        first, count = self.cluster.first, self.cluster.count
        pickles = [
            pickle.dumps(
                {
                    "env": self.envs.envs[i],
                    "observation": tf.nest.map_structure(
                        lambda part: part[i], self.observations
                    ),
                    "return": self.returns[i],
                    "length": self.lengths[i],
                    "finished": [e[1:] for e in self.finished if e[0] == first + i],
                }
            )
            for i in range(count)
        ]
        sizes = self.cluster.gather(np.array([len(data) for data in pickles]))
        # As int32, which collectives carry (4 bytes each), padded to the longest.
        rows = np.zeros((count, (sizes.max() + 3) // 4), np.int32)
        for row, data in zip(rows, pickles):
            words = np.frombuffer(data + bytes(-len(data) % 4), np.int32)
            row[: len(words)] = words
        rows = self.cluster.gather(rows)
        parts = [pickle.loads(row.tobytes()[:size]) for row, size in zip(rows, sizes)]
        return pickle.dumps(
            {
                "observations": tf.nest.map_structure(
                    lambda *rows: np.stack(rows),
                    *[part["observation"] for part in parts],
                ),
                "returns": np.array([part["return"] for part in parts]),
                "lengths": np.array([part["length"] for part in parts]),
                "finished": [
                    (i, *episode)
                    for i, part in enumerate(parts)
                    for episode in part["finished"]
                ],
                "envs": [part["env"] for part in parts],
            }
        )

    def deserialize(self, data):
        state = pickle.loads(data)
        mine = slice(self.cluster.first, self.cluster.first + self.cluster.count)
        self.envs.envs = state["envs"][mine]
        self.observations = tf.nest.map_structure(
            lambda part: part[mine], state["observations"]
        )
        self.returns, self.lengths = state["returns"][mine], state["lengths"][mine]
        # A checkpoint of an earlier render kept (return, length) alone.
        finished = [e if len(e) == 3 else (0, *e) for e in state["finished"]]
        self.finished = [e for e in finished if mine.start <= e[0] < mine.stop]


def build_model():
    """The policy: observations to one logit per action."""
    position = keras.Input(shape=(8,), name="position")
    goal = keras.Input(shape=(8,), name="goal")
    cells = layers.Concatenate(name="cells")([position, goal])
    hidden = layers.Dense(64, activation="tanh", name="hidden")(cells)
    logits = layers.Dense(2, name="logits")(hidden)
    return keras.Model(
        inputs={"position": position, "goal": goal}, outputs=logits, name="corridor_ppo"
    )


def build_value_network():
    """The value function: observations to one value each (training.value)."""
    position = keras.Input(shape=(8,), name="position")
    goal = keras.Input(shape=(8,), name="goal")
    cells = layers.Concatenate(name="cells")([position, goal])
    hidden = layers.Dense(64, activation="tanh", name="hidden")(cells)
    value = layers.Dense(1, name="value")(hidden)
    return keras.Model(
        inputs={"position": position, "goal": goal}, outputs=value, name="value"
    )


def log_probability(logits, actions):
    """log pi(action | observation) of a Categorical policy of `logits`."""
    return -tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=actions, logits=logits
    )


def entropy(logits):
    """The entropy of the Categorical policy of `logits`, per observation."""
    log_p = tf.nn.log_softmax(logits)
    return -tf.reduce_sum(tf.exp(log_p) * log_p, axis=-1)


def advantages_and_returns(rewards, values, ended, last_values):
    """GAE(lambda), by a reverse pass over the rollout ([ROLLOUT_STEPS, this worker's sub-environments] arrays):
    advantage_t = delta_t + GAMMA * GAE_LAMBDA * advantage_t+1, delta_t = reward_t + GAMMA *
    V(s_t+1) - V(s_t). Where an episode ended at t, the next observation is another
    episode's: nothing flows back across it (a truncated episode's bootstrap is in its
    reward already, see collect()). The returns, the value targets, are advantages + values.
    """
    advantages = np.zeros_like(rewards)
    following = np.zeros_like(last_values)
    for t in reversed(range(ROLLOUT_STEPS)):
        next_values = last_values if t == ROLLOUT_STEPS - 1 else values[t + 1]
        going_on = 1.0 - ended[t]
        delta = rewards[t] + GAMMA * next_values * going_on - values[t]
        following = delta + GAMMA * GAE_LAMBDA * going_on * following
        advantages[t] = following
    return advantages, advantages + values


def collect(environments, act, log_probs_and_values, value_of, first_step):
    """One rollout: ROLLOUT_STEPS steps in every sub-environment with the policy of `act`,
    then log_probs_and_values() of all its steps, its advantages and returns (value_of()
    estimates what follows a cut episode and the rollout's end): what the update needs,
    ROLLOUT_SIZE transitions in the order (step, sub-environment).
    This worker steps its own sub-environments; the rollout returned is every
    worker's."""
    observations, actions, rewards, ended = [], [], [], []
    # The seed of each step, (SEED, step), made for the whole rollout at once.
    seeds = tf.unstack(
        tf.constant(
            [[SEED, first_step + t * NUM_ENVS] for t in range(ROLLOUT_STEPS)], tf.int64
        )
    )
    for t in range(ROLLOUT_STEPS):
        # Tensors: act() would convert NumPy arrays itself, more slowly.
        observations.append(
            {
                name: tf.constant(part, tf.float32)
                for name, part in environments.observations.items()
            }
        )
        actions.append(act(observations[t], seeds[t]).numpy())
        reached, reward, terminated, truncated = environments.step(actions[t])
        # Truncation (a time limit) stops an episode whose task goes on: its return
        # continues past the cut, estimated by the value of the observation reached.
        # Termination ends the task: nothing follows.
        cut = truncated & ~terminated
        if cut.any():
            ends = {name: part[cut] for name, part in reached.items()}
            reward[cut] += GAMMA * value_of(ends).numpy()
        rewards.append(reward)
        ended.append((terminated | truncated).astype(np.float32))
    # [ROLLOUT_STEPS, this worker's sub-environments, ...] arrays; the observations'
    # dicts are stacked part by part.
    rollout = {
        "observations": tf.nest.map_structure(
            lambda *steps: np.stack(steps), *observations
        ),
        "actions": np.stack(actions),
    }
    # The networks did not change during the rollout: the log-probabilities and values of
    # all its steps come from one call, not one a step.
    log_probs, values = log_probs_and_values(
        rollout["observations"], rollout["actions"]
    )
    rollout.update(log_probs=log_probs.numpy(), values=values.numpy())
    last_values = value_of(environments.observations).numpy()
    advantages, returns = advantages_and_returns(
        np.stack(rewards), rollout["values"], np.stack(ended), last_values
    )
    rollout.update(advantages=advantages, returns=returns)
    # [ROLLOUT_STEPS, sub-environments] arrays: the other workers' sub-environments join
    # this worker's, in their order.
    rollout = environments.cluster.gather(rollout, axis=1)
    # One batch of ROLLOUT_SIZE transitions, in the order (step, sub-environment).
    return tf.nest.map_structure(
        lambda value: value.reshape((ROLLOUT_SIZE, *value.shape[2:])), rollout
    )


def ppo_loss(log_probs, entropies, values, batch):
    """PPO's loss on a minibatch, from the policy's log-probabilities of the actions taken
    and its entropies, and the values, as the networks being trained give them; `batch`
    holds what the rollout recorded. Returns the loss and its parts, for the log.
    `batch` is this replica's share, its advantages normalized over the whole minibatch (in
    replica_step); each mean is over the whole (MINIBATCH_SIZE): the replicas' losses add up
    to one device's."""
    log_ratio = log_probs - batch["log_probs"]
    ratio = tf.exp(log_ratio)
    advantages = batch["advantages"]
    # The clipped surrogate: the ratio may move the loss only within 1 +- CLIP.
    clipped_ratio = tf.clip_by_value(ratio, 1 - CLIP, 1 + CLIP)
    policy_loss = (
        tf.reduce_sum(tf.maximum(-advantages * ratio, -advantages * clipped_ratio))
        / MINIBATCH_SIZE
    )
    returns = batch["returns"]
    # The value's change is clipped as the ratio is.
    old_values = batch["values"]
    clipped = old_values + tf.clip_by_value(values - old_values, -CLIP, CLIP)
    value_loss = (
        0.5
        * tf.reduce_sum(
            tf.maximum(tf.square(values - returns), tf.square(clipped - returns))
        )
        / MINIBATCH_SIZE
    )
    entropy_bonus = tf.reduce_sum(entropies) / MINIBATCH_SIZE
    loss = policy_loss - ENTROPY_COEF * entropy_bonus + VALUE_COEF * value_loss
    # How far the policy moved (http://joschu.net/blog/kl-approx.html), and how often the
    # ratio was clipped.
    approx_kl = tf.reduce_sum((ratio - 1) - log_ratio) / MINIBATCH_SIZE
    clip_fraction = (
        tf.reduce_sum(tf.cast(tf.abs(ratio - 1) > CLIP, tf.float32)) / MINIBATCH_SIZE
    )
    return loss, [policy_loss, value_loss, entropy_bonus, approx_kl, clip_fraction]


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

    # Each worker steps its share of the environments (Cluster); the workers exchange their
    # rollouts whole, and the replicas share each update's transitions.
    if NUM_ENVS % strategy.num_replicas_in_sync:
        raise SystemExit(
            f"NUM_ENVS ({NUM_ENVS}) cannot be shared equally by "
            f"{strategy.num_replicas_in_sync} replicas: make it a multiple of them "
            "(data.num_envs), or run on as many replicas as divide it"
        )
    if MINIBATCH_SIZE % strategy.num_replicas_in_sync:
        raise SystemExit(
            f"MINIBATCH_SIZE ({MINIBATCH_SIZE}) cannot be shared equally by "
            f"{strategy.num_replicas_in_sync} replicas: make it a multiple of them "
            "(data.num_envs, training.rollout_steps, training.minibatches or training.batch_size), "
            "or run on as many devices as divide it (CUDA_VISIBLE_DEVICES)"
        )

    # Seeds Python, NumPy, TensorFlow and Keras at once: the same initial weights on every
    # run. The actions and minibatches draw from seeds of (SEED, step) alone.
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

    # --- Environment ------------------------------------------------------------------
    cluster = Cluster(strategy)
    environments = Environments(cluster)

    # --- Networks, optimizer, values logged -------------------------------------------
    # Made in the strategy's scope: each variable has a copy on every replica.
    with strategy.scope():
        model = build_model()
        value_network = build_value_network()
        model.summary()
        value_network.summary()
        trainable = model.trainable_variables + value_network.trainable_variables
        optimizer = keras.optimizers.Adam(learning_rate=0.003)
        optimizer.build(trainable)
        # Counts environment steps over all sub-environments: checkpointed, it fixes the update,
        # the learning rate and every seed.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # Outside the scope: updated between the replicas' steps only, they need no copies.
    losses = [
        keras.metrics.Mean(name=name)
        for name in [
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "clip_fraction",
        ]
    ]

    # --- Acting and the update step ---------------------------------------------------
    @tf.function
    def act(observations, seed):
        """Actions sampled from the policy by a seed of (SEED, step) alone."""
        logits = model(observations)
        # The draws one device makes for all NUM_ENVS sub-environments, of which this
        # worker's are its rows (a row's draw depends on its place and its own logits).
        padding = [[cluster.first, NUM_ENVS - cluster.first - cluster.count], [0, 0]]
        draws = tf.random.stateless_categorical(tf.pad(logits, padding), 1, seed)
        return draws[cluster.first : cluster.first + cluster.count, 0]

    # Called at every step: its one trace, called directly, skips tf.function's search
    # for the trace that matches the arguments, a third of a call this small (measured).
    act = act.get_concrete_function(
        {
            name: tf.TensorSpec((cluster.count, *shape), tf.float32)
            for name, shape in OBSERVATION_SHAPES.items()
        },
        tf.TensorSpec([2], tf.int64),
    )

    @tf.function
    def log_probs_and_values(observations, actions):
        """The policy's log-probabilities of a rollout's actions and the values of its
        observations ([ROLLOUT_STEPS, sub-environments] each), for the update.
        A worker's rollout has its own sub-environments."""
        observations = {
            name: tf.reshape(part, [-1, *OBSERVATION_SHAPES[name]])
            for name, part in observations.items()
        }
        log_probs = log_probability(model(observations), tf.reshape(actions, [-1]))
        values = value_network(observations)[:, 0]
        steps = [ROLLOUT_STEPS, -1]  # back to [step, sub-environment]
        return tf.reshape(log_probs, steps), tf.reshape(values, steps)

    @tf.function(reduce_retracing=True)
    def value_of(observations):
        """The value network's estimates (collect() bootstraps cut episodes and the
        rollout's end with them): compiled, a quarter of an eager call's time."""
        return value_network(observations)[:, 0]

    def minibatch_loss(batch):
        """PPO's loss on a minibatch, by the networks being trained, and its parts."""
        logits = model(batch["observations"], training=True)
        log_probs = log_probability(logits, batch["actions"])
        entropies = entropy(logits)
        values = value_network(batch["observations"], training=True)[:, 0]
        return ppo_loss(log_probs, entropies, values, batch)

    def replica_step(batch):
        """One replica's part of a gradient step on a minibatch (every replica is given
        the whole of it): its share of the transitions, whose loss is averaged over the whole
        minibatch, and the gradients summed over the replicas: one device's step."""
        context = tf.distribute.get_replica_context()
        # Normalized over the whole minibatch, as on one device, before the replicas take
        # their shares.
        advantages = batch["advantages"]
        batch = {
            **batch,
            "advantages": (advantages - tf.reduce_mean(advantages))
            / (tf.math.reduce_std(advantages) + 1e-8),
        }
        share = MINIBATCH_SIZE // context.num_replicas_in_sync
        start = context.replica_id_in_sync_group * share
        batch = tf.nest.map_structure(lambda value: value[start : start + share], batch)
        with tf.GradientTape() as tape:
            loss, parts = minibatch_loss(batch)
        gradients = tape.gradient(loss, trainable)
        # Clipped by the norm of the whole step's gradient: sum the replicas' shares first.
        gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        gradients, _ = tf.clip_by_global_norm(gradients, MAX_GRAD_NORM)
        # apply_gradients sums over the replicas again: give it each replica's equal share.
        gradients = [gradient / context.num_replicas_in_sync for gradient in gradients]
        optimizer.apply_gradients(zip(gradients, trainable))
        return loss, parts

    def step_on_replicas(batch, first_step):
        """A gradient step on `batch`, shared by the replicas; the loss and its parts summed
        over them are one device's."""
        loss, parts = strategy.run(replica_step, args=(batch,))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(first_step)
        for mean, value in zip(losses, parts):
            mean.update_state(
                strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
            )

    @tf.function
    def update(rollout, first_step):
        """UPDATE_EPOCHS passes over the rollout, each in a new order drawn from (SEED, step,
        epoch) alone, one gradient step per minibatch."""
        for epoch in tf.range(UPDATE_EPOCHS, dtype=tf.int64):
            seed = tf.random.experimental.stateless_fold_in(
                tf.stack([tf.constant(SEED, tf.int64), first_step]), epoch
            )
            order = tf.random.experimental.stateless_shuffle(
                tf.range(ROLLOUT_SIZE), seed
            )
            for start in tf.range(0, ROLLOUT_SIZE, MINIBATCH_SIZE):
                indices = order[start : start + MINIBATCH_SIZE]
                batch = tf.nest.map_structure(
                    lambda value: tf.gather(value, indices), rollout
                )
                step_on_replicas(batch, first_step)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        value_network=value_network,
        optimizer=optimizer,
        # The step fixes the update, the learning rate and the seeds; the environments are
        # saved whole, mid-episode.
        step=step,
        environments=environments,
        # The running means of the next log: a resumed run logs them as one that never stopped.
        train_values=[v for mean in losses for v in mean.variables],
    )
    run.restore(checkpoint, environments, model=model, value_network=value_network)
    if args.command == "evaluate":
        # One worker plays and writes (the chief, or the one process without TF_CONFIG).
        return evaluate(model, args, run) if chief else None
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
    # Whole updates: a rollout is ROLLOUT_SIZE environment steps.
    total_steps = (
        TOTAL_STEPS if args.max_steps is None else min(TOTAL_STEPS, args.max_steps)
    )
    total_steps -= total_steps % ROLLOUT_SIZE
    global_step = int(step.numpy())
    run.start(step, nonfinite_step, total_steps, losses, strategy)
    while global_step < total_steps and not run.preempted:
        optimizer.learning_rate = LEARNING_RATE * (1 - global_step / TOTAL_STEPS)
        rollout = collect(
            environments, act, log_probs_and_values, value_of, global_step
        )
        with run.debugged(
            updates_at(global_step), 1, rollout
        ):  # the debugging flags, replay
            update(rollout, tf.constant(global_step, tf.int64))
        previous, global_step = global_step, global_step + ROLLOUT_SIZE
        step.assign(global_step)
        # A worker's own SIGTERM is its vote: the workers stop together.
        run.preempted = cluster.any(run.sigterm)
        if global_step // LOG_EVERY_STEPS > previous // LOG_EVERY_STEPS:
            logs = {**results(losses), **environments.episodes()}
            logs["learning_rate"] = float(optimizer.learning_rate.numpy())
            run.log("train", global_step, logs)
            for mean in losses:
                mean.reset_state()
            run.stop_if_diverged()
        if global_step // CHECKPOINT_EVERY_STEPS > previous // CHECKPOINT_EVERY_STEPS:
            run.save(global_step)
    run.finish(global_step)
    environments.envs.close()

    # --- Export -----------------------------------------------------------------------
    # Every worker exports (reading the variables may take all workers), but only the chief's
    # copy is kept: the others write into their scratch directory and delete it.
    export_dir = os.path.join(args.output_dir if chief else run.scratch, "export")
    export(model, value_network, export_dir)
    if not chief:
        shutil.rmtree(export_dir)


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device);
    none of a metric that has no value yet."""
    return {
        metric.name: float(metric.result()) for metric in metrics if metric.count > 0
    }


def evaluate(model, args, run):
    """evaluate: the restored policy's most probable action (no sampling), one episode in each of
    --episodes environments seeded apart from training's; prints the mean and standard
    deviation of their returns and appends them to evaluations.jsonl. --record: the first
    episode as an animated GIF too, one frame an action."""
    drawing = "rgb_array" if args.record else None
    if args.record:
        # The pictures are drawn off screen: SDL (pygame's) needs no display or sound card for
        # them, and on a machine without a display would print an "error:" though they are fine.
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    envs, observations = make_envs(args.episodes, evaluation=True, render_mode=drawing)
    returns, done = np.zeros(args.episodes), np.zeros(args.episodes, bool)
    greedy = tf.function(
        lambda observations: tf.argmax(model(observations, training=False), axis=-1)
    )
    frames = []
    while not done.all():
        if args.record and not done[0]:
            frames.append(draw(envs.envs[0]))
        observations = {
            name: part.astype(np.float32) for name, part in observations.items()
        }
        actions = greedy(observations).numpy()
        observations, rewards, terminated, truncated, _ = envs.step(actions)
        returns += np.where(done, 0, rewards)  # an environment's first episode only
        done |= terminated | truncated
    envs.close()
    record = {
        "checkpoint": run.resumed_from,
        "step": run.saved,
        "episodes": args.episodes,
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
    }
    if args.record:
        os.makedirs(os.path.join(run.path, "videos"), exist_ok=True)
        record["video"] = os.path.join(run.path, "videos", f"step-{run.saved}.gif")
        record["video_return"] = float(returns[0])
        write_gif(frames, record["video"])
        print(f"The first episode ({len(frames)} frames): {record['video']}")
    print(
        f"{run.resumed_from} (step {run.saved}): return {record['return_mean']:.2f} "
        f"+- {record['return_std']:.2f} over {args.episodes} episodes"
    )
    run.append("evaluations.jsonl", record)


def draw(env):
    """The environment's picture (an RGB array), or a message on what drawing it needs."""
    try:
        return env.render()
    except gym.error.DependencyNotInstalled as error:
        raise SystemExit(f"--record: {error}") from None


def write_gif(frames, path):
    """`frames` as an animated GIF at 25 frames a second (a GIF counts time in hundredths of a
    second), written whole: to a temporary file, then renamed."""
    try:
        from PIL import Image  # Pillow: only to record
    except ImportError:
        raise SystemExit(
            "--record writes GIFs with Pillow: pip install pillow"
        ) from None
    images = [Image.fromarray(frame) for frame in frames]
    temporary = f"{path}.tmp"
    images[0].save(
        temporary,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=40,
        loop=0,
    )
    os.replace(temporary, path)


def export(model, value_network, directory):
    """The trained policy, written whole into `directory`: saved_model/1/, the SavedModel to
    serve (TF Serving's layout), whose serving_default takes a batch of observations, an input
    for each part of the Dict by its name, and returns "actions" (the most probable action),
    "probabilities" and "values". It loads without this script."""
    observations = {
        name: tf.TensorSpec((None, *shape), tf.float32, name=name)
        for name, shape in OBSERVATION_SHAPES.items()
    }

    @tf.function(input_signature=[observations])
    def serve(observations):
        logits = model(observations, training=False)
        return {
            "actions": tf.argmax(logits, axis=-1),
            "probabilities": tf.nn.softmax(logits),
            "values": value_network(observations, training=False)[:, 0],
        }

    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
        served.track(value_network)
        served.add_endpoint("serving_default", serve)
        served.write_out(os.path.join(partial, "saved_model", "1"), verbose=False)


# --- Debugging ------------------------------------------------------------------------


def execution_modes(args):
    """How TensorFlow runs this process's ops, set before anything is traced: --deterministic
    and the debugging flags. Returns whether the steps may compile with XLA, which cannot run
    the numerics checks of --check-numerics and --dump-debug-info."""
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The modules that only debugging needs are imported where it does.
    if args.eager:
        import warnings

        tf.config.run_functions_eagerly(True)
        # tf.data's functions stay compiled, which TensorFlow warns of at each: as meant.
        warnings.filterwarnings(
            "ignore", "Even though the `tf.config.experimental_run_functions"
        )
        print(
            "--eager: the steps run as plain Python, slowly (print, breakpoint() and pdb work)"
        )
    if args.check_numerics:
        tf.debugging.enable_check_numerics()
        print(
            "--check-numerics: the first NaN or Inf stops the run; the steps run without XLA"
        )
    if args.dump_debug_info:
        import atexit

        directory = os.path.join(args.output_dir, "logs", "debugger")
        tf.debugging.experimental.enable_dump_debug_info(
            directory, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
        )
        # Written out as the process ends, however it ends.
        atexit.register(tf.debugging.experimental.disable_dump_debug_info)
        print(
            f"--dump-debug-info: every op's outputs into {directory} (tensorboard --logdir "
            f"{directory}, then the Debugger V2 tab); the steps run without XLA"
        )
    return not (args.check_numerics or args.dump_debug_info)


def nonfinite_op(error):
    """--check-numerics: which op made the first NaN or Inf, and where this script (or your
    module) created it, from TensorFlow's error; None for another error."""
    found = isinstance(error, tf.errors.InvalidArgumentError) and re.search(
        r'Infinity or NaN in output (\d+) of (graph|eagerly-executing) op "([^"]+)"',
        error.message,
    )
    if not found:
        return None
    import linecache

    # A graph op's creation is in TensorFlow's message, with "->" marking user code.
    if found[2] == "graph":
        frames = re.findall(r"\+ (\S+) \(L(\d+)\) (\S+)\n -> \|", error.message)
        # It shortens long paths from the left: the loaded file whose path ends so.
        files = [__file__] + [
            getattr(module, "__file__", None) or ""
            for module in list(sys.modules.values())
        ]
        frames = [
            (
                next((file for file in files if file.endswith(path.lstrip("."))), path),
                int(line),
                function,
            )
            for path, line, function in frames
        ]
    else:  # an eager op's frames are the traceback's
        frames = [
            (frame.filename, frame.lineno, frame.name)
            for frame in traceback.extract_tb(error.__traceback__)
        ]
    # Not the libraries' frames: the script's, and those of your modules.
    frames = [
        frame
        for frame in frames
        if "-packages" not in frame[0] and not frame[0].startswith(sys.base_prefix)
    ]
    where = frames[-1:] + [frame for frame in frames if frame[0] == __file__][-1:]
    lines = [
        f"  {os.path.basename(p)}:{n}, in {f}: {linecache.getline(p, n).strip()}"
        for p, n, f in dict.fromkeys(where)
    ]
    return f'output {found[1]} of op "{found[3]}", created at\n' + "\n".join(lines)


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run, on N updates, in a temporary directory removed
    after (--output-dir is not touched): a crash that a long run would meet only at its end
    (in an evaluation, a checkpoint, the export) shows in seconds."""
    import tempfile

    n, scratch = args.fast_dev_run, tempfile.mkdtemp(prefix="fast-dev-run-")
    stages = [
        (
            {"max_steps": step_of_update(n)},
            f"train {n} updates, save a checkpoint, export",
        ),
        (
            {"max_steps": step_of_update(2 * n)},
            f"resume from the checkpoint, train {n} more",
        ),
        (
            {"command": "evaluate", "episodes": 1, "record": False},
            "evaluate the checkpoint on an episode",
        ),
    ]
    try:
        for changes, stage in stages:
            # The scratch directory is this process's alone: no lock to take again each stage.
            staged = argparse.Namespace(
                **{**vars(args), "output_dir": scratch, "no_lock": True, **changes}
            )
            with dev_stage(stage):
                run = RunDirectory(staged)
                try:
                    train(staged, run)
                except BaseException as error:
                    run.end(error)
                    raise
                run.end()
            # The later stages build the same networks: one summary of them is enough.
            keras.Model.summary = lambda *args, **kwargs: None
        with dev_stage("serve the export"):
            serve_once(os.path.join(scratch, "export"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"--fast-dev-run: every stage ran (in {scratch}, removed)")


@contextlib.contextmanager
def dev_stage(stage):
    """--fast-dev-run: one stage, announced, then OK and its time (or FAILED, and the error)."""
    print(f"--fast-dev-run: {stage} ...")
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        print(f"--fast-dev-run: {stage}: FAILED")
        raise
    print(f"--fast-dev-run: {stage}: OK ({time.perf_counter() - started:.1f} s)")


def serve_once(directory):
    """--fast-dev-run: the exported policy, loaded as a server loads it, answers observations
    of zeros."""
    serve = tf.saved_model.load(os.path.join(directory, "saved_model", "1")).signatures[
        "serving_default"
    ]
    _, inputs = serve.structured_input_signature
    outputs = serve(
        **{
            name: tf.zeros([2, *spec.shape[1:]], spec.dtype)
            for name, spec in inputs.items()
        }
    )
    if not all(np.isfinite(output).all() for output in outputs.values()):
        raise SystemExit(
            f"--fast-dev-run: the policy in {directory} answers NaN or Inf"
        )


@contextlib.contextmanager
def gradients_applied(*optimizers):
    """replay: the gradients each optimizer is handed, by id of their variable. The step runs
    eagerly: its apply_gradients calls are plain Python calls, which this watches."""
    seen = {}

    def watching(apply):
        def apply_gradients(grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            seen.update({id(v): g for g, v in grads_and_vars if g is not None})
            return apply(grads_and_vars, *args, **kwargs)

        return apply_gradients

    for optimizer in optimizers:
        optimizer.apply_gradients = watching(optimizer.apply_gradients)
    try:
        yield seen
    finally:
        for optimizer in optimizers:
            del optimizer.apply_gradients


def updates_at(global_step):
    """The updates done by environment step `global_step`: one a rollout."""
    return global_step // ROLLOUT_SIZE


def step_of_update(update):
    """The environment step that update `update` (1, 2, ...) brings the run to."""
    return update * ROLLOUT_SIZE


def update_of(step):
    """The update a NaN at environment step `step` (nonfinite_step, its rollout's first) is."""
    return step // ROLLOUT_SIZE + 1


def replay(args):
    """replay --step N: trains update N again, exactly as the run did, and shows what it
    computed. The run's newest checkpoint before update N (before the first, the initial
    weights and environments, which SEED fixes) is resumed in a scratch directory: the
    environments are in it, and the actions, noise and minibatches are functions of the step,
    so the run acts and updates as it did, up to update N - 1; then update N runs eagerly,
    every op checked (replayed). The run's own directory is only read."""
    run = RunDirectory(args)
    run.lock()  # shared: no run may train there meanwhile
    last, flags = run.replayable()
    if args.step > last:
        raise SystemExit(
            f"replay --step {args.step}: {args.output_dir} can replay updates 1 to {last}"
        )
    import tempfile

    # The environment step at which update N is done (the checkpoints count environment steps).
    end = step_of_update(args.step)
    path = run.checkpoint_before(end)
    # The run's own weights; its --init-from gives the start only before its first checkpoint.
    if path:
        flags["init_from"] = None
    scratch = tempfile.mkdtemp(prefix="replay-", dir=args.output_dir)
    try:
        if path:  # linked, not copied: a checkpoint may be large
            run.link_checkpoint(path, os.path.join(scratch, "checkpoints"))
        start = (
            f"{os.path.basename(path)} (step {path.rsplit('-', 1)[1]})"
            if path
            else "the initial weights"
        )
        print(f"Replaying update {args.step} of {args.output_dir} from {start}")
        # The run's own flags (its length decides the schedules), on one device.
        replaying = argparse.Namespace(
            **{
                **vars(args),
                **flags,
                "command": "train",
                "output_dir": scratch,
                "max_steps": end,
                "replay_of": args.output_dir,
            }
        )
        train(replaying, RunDirectory(replaying))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def replayed(step, networks, optimizers, train_values, logged=True):
    """replay: the train_loop call of step `step` alone (run.bound ends the calls around it),
    run eagerly with every op checked. Then prints what it computed: its loss (and the epoch's
    running values, as the run logs them, `logged` at this step), each layer's weight norm
    after it, gradient norm and update, and where a NaN or Inf first appeared; and the replay
    ends there."""
    tf.config.run_functions_eagerly(True)
    tf.debugging.enable_check_numerics()
    # Whole tracebacks: the innermost Keras layer in one names the layer that made a NaN.
    keras.config.disable_traceback_filtering()
    tf.debugging.disable_traceback_filtering()
    sums_before = running_sums(train_values)
    weights_before = {
        id(w): w.numpy() for net in networks.values() for w in net.trainable_weights
    }
    failure = None
    # TensorFlow also logs a failing op's report, with its inputs' values, below Python on
    # stderr: kept off the console (the summary below names the op, its layer and line).
    with gradients_applied(*optimizers) as gradients, native_stderr_silenced():
        try:
            yield
        except tf.errors.InvalidArgumentError as error:
            failure = error
    # What follows is the replay's own arithmetic, not the step's: unchecked, and in float64
    # NumPy (the squares of the weights of a diverged run overflow float32).
    tf.debugging.disable_check_numerics()
    print(f"\nUpdate {step}, eagerly, every op checked:")
    for name, value in step_values(sums_before, running_sums(train_values)).items():
        print(f"  {name}: {value:.9g}")
    if failure is not None:
        print(
            "  (its loss not counted: the update stopped at its first NaN or Inf, below)"
        )
    elif logged:
        print(
            "  as logged (the means since the last log): "
            + "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        )
    else:
        print(
            "  the epoch's running values (this update was not logged): "
            + "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        )
    print(
        f"  {'layer':<32} {'weight norm':>12} {'gradient norm':>14} {'update / weight':>16}"
    )
    shown = set()  # a layer two models share (tied embeddings): one row
    for name, net in networks.items():
        for layer in layers_of(net):
            # The network's trainable weights in the layer, also where the layer itself is
            # frozen and parts of it train (LoRA's adapters in a backbone it froze).
            weights = [w for w in layer.weights if id(w) in weights_before]
            if not weights or id(layer) in shown:
                continue
            shown.add(id(layer))
            before = [weights_before[id(w)] for w in weights]
            after = [w.numpy() for w in weights]
            grads = [gradients[id(w)] for w in weights if id(w) in gradients]
            gradient = f"{global_norm64(grads):14.6g}" if grads else f"{'-':>14}"
            size = global_norm64(before)
            # ||after - before|| / ||before||, as logging.inspect's update_ratio.
            if failure is None and size > 0:
                ratio = f"{global_norm64(after, minus=before) / size:16.3g}"
            else:
                ratio = f"{'-':>16}"
            print(
                f"  {name + '/' + layer.name:<32} {global_norm64(after):12.6g} {gradient} {ratio}"
            )
    if failure is None:
        print("Every op's outputs were finite.")
        raise SystemExit(0)  # the steps after it are another replay's
    layer = innermost_layer(failure)
    where = (
        f"layer {layer.name} ({type(layer).__name__}): " if layer is not None else ""
    )
    print(f"The first NaN or Inf: {where}{nonfinite_op(failure)}")
    raise SystemExit(1)


def global_norm64(arrays, minus=None):
    """replay: the global norm of tensors (dense or sparse) or arrays (less `minus`'s), in
    float64: no overflow for weights up to 1e150, inf or nan where they are, never an error.
    """
    with np.errstate(all="ignore"):
        arrays = [np.asarray(tf.convert_to_tensor(a), np.float64) for a in arrays]
        if minus is not None:
            arrays = [a - b for a, b in zip(arrays, minus)]
        return float(np.sqrt(sum(np.sum(np.square(a)) for a in arrays)))


def running_sums(train_values):
    """replay: each running mean's total and count, to tell one update's value from the mean."""
    return {
        value.name: [float(v.numpy()) for v in value.variables]
        for value in train_values
        if isinstance(value, keras.metrics.Mean)
    }


def step_values(before, after):
    """replay: each mean's value over the updates between two running_sums()."""
    return {
        name: (after[name][0] - before[name][0]) / (after[name][1] - before[name][1])
        for name in after
        if after[name][1] > before[name][1]
    }


@contextlib.contextmanager
def native_stderr_silenced():
    """Writes to the process's stderr (file descriptor 2, where TensorFlow's C++ logs go)
    dropped while it runs."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def layers_of(network):
    """The layers of a network, those of the models nested in it too, in order."""
    for layer in network.layers:
        yield from layers_of(layer) if isinstance(layer, keras.Model) else [layer]


def innermost_layer(error):
    """The innermost Keras layer being called when an eager op raised `error` (None when no
    layer was: the loss, or the gradients)."""
    layer, trace = None, error.__traceback__
    while trace is not None:
        candidate = trace.tb_frame.f_locals.get("self")
        if isinstance(candidate, keras.layers.Layer) and not isinstance(
            candidate, keras.Model
        ):
            layer = candidate
        trace = trace.tb_next
    return layer


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "corridor_ppo",
    "spec_sha256": "3d0ba0504265fd53",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "cf29014e262184a7",
    "data.kind": "environment",
    "data.target": "envs.corridor:make",
    "data.kwargs": "3e5660cb74e8e291",
    "data.num_envs": 4,
    "data.max_episode_steps": 32,
    "seed": SEED,
    "optimizer": "0f36a0dce26ec3b6",
    "training": "0bd95de23a86d7cd",
}


# The system's reasons for failing a write that no fix of this script would help: what
# happened, and what to do.
MACHINE_FAULTS = {
    errno.ENOSPC: ("The disk is full", "free some space"),
    errno.EDQUOT: ("The disk quota is used up", "free some space"),
    errno.EFBIG: (
        "The file grew beyond the size this process may write",
        "raise ulimit -f",
    ),
    errno.EROFS: (
        "The file system is read-only",
        "pass an --output-dir on a writable one",
    ),
    errno.EACCES: (
        "This user may not write there",
        "pass an --output-dir it can write",
    ),
    errno.EPERM: ("This user may not write there", "pass an --output-dir it can write"),
    errno.EEXIST: ("--output-dir names a file", "pass a directory"),
    errno.ENOTDIR: ("A part of --output-dir is a file", "pass a directory"),
}


class RunDirectory:
    """The output directory, kept sound: one run at a time (run.lock), how each run started and
    ended (runs.jsonl), checkpoints of one training setup only (checkpoints/setup.json) and
    saved whole, and the logged values (TensorBoard's logs/, metrics.jsonl).
    In a multi-worker job only the chief writes it: the other workers write what they must
    (saving is collective) into workers/worker-<i>, which nobody reads.
    """

    def __init__(self, args):
        self.args, self.path = args, args.output_dir
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.run = self.resumed_from = self.init_from = self.saved = None
        self.writers, self.preempted = {}, False
        self.chief, self.scratch = (
            True,
            None,
        )  # set by train() once the cluster is known

    def lock(self):
        """Takes the directory's lock; returns why not, or None. Two runs writing one
        directory would overwrite each other's checkpoints. An flock: the OS drops it when the
        process ends, even by SIGKILL. run.lock names the run that holds it."""
        reader = self.args.command != "train"
        if reader and not os.path.isdir(self.checkpoints):
            raise SystemExit(
                f"Nothing to {self.args.command}: {self.path} holds no checkpoints."
            )
        made = not os.path.isdir(self.path)
        os.makedirs(self.path, exist_ok=True)
        if self.args.no_lock:
            if not self.args.fast_dev_run:  # whose scratch directory is its own
                print(f"Not locking {self.path} (--no-lock): no other run may use it.")
            return
        self.lock_file = open(os.path.join(self.path, "run.lock"), "a+")
        try:
            # evaluate and replay read: any number of them at once, but not while a run trains.
            fcntl.flock(
                self.lock_file,
                (fcntl.LOCK_SH if reader else fcntl.LOCK_EX) | fcntl.LOCK_NB,
            )
        except BlockingIOError:
            self.lock_file.seek(0)
            holder = self.lock_file.read().strip() or "it has not written its pid yet"
            try:  # open to a reader: readers hold it, and run.lock names the last run to train
                fcntl.flock(self.lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB)
                holder = "evaluate or replay reads it"
            except BlockingIOError:
                pass
            return (
                f"{self.path} is in use by another run ({holder}). Wait for it to end, or "
                "pass another --output-dir."
            )
        except OSError as error:  # ENOLCK, ENOSYS: a file system that refuses locks
            return (
                f"Cannot lock {self.lock_file.name}: {error.strerror}. This file system does "
                f"not support locks; if no other run uses {self.path}, run again with --no-lock."
            )
        if reader:
            return
        # Often the first write of a run: the one a full disk fails.
        try:
            with writing(self.lock_file.name):
                self.lock_file.truncate(0)
                self.lock_file.write(
                    f"pid {os.getpid()} on {socket.gethostname()}, started {now()}\n"
                )
                self.lock_file.flush()
        except OSError:
            # Nothing of it was written: no empty run.lock is left (nor the directory this run
            # made), as if the run had never started.
            if os.path.getsize(self.lock_file.name) == 0:
                os.remove(self.lock_file.name)
                if made:
                    os.rmdir(self.path)
            raise
        # What a run killed mid-export left.
        settle_whole(os.path.join(self.path, "export"))

    def restore(self, checkpoint, examples, **networks):
        """Resumes from the newest checkpoint that restores (a damaged one is reported and the
        one before it used), if setup.json says they are this setup's: SETUP, the network's
        weights (a hand edit of build_model) and the training data (`examples`, its files). A
        new run records its setup there, and may start from the weights of another run
        (--init-from)."""
        setup = {**SETUP, "weights": weights_fingerprint(*networks.values())}
        self.data = data_record(examples)
        self.checkpoint = checkpoint  # replay watches its networks and optimizers
        setup_path = os.path.join(self.checkpoints, "setup.json")
        if self.args.command != "train":
            return self.restore_to_read(checkpoint, setup, networks)
        # Saving is collective: every worker calls save(), but only the chief's are kept.
        directory = (
            self.checkpoints
            if self.chief
            else os.path.join(self.scratch, "checkpoints")
        )
        keep = KEEP_CHECKPOINTS if self.chief else 1
        # Every worker resumes from the chief's checkpoints: the output directory must be
        # storage that all workers read (NFS, GCS, ...). Only the chief repairs its state file.
        paths = checkpoint_paths(self.checkpoints, repair=self.chief)
        self.manager = tf.train.CheckpointManager(checkpoint, directory, keep)
        self.remove_partial_checkpoints(self.manager.directory)
        if not paths:
            # What a run killed before its first checkpoint logged.
            self.forget_logged_after(0)
            if self.args.init_from:
                self.init_from = load_weights(self.args.init_from, **networks)
            if self.chief:
                os.makedirs(self.checkpoints, exist_ok=True)
                with open(setup_path, "w") as f:
                    json.dump({**setup, "data": self.data}, f, indent=2)
            return
        if self.args.init_from:
            raise SystemExit(
                f"--init-from {self.args.init_from}: {self.checkpoints} already holds this run's "
                "checkpoints. Run without --init-from to resume it, or pass a new --output-dir."
            )
        self.check_setup(setup)
        for path in reversed(paths):
            try:
                restore_whole(checkpoint, path)
            except (
                Exception
            ) as error:  # damaged files raise OpError, IndexError, MemoryError
                print(f"Cannot restore {path}: {checkpoint_damage(error)}")
                continue
            self.resumed_from, self.saved = path, int(checkpoint.step.numpy())
            print(f"Resumed from {path} at step {self.saved}")
            return self.forget_logged_after(self.saved)
        raise SystemExit(
            f"None of the checkpoints restores ({', '.join(paths)}): see the errors above. "
            "Move them away (or pass another --output-dir) to start from scratch."
        )

    def check_setup(self, setup, doing="resume from"):
        """Stops unless setup.json says the checkpoints are of this setup."""
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        differences = [
            f"  {key}: {saved.get(key)!r} in the checkpoints, {setup.get(key)!r} in this run"
            for key in {**setup, **saved}
            if key != "data" and saved.get(key) != setup.get(key)  # data: check_data()
        ]
        if differences:
            raise SystemExit(
                f"Refusing to {doing} {self.checkpoints}: its checkpoints come from another "
                "training setup (SETUP in this script; weights: the names, shapes and dtypes "
                "of the network's variables). What differs:\n"
                + "\n".join(differences)
                + "\n"
                "Undo the change, or train in a new --output-dir (with --init-from "
                f"{self.path} to start from those weights)."
            )

    def restore_to_read(self, checkpoint, setup, networks):
        """evaluate, replay: the weights of --checkpoint (latest or a path), of this setup. Nothing in
        the directory is written."""
        self.check_setup(setup, f"{self.args.command} with")
        path = self.args.checkpoint
        if path == "latest":
            path = (checkpoint_paths(self.checkpoints, repair=False) or [None])[-1]
        if path is None:
            raise SystemExit(
                f"--checkpoint {self.args.checkpoint}: none in {self.checkpoints}"
            )
        try:
            restore_whole(checkpoint, path)
        except Exception as error:  # a path that is no checkpoint, damaged files
            raise SystemExit(
                f"--checkpoint: cannot restore {path}: {checkpoint_damage(error)}"
            ) from None
        number = re.search(r"-(\d+)$", path)  # ckpt-<step>
        self.resumed_from, self.saved = path, int(number[1]) if number else None

    def replayable(self):
        """replay: the last update it can replay (that a run of this directory reached), and the
        flags of the run's newest start that decide what a update trains."""
        records = []
        if os.path.exists(os.path.join(self.path, "runs.jsonl")):
            with open(os.path.join(self.path, "runs.jsonl")) as f:
                for line in f:
                    with contextlib.suppress(ValueError):  # a line a kill cut short
                        records.append(json.loads(line))
        starts = [r for r in records if r.get("event") == "start"]
        if not starts:
            raise SystemExit(
                f"Nothing to replay: {self.path} holds no run's start (runs.jsonl)."
            )
        # The network's fingerprint is checked when the checkpoint restores.
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        self.check_setup({**SETUP, "weights": saved.get("weights")}, "replay")
        ends = [r for r in records if r.get("event") == "end"]
        saved = [
            int(path.rsplit("-", 1)[1])
            for path in checkpoint_paths(self.checkpoints, repair=False)
        ]
        # Counted in updates: the environment steps of the ends and checkpoints.
        reached = [
            update_of(r["nan_step"]) if "nan_step" in r else updates_at(r["step"])
            for r in ends
        ]
        reached += [updates_at(step) for step in saved]
        flags = {}
        # Not the run's --deterministic: TensorFlow's deterministic sparse cross-entropy makes a
        # NaN for each label out of range, kept for those alone, and the replayed step's check
        # would stop at it. Its values without it are the run's within rounding.
        flags["init_from"] = starts[0]["flags"].get("init_from")
        return max([*reached, 0]), flags

    def checkpoint_before(self, step):
        """replay: the newest checkpoint of a step before `step` (None: none is left)."""
        paths = checkpoint_paths(self.checkpoints, repair=False)
        before = [path for path in paths if int(path.rsplit("-", 1)[1]) < step]
        return before[-1] if before else None

    def link_checkpoint(self, path, directory):
        """replay: `path` as the one checkpoint of `directory`: its files hard-linked (copied
        where the file system cannot link; TensorFlow never writes into a checkpoint's files),
        setup.json copied."""
        os.makedirs(directory)
        for file in glob.glob(path + ".*"):
            target = os.path.join(directory, os.path.basename(file))
            try:
                os.link(file, target)
            except OSError:
                shutil.copyfile(file, target)
        shutil.copyfile(
            os.path.join(self.checkpoints, "setup.json"),
            os.path.join(directory, "setup.json"),
        )
        name = os.path.basename(path)
        with open(os.path.join(directory, "checkpoint"), "w") as f:
            f.write(
                f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n'
            )

    def write_batch(self, update, rollout):
        """debug/update-<update>/rollout.npz: the rollout the update trained on. Returns the
        folder."""
        folder = os.path.join(self.path, "debug", f"update-{update}")
        parts = rollout
        arrays = {
            "/".join(map(str, path)): np.asarray(v)
            for path, v in keras.tree.flatten_with_path(parts)
        }
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "rollout.npz")
        with open(
            path + ".partial", "wb"
        ) as f:  # written aside, then renamed: whole or not at all
            np.savez(f, **arrays)
        os.replace(path + ".partial", path)
        return folder

    def start(self, step, nonfinite_step, total_steps, values, strategy):
        """Writes the run's start record to runs.jsonl (main() writes its end record), once the
        updates it trains are known to hold those --profile names, and starts the progress bar
        (`values`: the means the run logs, which replay prints)."""
        self.step, self.nonfinite_step = step, nonfinite_step
        self.bounds, self.call, self.train_values = (), None, values
        self.start_progress(int(step.numpy()), total_steps)
        # --profile and replay count updates.
        done, total_steps = updates_at(int(step.numpy())), updates_at(total_steps)
        if self.args.profile:
            first, last = self.args.profile
            if done >= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run is at update {done} of {total_steps}, "
                    "with none left to trace"
                )
            if not done < first <= last <= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run trains updates {done + 1} to {total_steps}; "
                    "give START:STOP within them"
                )
            self.bounds = (first - 1, last)
        # Schedulers (Slurm, Kubernetes, spot VMs) preempt with SIGTERM, then SIGKILL after a
        # grace period: the loop ends its train_loop call, saves a checkpoint and exits.
        # A worker's own SIGTERM is its vote (see train()): the workers stop together.
        self.sigterm = False
        signal.signal(
            signal.SIGTERM, lambda signum, frame: setattr(self, "sigterm", True)
        )
        if not self.chief:
            return
        rendered, current = script_checksums()
        self.run = os.urandom(4).hex()
        # fmt: off
        self.append("runs.jsonl", {
            "event": "start", "run": self.run, "time": now(), **RENDERED_FROM,
            "script": os.path.abspath(__file__), "script_sha256": current,
            "script_edited": current != rendered, "command": sys.argv, "flags": vars(self.args),
            "python": sys.version.split()[0], "tensorflow": tf.__version__,
            "keras": keras.__version__, "host": socket.gethostname(), "pid": os.getpid(),
            "strategy": 'MultiWorkerMirroredStrategy',
            "replicas": strategy.num_replicas_in_sync,
            "devices": [device.name for device in tf.config.list_logical_devices()],
            "cluster": strategy.cluster_resolver.cluster_spec().as_dict(),
            "resumed_from": self.resumed_from, "init_from": self.init_from, "step": int(step.numpy()),
        })
        # fmt: on

    def writer(self, split):
        """The TensorBoard writer of logs/<split>: tensorboard --logdir <output-dir>/logs."""
        if split not in self.writers:
            logdir = os.path.join(self.path, "logs", split)
            # Only the chief writes summaries.
            writer = tf.summary.create_file_writer(logdir) if self.chief else None
            self.writers[split] = writer or tf.summary.create_noop_writer()
        return self.writers[split]

    def start_progress(self, first_step, end_step):
        """Starts the progress bar, in environment steps, and the throughput timer (it runs
        from log point to log point)."""
        self.progbar = keras.utils.Progbar(
            end_step, stateless_metrics=(), verbose=int(self.chief)
        )
        self.progbar.update(first_step)
        self.epoch_start, self.timer = 0, (time.perf_counter(), first_step)

    def log(self, split, step, values):
        """Writes logged values: to TensorBoard, and to metrics.jsonl with the
        validation values named apart (val_loss, val_...), which are also printed."""
        if split == "train":
            # Timed after the values were read, which waited for the device.
            start, start_step = self.timer
            self.timer = time.perf_counter(), step
            values["steps_per_second"] = (step - start_step) / (self.timer[0] - start)
            self.progbar.update(step - self.epoch_start, list(values.items()))
        with self.writer(split).as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)
        if not self.chief:
            return
        prefix = "val_" if split == "validation" else ""
        values = {prefix + name: value for name, value in values.items()}
        record = {"step": step, **values}
        self.append("metrics.jsonl", record)

    @contextlib.contextmanager
    def debugged(self, first_step, num_steps, rollout=None):
        """Update first_step + 1 (num_steps: 1): --profile START:STOP has TensorFlow's profiler
        trace those updates into logs/profile (TensorBoard's Profile tab); replay watches its.
        """
        self.call = first_step + 1  # what --check-numerics's NaN stopped
        if self.args.step == first_step + 1:  # replay: step N, alone (see bound)
            networks = {
                "model": self.checkpoint.model,
                "value_network": self.checkpoint.value_network,
            }
            optimizers = [self.checkpoint.optimizer]
            with replayed(self.args.step, networks, optimizers, self.train_values):
                yield
            return
        first, last = self.args.profile or (0, 0)
        if first_step + 1 == first:
            tf.profiler.experimental.start(os.path.join(self.path, "logs", "profile"))
        # Marks the update in a trace (nothing when the profiler is not running).
        with tf.profiler.experimental.Trace("train", step_num=first_step + 1, _r=1):
            yield
        if first_step + num_steps == last:
            tf.profiler.experimental.stop()
            print()  # after the progress bar's line
            print(
                f"--profile: updates {first} to {last} traced into {os.path.join(self.path, 'logs', 'profile')}"
            )
        if (
            rollout is not None
        ):  # stopped at once, with the rollout, if its loss was not finite
            self.stop_if_diverged(rollout)

    def stop_if_diverged(self, rollout=None):
        """Ends the run at a NaN or Inf loss, before a checkpoint saves the weights it ruined
        (`rollout`: the one the update trained on, kept in debug/)."""
        if int(self.nonfinite_step.numpy()) >= 0:
            update = update_of(int(self.nonfinite_step.numpy()))
            raise SystemExit(
                self.diverged(update, "The loss became NaN or Inf", rollout=rollout)
            )

    def diverged(self, update, what, detail="", rollout=None):
        """What to say of a NaN or Inf at update `update` (its rollout, if given, goes into
        debug/update-<update>/)."""
        print()  # after the progress bar's line
        if self.args.step:  # replaying: an update before the one asked for
            return f"{what} at update {update}, before update {self.args.step}: replay --step {update}"
        if rollout is not None:
            kept = (
                f"The rollout it trained on is in {self.write_batch(update, rollout)}"
            )
        else:
            kept = "Replay makes its batch again from the checkpoint before it"
        command = (
            f"python {sys.argv[0]} replay --step {update} --output-dir {self.path}"
        )
        return (
            f"{what} at update {update} (environment step {step_of_update(update)}): stopped "
            f"without saving (newest checkpoint: {self.manager.latest_checkpoint or 'none yet'})."
            f"{detail}\n{kept}; replay the update, eagerly with every op checked:\n  {command}\n"
            "Lower the learning rate, clip the gradients, or look for NaN in the observations."
        )

    def nonfinite(self, error):
        """--check-numerics: what to say of the error of an op that made a NaN or Inf; None for
        another error."""
        found = nonfinite_op(error)
        if found is None:
            return None
        return self.diverged(self.call, "A NaN or Inf", f"\nThe first: {found}")

    def save(self, step):
        """Saves a checkpoint. One the disk cannot hold whole is removed again: the newest
        checkpoint on disk always restores."""
        self.stop_if_diverged()
        try:
            self.manager.save(checkpoint_number=step)
        except BaseException:
            self.remove_partial_checkpoints(self.manager.directory)
            raise
        self.saved = step

    def remove_partial_checkpoints(self, directory):
        """Removes what a save cut short left behind (a full disk, a kill): its _temp directory,
        the files of a checkpoint that the `checkpoint` file does not list, and that file's
        checkpoint.tmp<hex> copy (TensorFlow writes it there, then renames it)."""
        state = tf.train.get_checkpoint_state(directory)
        listed = (
            [os.path.basename(path) for path in state.all_model_checkpoint_paths]
            if state
            else []
        )
        for path in glob.glob(os.path.join(directory, "ckpt-*")):
            if re.match(r"ckpt-\d+", os.path.basename(path)).group(0) not in listed:
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        for path in glob.glob(os.path.join(directory, "checkpoint.tmp*")):
            os.remove(path)
            print(f"Removed {path}: the state file of a save that was cut short")

    def finish(self, step):
        """Saves where training stopped, if no checkpoint is there yet (mid-epoch after
        --max-steps or a SIGTERM, or off the cadence), so that the next run continues from there; after a SIGTERM, exits.
        """
        if self.saved != step:
            self.save(step)
        if self.preempted:
            print(
                f"Stopped by SIGTERM at step {step}; saved {self.manager.latest_checkpoint}."
            )
            raise SystemExit(128 + signal.SIGTERM)  # the status of a SIGTERM death

    def end(self, error=None):
        """Writes the run's end record: finished, sigterm, nan, or error (with its traceback).
        A run killed outright leaves a start record without an end."""
        if self.run is None:  # never started: refused, or stopped before training
            return self.undo() if isinstance(error, SystemExit) else None
        record = {
            "event": "end",
            "run": self.run,
            "time": now(),
            "step": int(self.step.numpy()),
        }
        if error is None:
            record["exit"] = "finished"
        elif isinstance(error, SystemExit) and error.code == 128 + signal.SIGTERM:
            record["exit"] = "sigterm"
        elif int(self.nonfinite_step.numpy()) >= 0:
            record.update(exit="nan", nan_step=int(self.nonfinite_step.numpy()))
        elif nonfinite_op(error):  # --check-numerics
            record.update(
                exit="nan", nan_step=step_of_update(self.call), op=nonfinite_op(error)
            )
        else:
            record.update(exit="error", error=f"{type(error).__name__}: {error}")
            record["traceback"] = "".join(traceback.format_exception(error))
        try:
            self.append("runs.jsonl", record)
        except OSError as failure:  # the disk that ended the run may refuse this too
            path = os.path.join(self.path, "runs.jsonl")
            print(
                f"Cannot write the end record to {path}: {failure.strerror}",
                file=sys.stderr,
            )

    def forget_logged_after(self, step):
        """Drops the logged records of the steps after `step`, where training goes on: a run
        killed after its last checkpoint logged steps that this run logs again (TensorBoard,
        too, purges the events past a restart). A file is rewritten whole: aside, then renamed
        over it."""
        if not self.chief:
            return
        # Each record starts with its step: {"step": 7, ... in metrics.jsonl, 7,... in metrics.csv.
        for name, pattern in [
            ("metrics.jsonl", r'\{"step": (\d+),'),
        ]:
            path = os.path.join(self.path, name)
            if not os.path.exists(path):
                continue
            with open(path, newline="") as f:
                lines = f.readlines()
            header = 1 if name == "metrics.csv" else 0  # the CSV's column names stay
            # A line whose step cannot be read is a record cut short: it goes too.
            kept = lines[:header] + [
                line
                for line in lines[header:]
                if (found := re.match(pattern, line)) and int(found[1]) <= step
            ]
            if len(kept) == len(lines):
                continue
            with writing(path + ".tmp"), open(path + ".tmp", "w", newline="") as f:
                f.writelines(kept)
            os.replace(path + ".tmp", path)
            dropped = len(lines) - len(kept)
            print(
                f"Dropped from {path} its {dropped} records after step {step}: logged again"
            )

    def undo(self):
        """A run refused before it started (a --profile range, another setup's checkpoints, ...)
        leaves the directory as it was: the setup.json it wrote and the directory it made go
        again, and run.lock says what it said. What cannot be undone stays."""
        with contextlib.suppress(OSError):
            self.remove_what_it_made()

    def remove_what_it_made(self):
        if getattr(self, "wrote_setup", False):
            os.remove(os.path.join(self.checkpoints, "setup.json"))
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.checkpoints)
        lock_text = getattr(self, "lock_text", False)
        if lock_text is None:
            os.remove(self.lock_file.name)
        elif lock_text:
            with open(self.lock_file.name, "w") as f:
                f.write(lock_text)
        if getattr(self, "made", False):
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.path)

    def append(self, name, record):
        """Appends a JSON line, whole or not at all (a full disk would leave part of it), on a
        line of its own: a line an earlier run left cut short stays apart, and readers skip it
        (jq -R 'fromjson?')."""
        # Strict JSON has no NaN or Infinity (jq and JavaScript refuse them): such a value is
        # null, and "nonfinite" says which it was (a NaN is not less than inf either).
        nonfinite = {
            k: json.dumps(v)
            for k, v in record.items()
            if isinstance(v, float) and not abs(v) < float("inf")
        }
        if nonfinite:
            record = {**record, **dict.fromkeys(nonfinite), "nonfinite": nonfinite}
        line = (json.dumps(record) + "\n").encode()
        # Unbuffered: a buffered file's truncate() flushes first, and fails again on a full disk.
        with open(os.path.join(self.path, name), "ab+", buffering=0) as f:
            end = f.seek(0, os.SEEK_END)
            if end:  # a line cut short (a kill mid-write) must not swallow this record
                f.seek(end - 1)
                line = line if f.read(1) == b"\n" else b"\n" + line
            try:
                while line:  # a full disk may take part of it, then refuse the rest
                    line = line[f.write(line) :]
            except OSError as error:
                f.truncate(end)
                error.filename = f.name  # os-level write errors name no file
                raise

    def fault(self, error):
        """What to say when the machine failed the run: a full disk, a directory it may not
        write, a path that is not what it should be. None for other errors (their traceback,
        on stderr, says more)."""
        if isinstance(error, OSError) and error.errno in MACHINE_FAULTS:
            # A write that names no file (see writing()): at least the directory it was in.
            path, code = error.filename or f"into {self.path}", error.errno
        else:  # TensorFlow's file errors say "<path>; <the system's words> [Op:...]"
            words = {os.strerror(code): code for code in MACHINE_FAULTS}
            found = isinstance(error, tf.errors.OpError) and re.search(
                r"([^\s;{}]+); (" + "|".join(words) + ")", error.message
            )
            if not found:
                return None
            # The file being written, not TensorFlow's temporary name for it.
            path = re.sub(
                r"(_temp|\.tempstate\d+|\.tmp[0-9a-f]*)(/.*)?$", "", found.group(1)
            )
            code = words[found.group(2)]
        what, fix = MACHINE_FAULTS[code]
        stopped = f"Stopped: cannot write {path} ({os.strerror(code)}). {what}"
        # Room to make (the same directory will do then), or another place to write.
        room = code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        state = os.path.isdir(self.checkpoints) and tf.train.get_checkpoint_state(
            self.checkpoints
        )
        if state:
            newest = state.model_checkpoint_path
            step = newest.rsplit("-", 1)[1]
            intact = f"The newest checkpoint, {newest} (step {step}), is intact"
            if room:
                return (
                    f"{stopped}: {fix}.\n{intact}: once there is room, run the script again "
                    "with the same --output-dir to resume."
                )
            return (
                f"{stopped}.\n{intact}: to resume from it, run the script again with the same "
                f"--output-dir once it can be written, or copy {self.path} to a place that can "
                "and pass that as --output-dir."
            )
        if self.run and room:
            return (
                f"{stopped}: {fix}.\nNo checkpoint was saved yet: once there is room, run the "
                "script again."
            )
        return f"{stopped}: {fix}."


@contextlib.contextmanager
def writing(path):
    """Names `path` in the error of a write to it: the system's write errors (a full disk, a
    file size limit) name no file, and fault() would not know what could not be written.
    """
    try:
        yield
    except OSError as error:
        error.filename = error.filename or path
        raise


def now():
    """Local time with its UTC offset, to the second: 2026-11-23T14:05:09+0100."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def script_checksums():
    """The checksum the header records (loopgen's render) and that of the text now, computed
    as loopgen does (the field zeroed): they differ once the script is edited by hand.
    """
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"script sha256 ([0-9a-f]{16})", text)
    if found:
        text = text[: found.start(1)] + "0" * 16 + text[found.end(1) :]
    return found and found.group(1), hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def written_whole(directory):
    """A directory written whole or not at all: the files go into <directory>.partial, which
    replaces `directory` once all are written (a full disk leaves no half export behind). The
    two are exchanged in one step where the system can (a server polling `directory` never
    finds it missing), else in two renames, the old one aside to <directory>.old and the new
    one into place (a kill between them leaves <directory>.old: settle_whole() puts it back).
    Then the old one is removed."""
    partial, old = directory + ".partial", directory + ".old"
    settle_whole(directory)
    try:
        with writing(partial):
            os.makedirs(partial)  # a .keras file alone (no SavedModel) needs it made
            yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if os.path.exists(directory):
        if exchange(partial, directory):
            shutil.rmtree(partial, ignore_errors=True)  # the old one, now
            return
        os.rename(directory, old)
    os.rename(partial, directory)
    shutil.rmtree(old, ignore_errors=True)  # settle_whole() removes what is left


def exchange(a, b):
    """Swaps paths `a` and `b` in one step (Linux's renameat2 with RENAME_EXCHANGE); False
    where the system or its file system cannot, an OSError where it fails otherwise."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, rename_exchange = -100, 2  # paths relative to the working directory
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), a, None, b)


def settle_whole(directory):
    """Undoes what a kill in written_whole() left: a <directory>.partial (never finished, or
    the old one exchanged out of place), and a <directory>.old, which is put back if the kill
    came before the new one was in place."""
    partial, old = directory + ".partial", directory + ".old"
    if os.path.exists(old) and not os.path.exists(directory):
        os.rename(old, directory)
        print(f"Put back {directory}: a replacement of it was cut short")
    for leftover in (partial, old):
        if os.path.exists(leftover):
            shutil.rmtree(leftover)
            print(f"Removed {leftover}: left by an interrupted export")


def checkpoint_paths(directory, repair=True):
    """The checkpoints in `directory`, oldest first, as its `checkpoint` file (TensorFlow's
    CheckpointState) lists them. A damaged one would make the run start over and overwrite
    them: then they are found from the ckpt-<step>.index files, and it is rewritten."""
    state_file = os.path.join(directory, "checkpoint")
    try:  # TensorFlow only warns of text it cannot parse, and returns None
        state = tf.train.get_checkpoint_state(directory)
    except (UnicodeDecodeError, ValueError):  # binary garbage; an emptied file
        state = None
    if state or not os.path.exists(state_file):
        return list(state.all_model_checkpoint_paths) if state else []
    steps = sorted(
        int(name[5:-6])
        for name in os.listdir(directory)
        if re.fullmatch(r"ckpt-\d+\.index", name)
    )
    names = [f"ckpt-{step}" for step in steps]
    if repair and names:
        # The CheckpointManager keeps (and later deletes) only the checkpoints saved after
        # last_preserved_timestamp: their save times, from the files.
        saved = [
            os.path.getmtime(os.path.join(directory, f"{name}.index")) for name in names
        ]
        lines = [f'model_checkpoint_path: "{names[-1]}"']
        lines += [f'all_model_checkpoint_paths: "{name}"' for name in names]
        lines += [f"all_model_checkpoint_timestamps: {when!r}" for when in saved]
        lines.append(f"last_preserved_timestamp: {min(saved) - 1!r}")
        # Written aside, then renamed: never a half-written state file.
        with open(state_file + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(state_file + ".tmp", state_file)
    elif repair:
        os.remove(state_file)  # it lists nothing: no checkpoint was saved whole
    if repair:
        found = ", ".join(names) or "none"
        print(f"{state_file} was damaged: rebuilt from the checkpoint files ({found})")
    return [os.path.join(directory, name) for name in names]


def checkpoint_damage(error):
    """What the error of a checkpoint that does not restore says of its files."""
    # std::bad_alloc: a garbled index file gave a size of terabytes to read.
    if isinstance(error, MemoryError):
        return (
            "its index file is damaged (reading it asked for more memory than there is)"
        )
    return f"its files are damaged or are no checkpoint's ({type(error).__name__}: {error})"


def restore_whole(checkpoint, path):
    """Restores every object of `checkpoint` from `path` (what else the file holds is left),
    but the running means, which a checkpoint written before they were saved lacks: they
    start at zero then."""
    restored = checkpoint.restore(path).expect_partial()
    saved = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
    if hasattr(checkpoint, "train_values") and "train_values" not in saved:
        return print(
            f"{path} holds no running means (an older script's): they start at 0"
        )
    restored.assert_existing_objects_matched()


def data_record(environments):
    """The environment is in SETUP (data.id, data.num_envs, ...): no data to record."""
    return None


def weights_fingerprint(*networks):
    """sha256 of the name, shape and dtype of every weight: a hand edit of the network in this
    script changes it, where the spec sections in SETUP cannot see one."""
    weights = [
        [w.name, list(w.shape), str(w.dtype)] for net in networks for w in net.weights
    ]
    return hashlib.sha256(json.dumps(weights).encode()).hexdigest()[:16]


def load_weights(source, **networks):
    """--init-from: the networks' weights from the newest checkpoint in `source` (another run's
    output directory), not its optimizer, step or data position. Returns its path."""
    path = tf.train.latest_checkpoint(os.path.join(source, "checkpoints"))
    path = path or tf.train.latest_checkpoint(source)  # the checkpoints folder itself
    if path is None:
        raise SystemExit(
            f"--init-from {source}: no checkpoint in {os.path.join(source, 'checkpoints')}. "
            "Give the --output-dir of a run that saved one."
        )
    try:
        status = tf.train.Checkpoint(**networks).restore(path)
        status.assert_existing_objects_matched().expect_partial()
    except Exception as error:  # another network: ValueError, AssertionError, ...
        raise SystemExit(
            f"--init-from {source}: cannot load {path} into this network "
            f"({type(error).__name__}: {error}). Both runs need the same network."
        ) from None
    print(f"Starting from the weights of {path}")
    return path


def is_chief(cluster_resolver):
    """Whether this worker is the chief: the `chief` task when TF_CONFIG has one, else worker 0
    (or the only process, when there is no TF_CONFIG)."""
    task_type, task_id = cluster_resolver.task_type, cluster_resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    has_chief = "chief" in cluster_resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def main(argv=None):
    """Trains (or evaluates), and records in runs.jsonl how the run ended: finished, stopped
    by SIGTERM or a NaN loss, or an error. When the machine failed it (a full disk, ...), says
    so in a few lines: the traceback is in runs.jsonl."""
    args = parse_args(argv)  # the debugging flags checked too
    if args.fast_dev_run:
        return fast_dev_run(args)
    if args.command == "replay":
        return replay(args)
    run = RunDirectory(args)
    try:
        train(args, run)
    except BaseException as error:  # SystemExit and KeyboardInterrupt too
        run.end(error)
        message = run.fault(error) or run.nonfinite(error)
        if message is None:
            raise
        raise SystemExit(message) from None
    run.end()


if __name__ == "__main__":
    main()
