"""Reinforcement learning (data=Environment, training=PPO/DQN): the formulas against
references, the pitfalls each guarded (truncation bootstrapped, the autoreset step not a
transition), learning, evaluate, and the export serving the networks. Exact resume after a
SIGKILL is in test_faults' matrix with the other ways of training."""

from __future__ import annotations

import json
from pathlib import Path

import data
import numpy as np
import pytest
from helpers import (
    _PRELOADED,
    ROOT,
    records,
    render_into,
    run_cli,
    run_fresh,
    run_preloaded,
    run_python,
    script_env,
    tf_check,
)
from PIL import Image, ImageSequence

pytestmark = pytest.mark.slow

CHECKS = ROOT / "tests" / "rl_checks.py"


def rl_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_ppo_advantages_and_loss_equal_the_formulas(tmp_path):
    script = render_into(tmp_path / "train.py", "cartpole_ppo", "training.rollout_steps=16")
    result = rl_check("ppo_reference", str(script), cwd=tmp_path)
    assert result["episode_ends"] > 0 and 0 < result["clipped_share"] < 1, result
    assert result["gae_diff"] <= 1e-5 and result["returns_diff"] <= 1e-5, result
    assert result["loss_diff"] <= 1e-6, result


def test_a2c_loss_is_the_policy_gradient_of_n_step_advantages(tmp_path):
    script = render_into(tmp_path / "train.py", "cartpole_a2c")
    result = rl_check("actor_critic_reference", str(script), cwd=tmp_path)
    assert result["episode_ends"] > 0, result
    assert result["returns_diff"] <= 1e-5 and result["loss_diff"] <= 1e-6, result


def test_dqn_targets_bootstrap_all_but_terminated_transitions(tmp_path):
    script = render_into(tmp_path / "train.py", "cartpole_dqn")
    result = rl_check("dqn_reference", str(script), cwd=tmp_path)
    assert result["terminated"] > 0 and result["plain_diff"] > 1e-3, result
    assert result["diff"] <= 1e-6, result


def test_dqn_takes_its_gradient_steps_each_time_it_trains(tmp_path):
    """DQN(gradient_steps=3, train_every=2), as Stable-Baselines3 writes its cadence: three
    gradient steps at every second vector step once learning has started, each on a batch of
    its own, drawn from (seed, step)."""
    script = render_into(tmp_path / "train.py", "cartpole_dqn", "training.buffer_size=64",
                         "training.batch_size=16", "training.learning_starts=16",
                         "training.train_every=2", "training.gradient_steps=3",
                         "loop.log_every_steps=20", 'checkpoint={"every_steps": 20, "keep": 1}',
                         "export.saved_model=false")  # fmt: skip
    assert "GRADIENT_STEPS = 3" in script.read_text()
    run_python(script, "--max-steps", "40", "--output-dir", "out", cwd=tmp_path)
    # Steps 18, 20, ..., 40: 12 trainings of 3 steps.
    assert rl_check("optimizer_steps", str(tmp_path / "out"), cwd=tmp_path) == {"optimizer": 36}
    batches = rl_check("sampled_batches", str(script), str(tmp_path / "out"), "40", cwd=tmp_path)
    assert batches["count"] == 3 and batches["distinct"] == 3, batches


ENDLESS = '''
import gymnasium as gym
import numpy as np
from PIL import Image, ImageSequence


class Endless(gym.Env):
    """A reward of 1 at every step, forever, and always the same observation: the value of
    every state is 1 / (1 - gamma). Only a time limit (a truncation) ends an episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(1, np.float32), {}

    def step(self, action):
        return np.ones(1, np.float32), 1.0, False, False, {}


def make():
    return Endless()
'''

ENDLESS_SPEC = """
from loopgen.dsl import PPO, Adam, Checkpoint, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="endless",
    data=Environment(target="endless:make", num_envs=2, max_episode_steps=5),
    model=Sequential(input_shape=(1,), layers=[Dense(units=2)]),
    training=PPO(
        value=Sequential(input_shape=(1,), layers=[Dense(units=1)]),
        rollout_steps=10, minibatches=2, gamma=0.9, clip_value_loss=False,
        anneal_learning_rate=False,
    ),
    optimizer=Adam(learning_rate=0.05),
    loop=Loop(steps=800, log_every_steps=200),
    checkpoint=Checkpoint(every_steps=400),
)
"""


