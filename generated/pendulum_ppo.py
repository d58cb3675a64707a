"""Swing Pendulum-v1 up with PPO's Gaussian policy.

Written by loopgen 0.1.0 from examples/pendulum_ppo.py
(spec sha256 fa01710ff75bbdb8, script sha256 5a7014d3c5fa7c21).
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Run it again to resume from the latest checkpoint.
"""

import argparse
import os
import pickle
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

SEED = 1
ENV_ID = "Pendulum-v1"
NUM_ENVS = 4  # copies of the environment, stepped together
OBSERVATION_SHAPE = (3,)
# The bounds of the environment's actions.
ACTION_LOW = (-2.0,)
ACTION_HIGH = (2.0,)
# Environment steps to train, over all sub-environments (--max-steps stops sooner).
TOTAL_STEPS = 100000
ROLLOUT_STEPS = 256  # steps in each sub-environment per update
ROLLOUT_SIZE = NUM_ENVS * ROLLOUT_STEPS  # transitions per update
MINIBATCHES = 16
MINIBATCH_SIZE = ROLLOUT_SIZE // MINIBATCHES
UPDATE_EPOCHS = 10  # passes over each rollout
GAMMA = 0.9
GAE_LAMBDA = 0.95
CLIP = 0.2  # the probability ratio is clipped to 1 +- CLIP
ENTROPY_COEF = 0.0
VALUE_COEF = 0.5
MAX_GRAD_NORM = 0.5
LEARNING_RATE = 0.001  # annealed linearly to 0 over TOTAL_STEPS
ACTION_DIM = 1
INITIAL_LOG_STD = 0.0
LOG_EVERY_STEPS = 8192
CHECKPOINT_EVERY_STEPS = 16384
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/pendulum_ppo"


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


class Environments(tf.train.experimental.PythonState):
    """The sub-environments as the policy acts in them: the observations the next step acts
    on, each episode's return and length so far, and the episodes finished since the last
    log. The checkpoint keeps all of it, the environments' own state too (their physics,
    step counts, random generators), pickled: a resumed run continues the same episodes.
    """

    def __init__(self):
        self.envs, self.observations = make_envs(NUM_ENVS)
        self.returns = np.zeros(NUM_ENVS)
        self.lengths = np.zeros(NUM_ENVS, np.int64)
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
            self.finished.append((i, float(self.returns[i]), int(self.lengths[i])))
            self.returns[i], self.lengths[i] = 0, 0
        self.observations = observations
        return reached, rewards.astype(np.float32), terminated, truncated

    def episodes(self):
        """The mean return and length of the episodes finished since the last call ({} if
        none), for the log."""
        finished, self.finished = self.finished, []
        if not finished:
            return {}
        _, returns, lengths = np.array(finished).T
        return {
            "episode_return": float(returns.mean()),
            "episode_length": float(lengths.mean()),
            "episodes": len(finished),
        }

    def serialize(self):
        state = {
            name: getattr(self, name) for name in ["observations", "returns", "lengths"]
        }
        # By sub-environment, as several workers save them: one state for every strategy.
        finished = sorted(self.finished, key=lambda episode: episode[0])
        return pickle.dumps({**state, "finished": finished, "envs": self.envs.envs})

    def deserialize(self, data):
        state = pickle.loads(data)
        self.envs.envs = state.pop("envs")
        # A checkpoint of an earlier render kept (return, length) alone.
        state["finished"] = [e if len(e) == 3 else (0, *e) for e in state["finished"]]
        self.__dict__.update(state)


def build_model():
    """The policy: observations to the mean action (LOG_STD, learnt, is its spread)."""
    return keras.Sequential(
        [
            keras.Input(shape=(3,)),
            layers.Dense(64, activation="tanh"),
            layers.Dense(64, activation="tanh"),
            layers.Dense(1, name="mean_torque"),
        ],
        name="pendulum_ppo",
    )


def build_value_network():
    """The value function: observations to one value each (training.value)."""
    return keras.Sequential(
        [
            keras.Input(shape=(3,)),
            layers.Dense(64, activation="tanh"),
            layers.Dense(64, activation="tanh"),
            layers.Dense(1, name="value"),
        ],
        name="value",
    )


