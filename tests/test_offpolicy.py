"""SAC and TD3 (and DDPG, TD3 without its additions): their updates against NumPy references of
the formulas on linear networks, the wiring of the acting loop on a scripted environment (what
is stored, bootstrapped and passed), the value of an endless task cut by a time limit, and the
export serving the deterministic action. Exact resume after a SIGKILL is in test_faults'
matrix, two replicas against one device in test_distributed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import (
    ROOT,
    TWO_CPUS,
    records,
    render_into,
    run_cli,
    run_preloaded,
    run_python,
    tf_check,
)

pytestmark = pytest.mark.slow

CHECKS = ROOT / "tests" / "rl_checks.py"


def rl_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


LINEAR = [
    # One Dense layer each: the references differentiate them by hand.
    'model.layers=[{"kind": "dense", "units": UNITS}]',
    'training.critic.layers=[{"kind": "dense", "units": 1}]',
    'optimizer={"kind": "sgd", "learning_rate": 0.05}',
    'training.critic_optimizer={"kind": "sgd", "learning_rate": 0.1}',
    "training.buffer_size=64", "training.batch_size=16", "training.learning_starts=32",
    # tau not 0.5, where tau w + (1 - tau) target and its mirror image are the same.
    "training.gamma=0.9", "training.tau=0.3",
    # Episodes of 10 steps: some transitions of each batch are cut (bootstrapped).
    "data.max_episode_steps=10",
    "loop.log_every_steps=1", 'checkpoint={"every_steps": 1, "keep": 8}',
    "export.saved_model=false",
]  # fmt: skip


def linear(example: str, *extra: str) -> list[str]:
    units = 2 if example == "pendulum_sac" else 1
    return [o.replace("UNITS", str(units)) for o in LINEAR] + list(extra)


@pytest.mark.parametrize("actions", [1, 2], ids=["pendulum", "two_actions"])
def test_a_sac_step_equals_the_formulas_with_the_tanh_correction(actions, tmp_path):
    """Four gradient steps of SAC (linear networks, SGD): the soft targets, the critics' half
    sum of squared errors, the policy's alpha log pi - min Q on the updated critics, log
    alpha's loss and update towards the automatic target entropy, minus the action width, and
    the Polyak targets (tau = 0.3), each equal to a NumPy reference of the formulas, whose
    log-probability subtracts log(1 - tanh(u)^2) (the change of variables of the squashing).
    On Pendulum (one action); on a scripted environment of two actions, whose targets move at
    every second step only (target_update_every=2)."""
    if actions == 1:
        script = render_into(tmp_path / "train.py", "pendulum_sac", *linear("pendulum_sac"))
    else:
        (tmp_path / "scripted.py").write_text(SCRIPTED)
        script = render_into(
            tmp_path / "train.py", "pendulum_sac",
            *[o.replace("UNITS", "4") for o in LINEAR],
            'data={"kind": "environment", "target": "scripted:make", "num_envs": 1, '
            '"max_episode_steps": 10}',
            "model.input_shape=[2]", "training.critic.input_shape=[4]",
            "training.target_update_every=2", cwd=tmp_path,
        )  # fmt: skip
    assert ("TARGET_UPDATE_EVERY = 2" in script.read_text()) == (actions == 2)
    run_python(script, "--max-steps", "36", "--output-dir", "out", "--deterministic",
               cwd=tmp_path)  # fmt: skip
    result = rl_check("sac_reference", str(script), str(tmp_path / "out"), cwd=tmp_path)
    moved = [s["targets_moved"] for s in result["steps"]]
    assert moved == ([True] * 4 if actions == 1 else [False, True, False, True]), result
    assert result["policy_moved"] > 1e-3, result
    if actions == 1:
        assert result["terminated"] == 0, result
    for key in ("target_critics", "log_alpha", "losses", "critics", "policy"):
        assert result[key] <= 1e-6, (key, result)
    # The script's targets in float32 against float64, over four steps: 8e-7 measured.
    assert result["targets"] <= 5e-6, result


@pytest.mark.parametrize(
    ("overrides", "delayed"),
    [
        # Noise of std 0.5 clipped at 0.2: most of it clipped, where the final clip of the
        # action to [-1, 1] would not hide it (at 0.2 and 0.5, 0.6 % is clipped).
        (["training.target_noise=0.5", "training.target_noise_clip=0.2"], True),
        # DDPG: one critic, no target smoothing, the policy and the targets at every update.
        (["training.critics=1", "training.target_noise=0", "training.policy_delay=1"], False),
    ],
    ids=["td3", "ddpg"],
)
def test_td3_steps_equal_the_formulas_and_ddpg_is_td3_without_its_additions(
    overrides, delayed, tmp_path
):
    """Four gradient steps of TD3 (linear networks, SGD): the targets with target policy
    smoothing (noise clipped at target_noise_clip, then the action kept within [-1, 1]; the
    first clip changes targets the second leaves alone) and the smaller target critic,
    the critics' summed squared errors; the policy along the first critic and every target
    network move at every second critic update only. With policy_delay=1, target_noise=0
    and one critic the same script is DDPG's: a DDPG reference, every step."""
    script = render_into(tmp_path / "train.py", "pendulum_td3",
                         *linear("pendulum_td3", *overrides))  # fmt: skip
    source = script.read_text()
    assert ("POLICY_DELAY" in source) == delayed and ("TARGET_NOISE" in source) == delayed
    run_python(script, "--max-steps", "36", "--output-dir", "out", "--deterministic",
               cwd=tmp_path)  # fmt: skip
    result = rl_check("td3_reference", str(script), str(tmp_path / "out"), cwd=tmp_path)
    moved = [s["policy_moved"] for s in result["steps"]]
    assert moved == ([False, True, False, True] if delayed else [True] * 4), result
    assert [s["actor_logged"] for s in result["steps"]] == moved, result
    if delayed:
        # The clip of the noise is exercised, and seen through the clip of the action.
        assert result["smoothing_clipped"] > 0 and result["smoothing_clip_shows"] > 0, result
    for key in ("targets", "losses", "critics", "policy", "target_critics", "target_policy"):
        assert result[key] <= 1e-6, (key, result)


