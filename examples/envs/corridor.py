"""A corridor of cells to walk to a goal cell: the environment of the corridor_ppo example, a
`gymnasium.Env` of your own given to loopgen as `Environment(target="envs.corridor:make")`.

Each episode puts the walker and the goal in two random cells. The observation is a Dict of two
parts, the walker's cell and the goal's, each one-hot over the cells (a goal-conditioned task,
as Gymnasium-Robotics' are): the policy takes them as two named inputs. The actions are a step
left or right. Reaching the goal ends the episode (a termination) with a reward of 1; every
other step costs 0.01, so the shortest walk scores most. The script cuts episodes at
`max_episode_steps` (a truncation)."""

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
        cells = gym.spaces.Box(0.0, 1.0, shape=(length,), dtype=np.float32)
        self.observation_space = gym.spaces.Dict({"position": cells, "goal": cells})
        self.action_space = gym.spaces.Discrete(2)  # 0: left, 1: right
        self.position, self.goal = 0, length - 1

    def observe(self) -> dict[str, np.ndarray]:
        cells = np.eye(self.length, dtype=np.float32)
        return {"position": cells[self.position], "goal": cells[self.goal]}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)  # seeds self.np_random: the script seeds each copy apart
        self.position, self.goal = (
            int(cell) for cell in self.np_random.choice(self.length, 2, replace=False)
        )
        return self.observe(), {}

    def step(self, action):
        move = 1 if int(action) == 1 else -1
        self.position = min(max(self.position + move, 0), self.length - 1)
        arrived = self.position == self.goal
        reward = 1.0 if arrived else -0.01
        return self.observe(), reward, arrived, False, {}

    def render(self) -> np.ndarray:
        """The corridor seen from above: the walker blue, the goal green."""
        picture = np.full((CELL, CELL * self.length, 3), 235, dtype=np.uint8)
        picture[:, self.goal * CELL : (self.goal + 1) * CELL] = (80, 190, 90)
        left = self.position * CELL
        picture[4:-4, left + 4 : left + CELL - 4] = (50, 90, 220)
        picture[:, ::CELL] = 120  # the walls between cells
        return picture


def make(length: int = 8, render_mode: str | None = None) -> Corridor:
    return Corridor(length=length, render_mode=render_mode)
