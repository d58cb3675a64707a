"""Environments of continuous actions that SAC and TD3 cannot take, for the broken specs
beside this folder."""

import gymnasium as gym
import numpy as np


class Unbounded(gym.Env):
    """A Box of actions without bounds."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)


class Parts(gym.Env):
    """A Dict observation of two parts, and a bounded Box of actions."""

    observation_space = gym.spaces.Dict(
        {"position": gym.spaces.Box(-1.0, 1.0, (2,)), "goal": gym.spaces.Box(-1.0, 1.0, (2,))}
    )
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def unbounded():
    return Unbounded()


def parts():
    return Parts()