SCRIPTED = '''
import gymnasium as gym
import numpy as np


class Scripted(gym.Env):
    """Observes (step in the episode, episode); takes a 2-D action within asymmetric bounds;
    rewards step + action[0] / 10. Odd episodes terminate at their 3rd step, even ones are
    cut (truncated) at their 5th. Logs every step it is given: what it was at, the action it
    received, the reward, what it reached (before any reset) and how the step ended."""

    observation_space = gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
    action_space = gym.spaces.Box(np.array([-2.0, 0.0], np.float32),
                                  np.array([2.0, 10.0], np.float32))

    def __init__(self):
        self.log, self.episode = [], -1

    def observe(self):
        return np.array([self.t, self.episode], np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return self.observe(), {}

    def step(self, action):
        seen = self.observe()
        self.t += 1
        reward = float(self.t + action[0] / 10)
        terminated = self.episode % 2 == 1 and self.t == 3
        truncated = self.episode % 2 == 0 and self.t == 5
        reached = self.observe()
        self.log.append((seen, np.array(action, np.float64), reward, reached, terminated,
                         truncated))
        return reached, reward, terminated, truncated, {}


def make():
    return Scripted()
'''


def scripted_spec(way: str) -> str:
    policy = 4 if way == "SAC" else 2  # SAC: two means, two log standard deviations
    options = ", gradient_steps=2" if way == "SAC" else ", policy_delay=2"
    return f"""
from loopgen.dsl import {way}, Adam, Checkpoint, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="scripted",
    data=Environment(target="scripted:make", num_envs=2),
    model=Sequential(input_shape=(2,), layers=[Dense(units=8, activation="relu"),
                                                Dense(units={policy})]),
    training={way}(
        critic=Sequential(input_shape=(4,), layers=[Dense(units=8, activation="relu"),
                                                    Dense(units=1)]),
        buffer_size=200, batch_size=8, learning_starts=20, gamma=0.9{options},
    ),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=60, log_every_steps=20),
    checkpoint=Checkpoint(every_steps=20),
)
"""