class ObservationStatistics(tf.Module):
    """The running mean and variance of the observations seen (Gymnasium's
    NormalizeObservation), by which the networks' inputs are normalized and clipped to +-10.
    In the checkpoint and the export: a resumed run and the served model normalize as
    training did."""

    def __init__(self):
        self.mean = tf.Variable(
            tf.zeros(OBSERVATION_SHAPE, tf.float64), trainable=False
        )
        self.var = tf.Variable(tf.ones(OBSERVATION_SHAPE, tf.float64), trainable=False)
        self.count = tf.Variable(1e-4, dtype=tf.float64, trainable=False)

    def update(self, observations):
        """Adds a batch of observations (Chan et al.'s parallel update of mean and variance)."""
        mean, var, count = self.mean.numpy(), self.var.numpy(), self.count.numpy()
        batch_mean, batch_var, batch_count = (
            observations.mean(0),
            observations.var(0),
            len(observations),
        )
        total = count + batch_count
        delta = batch_mean - mean
        self.mean.assign(mean + delta * batch_count / total)
        squares = (
            var * count
            + batch_var * batch_count
            + delta**2 * count * batch_count / total
        )
        self.var.assign(squares / total)
        self.count.assign(total)

    def __call__(self, observations):
        normalized = (tf.cast(observations, tf.float64) - self.mean) / tf.sqrt(
            self.var + 1e-8
        )
        return tf.cast(tf.clip_by_value(normalized, -10.0, 10.0), tf.float32)


def log_probability(mean, log_std, actions):
    """log pi(action | observation) of a diagonal Gaussian policy."""
    z = (actions - mean) / tf.exp(log_std)
    return tf.reduce_sum(
        -0.5 * tf.square(z) - log_std - 0.5 * np.log(2 * np.pi), axis=-1
    )


def entropy(mean, log_std):
    """The entropy of the diagonal Gaussian policy, per observation."""
    per_dimension = log_std + 0.5 * np.log(2 * np.pi * np.e)
    return tf.reduce_sum(per_dimension, axis=-1) + tf.zeros(tf.shape(mean)[:1])


