"""Balance CartPole-v1's pole with A2C.

Written by loopgen 0.1.0 from examples/cartpole_a2c.py
(spec sha256 bcecb5b84e2215dd, script sha256 b6386203982417e8).
Rendered with: --variant multi_worker
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Strategy: MultiWorkerMirroredStrategy. Start this script on every worker, each with
TF_CONFIG naming the cluster and its own index, and the same --output-dir on
storage all workers share. Each worker steps its replicas' shares of the NUM_ENVS
sub-environments; the replicas share each gradient step's ROLLOUT_SIZE.
Run it again to resume from the latest checkpoint (written by any variant).
"""

import argparse
import os
import pickle
import shutil
import sys

try:
    import loopgen_runtime
    from loopgen_runtime import (
        execution_modes,
        fast_dev_stages,
        is_chief,
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

SEED = 1
ENV_ID = "CartPole-v1"
NUM_ENVS = 8  # copies of the environment, stepped together
OBSERVATION_SHAPE = (4,)
# Environment steps to train, over all sub-environments (--max-steps stops sooner).
TOTAL_STEPS = 500000
ROLLOUT_STEPS = 5  # steps in each sub-environment per update
ROLLOUT_SIZE = NUM_ENVS * ROLLOUT_STEPS  # transitions per update
GAMMA = 0.99
GAE_LAMBDA = 1.0  # 1: n-step returns
ENTROPY_COEF = 0.0
VALUE_COEF = 0.5
MAX_GRAD_NORM = 0.5
LOG_EVERY_STEPS = 10000
CHECKPOINT_EVERY_STEPS = 50000
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/cartpole_a2c"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # The docstring's first line as written: argparse's wrapping takes seconds on megabytes.
    parser.description = __doc__.splitlines()[0]
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
    # The commands, resuming, determinism, the lock and the debugging flags (how the run
    # executes, never what it trains): loopgen_runtime.py, before TensorFlow loads.
    return parse_run_flags(
        parser,
        argv,
        commands=["evaluate", "replay"],
        init_from=True,
        unit="updates",
        multi_worker=True,
        evaluate="evaluate a checkpoint's greedy policy on episodes seeded apart from training",
        replay="replay an update",
    )


if __name__ == "__main__":
    # Before TensorFlow loads, which takes seconds: --help answers at once, and a mistyped
    # flag stops the script at once.
    parse_args()

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers


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
        return gym.make(ENV_ID, render_mode=render_mode)

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
        reached = observations.copy()
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                reached[i] = info["final_obs"][i]
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
    return keras.Sequential(
        [
            keras.Input(shape=(4,)),
            layers.Dense(64, activation="tanh"),
            layers.Dense(64, activation="tanh"),
            layers.Dense(2, name="logits"),
        ],
        name="cartpole_a2c",
    )


def build_value_network():
    """The value function: observations to one value each (training.value)."""
    return keras.Sequential(
        [
            keras.Input(shape=(4,)),
            layers.Dense(64, activation="tanh"),
            layers.Dense(64, activation="tanh"),
            layers.Dense(1, name="value"),
        ],
        name="value",
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


def collect(environments, act, rollout_values, value_of, first_step):
    """One rollout: ROLLOUT_STEPS steps in every sub-environment with the policy of `act`,
    then rollout_values() of all its steps, its advantages and returns (value_of()
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
        observations.append(tf.constant(environments.observations, tf.float32))
        actions.append(act(observations[t], seeds[t]).numpy())
        reached, reward, terminated, truncated = environments.step(actions[t])
        # Truncation (a time limit) stops an episode whose task goes on: its return
        # continues past the cut, estimated by the value of the observation reached.
        # Termination ends the task: nothing follows.
        cut = truncated & ~terminated
        if cut.any():
            reward[cut] += GAMMA * value_of(reached[cut]).numpy()
        rewards.append(reward)
        ended.append((terminated | truncated).astype(np.float32))
    # [ROLLOUT_STEPS, this worker's sub-environments, ...] arrays.
    rollout = {"observations": np.stack(observations), "actions": np.stack(actions)}
    # The value network did not change during the rollout: the values of all its steps
    # come from one call, not one a step.
    rollout["values"] = rollout_values(rollout["observations"]).numpy()
    last_values = value_of(environments.observations).numpy()
    advantages, returns = advantages_and_returns(
        np.stack(rewards), rollout["values"], np.stack(ended), last_values
    )
    rollout.update(advantages=advantages, returns=returns)
    # [ROLLOUT_STEPS, sub-environments] arrays: the other workers' sub-environments join
    # this worker's, in their order.
    rollout = environments.cluster.gather(rollout, axis=1)
    # One batch of ROLLOUT_SIZE transitions, in the order (step, sub-environment).
    return {
        key: value.reshape((ROLLOUT_SIZE, *value.shape[2:]))
        for key, value in rollout.items()
    }


def actor_critic_loss(log_probs, entropies, values, batch):
    """A2C's loss on the rollout, from the policy's log-probabilities of the actions taken
    and its entropies, and the values, as the networks being trained give them; `batch`
    holds what the rollout recorded. The advantages are constants to it: the policy
    gradient follows them, the value its squared error towards the returns. Returns the
    loss and its parts, for the log.
    `batch` is this replica's share, its advantages normalized over the whole rollout (in
    replica_step); each mean is over the whole (ROLLOUT_SIZE): the replicas' losses add up
    to one device's."""
    advantages = batch["advantages"]
    policy_loss = -tf.reduce_sum(advantages * log_probs) / ROLLOUT_SIZE
    value_loss = tf.reduce_sum(tf.square(batch["returns"] - values)) / ROLLOUT_SIZE
    entropy_bonus = tf.reduce_sum(entropies) / ROLLOUT_SIZE
    loss = policy_loss - ENTROPY_COEF * entropy_bonus + VALUE_COEF * value_loss
    return loss, [policy_loss, value_loss, entropy_bonus]


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
    if ROLLOUT_SIZE % strategy.num_replicas_in_sync:
        raise SystemExit(
            f"ROLLOUT_SIZE ({ROLLOUT_SIZE}) cannot be shared equally by "
            f"{strategy.num_replicas_in_sync} replicas: make it a multiple of them "
            "(data.num_envs or training.rollout_steps), "
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
        optimizer = keras.optimizers.RMSprop(
            learning_rate=0.0007, rho=0.99, epsilon=1e-05
        )
        optimizer.build(trainable)
        # Counts environment steps over all sub-environments: checkpointed, it fixes the update,
        # the learning rate and every seed.
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
        nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    # Outside the scope: updated between the replicas' steps only, they need no copies.
    losses = [
        keras.metrics.Mean(name=name)
        for name in ["policy_loss", "value_loss", "entropy"]
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
        tf.TensorSpec((cluster.count, *OBSERVATION_SHAPE), tf.float32),
        tf.TensorSpec([2], tf.int64),
    )

    @tf.function
    def rollout_values(observations):
        """The values of a rollout's observations ([ROLLOUT_STEPS, sub-environments]),
        for the update.
        A worker's rollout has its own sub-environments."""
        observations = tf.reshape(observations, [-1, *OBSERVATION_SHAPE])
        return tf.reshape(value_network(observations)[:, 0], [ROLLOUT_STEPS, -1])

    @tf.function(reduce_retracing=True)
    def value_of(observations):
        """The value network's estimates (collect() bootstraps cut episodes and the
        rollout's end with them): compiled, a quarter of an eager call's time."""
        return value_network(observations)[:, 0]

    def rollout_loss(batch):
        """A2C's loss on the rollout, by the networks being trained, and its parts."""
        logits = model(batch["observations"], training=True)
        log_probs = log_probability(logits, batch["actions"])
        entropies = entropy(logits)
        values = value_network(batch["observations"], training=True)[:, 0]
        return actor_critic_loss(log_probs, entropies, values, batch)

    def replica_step(batch):
        """One replica's part of a gradient step on the rollout (every replica is given
        the whole of it): its share of the transitions, whose loss is averaged over the whole
        rollout, and the gradients summed over the replicas: one device's step."""
        context = tf.distribute.get_replica_context()
        share = ROLLOUT_SIZE // context.num_replicas_in_sync
        start = context.replica_id_in_sync_group * share
        batch = {key: value[start : start + share] for key, value in batch.items()}
        with tf.GradientTape() as tape:
            loss, parts = rollout_loss(batch)
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
        """One gradient step on the whole rollout."""
        step_on_replicas(rollout, first_step)

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
    run.start(step, nonfinite_step, total_steps, strategy, values=losses)
    while global_step < total_steps and not run.preempted:
        rollout = collect(environments, act, rollout_values, value_of, global_step)
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
        actions = greedy(observations.astype(np.float32)).numpy()
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
    serve (TF Serving's layout), whose serving_default takes a batch of observations and
    returns "actions" (the most probable action), "probabilities"
    and "values". It loads without this script."""
    observations = tf.TensorSpec(
        (None, *OBSERVATION_SHAPE), tf.float32, name="observations"
    )

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


# --- Debugging (the flags and replay: loopgen_runtime.py) ---------------------------


def fast_dev_run(args):
    """--fast-dev-run N: every stage of a run on N updates, each a run of its own in a scratch
    directory (loopgen_runtime.fast_dev_stages)."""
    n = args.fast_dev_run
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
    fast_dev_stages(args, stages, train, RunDirectory, serve=serve_once)


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


def updates_at(global_step):
    """The updates done by environment step `global_step`: one a rollout."""
    return global_step // ROLLOUT_SIZE


def step_of_update(update):
    """The environment step that update `update` (1, 2, ...) brings the run to."""
    return update * ROLLOUT_SIZE


def update_of(step):
    """The update a NaN at environment step `step` (nonfinite_step, its rollout's first) is."""
    return step // ROLLOUT_SIZE + 1


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "cartpole_a2c",
    "spec_sha256": "bcecb5b84e2215dd",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "113a7272592a39c2",
    "data.kind": "environment",
    "data.id": "CartPole-v1",
    "data.kwargs": "44136fa355b3678a",
    "data.num_envs": 8,
    "seed": SEED,
    "optimizer": "c2e1920936b0d992",
    "training": "25f4c28c314a24cc",
}


class RunDirectory(loopgen_runtime.RunDirectory):
    """The output directory, kept sound by loopgen_runtime.py: one run at a time, whole
    checkpoints of one setup, runs.jsonl and the logged values. Told here what this script's
    runs hold."""

    script, rendered_from = __file__, RENDERED_FROM
    unit = "updates"
    updates_at, step_of_update = staticmethod(updates_at), staticmethod(step_of_update)
    update_of = staticmethod(update_of)
    setup, keep_checkpoints = SETUP, KEEP_CHECKPOINTS
    readers = ("evaluate", "replay")
    multi_worker = True
    strategy = "MultiWorkerMirroredStrategy"
    preemptible = True
    replayed_networks = ("model", "value_network")
    results = staticmethod(results)


def main(argv=None):
    """Trains (or evaluates, or replays an update, or runs every stage on a few updates):
    loopgen_runtime's run_and_record() records in runs.jsonl how the run ended, and says in a
    few lines when the machine failed it (a full disk, ...)."""
    args = parse_args(argv)  # the debugging flags checked too
    if args.fast_dev_run:
        return fast_dev_run(args)
    if args.command == "replay":
        return replay(args, train, RunDirectory)
    return run_and_record(args, train, RunDirectory)


if __name__ == "__main__":
    main()