@pytest.mark.parametrize("way", ["SAC", "TD3"])
def test_what_is_stored_bootstrapped_and_passed_is_what_the_environment_saw(way, tmp_path):
    """Two scripted sub-environments, 30 vector steps (random actions, then the policy's):
    the replay buffer holds, in (step, sub-environment) order, the observation each was at,
    the action in [-1, 1] whose scaling to the Box each received, its reward, the observation
    reached (at a cut the episode's last, not the next one's first) and termination, not
    truncation; the targets bootstrap all but the terminated transitions."""
    (tmp_path / "scripted.py").write_text(SCRIPTED)
    (tmp_path / "spec.py").write_text(scripted_spec(way))
    proc = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_python(tmp_path / "train.py", "--output-dir", "out", cwd=tmp_path)
    wired = rl_check("off_policy_wiring", str(tmp_path / "train.py"), str(tmp_path / "out"),
                     cwd=tmp_path)  # fmt: skip
    assert wired["transitions"] == 60 and wired["actions_within"], wired
    for key in ("observations", "rewards", "reached"):
        assert wired[key] == 0.0, (key, wired)
    assert wired["actions"] <= 1e-5, wired  # float32 actions scaled in float64
    assert wired["terminated_as_seen"] and wired["terminated"] > 0 and wired["truncated"] > 0
    assert all(reached[0] == 5 for reached in wired["cut_reached"]), wired
    assert wired["bootstrap_where_terminated"] == 0.0, wired
    assert wired["bootstrap_elsewhere"] <= 1e-5, wired
    # Trained after each of the 20 vector steps past step 20: SAC 2 gradient steps each time,
    # TD3 one, its policy at every second.
    steps = rl_check("optimizer_steps", str(tmp_path / "out"), cwd=tmp_path)
    expected = ({"critic_optimizer": 40, "optimizer": 40, "alpha_optimizer": 40} if way == "SAC"
                else {"critic_optimizer": 20, "optimizer": 10})  # fmt: skip
    assert steps == expected, steps


ENDLESS = '''
import gymnasium as gym
import numpy as np


class Endless(gym.Env):
    """A reward of 1 at every step, whatever the action, forever, and always the same
    observation: the value of every state and action is 1 / (1 - gamma). Only a time limit
    (a truncation) ends an episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(1, np.float32), {}

    def step(self, action):
        return np.ones(1, np.float32), 1.0, False, False, {}


def make():
    return Endless()
'''


@pytest.mark.parametrize("way", ["SAC", "TD3"])
def test_an_endless_task_cut_every_5_steps_learns_its_true_value(way, tmp_path):
    """Episodes of an endless task cut at 5 steps: the critics learn the task's value,
    1 / (1 - 0.9) = 10, not that of episodes that end at the cut (about 2.6 averaged over
    the five steps). SAC's entropy weight is fixed and small: its soft value is the task's."""
    (tmp_path / "endless.py").write_text(ENDLESS)
    policy = 2 if way == "SAC" else 1
    options = ", alpha=0.001" if way == "SAC" else ""
    (tmp_path / "spec.py").write_text(f"""
from loopgen.dsl import {way}, Adam, Checkpoint, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="endless",
    data=Environment(target="endless:make", num_envs=2, max_episode_steps=5),
    model=Sequential(input_shape=(1,), layers=[Dense(units={policy})]),
    training={way}(
        critic=Sequential(input_shape=(2,), layers=[Dense(units=16, activation="relu"),
                                                    Dense(units=1)]),
        buffer_size=1000, batch_size=32, learning_starts=64, gamma=0.9, tau=0.2{options},
    ),
    optimizer=Adam(learning_rate=0.01),
    loop=Loop(steps=1000, log_every_steps=500),
    checkpoint=Checkpoint(every_steps=500),
)
""")
    proc = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_python(tmp_path / "train.py", "--output-dir", "out", cwd=tmp_path)
    episodes = records(tmp_path / "out")[-1]
    assert episodes["episode_length"] == 5 and episodes["episode_return"] == 5, episodes
    for action in ("[-0.5]", "[0.0]", "[0.9]"):
        value = rl_check("critic_value", str(tmp_path / "train.py"), str(tmp_path / "out"),
                         "[1.0]", action, cwd=tmp_path)  # fmt: skip
        assert abs(value["smaller"] - 10) < 0.5, (action, value)


