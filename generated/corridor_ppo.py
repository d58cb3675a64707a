"""Walk to a goal in a corridor, an environment of your own, with PPO.

Written by loopgen 0.1.0 from examples/corridor_ppo.py
(spec sha256 dc9bb2f515ad9ebd, script sha256 a340aca320c3ec5b).
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
        reached = {name: part.copy() for name, part in observations.items()}
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                for name, part in reached.items():
                    part[i] = info["final_obs"][i][name]
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


def collect(environments, act, log_probs_and_values, value_of, first_step):
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
    # [ROLLOUT_STEPS, NUM_ENVS, ...] arrays; the observations'
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
    # One batch of ROLLOUT_SIZE transitions, in the order (step, sub-environment).
    return tf.nest.map_structure(
        lambda value: value.reshape((ROLLOUT_SIZE, *value.shape[2:])), rollout
    )


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
    # The value's change is clipped as the ratio is.
    old_values = batch["values"]
    clipped = old_values + tf.clip_by_value(values - old_values, -CLIP, CLIP)
    value_loss = 0.5 * tf.reduce_mean(
        tf.maximum(tf.square(values - returns), tf.square(clipped - returns))
    )
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
    trainable = model.trainable_variables + value_network.trainable_variables
    optimizer = keras.optimizers.Adam(learning_rate=0.003)
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
        logits = model(observations)
        return tf.random.stateless_categorical(logits, 1, seed)[:, 0]

    # Called at every step: its one trace, called directly, skips tf.function's search
    # for the trace that matches the arguments, a third of a call this small (measured).
    act = act.get_concrete_function(
        {
            name: tf.TensorSpec((NUM_ENVS, *shape), tf.float32)
            for name, shape in OBSERVATION_SHAPES.items()
        },
        tf.TensorSpec([2], tf.int64),
    )

    @tf.function
    def log_probs_and_values(observations, actions):
        """The policy's log-probabilities of a rollout's actions and the values of its
        observations ([ROLLOUT_STEPS, sub-environments] each), for the update."""
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
        return evaluate(model, args, run)

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
            environments, act, log_probs_and_values, value_of, global_step
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
    export(model, value_network, export_dir)


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
    "spec": "corridor_ppo",
    "spec_sha256": "dc9bb2f515ad9ebd",
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
