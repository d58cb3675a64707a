"""Pixels: Atari's Breakout (ale-py) in Gymnasium's AtariPreprocessing and
FrameStackObservation, its uint8 frames kept as bytes up to the networks (the rollouts, the
replay buffer, the acting functions, the export's signature), and the replay buffer's memory
stated and checked against the machine's by `loopgen validate`. Exact resume with each
emulator's state is in test_faults' matrix (its pixel_dqn case); the broken specs are in
tests/bad_specs (rl_*pixel*, rl_atari_*, rl_frame_stack_*)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import data
import pytest
from helpers import EXAMPLES, ROOT, render_into, run_cli, run_preloaded

CHECKS = ROOT / "tests" / "rl_checks.py"
FRAMES = (4, 84, 84)  # 4 stacked grayscale screens of 84 x 84
TRANSITION = 2 * math.prod(FRAMES) + 8 + 8  # observed and reached, uint8; action, reward, end


def rl_check(check: str, *args: str, cwd: Path) -> dict:
    proc = run_preloaded(str(CHECKS), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_validate_says_what_the_replay_buffer_of_frames_takes_and_refuses_what_will_not_fit():
    """breakout_dqn's 100,000 transitions: 5.3 GiB, said by `validate`. On this machine a
    buffer fits while it and the copy a checkpoint pickles of it fit in its memory: the
    largest such buffer validates, one transition more is refused, naming the field, the GiB
    and the largest that fits."""
    spec = EXAMPLES / "breakout_dqn.py"
    proc = run_cli("validate", str(spec))
    assert proc.returncode == 0, proc.stderr
    size = f"{100_000 * TRANSITION / 2**30:,.1f} GiB"
    assert size == "5.3 GiB" and f"its replay buffer of 100,000 transitions takes {size}" in (
        proc.stdout
    ), proc.stdout
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    largest = memory // (2 * TRANSITION)
    fits = run_cli("validate", str(spec), "--set", f"training.buffer_size={largest}")
    assert fits.returncode == 0, fits.stderr
    refused = run_cli("validate", str(spec), "--set", f"training.buffer_size={largest + 1}")
    assert refused.returncode == 1 and refused.stdout == "", refused
    message = refused.stderr
    assert f"training.buffer_size={largest + 1:,}: a replay buffer of" in message, message
    assert f"takes {(largest + 1) * TRANSITION / 2**30:,.1f} GiB" in message, message
    assert f"make it at most {largest:,}" in message, message
    # Without checkpoints, the buffer alone must fit: twice as many transitions.
    alone = run_cli("validate", str(spec), "--set", f"training.buffer_size={largest + 1}",
                    "--set", "checkpoint=null")  # fmt: skip
    assert alone.returncode == 0, alone.stderr


TINY_PPO = [
    # One small convolution (the example's networks are Nature CNNs), 2 games, rollouts of
    # 2 x 8 steps.
    "data.num_envs=2", "training.rollout_steps=8", "training.minibatches=2",
    "training.update_epochs=1", "loop.log_every_steps=16",
    'checkpoint={"every_steps": 16, "keep": 1}',
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("example", ["breakout_ppo", "breakout_dqn"])
def test_frames_stay_bytes_up_to_the_networks_and_the_export_takes_them(example, tmp_path):
    """A few dozen steps of Breakout: the frames (uint8, 4 x 84 x 84) are what PPO's policy
    acts on and its rollouts hold, and what DQN's replay buffer holds; the networks take
    uint8 and rescale in their first layer; the export's signature takes uint8 frames and
    answers as the checkpoint's network does on the game's own frames."""
    small = data.small_pixel_dqn()
    layers = next(o for o in small if o.startswith("model.layers="))
    if example == "breakout_ppo":
        value = layers.replace("model.layers=", "training.value.layers=").replace(
            '"units": 4}]', '"units": 1}]'
        )
        overrides = [layers, value, *TINY_PPO]
        steps = "48"
    else:
        overrides = [*small, "loop.log_every_steps=20", 'checkpoint={"every_steps": 20, "keep": 1}']
        steps = "40"
    script = render_into(tmp_path / "train.py", example, *overrides)
    result = rl_check("pixels_as_bytes", str(script), "--max-steps", steps,
                      "--output-dir", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert result["frames"] == ["uint8", [3, *FRAMES]], result
    if example == "breakout_ppo":
        assert result["acted_on"] == "uint8" and result["rollout"] == "uint8", result
    else:
        assert result["buffer"] == ["uint8", "uint8"] and result["buffer_frames"], result
    assert result["network_input"] == "uint8" and result["first_layer"] == "Rescaling", result
    assert result["signature"] == "uint8", result
    assert result["served_diff"] <= 1e-5 and result["actions_are_best"], result