@pytest.mark.parametrize("example", ["pendulum_sac", "pendulum_td3"])
def test_a_short_run_evaluates_records_and_serves_the_deterministic_action(example, tmp_path):
    """A few hundred steps of each example (smaller networks): evaluate plays the
    deterministic policy and records a GIF; the SavedModel, loaded without the script,
    serves the policy's deterministic action scaled to the bounds (SAC: the tanh of the
    mean; TD3: of the output), as the checkpoint's network gives it."""
    units = 2 if example == "pendulum_sac" else 1
    small = [f'model.layers=[{{"kind": "dense", "units": 32, "activation": "relu"}}, '
             f'{{"kind": "dense", "units": {units}}}]',
             'training.critic.layers=[{"kind": "dense", "units": 32, "activation": "relu"}, '
             '{"kind": "dense", "units": 1}]',
             "training.learning_starts=100", "loop.log_every_steps=100",
             'checkpoint={"every_steps": 200, "keep": 2}']  # fmt: skip
    script = render_into(tmp_path / "train.py", example, *small)
    run_python(script, "--max-steps", "400", "--output-dir", "out", cwd=tmp_path)
    logged = records(tmp_path / "out")
    assert [r["step"] for r in logged] == [100, 200, 300, 400], logged
    assert {"critic_loss", "q_value", "episode_return"} <= set(logged[-1]), logged[-1]
    run_python(script, "evaluate", "--episodes", "2", "--record", "--output-dir", "out",
               cwd=tmp_path)  # fmt: skip
    evaluation = json.loads((tmp_path / "out" / "evaluations.jsonl").read_text())
    assert evaluation["step"] == 400 and evaluation["video"].endswith("step-400.gif")
    assert -2000 < evaluation["return_mean"] < 0, evaluation
    served = rl_check("served_against_networks", str(script), str(tmp_path / "out"),
                      "[[1.0, 0.0, 0.0], [0.0, 1.0, -2.0], [-0.6, 0.8, 5.0]]",
                      cwd=tmp_path)  # fmt: skip
    assert served["actions_are_best"] and served["actions_within_bounds"], served
    assert served["deterministic_diff"] <= 1e-6, served


SCHEDULED = {
    "cartpole_dqn": (
        ['model.layers=[{"kind": "dense", "units": 16, "activation": "relu"}, '
         '{"kind": "dense", "units": 2}]',
         "training.train_every=1", "training.buffer_size=64", "training.batch_size=16"],
        ["optimizer/_trainable_variables/"],
    ),
    "pendulum_sac": (
        ['model.layers=[{"kind": "dense", "units": 16, "activation": "relu"}, '
         '{"kind": "dense", "units": 2}]',
         'training.critic.layers=[{"kind": "dense", "units": 16, "activation": "relu"}, '
         '{"kind": "dense", "units": 1}]',
         "training.buffer_size=64", "training.batch_size=16"],
        ["optimizer/_trainable_variables/", "critic_optimizer/_trainable_variables/"],
    ),
}  # fmt: skip
"""Each example's small networks, and where its checkpoint keeps their weights (under the
optimizer that trains them: a checkpoint saves a variable once, at the first path to it)."""


