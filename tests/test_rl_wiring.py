"""What the acting loop hands the formulas (issue 47): the reference tests of test_rl.py check
advantages_and_returns, dqn_targets and ppo_loss on arrays of their own; these run the script's
own loop in an environment whose observations name the copy, episode and step they were made
at (tests/scripted_env.py), and check what is bootstrapped, stored and passed against the steps
the environment took: a loop that bootstraps the next episode's first observation, stores a
time limit as the task's end or hands the formula the wrong network's values fails here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, TWO_CPUS, run_cli, run_preloaded, run_python

pytestmark = pytest.mark.slow

CHECKS = ROOT / "tests" / "rl_checks.py"


def rl_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def network(units: int, parts: bool, width: int = 3) -> str:
    """A linear network of scripted_env's observations: [copy, episode, step] (`width` 3; the
    endless task's, 1), or a Dict of the parts "episode" and "step" (a Graph taking each by
    name)."""
    if not parts:
        return f"Sequential(input_shape=({width},), layers=[Dense(units={units})])"
    return (
        'Graph(inputs={"episode": Input(shape=(2,)), "step": Input(shape=(1,))}, nodes=['
        'Node(name="both", layer=Concatenate(), inputs=["episode", "step"]), '
        f'Node(name="out", layer=Dense(units={units}), inputs="both")], outputs="out")'
    )


def scripted_spec(folder: Path, training: str, *, parts: bool = False, log: str | None = None,
                  steps: int, num_envs: int = 3, checkpoint: str = "None",
                  optimizer: str = "Adam(learning_rate=1e-3)", endless: bool = False,
                  variant: str = "single_device") -> None:  # fmt: skip
    """spec.py in `folder` training on scripted_env (copied there), cut at its LIMIT of 5: its
    copies observing [copy, episode, step] (a Dict of parts), or (`endless`) the endless task."""
    shutil.copy(ROOT / "tests" / "scripted_env.py", folder / "scripted_env.py")
    kwargs = {"parts": parts, **({"log": log} if log else {})}
    environment = f"target='scripted_env:make', kwargs={kwargs!r}"
    model = network(2, parts)
    if endless:
        environment, model = "target='scripted_env:make_endless'", network(2, False, width=1)
    (folder / "spec.py").write_text(f"""
from loopgen.dsl import *

