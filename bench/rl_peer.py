"""The PyTorch peer of the RL bench: Stable-Baselines3 with the settings of the example it is
measured beside (bench/rl.py), run by a Python that has stable-baselines3 and torch
(`--peer-python`; loopgen does not depend on them).

    PEER_PYTHON bench/rl_peer.py ALGORITHM STEPS SEED EPISODES

- ppo: examples/cartpole_ppo.py, CleanRL's ppo.py defaults, on CartPole-v1.
- dqn: CleanRL's dqn.py settings on CartPole-v1 (bench/rl.py renders examples/cartpole_dqn.py
  with them): plain DQN with the squared TD error and no gradient clipping. SB3's DQN takes the
  Huber loss (smooth L1) and clips the gradients by a norm of 10: here its module's
  smooth_l1_loss is the squared error, and max_grad_norm is infinite (it still computes the
  norm).
- sac: examples/pendulum_sac.py, RL Baselines3 Zoo's Pendulum-v1 settings (hyperparams/sac.yml:
  learning rate 1e-3, SB3's defaults otherwise), on Pendulum-v1.

Prints one JSON object: environment steps over training (updates included) per second and per
CPU-second (every thread's), and the mean and standard deviation of the deterministic policy's
return over EPISODES episodes seeded apart from training."""

from __future__ import annotations

import json
import sys
import time

import gymnasium as gym
import numpy as np
import stable_baselines3.dqn.dqn
import torch
from stable_baselines3 import DQN, PPO, SAC
from stable_baselines3.common.env_util import make_vec_env

ENVIRONMENTS = {"ppo": "CartPole-v1", "dqn": "CartPole-v1", "sac": "Pendulum-v1"}


def ppo(seed: int):
    return PPO(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=4, seed=seed),
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


def dqn(seed: int):
    # CleanRL's dqn.py: F.mse_loss of the TD error, and no clipping.
    stable_baselines3.dqn.dqn.F.smooth_l1_loss = torch.nn.functional.mse_loss
    return DQN(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=1, seed=seed),
        learning_rate=2.5e-4,
        buffer_size=10_000,
        learning_starts=10_000,
        batch_size=128,
        tau=1.0,
        gamma=0.99,
        train_freq=10,
        gradient_steps=1,
        target_update_interval=500,
        exploration_fraction=0.5,
        exploration_initial_eps=1.0,
        exploration_final_eps=0.05,
        max_grad_norm=float("inf"),
        policy_kwargs={"net_arch": [120, 84]},  # ReLU, SB3's default for DQN
        seed=seed,
        device="cpu",
    )


def sac(seed: int):
    return SAC("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=1, seed=seed),
               learning_rate=1e-3, seed=seed, device="cpu")  # fmt: skip


def main(algorithm: str, steps: int, seed: int, episodes: int) -> dict:
    # One thread: two contend with the environments' Python on a 2-core machine (measured here:
    # 6,000 steps/s with one, 200 with two while another process computes).
    torch.set_num_threads(1)
    model = {"ppo": ppo, "dqn": dqn, "sac": sac}[algorithm](seed)
    start, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    returns = []
    for episode in range(episodes):
        env = gym.make(ENVIRONMENTS[algorithm])
        observation, _ = env.reset(seed=10_000 + episode)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(observation, deterministic=True)
            observation, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return {
        "steps_per_second": steps / seconds,
        "steps_per_cpu_second": steps / cpu,  # every thread's CPU time
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
    }


if __name__ == "__main__":
    algorithm, *numbers = sys.argv[1:5]
    print(json.dumps(main(algorithm, *(int(n) for n in numbers))))