@pytest.mark.parametrize("example", sorted(SCHEDULED))
def test_a_learning_rate_schedule_reaches_the_off_policy_optimizers(example, tmp_path):
    """optimizer.learning_rate as a schedule (once rendered as a name the script never
    defined): 0.01 for the first five updates, then 1e-12. The networks learn in those five
    and then all but stand still, their targets' Polyak steps aside: a run 20 steps longer
    ends with the same weights (within 20 steps of 1e-12), and one that stops before its
    first update with others."""
    extra, networks = SCHEDULED[example]
    script = render_into(
        tmp_path / "train.py", example, *extra, "training.learning_starts=32",
        'optimizer.learning_rate={"kind": "piecewise_constant", "boundaries": [4], '
        '"values": [0.01, 1e-12]}',
        "loop.log_every_steps=4", 'checkpoint={"every_steps": 4, "keep": 1}',
        "export.saved_model=false",
    )  # fmt: skip
    for steps in (32, 44, 64):
        run_python(script, "--max-steps", str(steps), "--output-dir", f"out{steps}",
                   "--deterministic", cwd=tmp_path)  # fmt: skip
    out = {steps: str(tmp_path / f"out{steps}" / "checkpoints") for steps in (32, 44, 64)}
    prefixes = json.dumps(networks)
    stood = tf_check("networks_diff", out[44], out[64], prefixes, cwd=tmp_path)
    # Two kernels and two biases a network.
    assert stood["steps"] == [44, 64] and stood["count"] >= 4 * len(networks), stood
    assert stood["max_diff"] <= 1e-9, stood
    learned = tf_check("networks_diff", out[32], out[44], prefixes, cwd=tmp_path)
    assert learned["max_diff"] > 1e-4, learned


DQN_SMALL = [
    # LINEAR's settings less its networks: a small Q-network, a gradient step every step.
    *(o for o in LINEAR if not o.startswith(("model.", "training.critic"))),
    'model.layers=[{"kind": "dense", "units": 16, "activation": "relu"}, '
    '{"kind": "dense", "units": 2}]',
    "training.train_every=1",
]  # fmt: skip


@pytest.mark.parametrize("variant", [None, "mirrored"], ids=["single_device", "mirrored"])
@pytest.mark.parametrize("example", ["cartpole_dqn", "pendulum_sac", "pendulum_td3"])
def test_max_grad_norm_clips_each_gradient_step_by_its_global_norm(example, variant, tmp_path):
    """training.max_grad_norm=0.01, far below the gradients' norms: each gradient step of
    plain SGD then moves a network's weights, all of them together, exactly rate x 0.01 (the
    Q-network and the policy at 0.05; SAC's and TD3's two critics at 0.1, by one norm over
    both; TD3's policy only at its delayed steps). Without the clip they move as far as their
    gradients say; clipping each tensor by the norm would move them up to sqrt(tensors) times
    as far, and on two replicas clipping each replica's share up to twice as far."""
    overrides = DQN_SMALL if example == "cartpole_dqn" else linear(example)
    script = render_into(tmp_path / "train.py", example, *overrides,
                         *([TWO_CPUS] if variant else []), "training.max_grad_norm=0.01",
                         variant=variant)  # fmt: skip
    assert "MAX_GRAD_NORM = 0.01" in script.read_text()
    # Gradient steps at steps 33 and 34 (learning_starts=32).
    run_python(script, "--max-steps", "34", "--output-dir", "out", cwd=tmp_path)
    norms = rl_check("update_norms", str(tmp_path / "out"), "33", "34", cwd=tmp_path)
    policy = [0.0, 0.05 * 0.01] if example == "pendulum_td3" else [0.05 * 0.01] * 2
    assert norms["optimizer"] == pytest.approx(policy, rel=2e-3, abs=1e-9), norms
    if example != "cartpole_dqn":
        assert norms["critic_optimizer"] == pytest.approx([0.1 * 0.01] * 2, rel=2e-3), norms