def test_a_truncated_episode_is_bootstrapped_and_the_autoreset_step_is_no_transition(tmp_path):
    """Episodes of an endless task cut at 5 steps: the value learnt must be the task's,
    1 / (1 - 0.9) = 10. Treating the cut as the task's end learns about 4 (the discounted sum
    of the steps left); training on Gymnasium's default autoreset step (reward 0) about 8."""
    (tmp_path / "endless.py").write_text(ENDLESS)
    (tmp_path / "spec.py").write_text(ENDLESS_SPEC)
    proc = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_python(tmp_path / "train.py", "--output-dir", "out", cwd=tmp_path)
    episodes = records(tmp_path / "out")[-1]
    assert episodes["episode_length"] == 5 and episodes["episode_return"] == 5, episodes
    served = rl_check("served_against_networks", str(tmp_path / "train.py"),
                      str(tmp_path / "out"), "[[1.0]]", cwd=tmp_path)  # fmt: skip
    assert abs(served["values"][0] - 10) < 0.5, served


@pytest.mark.parametrize("example", ["cartpole_ppo", "pendulum_ppo", "corridor_ppo"])
def test_the_rollout_holds_the_log_probabilities_of_the_actions_taken(example, tmp_path):
    """The rollouts hold the observations act() was given and the actions it returned, in
    their order; and with one pass of one minibatch an update, whose loss is taken at the
    weights that acted, each probability ratio is 1 (approximate KL 0, nothing clipped): the
    batched call after the rollout recorded the policy's log-probabilities of those actions
    (a Categorical, a Gaussian on normalized observations, a Dict's parts)."""
    small = ["data.num_envs=2", "training.rollout_steps=32", "training.update_epochs=1",
             "training.minibatches=1", "loop.log_every_steps=64", "checkpoint=null",
             "export.saved_model=false"]  # fmt: skip
    script = render_into(tmp_path / "train.py", example, *small,
                         *data.small_data_overrides(example, tmp_path))  # fmt: skip
    watched = rl_check("rollout_as_acted", str(script), "--max-steps", "192",
                       "--output-dir", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert watched == {"rollouts": 3, "max_diff": 0.0}, watched
    logged = records(tmp_path / "out")
    assert [r["step"] for r in logged] == [64, 128, 192], logged
    for record in logged:
        # Rounding alone: a ratio 1e-6 off is a KL of 5e-13.
        assert abs(record["approx_kl"]) <= 1e-12 and record["clip_fraction"] == 0, record


COUNTING = """
import gymnasium as gym
import numpy as np


class Counting(gym.Env):
    \"\"\"Observes the steps taken in its episode (a Box, or a Dict of one part); never ends
    but by the time limit.\"\"\"

    action_space = gym.spaces.Discrete(2)

    def __init__(self, parts=False):
        count = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.parts = parts
        self.observation_space = count
        if parts:
            self.observation_space = gym.spaces.Dict({"count": count})

    def observe(self):
        count = np.array([self.count], np.float32)
        return {"count": count} if self.parts else count

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return self.observe(), {}

    def step(self, action):
        self.count += 1
        return self.observe(), 1.0, False, False, {}


def make(parts=False):
    return Counting(parts)
"""


@pytest.mark.parametrize("parts", [False, True], ids=["box", "dict"])
def test_the_observation_reached_at_a_cut_is_the_episodes_last_not_the_next_ones_first(
    parts, tmp_path
):
    """Gymnasium returns the next episode's first observation where one ends, and the last in
    info["final_obs"]: the value that bootstraps a truncated episode is of the last, for a Dict
    observation part by part (a Dict of one part: the networks take it by name too)."""
    (tmp_path / "counting.py").write_text(COUNTING)
    if parts:
        network = ('Graph(inputs={"count": Input(shape=(1,))}, nodes=[Node(name="out", '
                   'layer=Dense(units={units}), inputs="count")], outputs="out")')  # fmt: skip
    else:
        network = "Sequential(input_shape=(1,), layers=[Dense(units={units})])"
    spec = (ENDLESS_SPEC.replace("endless:make", "counting:make")
            .replace("num_envs=2,", f"num_envs=2, kwargs={{'parts': {parts}}},")
            .replace("Sequential(input_shape=(1,), layers=[Dense(units=2)])",
                     network.replace("{units}", "2"))
            .replace("Sequential(input_shape=(1,), layers=[Dense(units=1)])",
                     network.replace("{units}", "1"))
            .replace("Dense, ", "Dense, Graph, Input, Node, "))  # fmt: skip
    (tmp_path / "spec.py").write_text(spec)
    proc = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ends = rl_check("episode_ends", str(tmp_path / "train.py"), cwd=tmp_path)
    assert ends["truncated"] == [True, True] and ends["terminated"] == [False, False], ends
    expected = {"count" if parts else "": [[5.0]] * 2}
    assert ends["reached"] == expected, ends
    assert ends["next"] == {part: [[0.0]] * 2 for part in expected}, ends
    assert ends["outputs"] == [[2, 2], [2, 1]], ends


@pytest.mark.parametrize(
    "example", ["cartpole_ppo", "cartpole_a2c", "cartpole_dqn", "corridor_ppo", "pendulum_ppo"]
)
def test_training_improves_the_return_and_the_export_serves_the_networks(example, tmp_path):
    """A short run: the greedy policy of its last checkpoint plays clearly better than that of
    its first (evaluate, on episodes seeded apart from training); the SavedModel, loaded
    without the script, answers as the checkpoint's networks."""
    small = {
        "cartpole_ppo": ["loop.log_every_steps=2048",
                         'checkpoint={"every_steps": 2048, "keep": 8}'],
        "cartpole_dqn": ["loop.log_every_steps=1000",
                         'checkpoint={"every_steps": 1000, "keep": 6}',
                         "training.learning_starts=1000", "training.exploration_fraction=0.1",
                         "training.train_every=1", "training.target_update_every=100",
                         "optimizer.learning_rate=0.001"],
        "cartpole_a2c": ["loop.log_every_steps=4000",
                         'checkpoint={"every_steps": 4000, "keep": 12}'],
        "pendulum_ppo": ["loop.log_every_steps=4096",
                         'checkpoint={"every_steps": 4096, "keep": 20}'],
        # An environment of the user's, from their package beside the script.
        "corridor_ppo": ["loop.log_every_steps=1024",
                         'checkpoint={"every_steps": 512, "keep": 12}'],
    }[example]  # fmt: skip
    steps = {"cartpole_ppo": 16384, "cartpole_a2c": 40000, "cartpole_dqn": 6000,
             "corridor_ppo": 6144, "pendulum_ppo": 49152}[example]  # fmt: skip
    # CartPole: a return clearly above a random policy's (about 22; PPO is quicker to learn).
    # Pendulum: a random policy's is about -1,200; an upright pendulum's -200 or better.
    # Corridor: a random policy's is about 0.6, a shortest walk 0.94 to 1 (0.98 over 32
    # episodes from 5,120 steps).
    least = {"cartpole_ppo": 100, "cartpole_a2c": 60, "cartpole_dqn": 30,
             "corridor_ppo": 0.9, "pendulum_ppo": -600}[example]  # fmt: skip
    script = render_into(tmp_path / "train.py", example, *small,
                         *data.small_data_overrides(example, tmp_path))  # fmt: skip
    # One end to end in a new interpreter, as users run it (test_runs does so for mnist_mlp);
    # the others forked from one that has imported TensorFlow.
    run = run_fresh if example == "cartpole_ppo" else run_python
    run(script, "--max-steps", str(steps), "--output-dir", "out", cwd=tmp_path)
    logged = records(tmp_path / "out")
    assert logged[-1]["step"] == steps and "episode_return" in logged[-1], logged[-1]
    assert [r["step"] for r in logged] == sorted(r["step"] for r in logged)
    logdir = str(tmp_path / "out" / "logs" / "train")
    tags = tf_check("scalar_tags_of", logdir, cwd=tmp_path)[logdir]
    names = {"cartpole_dqn": "loss"}.get(example, "policy_loss")
    assert {names, "episode_return", "episode_length", "steps_per_second"} <= set(tags), tags
    first = {"cartpole_ppo": "2048", "cartpole_a2c": "4000", "cartpole_dqn": "1000",
             "corridor_ppo": "512", "pendulum_ppo": "4096"}[example]  # fmt: skip
    first = f"out/checkpoints/ckpt-{first}"
    for checkpoint, record in ((first, []), ("latest", ["--record"])):
        # On a machine without a display (as a server is): SDL, drawing the pictures, says no
        # "error:" about it (it did, XDG_RUNTIME_DIR is invalid or not set, the GIF fine).
        headless = {k: v for k, v in script_env().items()
                    if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")}  # fmt: skip
        evaluated = _PRELOADED.run([str(script), "evaluate", "--episodes", "8", "--checkpoint",
                                    checkpoint, *record, "--output-dir", "out"], tmp_path, 600,
                                   env=headless)  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stdout[-2000:] + evaluated.stderr[-2000:]
        # (Not TensorFlow's log that it found no GPU: the full tensorflow package, which
        # keras-hub's tensorflow-text installs beside tensorflow-cpu, writes it at every start.)
        said = [line for line in evaluated.stderr.splitlines() if "call to cuInit" not in line]
        assert "error" not in "\n".join(said).lower(), evaluated.stderr
    evaluations = (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()
    before, after = [json.loads(line) for line in evaluations]
    assert after["step"] == steps and after["episodes"] == 8, after
    assert "video" not in before and after["video"] == f"out/videos/step-{steps}.gif", after
    gif = Image.open(tmp_path / after["video"])
    pictures = [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(gif)]
    # Gymnasium's pictures; the corridor's, 8 cells of 32 pixels.
    size = {"pendulum_ppo": (500, 500), "corridor_ppo": (256, 32)}.get(example, (600, 400))
    assert gif.size == size and len(pictures) > 1 and np.ptp(pictures[0]) > 0
    # One frame an action, 40 ms each: the first episode's length (a reward of 1 a step in
    # CartPole; Pendulum's episodes are 200 steps).
    length = 200 if example == "pendulum_ppo" else after["video_return"]
    if example == "corridor_ppo":  # 1 at the end, -0.01 each step before
        length = round((1 - after["video_return"]) / 0.01) + 1
    milliseconds = sum(frame.info["duration"] for frame in ImageSequence.Iterator(gif))
    assert milliseconds == 40 * length, (milliseconds, after)
    better = after["return_mean"] - before["return_mean"] >= abs(before["return_mean"]) / 2
    assert better and after["return_mean"] > least, (
        before, after,
    )  # fmt: skip
    observations = {
        "pendulum_ppo": "[[1.0, 0.0, 0.0], [0.0, 1.0, -2.0], [-0.6, 0.8, 5.0]]",
        # The walker's cell and the goal's, a Dict's two parts, by name.
        "corridor_ppo": json.dumps(
            {"position": np.eye(8)[[0, 3, 6]].tolist(), "goal": np.eye(8)[[5, 1, 7]].tolist()}
        ),
    }.get(example, "[[0.0, 0.0, 0.0, 0.0], [0.01, 0.5, -0.1, -0.5], [0.0, -0.3, 0.05, 0.4]]")
    served = rl_check("served_against_networks", str(script), str(tmp_path / "out"),
                      observations, cwd=tmp_path)  # fmt: skip
    assert served["actions_are_best"], served
    assert served["normalized"] == (example == "pendulum_ppo"), served
    # float32 networks on inputs normalized in float64 by two programs: equal to 1e-5.
    for key in ("probabilities_diff", "values_diff", "q_values_diff", "mean_diff"):
        assert served.get(key, 0.0) <= 1e-5, served
