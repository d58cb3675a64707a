"""Swing Pendulum-v1 up with TD3.

Written by loopgen 0.1.0 from examples/pendulum_td3.py
(spec sha256 e3b6b5d4dd6e80a4, script sha256 2c41b1a49333e4f6).
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
    run.start(step, nonfinite_step, total_steps, values=list(logged.values()))
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
    replayed_networks = ("model", "critic_1", "critic_2")
    optimizers = ("optimizer", "critic_optimizer")
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
