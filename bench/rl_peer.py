"""The PyTorch peer of the RL bench: Stable-Baselines3's PPO on CartPole-v1 with the
hyperparameters of examples/cartpole_ppo.py (CleanRL's ppo.py defaults), run by a Python that
has stable-baselines3 and torch (`--peer-python`; loopgen does not depend on them).

    PEER_PYTHON bench/rl_peer.py STEPS SEED EPISODES

Prints one JSON object: environment steps per second over training (updates included) and the
mean and standard deviation of the deterministic policy's return over EPISODES episodes seeded
apart from training."""

from __future__ import annotations

import json
import sys
import time

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env


def main(steps: int, seed: int, episodes: int) -> dict:
    # One thread: two contend with the environments' Python on a 2-core machine (measured here:
    # 6,000 steps/s with one, 200 with two while another process computes).
    torch.set_num_threads(1)
    envs = make_vec_env("CartPole-v1", n_envs=4, seed=seed)
    model = PPO(
        "MlpPolicy",
        envs,
        n_steps=128,
        batch_size=128,  # 4 minibatches of a 512-step rollout
        n_epochs=4,
        learning_rate=lambda progress: 2.5e-4 * progress,  # annealed linearly to 0
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        clip_range_vf=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs={
            "net_arch": {"pi": [64, 64], "vf": [64, 64]},
            "activation_fn": torch.nn.Tanh,
        },
        seed=seed,
        device="cpu",
    )
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - start
    returns = []
    for episode in range(episodes):
        env = gym.make("CartPole-v1")
        observation, _ = env.reset(seed=10_000 + episode)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(observation, deterministic=True)
            observation, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        returns.append(total)
    return {
        "steps_per_second": steps / seconds,
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
    }


if __name__ == "__main__":
    print(json.dumps(main(*(int(a) for a in sys.argv[1:4]))))
