"""Swing Pendulum-v1 up with TD3.

Written by loopgen 0.1.0 from examples/pendulum_td3.py
(spec sha256 e3b6b5d4dd6e80a4, script sha256 ffe3f706d8c59858).
A standalone TensorFlow script: edit it freely. It does not import loopgen, and
`loopgen render` merges later changes of the spec into your edits (commit the
.loopgen/ folder beside this script: it keeps the last clean render).
Run it again to resume from the latest checkpoint.
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

SEED = 1
ENV_ID = "Pendulum-v1"
NUM_ENVS = 1  # copies of the environment, stepped together
OBSERVATION_SHAPE = (3,)
# The bounds of the environment's actions.
ACTION_LOW = (-2.0,)
ACTION_HIGH = (2.0,)
# Environment steps to train, over all sub-environments (--max-steps stops sooner).
TOTAL_STEPS = 20000
ACTION_DIM = 1
BUFFER_SIZE = 200000  # transitions the replay buffer holds
BATCH_SIZE = 256  # transitions per gradient step
GAMMA = 0.98
TAU = 0.005  # the target networks move this fraction of the way at each update
LEARNING_STARTS = 10000  # environment steps of random actions first
POLICY_DELAY = 2  # critic updates per policy (and target) update
EXPLORATION_NOISE = 0.1  # std of the acting policy's noise
# Target policy smoothing: Gaussian noise on the target policy's actions, clipped.
TARGET_NOISE = 0.2
TARGET_NOISE_CLIP = 0.5
DRAW_STEPS = 1024  # vector steps whose random actions and noise are drawn at once
LOGGED = ["critic_loss", "actor_loss", "q_value"]  # besides the episodes
LOG_EVERY_STEPS = 1000
CHECKPOINT_EVERY_STEPS = 5000
KEEP_CHECKPOINTS = 3
OUTPUT_DIR = "runs/pendulum_td3"


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
        help="stop after this many environment steps (rounded down to whole steps of all NUM_ENVS sub-environments)",
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
    """The policy: observations to one value per action dimension (squashed by tanh)."""
    return keras.Sequential(
        [
            keras.Input(shape=(3,)),
            layers.Dense(400, activation="relu"),
            layers.Dense(300, activation="relu"),
            layers.Dense(1, name="torque"),
        ],
        name="pendulum_td3",
    )


def build_critic():
    """A Q-network (training.critic): an observation and an action side by side to one
    value."""
    return keras.Sequential(
        [
            keras.Input(shape=(4,)),
            layers.Dense(400, activation="relu"),
            layers.Dense(300, activation="relu"),
            layers.Dense(1, name="q_value"),
        ],
        name="critic",
    )


class ReplayBuffer(tf.train.experimental.PythonState):
    """The last BUFFER_SIZE transitions, in a ring: observation, action, reward, the
    observation reached, and whether the episode terminated there. The checkpoint keeps it
    whole: a resumed run draws its minibatches from the same transitions."""

    def __init__(self):
        self.observations = np.zeros((BUFFER_SIZE, *OBSERVATION_SHAPE), np.float32)
        self.reached = np.zeros((BUFFER_SIZE, *OBSERVATION_SHAPE), np.float32)
        self.actions = np.zeros((BUFFER_SIZE, ACTION_DIM), np.float32)  # in [-1, 1]
        self.rewards = np.zeros(BUFFER_SIZE, np.float32)
        self.terminated = np.zeros(BUFFER_SIZE, np.float32)
        self.size = self.next = 0

    def add(self, observations, actions, rewards, reached, terminated):
        slots = (self.next + np.arange(len(actions))) % BUFFER_SIZE
        self.observations[slots] = observations
        self.reached[slots] = reached
        self.actions[slots] = actions
        self.rewards[slots] = rewards
        self.terminated[slots] = terminated
        self.next = (self.next + len(actions)) % BUFFER_SIZE
        self.size = min(self.size + len(actions), BUFFER_SIZE)

    def sample(self, step):
        """BATCH_SIZE transitions drawn by a generator of (SEED, step) alone."""
        indices = np.random.default_rng([SEED, 1, step]).integers(
            self.size, size=BATCH_SIZE
        )
        return (
            self.observations[indices],
            self.actions[indices],
            self.rewards[indices],
            self.reached[indices],
            self.terminated[indices],
        )

    def serialize(self):
        arrays = [
            self.observations,
            self.reached,
            self.actions,
            self.rewards,
            self.terminated,
        ]
        return pickle.dumps(([array[: self.size] for array in arrays], self.next))

    def deserialize(self, data):
        arrays, self.next = pickle.loads(data)
        self.size = len(arrays[0])
        for array, saved in zip(
            [
                self.observations,
                self.reached,
                self.actions,
                self.rewards,
                self.terminated,
            ],
            arrays,
        ):
            array[: self.size] = saved


class Exploration:
    """The random numbers of acting: for every vector step, uniformly random actions (those
    taken before LEARNING_STARTS) and Gaussian noise (the policy's exploration), in [-1, 1]
    units. They are drawn DRAW_STEPS vector steps at a time by a generator of (SEED, block),
    so that those of a step are a function of (SEED, step) alone."""

    def __init__(self):
        self.block = None

    def at(self, global_step):
        """(random actions, noise) of the vector step at `global_step`."""
        block, row = divmod(global_step // NUM_ENVS, DRAW_STEPS)
        if block != self.block:
            random = np.random.default_rng([SEED, 0, block])
            shape = (DRAW_STEPS, NUM_ENVS, ACTION_DIM)
            self.actions = random.uniform(-1.0, 1.0, shape).astype(np.float32)
            self.noise = random.standard_normal(shape, np.float32)
            self.block = block
        return self.actions[row], self.noise[row]


def update_noise(step):
    """The Gaussian noise of the gradient step at `step`, drawn by a generator of (SEED,
    step) alone: the target policy's smoothing."""
    shape = (BATCH_SIZE, ACTION_DIM)
    return np.random.default_rng([SEED, 2, step]).standard_normal(shape, np.float32)


def to_bounds(actions):
    """The policy's actions, in [-1, 1] (a tanh), scaled to the environment's Box."""
    low, high = np.float32(ACTION_LOW), np.float32(ACTION_HIGH)
    return low + (actions + 1.0) * (high - low) / 2


def deterministic_actions(outputs):
    """The policy's action without noise (the tanh of its output), scaled to the
    environment's Box: what evaluate plays and the export serves."""
    return to_bounds(tf.tanh(outputs))


def smaller_value(critics, observations, actions):
    """The smallest of the critics' values of `actions` (in [-1, 1]) at `observations`."""
    inputs = tf.concat([observations, actions], axis=-1)
    return tf.reduce_min(tf.stack([critic(inputs)[:, 0] for critic in critics]), axis=0)


def critic_targets(target_policy, target_critics, batch, noise):
    """The values the critics learn for `batch`: the reward, plus the discounted value of the
    observation reached unless the episode terminated there (a truncated one goes on): the
    smaller target critic's value of the target policy's action there, smoothed: plus
    `noise` times TARGET_NOISE, clipped to +-TARGET_NOISE_CLIP, the sum kept within [-1, 1].
    """
    _, _, rewards, reached, terminated = batch
    smoothing = tf.clip_by_value(
        TARGET_NOISE * noise, -TARGET_NOISE_CLIP, TARGET_NOISE_CLIP
    )
    next_actions = tf.clip_by_value(
        tf.tanh(target_policy(reached)) + smoothing, -1.0, 1.0
    )
    next_values = smaller_value(target_critics, reached, next_actions)
    return rewards + GAMMA * (1.0 - terminated) * next_values


def follow(targets, networks):
    """Moves each target network's weights TAU of the way to its network's (Polyak)."""
    for target, network in zip(targets, networks):
        for target_weight, weight in zip(target.weights, network.weights):
            target_weight.assign(TAU * weight + (1.0 - TAU) * target_weight)


def train(args, run):
    """The run, from the seeds to the export; main() records how it ends."""
    # Seeds Python, NumPy, TensorFlow and Keras at once: the same initial weights on every
    # run. The actions and minibatches draw from seeds of (SEED, step) alone.
    keras.utils.set_random_seed(SEED)
    execution_modes(args)  # --deterministic, and the debugging flags
    run.lock()  # one run at a time in the output directory

    # --- Environment and replay buffer ------------------------------------------------
    environments = Environments()
    buffer = ReplayBuffer()

    # --- Networks, optimizers, values logged ------------------------------------------
    model = build_model()
    model.summary()
    # Twin critics, each with its own initial weights; the smaller of their values is taken.
    critic_1, critic_2 = build_critic(), build_critic()
    critics = [critic_1, critic_2]
    critic_variables = [v for critic in critics for v in critic.trainable_variables]
    # Copies that follow the critics and the policy slowly (TAU): steadier targets.
    target_critics = [build_critic() for _ in critics]
    for target, critic in zip(target_critics, critics):
        target.set_weights(critic.get_weights())
    target_policy = build_model()
    target_policy.set_weights(model.get_weights())
    optimizer = keras.optimizers.Adam(learning_rate=0.001, epsilon=1e-08)
    optimizer.build(model.trainable_variables)
    critic_optimizer = keras.optimizers.Adam(learning_rate=0.001, epsilon=1e-08)
    critic_optimizer.build(critic_variables)
    # Environment steps over all sub-environments, checkpointed: the cadences and seeds.
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
    nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    logged = {name: keras.metrics.Mean(name=name) for name in LOGGED}

    # --- Acting and the train step ----------------------------------------------------
    @tf.function
    def policy_actions(observations, noise):
        """The policy's actions, in [-1, 1]: with Gaussian exploration by `noise`."""
        actions = tf.tanh(model(observations)) + EXPLORATION_NOISE * noise
        return tf.clip_by_value(actions, -1.0, 1.0)

    # Its one trace, called directly, skips tf.function's matching of arguments to traces.
    policy_actions = policy_actions.get_concrete_function(
        tf.TensorSpec((NUM_ENVS, *OBSERVATION_SHAPE), tf.float32),
        tf.TensorSpec((NUM_ENVS, ACTION_DIM), tf.float32),
    )
    exploration = Exploration()

    def act(observations, global_step):
        """Uniformly random actions before LEARNING_STARTS, then the policy's; in [-1, 1]."""
        random_actions, noise = exploration.at(global_step)
        if global_step < LEARNING_STARTS:
            return random_actions
        return policy_actions(tf.constant(observations), tf.constant(noise)).numpy()

    @tf.function
    def train_step(batch, noise, global_step, update_policy):
        """A gradient step on a batch from the replay buffer; the policy and the targets
        move only at every POLICY_DELAY-th critic update (update_policy)."""
        step.assign(global_step)  # here, and before a log or a save: not at every step
        observations, actions = batch[:2]
        targets = critic_targets(target_policy, target_critics, batch, noise)
        inputs = tf.concat([observations, actions], axis=-1)
        with tf.GradientTape() as tape:
            values = [critic(inputs, training=True)[:, 0] for critic in critics]
            # The sum of their mean squared errors (Stable-Baselines3's).
            errors = [tf.reduce_mean(tf.square(targets - value)) for value in values]
            critic_loss = tf.add_n(errors)
        gradients = tape.gradient(critic_loss, critic_variables)
        critic_optimizer.apply_gradients(zip(gradients, critic_variables))
        actor_loss = tf.zeros(())
        if update_policy:  # a Python bool
            # The policy: along the first critic's gradient, to the actions it values most.
            with tf.GradientTape() as tape:
                new_actions = tf.tanh(model(observations, training=True))
                new_inputs = tf.concat([observations, new_actions], axis=-1)
                actor_loss = -tf.reduce_mean(critics[0](new_inputs)[:, 0])
            gradients = tape.gradient(actor_loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            # The target networks move with the policy.
            follow([*target_critics, target_policy], [*critics, model])
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(critic_loss + actor_loss):
            nonfinite_step.assign(global_step)
        logged["critic_loss"].update_state(critic_loss)
        logged["q_value"].update_state(values[0])
        if update_policy:
            logged["actor_loss"].update_state(actor_loss)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        critic_1=critic_1,
        critic_2=critic_2,
        target_critics=target_critics,
        target_policy=target_policy,
        optimizer=optimizer,
        critic_optimizer=critic_optimizer,
        # The step fixes the seeds; the environments are saved whole, mid-episode, and the
        # replay buffer with them.
        step=step,
        environments=environments,
        buffer=buffer,
        # The running means of the next log: a resumed run logs them as one that never stopped.
        train_values=[v for mean in logged.values() for v in mean.variables],
    )
    run.restore(
        checkpoint, environments, model=model, critic_1=critic_1, critic_2=critic_2
    )
    if args.command == "evaluate":
        return evaluate(model, args, run)

    # --- Training loop ----------------------------------------------------------------
    # Whole vector steps: each is NUM_ENVS environment steps.
    total_steps = (
        TOTAL_STEPS if args.max_steps is None else min(TOTAL_STEPS, args.max_steps)
    )
    total_steps -= total_steps % NUM_ENVS
    global_step = int(step.numpy())
    run.start(step, nonfinite_step, total_steps, list(logged.values()))
    while global_step < total_steps and not run.preempted:
        observations = environments.observations.astype(np.float32)
        actions = act(observations, global_step)  # in [-1, 1], as the buffer keeps them
        reached, rewards, terminated, _ = environments.step(to_bounds(actions))
        buffer.add(observations, actions, rewards, reached, terminated)
        previous, global_step = global_step, global_step + NUM_ENVS
        if global_step > LEARNING_STARTS:
            batch = [tf.constant(part) for part in buffer.sample(global_step)]
            noise = tf.constant(update_noise(global_step))
            # The policy and the targets move at every POLICY_DELAY-th critic update.
            updates = int(critic_optimizer.iterations.numpy()) + 1  # with this one
            update_policy = updates % POLICY_DELAY == 0
            with run.debugged(updates_at(global_step) - 1, 1):  # flags, replay
                train_step(
                    batch, noise, tf.constant(global_step, tf.int64), update_policy
                )
        if global_step // LOG_EVERY_STEPS > previous // LOG_EVERY_STEPS:
            step.assign(global_step)
            logs = {**results(logged.values()), **environments.episodes()}
            run.log("train", global_step, logs)
            for mean in logged.values():
                mean.reset_state()
            run.stop_if_diverged()
        if global_step // CHECKPOINT_EVERY_STEPS > previous // CHECKPOINT_EVERY_STEPS:
            step.assign(global_step)
            run.save(global_step)
    step.assign(global_step)
    run.finish(global_step)
    environments.envs.close()

    # --- Export -----------------------------------------------------------------------
    export(model, os.path.join(args.output_dir, "export"))


def results(metrics):
    """Current values of Keras metrics as Python floats (reading them waits for the device);
    none of a metric that has no value yet."""
    return {
        metric.name: float(metric.result()) for metric in metrics if metric.count > 0
    }


def evaluate(model, args, run):
    """evaluate: the restored policy's deterministic action, one episode in each of
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
        lambda observations: deterministic_actions(model(observations, training=False))
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


def export(model, directory):
    """The trained policy, written whole into `directory`: saved_model/1/, the SavedModel to
    serve (TF Serving's layout), whose serving_default takes a batch of observations and
    returns "actions", the deterministic action of each (no noise) within the
    environment's bounds. It loads without this script."""
    observations = tf.TensorSpec(
        (None, *OBSERVATION_SHAPE), tf.float32, name="observations"
    )

    @tf.function(input_signature=[observations])
    def serve(observations):
        return {"actions": deterministic_actions(model(observations, training=False))}

    with written_whole(directory) as partial:
        served = keras.export.ExportArchive()
        served.track(model)
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
    """The gradient steps (updates) taken by environment step `global_step`: one at
    every  vector step past LEARNING_STARTS."""
    trainings = global_step // NUM_ENVS - LEARNING_STARTS // NUM_ENVS
    return max(trainings, 0)


def step_of_update(update):
    """The environment step at which update `update` (1, 2, ...) is taken."""
    return (update + LEARNING_STARTS // NUM_ENVS) * NUM_ENVS


def update_of(step):
    """The update a NaN at environment step `step` (nonfinite_step) is: its first there."""
    return updates_at(step)


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
    "spec": "pendulum_td3",
    "spec_sha256": "e3b6b5d4dd6e80a4",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "76475e15fa59e0ab",
    "data.kind": "environment",
    "data.id": "Pendulum-v1",
    "data.kwargs": "44136fa355b3678a",
    "data.num_envs": 1,
    "seed": SEED,
    "optimizer": "905dc08da76b44df",
    "training": "e40534595817c2b9",
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
    """

    def __init__(self, args):
        self.args, self.path = args, args.output_dir
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.run = self.resumed_from = self.init_from = self.saved = None
        self.writers, self.preempted = {}, False

    def lock(self):
        """Takes the directory's lock, or stops: two runs writing one directory would overwrite
        each other's checkpoints. An flock: the OS drops it when the process ends, even by
        SIGKILL. run.lock names the run that holds it."""
        reader = self.args.command != "train"
        if reader and not os.path.isdir(self.checkpoints):
            raise SystemExit(
                f"Nothing to {self.args.command}: {self.path} holds no checkpoints."
            )
        made = not os.path.isdir(self.path)
        os.makedirs(self.path, exist_ok=True)
        # undo() removes it again if the run is refused before it starts.
        self.made = made
        if self.args.no_lock:
            if not self.args.fast_dev_run:  # whose scratch directory is its own
                print(f"Not locking {self.path} (--no-lock): no other run may use it.")
            return
        existed = os.path.exists(os.path.join(self.path, "run.lock"))
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
            raise SystemExit(
                f"{self.path} is in use by another run ({holder}). Wait for it to end, or "
                "pass another --output-dir."
            ) from None
        except OSError as error:  # ENOLCK, ENOSYS: a file system that refuses locks
            raise SystemExit(
                f"Cannot lock {self.lock_file.name}: {error.strerror}. This file system does "
                f"not support locks; if no other run uses {self.path}, run again with --no-lock."
            ) from None
        if reader:
            return
        # What it said before this run (None: no file), for undo().
        self.lock_file.seek(0)
        self.lock_text = self.lock_file.read() if existed else None
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
        # Before the manager reads the state file, which may be damaged.
        paths = checkpoint_paths(self.checkpoints)
        self.manager = tf.train.CheckpointManager(
            checkpoint, self.checkpoints, KEEP_CHECKPOINTS
        )
        self.remove_partial_checkpoints(self.manager.directory)
        if not paths:
            # What a run killed before its first checkpoint logged.
            self.forget_logged_after(0)
            if self.args.init_from:
                self.init_from = load_weights(self.args.init_from, **networks)
            os.makedirs(self.checkpoints, exist_ok=True)
            self.wrote_setup = True  # undo() removes it again if the run is refused
            with open(setup_path, "w") as f:
                return json.dump({**setup, "data": self.data}, f, indent=2)
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

    def start(self, step, nonfinite_step, total_steps, values):
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
        signal.signal(
            signal.SIGTERM, lambda signum, frame: setattr(self, "preempted", True)
        )
        rendered, current = script_checksums()
        self.run = os.urandom(4).hex()
        # fmt: off
        self.append("runs.jsonl", {
            "event": "start", "run": self.run, "time": now(), **RENDERED_FROM,
            "script": os.path.abspath(__file__), "script_sha256": current,
            "script_edited": current != rendered, "command": sys.argv, "flags": vars(self.args),
            "python": sys.version.split()[0], "tensorflow": tf.__version__,
            "keras": keras.__version__, "host": socket.gethostname(), "pid": os.getpid(),
            "strategy": None, "replicas": 1,
            "devices": [device.name for device in tf.config.list_logical_devices()],
            "resumed_from": self.resumed_from, "init_from": self.init_from, "step": int(step.numpy()),
        })
        # fmt: on

    def writer(self, split):
        """The TensorBoard writer of logs/<split>: tensorboard --logdir <output-dir>/logs."""
        if split not in self.writers:
            logdir = os.path.join(self.path, "logs", split)
            self.writers[split] = tf.summary.create_file_writer(logdir)
        return self.writers[split]

    def start_progress(self, first_step, end_step):
        """Starts the progress bar, in environment steps, and the throughput timer (it runs
        from log point to log point)."""
        self.progbar = keras.utils.Progbar(end_step, stateless_metrics=())
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
                "critic_1": self.checkpoint.critic_1,
                "critic_2": self.checkpoint.critic_2,
            }
            optimizers = [self.checkpoint.optimizer, self.checkpoint.critic_optimizer]
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
