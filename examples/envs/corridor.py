"""A corridor of cells to walk to its far end: the environment of the corridor_ppo example, a
`gymnasium.Env` of your own given to loopgen as `Environment(target="envs.corridor:make")`.

Each episode starts in a random cell of the corridor's first half. The observation is the
position, one-hot over the cells; the actions are a step left or right. Reaching the last cell
ends the episode (a termination) with a reward of 1; every other step costs 0.01, so the
shortest walk scores most. The script cuts episodes at `max_episode_steps` (a truncation)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

CELL = 32
"""Pixels a cell is wide in the pictures of `render()`."""


class Corridor(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def __init__(self, length: int = 8, render_mode: str | None = None):
        if length < 2:
            raise ValueError(f"length={length}: a corridor has at least 2 cells")
        self.length = length
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(length,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)  # 0: left, 1: right
        self.position = 0

    def observe(self) -> np.ndarray:
        cells = np.zeros(self.length, dtype=np.float32)
        cells[self.position] = 1.0
        return cells

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # seeds self.np_random: the script seeds each copy apart
        self.position = int(self.np_random.integers(0, self.length // 2))
        return self.observe(), {}

    def step(self, action):
        move = 1 if int(action) == 1 else -1
        self.position = min(max(self.position + move, 0), self.length - 1)
        arrived = self.position == self.length - 1
        reward = 1.0 if arrived else -0.01
        return self.observe(), reward, arrived, False, {}

    def render(self) -> np.ndarray:
        """The corridor seen from above: the walker blue, the goal green."""
        picture = np.full((CELL, CELL * self.length, 3), 235, dtype=np.uint8)
        picture[:, (self.length - 1) * CELL :] = (80, 190, 90)
        left = self.position * CELL
        picture[4:-4, left + 4 : left + CELL - 4] = (50, 90, 220)
        picture[:, ::CELL] = 120  # the walls between cells
        return picture


def make(length: int = 8, render_mode: str | None = None) -> Corridor:
    return Corridor(length=length, render_mode=render_mode)
