"""Reward normalization (PPO(normalize_rewards=True), A2C's too), as Stable-Baselines3's
VecNormalize scales rewards: the script's RewardScale against a reference of the formulas, and
its wiring on a scripted environment (what the update learns from, what is logged, what the
checkpoint keeps, what evaluate reports). Exact resume after a SIGKILL, the statistics
included, is in test_faults' matrix (its ppo_continuous case scales its rewards)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, render_into, run_cli, run_preloaded, run_python

pytestmark = pytest.mark.slow

CHECKS = ROOT / "tests" / "rl_checks.py"


def rl_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("example", ["pendulum_ppo", "cartpole_a2c"])
def test_rewards_are_scaled_by_the_running_deviation_of_the_discounted_return(example, tmp_path):
    """Rewards of a scale that grows 300-fold, episodes ending at random: each scaled reward
    and the final statistics equal the reference (the whole sums of every return seen, each
    sub-environment's restarted after its episode's end) within float rounding."""
    script = render_into(tmp_path / "train.py", example, "training.normalize_rewards=true",
                         "export.saved_model=false")  # fmt: skip
    result = rl_check("reward_scale_reference", str(script), cwd=tmp_path)
    assert result["clipped"] > 0, result  # the clip is exercised
    assert result["unscaled_diff"] > 1 and result["unrestarted_diff"] > 1e-2, result
    assert result["scaled_diff"] <= 1e-6 and result["statistics_diff"] <= 1e-9, result
    assert result["returns_diff"] <= 1e-9, result


SCORED = '''
import gymnasium as gym
import numpy as np


class Scored(gym.Env):
    """Rewards of a large scale, whatever the action: 50 + 10 k at the k-th step of an
    episode. Each episode's length is drawn at its reset, 2 to 6 steps: it terminates there
    when odd, is truncated (a time limit of its own) when even. Every step is logged as
    (reward, terminated, truncated)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.log = []

    def observe(self):
        return np.array([self.k / 10, 1.0], np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.k, self.length = 0, int(self.np_random.integers(2, 7))
        return self.observe(), {}

    def step(self, action):
        self.k += 1
        reward = 50.0 + 10.0 * self.k
        end = self.k == self.length
        terminated, truncated = end and self.length % 2 == 1, end and self.length % 2 == 0
        self.log.append((reward, terminated, truncated))
        return self.observe(), reward, terminated, truncated, {}


def make():
    return Scored()
'''

SCORED_SPEC = """
from loopgen.dsl import (
    PPO, ActorCritic, Adam, Checkpoint, Dense, Environment, Loop, Sequential, Spec,
)

value = Sequential(input_shape=(2,), layers=[Dense(units=8, activation="tanh"), Dense(units=1)])
spec = Spec(
    name="scored",
    data=Environment(target="scored:make", num_envs=3),
    model=Sequential(input_shape=(2,), layers=[Dense(units=8, activation="tanh"), Dense(units=2)]),
    training=WAY,
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=240, log_every_steps=24),
    checkpoint=Checkpoint(every_steps=48),
)
"""
WAYS = {
    "ppo": "PPO(value=value, rollout_steps=8, minibatches=2, normalize_rewards=True)",
    "a2c": "ActorCritic(value=value, rollout_steps=8, normalize_rewards=True)",
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_the_update_learns_from_scaled_rewards_and_the_log_and_evaluate_see_the_raw_ones(
    way, tmp_path
):
    """Ten rollouts of 3 x 8 steps of the scripted environment: the rewards the advantages
    are computed from are the environment's, scaled by the reference, step by step (and the
    episode ends are the environment's); the logged returns are the environment's own sums;
    the checkpoint holds the reference's statistics; evaluate plays the raw rewards (an
    episode is worth 130 or more; scaled, 60 at most)."""
    (tmp_path / "scored.py").write_text(SCORED)
    (tmp_path / "spec.py").write_text(SCORED_SPEC.replace("WAY", WAYS[way]))
    proc = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = rl_check("reward_scaling_wiring", str(tmp_path / "train.py"),
                      "--output-dir", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert result["steps"] == 80 and result["ends"] > 20 and result["ended_as_given"], result
    assert result["raw_diff"] > 0.5 and result["learnt_diff"] <= 1e-6, result
    assert len(result["logged_returns"]) == 10 and None not in result["logged_returns"], result
    for logged, given in zip(result["logged_returns"], result["given_returns"], strict=True):
        assert logged == pytest.approx(given, rel=1e-9), result
    assert result["saved_diff"] <= 1e-9, result
    run_python(tmp_path / "train.py", "evaluate", "--episodes", "4", "--output-dir", "out",
               cwd=tmp_path)  # fmt: skip
    evaluation = json.loads((tmp_path / "out" / "evaluations.jsonl").read_text())
    assert evaluation["return_mean"] >= 130, evaluation