spec = Spec(
    name="scripted",
    data=Environment({environment}, num_envs={num_envs}, max_episode_steps=5),
    model={model},
    training={training.replace("VALUE", network(1, parts))},
    optimizer={optimizer},
    loop=Loop(steps={steps}, log_every_steps={steps}),
    checkpoint={checkpoint},
    export=Export(saved_model=False),
)
""")
    mirrored = ["--variant", "mirrored", "--set", TWO_CPUS] if variant == "mirrored" else []
    proc = run_cli("render", "spec.py", "-o", "train.py", *mirrored, cwd=folder)
    assert proc.returncode == 0, proc.stderr


ROLLOUTS = {
    # Each cuts episodes (truncated only), ends some by termination alone and some by both
    # at once, across the rollout's end too (3 copies, 8 steps each, episodes of 3 and 5).
    "ppo": ("PPO(value=VALUE, rollout_steps=8, minibatches=2, update_epochs=1, gamma=0.9, "
            "gae_lambda=0.8)", False),
    "ppo_dict": ("PPO(value=VALUE, rollout_steps=8, minibatches=2, update_epochs=1, gamma=0.9, "
                 "gae_lambda=0.8)", True),
    "ppo_normalized": ("PPO(value=VALUE, rollout_steps=8, minibatches=2, update_epochs=1, "
                       "gamma=0.9, gae_lambda=0.8, normalize_observations=True)", False),
    "a2c": ("ActorCritic(value=VALUE, rollout_steps=8, gamma=0.9)", False),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ROLLOUTS))
def test_a_rollout_bootstraps_each_cut_episode_from_its_last_observation(case, tmp_path):
    """Three rollouts of 8 steps in 3 copies: value_of() is asked for the observations an
    episode cut by the time limit reached (part by part for a Dict, normalized as the networks
    take them), never the next episode's first, never for an episode that terminated at the
    cut too, and for the observations after the rollout; the returns are GAE of the steps
    taken with those values bootstrapped. Normalized, the running statistics are the mean and
    variance of every observation acted on (Chan's parallel update, its between-batch term
    included)."""
    training, parts = ROLLOUTS[case]
    scripted_spec(tmp_path, training, parts=parts, steps=72)
    found = rl_check("collect_wiring", str(tmp_path / "train.py"), "--output-dir",
                     str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert found["problems"] == [], found["problems"]
    # Not a vacuous pass: every rollout checked, with cuts and double ends in them.
    assert found["rollouts"] == 3 and found["cuts"] >= 4 and found["both"] >= 4, found
    if case == "ppo_normalized":
        assert found["mean_diff"] <= 1e-6 and found["var_diff"] <= 1e-6, found


def test_evaluation_plays_environments_seeded_apart_from_training(tmp_path):
    """evaluate's episodes start where no training episode started: its environments are
    seeded apart from training's (a reset's random draws tell the seeds apart)."""
    log = tmp_path / "resets.jsonl"
    scripted_spec(tmp_path, ROLLOUTS["ppo"][0], log=str(log), steps=24,
                  checkpoint="Checkpoint(every_steps=24)")  # fmt: skip
    run_python(tmp_path / "train.py", "--output-dir", "out", cwd=tmp_path)
    trained = [json.loads(line)["draw"] for line in log.read_text().splitlines()]
    assert len(trained) > 3, trained  # every copy's first episode, and some next ones
    run_python(tmp_path / "train.py", "evaluate", "--episodes", "3", "--output-dir", "out",
               cwd=tmp_path)  # fmt: skip
    evaluated = [json.loads(line)["draw"] for line in log.read_text().splitlines()][len(trained) :]
    # The evaluating process also makes training's environments (restored from the
    # checkpoint); its 3 episodes' environments draw anew.
    assert len(set(evaluated) - set(trained)) >= 3, (trained, evaluated)


DQN = ("DQN(buffer_size=1000, batch_size=16, gamma=0.9, learning_starts=32, train_every=1, "
       "target_update_every=TARGET, exploration_fraction=0.5)")  # fmt: skip


@pytest.mark.parametrize("parts", [False, True], ids=["box", "dict"])
def test_dqn_stores_each_transition_as_the_environment_made_it(parts, tmp_path):
    """Every transition the replay buffer hands the train step: the observation reached is the
    same episode's next one (at a cut or a termination, the episode's last, not the next
    episode's first; a Dict part by part), the reward is that step's, and the episode counts
    as ended there only if it terminated (a time limit alone leaves it to be bootstrapped)."""
    scripted_spec(tmp_path, DQN.replace("TARGET", "20"), parts=parts, steps=160, num_envs=2)
    found = rl_check("dqn_transitions", str(tmp_path / "train.py"), "--output-dir",
                     str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert found["problems"] == [], found["problems"]
    # 64 minibatches of 16, with episodes cut, terminated, and both at once among them.
    assert found["batches"] == 64 and found["transitions"] == 64 * 16, found
    assert min(found["cut"], found["terminated"], found["both"]) >= 20, found


@pytest.mark.parametrize("variant", ["single_device", "mirrored"])
def test_dqn_learns_the_endless_tasks_value_by_double_dqn(variant, tmp_path):
    """The endless task cut every 5 steps: DQN learns its true value 10 (1 / (1 - 0.9)), as PPO
    does (test_rl); a cut stored as the task's end would learn about 3.6 (the fixed point of
    Q = 1 + 0.9 * 4/5 * Q). And the train step hands dqn_targets() the Q-network's values to
    pick the next action (they change at every step) and the target network's to value it
    (they change only at its updates, every 20 steps): plain DQN under the name of double DQN,
    or the networks swapped, fail. On two replicas too (their own train step)."""
    steps, every = 800, 20
    scripted_spec(tmp_path, DQN.replace("TARGET", str(every)), endless=True, num_envs=1,
                  steps=steps, optimizer="Adam(learning_rate=0.03)", variant=variant)  # fmt: skip
    found = rl_check("dqn_target_inputs", str(tmp_path / "train.py"), "--output-dir",
                     str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert found["rows_alike"] and found["calls"] >= steps - 32, found
    updates = steps // every
    assert found["target_values"] <= updates + 1 < found["online_values"], found
    assert all(abs(q - 10) < 0.5 for q in found["last_online"]), found
