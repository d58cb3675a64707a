"""An environment whose observations name where they were made, for the tests of what a
script stores and bootstraps (test_rl_wiring.py copies it beside the script it renders).

Copy k (k counts the copies a process makes, 0 first) observes [k, episode, step]: the
episode of that copy (from 0) and the steps taken in it (0 after a reset). Every step earns
1 + step / 10. Episode e of copy k ends by the schedule ENDS: at step 3 by termination, at
step LIMIT by termination (which the spec's time limit of LIMIT steps truncates at once: both
flags), or never (the time limit truncates it). So any observation tells which episode it
ends or starts, and where a script stored or bootstrapped the wrong one, the numbers say it.

STEPS lists every step taken in this process, (k, episode, step after it, reward,
terminated), in order: the ground truth the tests hold the script to. With `log` set, every
reset also appends a JSON line to that file: k, the episode, and a number drawn from the
reset's random generator (its seed decides it)."""

import json

import gymnasium as gym
import numpy as np

LIMIT = 5
"""The spec's max_episode_steps."""

ENDS = (3, LIMIT, None)
"""Episode e of copy k terminates at step ENDS[(k + e) % 3]; None: never (it is truncated)."""

STEPS = []


def reward(step):
    return 1.0 + step / 10


def terminates_at(copy, episode):
    return ENDS[(copy + episode) % len(ENDS)]


class Scripted(gym.Env):
    action_space = gym.spaces.Discrete(2)
    made = 0

    def __init__(self, parts=False, log=None):
        self.copy, Scripted.made = Scripted.made, Scripted.made + 1
        self.parts, self.log = parts, log
        self.episode, self.count = -1, 0
        box = gym.spaces.Box(0.0, 1e6, (3,), np.float32)
        if parts:  # the copy and episode in one part, the step in the other
            box = gym.spaces.Dict({
                "episode": gym.spaces.Box(0.0, 1e6, (2,), np.float32),
                "step": gym.spaces.Box(0.0, 1e6, (1,), np.float32),
            })  # fmt: skip
        self.observation_space = box

    def observe(self):
        seen = np.array([self.copy, self.episode, self.count], np.float32)
        return {"episode": seen[:2], "step": seen[2:]} if self.parts else seen

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.count = self.episode + 1, 0
        if self.log:
            with open(self.log, "a") as f:
                draw = float(self.np_random.random())
                f.write(json.dumps({"copy": self.copy, "episode": self.episode, "draw": draw}))
                f.write("\n")
        return self.observe(), {}

    def step(self, action):
        self.count += 1
        terminated = self.count == terminates_at(self.copy, self.episode)
        STEPS.append((self.copy, self.episode, self.count, reward(self.count), terminated))
        return self.observe(), reward(self.count), terminated, False, {}


def make(parts=False, log=None, render_mode=None):
    return Scripted(parts, log)


class Endless(gym.Env):
    """A reward of 1 at every step, forever, and always the same observation: the value of
    every state is 1 / (1 - gamma). Only the spec's time limit (a truncation) ends an episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(1, np.float32), {}

    def step(self, action):
        return np.ones(1, np.float32), 1.0, False, False, {}


def make_endless(render_mode=None):
    return Endless()
