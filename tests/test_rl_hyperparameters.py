"""Hyperparameters as the peers write them (Stable-Baselines3, the RL Zoo, CleanRL), without
arithmetic: PPO's minibatch size (`batch_size`) as well as its count, the gradient steps of
DQN, SAC and TD3, SAC's automatic entropy target; contradictory pairs refused, naming both
fields. Rendering only: the runs are in test_rl and test_offpolicy."""

from __future__ import annotations

import ast

import pytest
from helpers import EXAMPLES
from loopgen.dsl.loader import load_spec
from loopgen.render import render_script


def constants(example: str, *overrides: str) -> dict:
    """The script's module-level constants, evaluated in order (those it computes from others
    too), rendered from `example` with `overrides`."""
    spec = load_spec(EXAMPLES / f"{example}.py", overrides=list(overrides))
    tree = ast.parse(render_script(spec, spec_file="spec.py"))
    values: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            name = node.targets[0].id
            if name.isupper():
                try:
                    values[name] = eval(compile(ast.Expression(node.value), "", "eval"), {}, values)
                except NameError:  # made of what the script imports
                    pass
    return values


def test_ppo_takes_the_minibatch_size_as_the_rl_zoo_writes_it():
    """cartpole_ppo's 4 minibatches of its 512-transition rollout are minibatches of 128."""
    by_count = constants("cartpole_ppo")
    by_size = constants("cartpole_ppo", "training.batch_size=128", "training.minibatches=null")
    for name in ("MINIBATCHES", "MINIBATCH_SIZE", "ROLLOUT_SIZE"):
        assert by_size[name] == by_count[name], name
    assert by_size["MINIBATCH_SIZE"] == 128 and by_size["MINIBATCHES"] == 4
    # Both, when they agree: the spec as written plus the size it implies.
    assert constants("cartpole_ppo", "training.batch_size=128")["MINIBATCHES"] == 4


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (["training.batch_size=64"], "training.minibatches=4 and training.batch_size=64 disagree"),
        (["training.batch_size=96", "training.minibatches=null"],
         "training.batch_size=96 does not divide a rollout of 512"),
        (["training.minibatches=null"], "minibatches=None and no batch_size"),
    ],
    ids=["disagreeing", "not-a-divisor", "neither"],
)  # fmt: skip
def test_ppo_refuses_minibatches_and_a_batch_size_that_disagree(overrides, said):
    with pytest.raises(Exception, match=said):
        load_spec(EXAMPLES / "cartpole_ppo.py", overrides=overrides)


@pytest.mark.parametrize(
    ("example", "overrides"),
    [("cartpole_dqn", ["training.gradient_steps=4"]),
     ("pendulum_sac", ["training.gradient_steps=4"]),
     ("pendulum_td3", ["training.gradient_steps=4", "training.train_every=2"])],
)  # fmt: skip
def test_gradient_steps_are_written_as_the_peers_write_them(example, overrides):
    """Stable-Baselines3's train_freq and gradient_steps: DQN, SAC and TD3 draw that many
    batches each time they train, and take a step on each."""
    values = constants(example, *overrides)
    assert values["GRADIENT_STEPS"] == 4
    spec = load_spec(EXAMPLES / f"{example}.py", overrides=overrides)
    source = render_script(spec, spec_file="spec.py")
    assert "size = (GRADIENT_STEPS, BATCH_SIZE)" in source  # the batches' indices
    if example == "cartpole_dqn":
        assert "for index in range(GRADIENT_STEPS):" in source
    else:  # and each gradient step's noise
        assert "shape = (GRADIENT_STEPS, " in source
        assert "for index, noise in enumerate(update_noise(global_step)):" in source
    # One gradient step a training is the default: the script says nothing of it.
    assert "GRADIENT_STEPS" not in constants(example)


def test_sac_tunes_alpha_towards_minus_the_action_width_as_sb3_does():
    """SAC(target_entropy="auto"): -1 for Pendulum's one torque; alpha starts at 1."""
    values = constants("pendulum_sac")
    assert values["TARGET_ENTROPY"] == -1.0 and values["INITIAL_ALPHA"] == 1.0
    fixed = constants("pendulum_sac", "training.alpha=0.2")
    assert fixed["ALPHA"] == 0.2 and "TARGET_ENTROPY" not in fixed