def advantages_and_returns(rewards, values, ended, last_values):
    """GAE(lambda), by a reverse pass over the rollout ([ROLLOUT_STEPS, NUM_ENVS] arrays):
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


def collect(environments, act, log_probs_and_values, value_of, first_step, statistics):
    """One rollout: ROLLOUT_STEPS steps in every sub-environment with the policy of `act`,
    then log_probs_and_values() of all its steps, its advantages and returns (value_of()
    estimates what follows a cut episode and the rollout's end): what the update needs,
    ROLLOUT_SIZE transitions in the order (step, sub-environment)."""
    observations, actions, rewards, ended = [], [], [], []
    # The seed of each step, (SEED, step), made for the whole rollout at once.
    seeds = tf.unstack(
        tf.constant(
            [[SEED, first_step + t * NUM_ENVS] for t in range(ROLLOUT_STEPS)], tf.int64
        )
    )
    for t in range(ROLLOUT_STEPS):
        # Tensors: act() would convert NumPy arrays itself, more slowly.
        statistics.update(environments.observations)
        observations.append(statistics(environments.observations))
        actions.append(act(observations[t], seeds[t]).numpy())
        # The environment takes actions within its bounds; the update, the ones sampled.
        bounded = np.clip(actions[t], ACTION_LOW, ACTION_HIGH)
        reached, reward, terminated, truncated = environments.step(bounded)
        # Truncation (a time limit) stops an episode whose task goes on: its return
        # continues past the cut, estimated by the value of the observation reached.
        # Termination ends the task: nothing follows.
        cut = truncated & ~terminated
        if cut.any():
            reward[cut] += GAMMA * value_of(statistics(reached[cut])).numpy()
        rewards.append(reward)
        ended.append((terminated | truncated).astype(np.float32))
    # [ROLLOUT_STEPS, NUM_ENVS, ...] arrays.
    rollout = {"observations": np.stack(observations), "actions": np.stack(actions)}
    # The networks did not change during the rollout: the log-probabilities and values of
    # all its steps come from one call, not one a step.
    log_probs, values = log_probs_and_values(
        rollout["observations"], rollout["actions"]
    )
    rollout.update(log_probs=log_probs.numpy(), values=values.numpy())
    last_values = value_of(statistics(environments.observations)).numpy()
    advantages, returns = advantages_and_returns(
        np.stack(rewards), rollout["values"], np.stack(ended), last_values
    )
    rollout.update(advantages=advantages, returns=returns)
    # One batch of ROLLOUT_SIZE transitions, in the order (step, sub-environment).
    return {
        key: value.reshape((ROLLOUT_SIZE, *value.shape[2:]))
        for key, value in rollout.items()
    }


def ppo_loss(log_probs, entropies, values, batch):
    """PPO's loss on a minibatch, from the policy's log-probabilities of the actions taken
    and its entropies, and the values, as the networks being trained give them; `batch`
    holds what the rollout recorded. Returns the loss and its parts, for the log."""
    log_ratio = log_probs - batch["log_probs"]
    ratio = tf.exp(log_ratio)
    advantages = batch["advantages"]
    advantages = (advantages - tf.reduce_mean(advantages)) / (
        tf.math.reduce_std(advantages) + 1e-8
    )
    # The clipped surrogate: the ratio may move the loss only within 1 +- CLIP.
    clipped_ratio = tf.clip_by_value(ratio, 1 - CLIP, 1 + CLIP)
    policy_loss = tf.reduce_mean(
        tf.maximum(-advantages * ratio, -advantages * clipped_ratio)
    )
    returns = batch["returns"]
    value_loss = 0.5 * tf.reduce_mean(tf.square(values - returns))
    entropy_bonus = tf.reduce_mean(entropies)
    loss = policy_loss - ENTROPY_COEF * entropy_bonus + VALUE_COEF * value_loss
    # How far the policy moved (http://joschu.net/blog/kl-approx.html), and how often the
    # ratio was clipped.
    approx_kl = tf.reduce_mean((ratio - 1) - log_ratio)
    clip_fraction = tf.reduce_mean(tf.cast(tf.abs(ratio - 1) > CLIP, tf.float32))
    return loss, [policy_loss, value_loss, entropy_bonus, approx_kl, clip_fraction]


def train(args, run):
    """The run, from the seeds to the export; main() records how it ends."""
    # Seeds Python, NumPy, TensorFlow and Keras at once: the same initial weights on every
    # run. The actions and minibatches draw from seeds of (SEED, step) alone.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    run.lock()  # one run at a time in the output directory

    # --- Environment ------------------------------------------------------------------
    environments = Environments()

    # --- Networks, optimizer, values logged -------------------------------------------
    model = build_model()
    value_network = build_value_network()
    model.summary()
    value_network.summary()
    statistics = ObservationStatistics()
    # The policy's spread, one log standard deviation per action dimension, learnt with it.
    log_std = tf.Variable(tf.fill([ACTION_DIM], INITIAL_LOG_STD), name="log_std")
    policy_variables = [*model.trainable_variables, log_std]
    trainable = policy_variables + value_network.trainable_variables
    optimizer = keras.optimizers.Adam(learning_rate=0.001)
    optimizer.build(trainable)
    # Counts environment steps over all sub-environments: checkpointed, it fixes the update,
    # the learning rate and every seed.
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
    nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

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
        mean = model(observations)
        noise = tf.random.stateless_normal(tf.shape(mean), seed)
        return mean + tf.exp(log_std) * noise

    # Called at every step: its one trace, called directly, skips tf.function's search
    # for the trace that matches the arguments, a third of a call this small (measured).
    act = act.get_concrete_function(
        tf.TensorSpec((NUM_ENVS, *OBSERVATION_SHAPE), tf.float32),
        tf.TensorSpec([2], tf.int64),
    )

    @tf.function
    def log_probs_and_values(observations, actions):
        """The policy's log-probabilities of a rollout's actions and the values of its
        observations ([ROLLOUT_STEPS, sub-environments] each), for the update."""
        observations = tf.reshape(observations, [-1, *OBSERVATION_SHAPE])
        actions = tf.reshape(actions, [-1, ACTION_DIM])
        log_probs = log_probability(model(observations), log_std, actions)
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
        mean = model(batch["observations"], training=True)
        log_probs = log_probability(mean, log_std, batch["actions"])
        entropies = entropy(mean, log_std)
        values = value_network(batch["observations"], training=True)[:, 0]
        return ppo_loss(log_probs, entropies, values, batch)

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
                batch = {
                    key: tf.gather(value, indices) for key, value in rollout.items()
                }
                with tf.GradientTape() as tape:
                    loss, parts = minibatch_loss(batch)
                gradients = tape.gradient(loss, trainable)
                gradients, _ = tf.clip_by_global_norm(gradients, MAX_GRAD_NORM)
                optimizer.apply_gradients(zip(gradients, trainable))
                # A NaN or Inf loss ruins the weights: note its step; no save follows.
                if nonfinite_step < 0 and not tf.math.is_finite(loss):
                    nonfinite_step.assign(first_step)
                for mean, value in zip(losses, parts):
                    mean.update_state(value)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        value_network=value_network,
        log_std=log_std,
        observation_statistics=statistics,
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
        return evaluate(model, args, run, statistics)

    # --- Training loop ----------------------------------------------------------------
    # Whole updates: a rollout is ROLLOUT_SIZE environment steps.
    total_steps = (
        TOTAL_STEPS if args.max_steps is None else min(TOTAL_STEPS, args.max_steps)
    )
    total_steps -= total_steps % ROLLOUT_SIZE
    global_step = int(step.numpy())
    run.start(step, nonfinite_step, total_steps, values=losses)
    while global_step < total_steps and not run.preempted:
        optimizer.learning_rate = LEARNING_RATE * (1 - global_step / TOTAL_STEPS)
        rollout = collect(
            environments, act, log_probs_and_values, value_of, global_step, statistics
        )
        with run.debugged(
            updates_at(global_step), 1, rollout
        ):  # the debugging flags, replay
            update(rollout, tf.constant(global_step, tf.int64))
        previous, global_step = global_step, global_step + ROLLOUT_SIZE
        step.assign(global_step)
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
    export_dir = os.path.join(args.output_dir, "export")
    export(model, value_network, log_std, statistics, export_dir)


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device);
    none of a metric that has no value yet."""
    return {
        metric.name: float(metric.result()) for metric in metrics if metric.count > 0
    }


def evaluate(model, args, run, statistics):
    """evaluate: the restored policy's mean action (no sampling), one episode in each of
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
        lambda observations: tf.clip_by_value(
            model(statistics(observations), training=False), ACTION_LOW, ACTION_HIGH
        )
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


def export(model, value_network, log_std, statistics, directory):
    """The trained policy, written whole into `directory`: saved_model/1/, the SavedModel to
    serve (TF Serving's layout), whose serving_default takes a batch of observations and
    returns "actions" (the mean action, within the action bounds), "mean" and "std"
    and "values". The observations are raw: it normalizes them with the training's statistics. It loads without this script.
    """
    observations = tf.TensorSpec(
        (None, *OBSERVATION_SHAPE), tf.float32, name="observations"
    )

    @tf.function(input_signature=[observations])
    def serve(observations):
        observations = statistics(observations)
        mean = model(observations, training=False)
        return {
            "actions": tf.clip_by_value(mean, ACTION_LOW, ACTION_HIGH),
            "mean": mean,
            "std": tf.exp(log_std) + tf.zeros_like(mean),
            "values": value_network(observations, training=False)[:, 0],
        }

    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
        served.track(value_network)
        served.log_std = log_std
        served.statistics = statistics
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
    "spec": "pendulum_ppo",
    "spec_sha256": "fa01710ff75bbdb8",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "b13abcf31a5beb8f",
    "data.kind": "environment",
    "data.id": "Pendulum-v1",
    "data.kwargs": "44136fa355b3678a",
    "data.num_envs": 4,
    "seed": SEED,
    "optimizer": "1271fbd24df771e9",
    "training": "aa9bab49aab8d785",
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
