"""The spaces an environment declares, as validation reads them: what a Dict observation's parts
may be, and the networks' blocks written once for the policy and the value network."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from helpers import EXAMPLES, ROOT
from loopgen.dsl import Spec
from loopgen.dsl.environment import _spaces
from loopgen.dsl.loader import load_spec
from loopgen.render import render_script

CELLS = gym.spaces.Box(0.0, 1.0, (8,), np.float32)


class Declared:
    """An environment as validation sees it: its two spaces."""

    def __init__(self, observation_space):
        self.observation_space = observation_space
        self.action_space = gym.spaces.Discrete(2)


def test_a_dict_observation_is_read_as_named_parts_in_the_dicts_order():
    spaces = _spaces(Declared(gym.spaces.Dict({"position": CELLS, "goal": CELLS})), "data", gym)
    assert spaces.named == (("goal", (8,)), ("position", (8,)))
    assert spaces.observation_shape == () and spaces.discrete and spaces.actions == 2


@pytest.mark.parametrize(
    ("observation", "said"),
    [
        (gym.spaces.Dict({"goal-cell": CELLS}), "a part named 'goal-cell'"),
        (gym.spaces.Dict({0: CELLS}), "a part named 0"),
        (gym.spaces.Dict({"class": CELLS}), "a part named 'class'"),
        (gym.spaces.Dict({"größe": CELLS}), "a part named 'größe'"),
        (gym.spaces.Dict({"__cells": CELLS}), "a part named '__cells'"),
        (gym.spaces.Dict({"keras": CELLS}), "a part named 'keras'"),
        (gym.spaces.Dict({"cells": CELLS, "door": gym.spaces.Discrete(2)}), "must be a Box"),
        (gym.spaces.Dict({"inner": gym.spaces.Dict({"cells": CELLS})}), "must be a Box"),
        (gym.spaces.Tuple((CELLS, CELLS)), "a Box (an array) or a Dict of them"),
    ],
    ids=[
        "not-a-name",
        "a-number",
        "a-keyword",
        "not-ascii",
        "dunder",
        "the-scripts-own",
        "a-discrete-part",
        "nested",
        "tuple",
    ],
)
def test_a_dict_part_that_cannot_feed_a_named_input_is_refused_with_the_fix(observation, said):
    with pytest.raises(ValueError, match=r"^data\.target: ") as refused:
        _spaces(Declared(observation), "data.target", gym)
    assert said in str(refused.value)
    assert "wrapper" in str(refused.value) or "rename" in str(refused.value)


def test_a_block_the_policy_and_the_value_network_share_is_written_once(monkeypatch):
    """corridor_ppo's networks built by one helper with a block: one function in the script;
    a block of the same name defined otherwise is refused."""
    monkeypatch.chdir(ROOT)  # examples/envs, imported as examples.envs.corridor
    joined = {"name": "both", "layer": {"kind": "concatenate"}, "inputs": ["a", "b"]}
    block = {"name": "mix", "inputs": ["a", "b"], "output": "both", "nodes": [joined]}
    spec = load_spec(EXAMPLES / "corridor_ppo.py").model_dump()
    spec["data"]["target"] = "examples.envs.corridor:make"
    for network in (spec["model"], spec["training"]["value"]):
        network["blocks"] = [copy.deepcopy(block)]
        network["nodes"][0] = {"name": "cells", "block": "mix", "inputs": ["position", "goal"]}
    script = render_script(Spec.model_validate(spec), spec_file="spec.py")
    assert script.count("def mix(") == 1 and script.count("mix(position, goal") == 2
    spec["training"]["value"]["blocks"][0]["nodes"][0]["layer"] = {"kind": "add"}
    with pytest.raises(ValueError, match=r"a block named 'mix' is in model\.blocks too"):
        Spec.model_validate(spec)
