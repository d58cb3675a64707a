"""Play Breakout from its pixels with DQN.

Written by loopgen 0.1.0 from examples/breakout_dqn.py
(spec sha256 e602ad8ea9f9a07c, script sha256 caaedcd07ebd28a7).
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
ENV_ID = "ALE/Breakout-v5"
ENV_KWARGS = {"frameskip": 1}
NUM_ENVS = 1  # copies of the environment, stepped together
OBSERVATION_SHAPE = (4, 84, 84)  # uint8 pixels: the networks rescale them
# Environment steps to train, over all sub-environments (--max-steps stops sooner).
TOTAL_STEPS = 10000000
NUM_ACTIONS = 4
BUFFER_SIZE = 100000  # transitions the replay buffer holds
BATCH_SIZE = 32  # transitions per gradient step
GAMMA = 0.99
LEARNING_STARTS = 100000  # environment steps before the first update
TRAIN_EVERY = 4  # vector steps between gradient steps
TARGET_UPDATE_EVERY = 1000  # environment steps
# Epsilon falls linearly from START_EPSILON to END_EPSILON over EXPLORATION_STEPS.
START_EPSILON = 1.0
END_EPSILON = 0.01
EXPLORATION_STEPS = 1000000
DRAW_STEPS = 1024  # vector steps whose exploration draws are drawn at once
LOG_EVERY_STEPS = 10000
CHECKPOINT_EVERY_STEPS = 500000
KEEP_CHECKPOINTS = 2
OUTPUT_DIR = "runs/breakout_dqn"


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

import ale_py
import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
from keras import layers

gym.register_envs(ale_py)  # ALE's Atari games (ALE/...) join Gymnasium's registry


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
        env = gym.make(ENV_ID, render_mode=render_mode, **ENV_KWARGS)
        # data.wrappers, Gymnasium's, innermost first.
        env = gym.wrappers.AtariPreprocessing(env)
        env = gym.wrappers.FrameStackObservation(env, stack_size=4)
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
        while True:  # and each wrapper its own
            env.action_space.seed(seed)
            env.observation_space.seed(seed)
            if not isinstance(env, gym.Wrapper):
                break
            env = env.env
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
        # A pickled Atari game unpickles as a new game at its start: each emulator's state
        # (with its random generator, which sticky actions draw from) and the generator of the
        # no-op starts are saved beside it.
        state["emulators"] = [
            (env.unwrapped.clone_state(include_rng=True), env.unwrapped.np_random)
            for env in self.envs.envs
        ]
        return pickle.dumps({**state, "finished": finished, "envs": self.envs.envs})

    def deserialize(self, data):
        state = pickle.loads(data)
        self.envs.envs = state.pop("envs")
        for env, (emulator, generator) in zip(self.envs.envs, state.pop("emulators")):
            env.unwrapped.restore_state(emulator)
            env.unwrapped.np_random = generator
        # A checkpoint of an earlier render kept (return, length) alone.
        state["finished"] = [e if len(e) == 3 else (0, *e) for e in state["finished"]]
        self.__dict__.update(state)


def build_model():
    """The Q-network: observations to one value per action."""
    return keras.Sequential(
        [
            keras.Input(shape=(4, 84, 84), dtype="uint8"),
            layers.Rescaling(0.00392156862745098),
            layers.Permute((2, 3, 1)),
            layers.Conv2D(32, 8, strides=4, activation="relu"),
            layers.Conv2D(64, 4, strides=2, activation="relu"),
            layers.Conv2D(64, 3, activation="relu"),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dense(4, name="q_values"),
        ],
        name="breakout_dqn",
    )


class ReplayBuffer(tf.train.experimental.PythonState):
    """The last BUFFER_SIZE transitions, in a ring: observation, action, reward, the
    observation reached, and whether the episode terminated there. The checkpoint keeps it
    whole: a resumed run draws its minibatches from the same transitions."""

    def __init__(self):
        # uint8 pixels, as the environment gives them: a quarter of float32's memory.
        self.observations = np.zeros((BUFFER_SIZE, *OBSERVATION_SHAPE), np.uint8)
        self.reached = np.zeros((BUFFER_SIZE, *OBSERVATION_SHAPE), np.uint8)
        self.actions = np.zeros(BUFFER_SIZE, np.int64)
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


def dqn_targets(rewards, terminated, next_q, next_q_target):
    """The values the Q-network learns: the reward, plus the discounted value of the
    observation reached unless the episode terminated there (a truncated one goes on: it is
    bootstrapped). Double DQN: the Q-network picks the next action (by `next_q`, its action
    values there), the target network values it (`next_q_target`)."""
    next_actions = tf.argmax(next_q, axis=-1)
    next_values = tf.gather(next_q_target, next_actions, batch_dims=1)
    return rewards + GAMMA * (1.0 - terminated) * next_values


class Exploration:
    """The random numbers of epsilon-greedy acting: for every vector step, a uniform number
    per sub-environment (below epsilon, it acts at random) and its random action. They are
    drawn DRAW_STEPS vector steps at a time by a generator of (SEED, block), so that those
    of a step are a function of (SEED, step) alone (a generator made at every step took a
    sixth of the loop's time)."""

    def __init__(self):
        self.block = None

    def at(self, global_step):
        """(uniform numbers, random actions) of the vector step at `global_step`."""
        block, row = divmod(global_step // NUM_ENVS, DRAW_STEPS)
        if block != self.block:
            random = np.random.default_rng([SEED, 0, block])
            self.uniform = random.random((DRAW_STEPS, NUM_ENVS))
            self.actions = random.integers(NUM_ACTIONS, size=(DRAW_STEPS, NUM_ENVS))
            self.block = block
        return self.uniform[row], self.actions[row]


def epsilon(step):
    """The probability of a random action at `step`."""
    progress = min(step / EXPLORATION_STEPS, 1.0) if EXPLORATION_STEPS else 1.0
    return START_EPSILON + progress * (END_EPSILON - START_EPSILON)


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

    # --- Networks, optimizer, values logged -------------------------------------------
    model = build_model()
    model.summary()
    # The target network: a copy of the Q-network that follows it slowly, so that the
    # targets do not move with every step.
    target_network = build_model()
    target_network.set_weights(model.get_weights())
    optimizer = keras.optimizers.Adam(learning_rate=0.0001)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.Huber()
    # Counts environment steps over all sub-environments: checkpointed, it fixes epsilon,
    # the cadences and every seed.
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    # The first step with a NaN or Inf loss (-1: none); not checkpointed, so a rerun is clean.
    nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False)

    train_loss = keras.metrics.Mean(name="loss")
    q_value = keras.metrics.Mean(name="q_value")

    # --- Acting and the train step ----------------------------------------------------
    # Its one trace, called directly, skips tf.function's matching of the arguments to
    # traces, half the cost of a call this small (0.3 of 0.7 ms measured).
    greedy = tf.function(lambda observations: tf.argmax(model(observations), axis=-1))
    greedy = greedy.get_concrete_function(
        tf.TensorSpec((NUM_ENVS, *OBSERVATION_SHAPE), tf.uint8)
    )
    exploration = Exploration()

    def act(observations, global_step):
        """Epsilon-greedy actions: the random ones drawn from (SEED, step) alone. The
        Q-network is called only when a sub-environment acts greedily, on tensors (it would
        convert NumPy arrays itself, more slowly)."""
        uniform, random_actions = exploration.at(global_step)
        explore = uniform < epsilon(global_step)
        if explore.all():
            return random_actions
        greedy_actions = greedy(tf.constant(observations)).numpy()
        return np.where(explore, random_actions, greedy_actions)

    @tf.function
    def train_step(batch, global_step):
        """A train step on a batch from the replay buffer."""
        # The step counter is written here and before a log or a save, not at every
        # environment step: a variable's write took a sixth of the loop's time.
        step.assign(global_step)
        observations, actions, rewards, reached, terminated = batch
        targets = dqn_targets(
            rewards, terminated, model(reached), target_network(reached)
        )
        with tf.GradientTape() as tape:
            values = tf.gather(
                model(observations, training=True), actions, batch_dims=1
            )
            loss = loss_fn(targets, values)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # A NaN or Inf loss ruins the weights: note its step; the loop stops before a save.
        if nonfinite_step < 0 and not tf.math.is_finite(loss):
            nonfinite_step.assign(step)
        train_loss.update_state(loss)
        q_value.update_state(tf.reduce_mean(values))

    @tf.function
    def update_target():
        for target, weight in zip(target_network.weights, model.weights):
            target.assign(weight)

    # --- Checkpoints: everything a resumed run needs to continue exactly --------------
    checkpoint = tf.train.Checkpoint(
        model=model,
        target_network=target_network,
        optimizer=optimizer,
        # The step fixes epsilon and the seeds; the environments are saved whole,
        # mid-episode, and the replay buffer with them.
        step=step,
        environments=environments,
        buffer=buffer,
        # The running means of the next log: a resumed run logs them as one that never stopped.
        train_values=[v for mean in (train_loss, q_value) for v in mean.variables],
    )
    run.restore(checkpoint, environments, model=model)
    if args.command == "evaluate":
        return evaluate(model, args, run)

    # --- Training loop ----------------------------------------------------------------
    # Whole vector steps: each is NUM_ENVS environment steps.
    total_steps = (
        TOTAL_STEPS if args.max_steps is None else min(TOTAL_STEPS, args.max_steps)
    )
    total_steps -= total_steps % NUM_ENVS
    global_step = int(step.numpy())
    run.start(step, nonfinite_step, total_steps, values=[train_loss, q_value])
    while global_step < total_steps and not run.preempted:
        observations = environments.observations.astype(np.uint8)
        actions = act(observations, global_step)
        reached, rewards, terminated, _ = environments.step(actions)
        buffer.add(observations, actions, rewards, reached, terminated)
        previous, global_step = global_step, global_step + NUM_ENVS
        if global_step > LEARNING_STARTS:
            if (global_step // NUM_ENVS) % TRAIN_EVERY == 0:
                batch = tf.nest.map_structure(tf.constant, buffer.sample(global_step))
                with run.debugged(updates_at(global_step) - 1, 1):  # flags, replay
                    train_step(batch, tf.constant(global_step, tf.int64))
            if global_step // TARGET_UPDATE_EVERY > previous // TARGET_UPDATE_EVERY:
                update_target()
        if global_step // LOG_EVERY_STEPS > previous // LOG_EVERY_STEPS:
            step.assign(global_step)
            logs = {**results([train_loss, q_value]), **environments.episodes()}
            logs["epsilon"] = epsilon(global_step)
            run.log("train", global_step, logs)
            train_loss.reset_state()
            q_value.reset_state()
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
    """evaluate: the restored policy's best action (no exploration), one episode in each of
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
        actions = greedy(observations.astype(np.uint8)).numpy()
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
    """The trained Q-network, written whole into `directory`: saved_model/1/, the SavedModel
    to serve (TF Serving's layout), whose serving_default takes a batch of observations and
    returns "actions" (the best action of each) and "q_values". It loads without this
    script."""
    observations = tf.TensorSpec(
        (None, *OBSERVATION_SHAPE), tf.uint8, name="observations"
    )

    @tf.function(input_signature=[observations])
    def serve(observations):
        q_values = model(observations, training=False)
        return {"actions": tf.argmax(q_values, axis=-1), "q_values": q_values}

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
    every TRAIN_EVERY-th vector step past LEARNING_STARTS."""
    # The turns to train that came before learning started.
    waited = LEARNING_STARTS // NUM_ENVS // TRAIN_EVERY
    trainings = global_step // NUM_ENVS // TRAIN_EVERY - waited
    return max(trainings, 0)


def step_of_update(update):
    """The environment step at which update `update` (1, 2, ...) is taken."""
    # The turns to train that came before learning started.
    waited = LEARNING_STARTS // NUM_ENVS // TRAIN_EVERY
    return (update + waited) * TRAIN_EVERY * NUM_ENVS


def update_of(step):
    """The update a NaN at environment step `step` (nonfinite_step) is: its first there."""
    return updates_at(step)


# --- The run directory ------------------------------------------------------------------
# What this script was rendered from (its header says the same): runs.jsonl records it.
RENDERED_FROM = {
    "spec": "breakout_dqn",
    "spec_sha256": "e602ad8ea9f9a07c",
    "loopgen": "0.1.0",
}
# The training setup the checkpoints belong to: each spec field that decides what a checkpoint
# means, or the sha256 of the section. A run refuses the checkpoints of another setup; a
# longer run, other cadences, performance options or another strategy are the same setup.
SETUP = {
    "model": "2d200e06ff36c537",
    "data.kind": "environment",
    "data.id": "ALE/Breakout-v5",
    "data.kwargs": "c1db18b2b2abf863",
    "data.num_envs": 1,
    "data.wrappers": "2e327828001c32fe",
    "seed": SEED,
    "optimizer": "a583e8fc251339e3",
    "training": "33d07a58d365916c",
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
