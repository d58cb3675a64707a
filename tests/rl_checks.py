"""Reinforcement-learning checks that the tests run in a process of their own:
`python rl_checks.py CHECK ...`. Each prints one JSON object on its last line of stdout. The
references are written here from the formulas (CleanRL's ppo.py and dqn.py), not from the
script's code."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import tensorflow as tf
from tf_checks import load_script


def gae_reference(rewards, values, ended, last_values, gamma, lam):
    """GAE as a sum: advantage_t = sum_l (gamma lam)^l delta_t+l over the rest of t's
    episode within the rollout, delta_t = r_t + gamma V(s_t+1) [0 past an episode's end] -
    V(s_t)."""
    steps, envs = rewards.shape
    advantages = np.zeros((steps, envs))
    for env in range(envs):
        for t in range(steps):
            total, weight = 0.0, 1.0
            for u in range(t, steps):
                following = last_values[env] if u == steps - 1 else values[u + 1, env]
                delta = rewards[u, env] + gamma * following * (1 - ended[u, env]) - values[u, env]
                total += weight * delta
                if ended[u, env]:
                    break
                weight *= gamma * lam
            advantages[t, env] = total
    return advantages


def random_rollout(module, rng, ends: float) -> tuple:
    """Rewards, values and episode ends ([ROLLOUT_STEPS, NUM_ENVS], a share `ends` of the
    steps ending an episode) and the values after the last step, of the script's shapes."""
    steps, envs = module.ROLLOUT_STEPS, module.NUM_ENVS
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    ended = (rng.random((steps, envs)) < ends).astype(np.float32)
    return rewards, values, ended, rng.normal(size=envs).astype(np.float32)


def ppo_reference(script: str) -> dict:
    """The script's GAE and PPO loss against references of the formulas, on random values with
    episode ends and a policy that moved enough for the clipping to matter."""
    module = load_script(script)
    rng = np.random.default_rng(0)
    rewards, values, ended, last_values = random_rollout(module, rng, ends=0.1)
    advantages, returns = module.advantages_and_returns(rewards, values, ended, last_values)
    expected = gae_reference(rewards, values, ended, last_values, module.GAMMA, module.GAE_LAMBDA)
    gae_diff = float(np.max(np.abs(advantages - expected)))
    returns_diff = float(np.max(np.abs(returns - (expected + values))))

    n = 64
    batch = {
        "log_probs": rng.normal(-0.7, 0.3, n),
        "advantages": rng.normal(0.5, 2.0, n),
        "returns": rng.normal(size=n),
        "values": rng.normal(size=n),
    }
    log_probs = batch["log_probs"] + rng.normal(0, 0.4, n)  # ratios well outside 1 +- clip
    entropies = rng.random(n)
    new_values = batch["values"] + rng.normal(0, 0.5, n)
    loss, parts = module.ppo_loss(
        tf.constant(log_probs), tf.constant(entropies), tf.constant(new_values),
        {k: tf.constant(v) for k, v in batch.items()},
    )  # fmt: skip

    clip = module.CLIP
    ratio = np.exp(log_probs - batch["log_probs"])
    adv = batch["advantages"]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    policy = np.mean(np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - clip, 1 + clip)))
    clipped = batch["values"] + np.clip(new_values - batch["values"], -clip, clip)
    value = 0.5 * np.mean(
        np.maximum((new_values - batch["returns"]) ** 2, (clipped - batch["returns"]) ** 2)
    )
    total = policy - module.ENTROPY_COEF * entropies.mean() + module.VALUE_COEF * value
    kl = np.mean((ratio - 1) - (log_probs - batch["log_probs"]))
    clipped_share = np.mean(np.abs(ratio - 1) > clip)
    got = [float(loss)] + [float(p) for p in parts]
    want = [total, policy, value, entropies.mean(), kl, clipped_share]
    return {
        "gae_diff": gae_diff,
        "returns_diff": returns_diff,
        "loss_diff": float(np.max(np.abs(np.array(got) - np.array(want)))),
        "clipped_share": float(clipped_share),
        "episode_ends": int(ended.sum()),
    }


def actor_critic_reference(script: str) -> dict:
    """The script's A2C returns (GAE with lambda 1: n-step returns, each bootstrapped from the
    value after the rollout's last step unless its episode ended first) and loss, against
    references of the formulas."""
    module = load_script(script)
    rng = np.random.default_rng(2)
    rewards, values, ended, last_values = random_rollout(module, rng, ends=0.2)
    steps, envs = module.ROLLOUT_STEPS, module.NUM_ENVS
    _, returns = module.advantages_and_returns(rewards, values, ended, last_values)
    expected = np.zeros((steps, envs))
    for env in range(envs):
        following = last_values[env]
        for t in reversed(range(steps)):
            following = rewards[t, env] + module.GAMMA * following * (1 - ended[t, env])
            expected[t, env] = following

    n = 40
    batch = {"advantages": rng.normal(size=n), "returns": rng.normal(size=n)}
    log_probs, entropies, new_values = rng.normal(-0.7, 0.3, n), rng.random(n), rng.normal(size=n)
    loss, parts = module.actor_critic_loss(
        tf.constant(log_probs), tf.constant(entropies), tf.constant(new_values),
        {k: tf.constant(v) for k, v in batch.items()},
    )  # fmt: skip
    policy = -np.mean(batch["advantages"] * log_probs)
    value = np.mean((batch["returns"] - new_values) ** 2)
    total = policy - module.ENTROPY_COEF * entropies.mean() + module.VALUE_COEF * value
    got = [float(loss)] + [float(p) for p in parts]
    want = [total, policy, value, entropies.mean()]
    return {
        "returns_diff": float(np.max(np.abs(returns - expected))),
        "loss_diff": float(np.max(np.abs(np.array(got) - np.array(want)))),
        "episode_ends": int(ended.sum()),
    }


def dqn_reference(script: str) -> dict:
    """The script's DQN targets against the formula, for terminated and other transitions."""
    module = load_script(script)
    rng = np.random.default_rng(1)
    n, actions = 32, module.NUM_ACTIONS
    rewards = rng.normal(size=n).astype(np.float32)
    terminated = (rng.random(n) < 0.3).astype(np.float32)
    next_q = rng.normal(size=(n, actions)).astype(np.float32)
    next_q_target = rng.normal(size=(n, actions)).astype(np.float32)
    targets = module.dqn_targets(rewards, terminated, next_q, next_q_target).numpy()
    chosen = next_q_target[np.arange(n), next_q.argmax(-1)]  # double DQN
    expected = rewards + module.GAMMA * (1 - terminated) * chosen
    plain = rewards + module.GAMMA * (1 - terminated) * next_q_target.max(-1)
    return {
        "diff": float(np.max(np.abs(targets - expected))),
        "terminated": int(terminated.sum()),
        # A reference that took the target network's own best action differs: the test's
        # values tell double DQN from plain DQN.
        "plain_diff": float(np.max(np.abs(targets - plain))),
    }


def episode_ends(script: str) -> dict:
    """Steps the script's Environments (its counting environment, beside it) until every
    episode is cut by the time limit: what the step reports as reached and what the next step
    acts on, by part of the observation."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    module = load_script(script)
    environments = module.Environments()
    for _ in range(module.MAX_EPISODE_STEPS):
        reached, _, terminated, truncated = environments.step(np.zeros(module.NUM_ENVS, np.int64))

    def listed(observations):
        if isinstance(observations, dict):
            return {name: part.tolist() for name, part in observations.items()}
        return {"": observations.tolist()}

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Keras warns of inputs of another structure
        outputs = [network(reached).shape.as_list() for network in
                   (module.build_model(), module.build_value_network())]  # fmt: skip
    return {
        "terminated": terminated.tolist(),
        "truncated": truncated.tolist(),
        "reached": listed(reached),
        "next": listed(environments.observations),
        "outputs": outputs,
    }


def rollout_as_acted(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV), its collect() watched: the observations act()
    was given and the actions it returned, step by step, against the rollouts collect()
    returned (what the update and the batched log-probabilities and values are taken on)."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    module = load_script(script)
    collect, differences = module.collect, []

    def watched(environments, act, *rest):
        steps = []

        def acting(observations, seed):
            actions = act(observations, seed)
            steps.append((tf.nest.map_structure(np.asarray, observations), actions.numpy()))
            return actions

        rollout = collect(environments, acting, *rest)
        # (step, sub-environment) order: each step's sub-environments one after another.
        seen = tf.nest.map_structure(lambda *parts: np.concatenate(parts), *(o for o, _ in steps))
        taken = np.concatenate([a for _, a in steps])
        differences.append(max(
            *(float(np.max(np.abs(a - b))) for a, b in
              zip(tf.nest.flatten(seen), tf.nest.flatten(rollout["observations"]), strict=True)),
            float(np.max(np.abs(taken - rollout["actions"]))),
        ))  # fmt: skip
        return rollout

    module.collect = watched
    module.main(list(argv))
    return {"rollouts": len(differences), "max_diff": max(differences)}


def _restored(module, path: str, names: dict[str, object]) -> dict:
    """The networks (and variables) `names` of an off-policy script restored from `path`."""
    tf.train.Checkpoint(**names).restore(path).expect_partial()
    return names


def _off_policy_networks(module) -> dict:
    """Fresh networks of a SAC or TD3 script, by the names its checkpoint gives them."""
    source = Path(module.__file__).read_text()
    twins = "critic_1, critic_2 = build_critic(), build_critic()" in source
    critics = ["critic_1", "critic_2"] if twins else ["critic"]
    names = {"model": module.build_model(), **{n: module.build_critic() for n in critics}}
    names["target_critics"] = [module.build_critic() for _ in critics]
    if hasattr(module, "INITIAL_ALPHA"):
        names["log_alpha"] = tf.Variable(0.0)
    if hasattr(module, "EXPLORATION_NOISE"):  # TD3
        names["target_policy"] = module.build_model()
    return names


def _linear(network) -> tuple[np.ndarray, np.ndarray]:
    """The kernel and bias of a network of one Dense layer, as float64."""
    kernel, bias = network.get_weights()
    return kernel.astype(np.float64), bias.astype(np.float64)


def _replayed(module, checkpoints: str, step: int):
    """The batch and the noise of the gradient step at `step`, as the script draws them: its
    replay buffer restored from ckpt-`step` (the transitions up to that step), sampled by the
    script's own sample(step), and its update_noise(step)."""
    buffer = module.ReplayBuffer()
    tf.train.Checkpoint(buffer=buffer).restore(f"{checkpoints}/ckpt-{step}").expect_partial()
    batch = [np.asarray(part, np.float64) for part in buffer.sample(step)]
    noise = module.update_noise(step) if hasattr(module, "update_noise") else None
    return batch, noise


def _logged_at(output_dir: str, step: int) -> dict:
    for line in Path(output_dir, "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["step"] == step:
            return record
    raise AssertionError(f"no log at step {step}")


def sac_reference(script: str, output_dir: str) -> dict:
    """SAC's gradient steps, recomputed in NumPy from the formulas (Haarnoja et al.;
    Stable-Baselines3's order: alpha as it was before the step in every loss, the policy's
    loss on the updated critics), on linear networks trained by plain SGD, step by step from
    LEARNING_STARTS + 1 to the newest checkpoint: the targets, the three losses, and the
    critics', the policy's, alpha's and the target critics' values after each, against what
    the script's critic_targets() returns, what the run logged and what each checkpoint holds.
    The target entropy is "auto"'s: minus the action width (of the buffer's actions); the
    target critics move tau of the way at every TARGET_UPDATE_EVERY-th step, else stay."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    module = load_script(script)
    checkpoints = f"{output_dir}/checkpoints"
    first = module.LEARNING_STARTS + 1
    last = int(tf.train.latest_checkpoint(checkpoints).rsplit("-", 1)[1])
    gamma, tau, dim = module.GAMMA, module.TAU, module.ACTION_DIM
    every = getattr(module, "TARGET_UPDATE_EVERY", 1)
    low, high = module.LOG_STD_MIN, module.LOG_STD_MAX
    rates = {name: float(o.learning_rate.numpy()) for name, o in
             (("actor", optimizer_of(script, "optimizer")),
              ("critic", optimizer_of(script, "critic_optimizer")))}  # fmt: skip

    def squashed(outputs, eps):
        mean, log_std = outputs[:, :dim], np.clip(outputs[:, dim:], low, high)
        u = mean + np.exp(log_std) * eps
        actions = np.tanh(u)
        # The change of variables: log |d tanh(u) / du| = log(1 - tanh(u)^2), in float64.
        log_slope = np.log(4.0) - 2 * u - 2 * np.logaddexp(0.0, -2 * u)
        log_prob = np.sum(-0.5 * eps**2 - log_std - 0.5 * np.log(2 * np.pi) - log_slope, axis=1)
        return u, log_std, actions, log_prob

    result = {"steps": [], "targets": 0.0, "losses": 0.0, "critics": 0.0, "policy": 0.0,
              "target_critics": 0.0, "log_alpha": 0.0, "terminated": 0, "clipped": 0,
              "policy_moved": 0.0}  # fmt: skip
    for step in range(first, last + 1):
        before = _restored(module, f"{checkpoints}/ckpt-{step - 1}",
                           _off_policy_networks(module))  # fmt: skip
        after = _restored(module, f"{checkpoints}/ckpt-{step}", _off_policy_networks(module))
        (s, a, r, s2, done), noise = _replayed(module, checkpoints, step)
        noise = noise.astype(np.float64)
        critic_names = [n for n in ("critic_1", "critic_2", "critic") if n in before]
        target_entropy = -float(a.shape[1])  # "auto"
        W, b = _linear(before["model"])
        log_alpha = float(before["log_alpha"].numpy())
        alpha = np.exp(log_alpha)
        # The soft targets: the smaller target critic's value of the policy's action at s2.
        _, _, a2, logp2 = squashed(s2 @ W + b, noise[1])
        targets_q = [np.concatenate([s2, a2], 1) @ k + c for k, c in
                     (_linear(t) for t in before["target_critics"])]  # fmt: skip
        y = r + gamma * (1 - done) * (np.min(np.stack(targets_q), 0)[:, 0] - alpha * logp2)
        script_targets = module.critic_targets(
            before["model"], before["target_critics"],
            [tf.constant(part, tf.float32) for part in (s, a, r, s2, done)],
            tf.constant(noise[1], tf.float32), tf.constant(alpha, tf.float32),
        ).numpy()  # fmt: skip
        # The critics: half the sum of their mean squared errors; SGD on their gradients.
        x = np.concatenate([s, a], 1)
        critic_loss, new_critics = 0.0, {}
        for name in critic_names:
            k, c = _linear(before[name])
            error = (x @ k + c)[:, 0] - y
            critic_loss += 0.5 * np.mean(error**2)
            new_critics[name] = (k - rates["critic"] * (x.T @ error[:, None]) / len(y),
                                 c - rates["critic"] * np.mean(error))  # fmt: skip
        # The policy: alpha log pi - min Q of the updated critics at its own actions.
        _, log_std, actions, logp = squashed(s @ W + b, noise[0])
        q = np.stack([np.concatenate([s, actions], 1) @ k + c for k, c in new_critics.values()])
        chosen = np.argmin(q[:, :, 0], axis=0)
        actor_loss = np.mean(alpha * logp - q[chosen, np.arange(len(y)), 0])
        slopes = np.stack([k[-dim:, 0] for k, _ in new_critics.values()])[chosen]  # [B, dim]
        # d logp / du through the change of variables (-d/du log(1 - tanh(u)^2) = 2 tanh(u)),
        # d min Q / du through the action (d tanh(u) / du = 1 - tanh(u)^2).
        d_u = (alpha * 2 * actions - slopes * (1 - actions**2)) / len(y)
        within = (s @ W + b)[:, dim:] == log_std  # the clip passes no gradient outside
        d_log_std = (d_u * np.exp(log_std) * noise[0] - alpha / len(y)) * within
        d_out = np.concatenate([d_u, d_log_std], 1)
        new_W, new_b = W - rates["actor"] * s.T @ d_out, b - rates["actor"] * d_out.sum(0)
        # alpha: its loss is -log_alpha (log pi + target entropy), averaged.
        alpha_loss = -np.mean(log_alpha * (logp + target_entropy))
        new_log_alpha = log_alpha + rates["critic"] * np.mean(logp + target_entropy)
        # Polyak: tau of the way to the updated critics, at every `every`-th update only.
        moves = (step - first + 1) % every == 0
        new_targets = [
            [tau * new_critics[n][i] + (1 - tau) * _linear(t)[i] if moves else _linear(t)[i]
             for i in (0, 1)]
            for n, t in zip(critic_names, before["target_critics"], strict=True)
        ]  # fmt: skip

        logged = _logged_at(output_dir, step)
        got = {
            "critics": max(relative_diff(_linear(after[n])[i], new_critics[n][i])
                           for n in critic_names for i in (0, 1)),
            "policy": max(relative_diff(_linear(after["model"])[0], new_W),
                          relative_diff(_linear(after["model"])[1], new_b)),
            "target_critics": max(relative_diff(_linear(t)[i], new[i])
                                  for t, new in zip(after["target_critics"], new_targets,
                                                    strict=True) for i in (0, 1)),
            "log_alpha": abs(float(after["log_alpha"].numpy()) - new_log_alpha),
            "targets": relative_diff(script_targets, y),
            "losses": max(relative_diff(np.array(logged[key]), np.array(want)) for key, want in
                          (("critic_loss", critic_loss), ("actor_loss", actor_loss),
                           ("alpha", alpha), ("alpha_loss", alpha_loss))),
        }  # fmt: skip
        for key, value in got.items():
            result[key] = max(result[key], value)
        result["terminated"] += int(done.sum())
        result["clipped"] += int((~within).sum())
        result["policy_moved"] = max(result["policy_moved"], relative_diff(new_W, W))
        result["steps"].append({"step": step, "targets_moved": bool(moves)})
    return result


def td3_reference(script: str, output_dir: str) -> dict:
    """TD3's first gradient steps, recomputed in NumPy from the formulas (Fujimoto et al.;
    Stable-Baselines3's): the targets with target policy smoothing (clipped noise on the
    target policy's action, the sum clipped to [-1, 1]) and the smaller target critic, the
    critics' squared errors summed, and the policy with every target network moving only at
    every POLICY_DELAY-th critic update; on linear networks trained by plain SGD, step by
    step from LEARNING_STARTS + 1 to the newest checkpoint. A script without POLICY_DELAY,
    TARGET_NOISE and a second critic is DDPG, checked against DDPG's formulas."""
    module = load_script(script)
    checkpoints = f"{output_dir}/checkpoints"
    first = module.LEARNING_STARTS + 1
    last = int(tf.train.latest_checkpoint(checkpoints).rsplit("-", 1)[1])
    gamma, tau, dim = module.GAMMA, module.TAU, module.ACTION_DIM
    delay = getattr(module, "POLICY_DELAY", 1)
    smoothing = getattr(module, "TARGET_NOISE", 0.0)
    rates = {name: float(o.learning_rate.numpy()) for name, o in
             (("actor", optimizer_of(script, "optimizer")),
              ("critic", optimizer_of(script, "critic_optimizer")))}  # fmt: skip
    result = {"steps": [], "targets": 0.0, "critics": 0.0, "policy": 0.0, "target_critics": 0.0,
              "target_policy": 0.0, "losses": 0.0, "smoothing_clipped": 0,
              "smoothing_clip_shows": 0}  # fmt: skip
    for step in range(first, last + 1):
        before = _restored(module, f"{checkpoints}/ckpt-{step - 1}", _off_policy_networks(module))
        after = _restored(module, f"{checkpoints}/ckpt-{step}", _off_policy_networks(module))
        critic_names = [n for n in ("critic_1", "critic_2", "critic") if n in before]
        (s, a, r, s2, done), noise = _replayed(module, checkpoints, step)
        tW, tb = _linear(before["target_policy"])
        next_actions = np.tanh(s2 @ tW + tb)
        if smoothing:
            raw = smoothing * noise.astype(np.float64)
            clip = module.TARGET_NOISE_CLIP
            result["smoothing_clipped"] += int((np.abs(raw) > clip).sum())
            unclipped = np.clip(next_actions + raw, -1, 1)
            next_actions = np.clip(next_actions + np.clip(raw, -clip, clip), -1, 1)
            # Transitions bootstrapped from an action that the noise's clip changed, which
            # the final clip to [-1, 1] does not hide.
            changed = np.any(np.abs(next_actions - unclipped) > 1e-3, axis=1) & (done == 0)
            result["smoothing_clip_shows"] += int(changed.sum())
        targets_q = [np.concatenate([s2, next_actions], 1) @ k + c for k, c in
                     (_linear(t) for t in before["target_critics"])]  # fmt: skip
        y = r + gamma * (1 - done) * np.min(np.stack(targets_q), 0)[:, 0]
        args = [tf.constant(part, tf.float32) for part in (s, a, r, s2, done)]
        extra = [tf.constant(noise, tf.float32)] if smoothing else []
        script_targets = module.critic_targets(before["target_policy"], before["target_critics"],
                                               args, *extra).numpy()  # fmt: skip
        result["targets"] = max(result["targets"], relative_diff(script_targets, y))
        x = np.concatenate([s, a], 1)
        critic_loss, new_critics = 0.0, {}
        for name in critic_names:
            k, c = _linear(before[name])
            error = (x @ k + c)[:, 0] - y
            critic_loss += np.mean(error**2)  # the sum of the critics' mean squared errors
            new_critics[name] = (k - rates["critic"] * 2 * (x.T @ error[:, None]) / len(y),
                                 c - rates["critic"] * 2 * np.mean(error))  # fmt: skip
        updates = step - first + 1  # critic updates so far, this one included
        moves = updates % delay == 0
        W, b = _linear(before["model"])
        new_W, new_b = W, b
        if moves:
            actions = np.tanh(s @ W + b)
            k1, c1 = new_critics[critic_names[0]]  # the first critic, updated
            d_u = -(k1[-dim:, 0] * (1 - actions**2)) / len(y)
            new_W, new_b = W - rates["actor"] * s.T @ d_u, b - rates["actor"] * d_u.sum(0)
            actor_loss = -np.mean(np.concatenate([s, actions], 1) @ k1 + c1)
        logged = _logged_at(output_dir, step)
        result["losses"] = max(
            result["losses"], relative_diff(np.array(logged["critic_loss"]), critic_loss)
        )
        if moves:
            result["losses"] = max(
                result["losses"], relative_diff(np.array(logged["actor_loss"]), actor_loss)
            )
        result["critics"] = max(result["critics"], *(
            relative_diff(_linear(after[n])[i], new_critics[n][i])
            for n in critic_names for i in (0, 1)))  # fmt: skip
        result["policy"] = max(result["policy"], relative_diff(_linear(after["model"])[0], new_W),
                               relative_diff(_linear(after["model"])[1], new_b))  # fmt: skip
        for target, name in zip(after["target_critics"], critic_names, strict=True):
            old = _linear(before["target_critics"][critic_names.index(name)])
            want = [tau * new_critics[name][i] + (1 - tau) * old[i] if moves else old[i]
                    for i in (0, 1)]  # fmt: skip
            result["target_critics"] = max(result["target_critics"],
                                           *(relative_diff(_linear(target)[i], want[i])
                                             for i in (0, 1)))  # fmt: skip
        want = [tau * new + (1 - tau) * old if moves else old
                for new, old in zip((new_W, new_b), (tW, tb), strict=True)]  # fmt: skip
        result["target_policy"] = max(
            result["target_policy"],
            *(relative_diff(_linear(after["target_policy"])[i], want[i]) for i in (0, 1)),
        )
        result["steps"].append({"step": step, "policy_moved": bool(moves),
                                "actor_logged": "actor_loss" in logged,
                                "terminated": int(done.sum())})  # fmt: skip
    return result


def optimizer_of(script: str, name: str):
    """The optimizer `name` the script builds in train() (its constructor's line, evaluated)."""
    import keras

    for line in Path(script).read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith(f"{name} = keras.optimizers."):
            return eval(stripped.split(" = ", 1)[1], {"keras": keras})
    raise AssertionError(f"no {name} in {script}")


def critic_value(script: str, output_dir: str, observation: str, action: str) -> dict:
    """The newest checkpoint's critics (and their smaller value) at one observation and one
    action in [-1, 1]."""
    sys.path.insert(0, str(Path(script).parent))
    module = load_script(script)
    networks = _off_policy_networks(module)
    tf.train.Checkpoint(**networks).restore(
        tf.train.latest_checkpoint(f"{output_dir}/checkpoints")
    ).expect_partial()
    inputs = np.array([json.loads(observation) + json.loads(action)], np.float32)
    values = [float(networks[n](inputs)[0, 0]) for n in ("critic_1", "critic_2", "critic")
              if n in networks]  # fmt: skip
    return {"values": values, "smaller": min(values)}


def off_policy_wiring(script: str, output_dir: str) -> dict:
    """What a SAC or TD3 run stored, bootstrapped and passed, against what its scripted
    environment (beside the script) saw: the environments and the replay buffer of the
    newest checkpoint, unpickled. Each sub-environment logs every step it was given: the
    observation it was at, the action it received, the reward, the observation it reached
    (the episode's last at a cut, before any reset) and whether it terminated."""
    sys.path.insert(0, str(Path(script).parent))
    module = load_script(script)
    environments, buffer = module.Environments(), module.ReplayBuffer()
    path = tf.train.latest_checkpoint(f"{output_dir}/checkpoints")
    tf.train.Checkpoint(environments=environments, buffer=buffer).restore(path).expect_partial()
    envs = [env.unwrapped for env in environments.envs.envs]
    count = len(envs[0].log)
    assert all(len(env.log) == count for env in envs)
    assert buffer.size == count * module.NUM_ENVS <= module.BUFFER_SIZE
    diffs = {"observations": 0.0, "actions": 0.0, "rewards": 0.0, "reached": 0.0}
    flags, cut_reached = [], []
    for t in range(count):
        for i, env in enumerate(envs):
            seen, received, reward, reached, terminated, truncated = env.log[t]
            j = t * module.NUM_ENVS + i  # (step, sub-environment) order
            diffs["observations"] = max(
                diffs["observations"], float(np.max(np.abs(buffer.observations[j] - seen)))
            )
            passed = module.to_bounds(buffer.actions[j].astype(np.float64))
            diffs["actions"] = max(diffs["actions"], float(np.max(np.abs(passed - received))))
            diffs["rewards"] = max(diffs["rewards"], abs(float(buffer.rewards[j]) - reward))
            diffs["reached"] = max(
                diffs["reached"], float(np.max(np.abs(buffer.reached[j] - reached)))
            )
            flags.append((bool(buffer.terminated[j]), bool(terminated), bool(truncated)))
            if truncated and not terminated:
                cut_reached.append(buffer.reached[j].tolist())
    stored = buffer.actions[: buffer.size]
    # Bootstrapped: critic_targets() on the stored transitions, networks whose every value is
    # 7, against the reward alone where the episode terminated.
    constant = module.build_critic()
    constant.set_weights([np.zeros_like(w) for w in constant.get_weights()[:-1]]
                         + [np.full_like(constant.get_weights()[-1], 7.0)])  # fmt: skip
    batch = [tf.constant(part[: buffer.size]) for part in
             (buffer.observations, buffer.actions, buffer.rewards, buffer.reached,
              buffer.terminated)]  # fmt: skip
    policy = module.build_model()
    shape = (buffer.size, module.ACTION_DIM)
    if hasattr(module, "squashed_gaussian"):  # SAC: alpha 0, the value alone
        noise = tf.zeros(shape)
        targets = module.critic_targets(policy, [constant], batch, noise, 0.0).numpy()
    elif hasattr(module, "TARGET_NOISE"):
        targets = module.critic_targets(policy, [constant], batch, tf.zeros(shape)).numpy()
    else:
        targets = module.critic_targets(policy, [constant], batch).numpy()
    terminated = buffer.terminated[: buffer.size] == 1
    rewards = buffer.rewards[: buffer.size]
    bootstrapped = rewards + module.GAMMA * 7.0
    return {
        **diffs,
        "transitions": int(buffer.size),
        "terminated_as_seen": all(stored_flag == seen for stored_flag, seen, _ in flags),
        "terminated": int(sum(seen for _, seen, _ in flags)),
        "truncated": int(sum(cut for _, _, cut in flags)),
        "cut_reached": cut_reached,
        "actions_within": bool(np.all(np.abs(stored) <= 1.0)),
        "bootstrap_where_terminated": float(np.max(np.abs(targets - rewards)[terminated])),
        "bootstrap_elsewhere": float(np.max(np.abs(targets - bootstrapped)[~terminated])),
    }  # fmt: skip


def sampled_batches(script: str, output_dir: str, step: str) -> dict:
    """The batches a DQN script draws at `step` from its replay buffer (the newest
    checkpoint's): how many, and how many differ."""
    module = load_script(script)
    buffer = module.ReplayBuffer()
    path = tf.train.latest_checkpoint(f"{output_dir}/checkpoints")
    tf.train.Checkpoint(buffer=buffer).restore(path).expect_partial()
    observations = buffer.sample(int(step))[0]  # [GRADIENT_STEPS, BATCH_SIZE, ...]
    distinct = {observations[g].tobytes() for g in range(len(observations))}
    return {"count": len(observations), "distinct": len(distinct)}


def optimizer_steps(output_dir: str) -> dict:
    """The gradient steps each optimizer took, by its name in the newest checkpoint."""
    reader = tf.train.load_checkpoint(f"{output_dir}/checkpoints")
    suffix = "/_iterations/.ATTRIBUTES/VARIABLE_VALUE"
    return {key.removesuffix(suffix): int(reader.get_tensor(key))
            for key in reader.get_variable_to_shape_map() if key.endswith(suffix)}  # fmt: skip


def update_norms(output_dir: str, first: str, last: str) -> dict:
    """How far each optimizer moved its variables at each step from `first` to `last`: the
    global norm of the change between ckpt-(step - 1) and ckpt-step, by the optimizer's name
    in the checkpoint (a variable is saved under the first optimizer that holds it)."""
    norms: dict[str, list[float]] = {}
    for step in range(int(first), int(last) + 1):
        before, after = (tf.train.load_checkpoint(f"{output_dir}/checkpoints/ckpt-{s}")
                         for s in (step - 1, step))  # fmt: skip
        squares: dict[str, float] = {}
        for name in before.get_variable_to_shape_map():
            if "/_trainable_variables/" in name:
                change = after.get_tensor(name).astype(np.float64) - before.get_tensor(name)
                owner = name.split("/_trainable_variables/")[0]
                squares[owner] = squares.get(owner, 0.0) + float(np.sum(change**2))
        for owner, square in squares.items():
            norms.setdefault(owner, []).append(square**0.5)
    return norms


def scripted_steps(first: int, envs: int) -> list[list[tuple]]:
    """The steps scripted_env took since STEPS[first], a list of its NUM_ENVS copies' steps
    (copy, episode, step after it, reward, terminated) per vector step, by copy."""
    import scripted_env

    taken = scripted_env.STEPS[first:]
    assert len(taken) % envs == 0, len(taken)
    return [sorted(taken[i : i + envs]) for i in range(0, len(taken), envs)]


def scripted_observation(copy, episode, step, parts):
    """What scripted_env observes there (a Dict's parts by name, as its observe() does)."""
    seen = np.array([copy, episode, step], np.float32)
    return {"episode": seen[:2], "step": seen[2:]} if parts else seen


def normalized(observations, mean, var):
    """Gymnasium's NormalizeObservation, as the README states it: by the running mean and
    variance, clipped to +-10 (in float64, then float32)."""
    return np.clip((observations - mean) / np.sqrt(var + 1e-8), -10, 10).astype(np.float32)


def alike(given, want) -> bool:
    """Whether two observations (arrays, or a Dict's parts) are equal, but for rounding."""
    pairs = zip(tf.nest.flatten(given), tf.nest.flatten(want), strict=True)
    return all(a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-6) for a, b in pairs)


def listed(observations):
    return tf.nest.map_structure(np.ndarray.tolist, observations)


def stacked(rows, parts):
    if parts:
        return {name: np.stack([row[name] for row in rows]) for name in rows[0]}
    return np.stack(rows)


def collect_wiring(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV) in scripted_env (beside the script, its copies
    observing [copy, episode, step]), its collect() watched: what value_of() is asked to
    estimate at each step (the observations reached where an episode was cut, normalized as
    the networks take them) and at the rollout's end, against the steps the environment took;
    and the advantages and returns of each rollout against GAE of those steps' rewards, with
    each cut episode's reward bootstrapped by the value of the observation reached there and
    the rollout's end by the values after it. With normalized observations, also the running
    statistics at the end against the mean and variance of every observation acted on."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    import scripted_env

    module = load_script(script)
    envs, rollout_steps = module.NUM_ENVS, module.ROLLOUT_STEPS
    parts = hasattr(module, "OBSERVATION_SHAPES")
    statistics = []
    if hasattr(module, "ObservationStatistics"):

        class Watched(module.ObservationStatistics):
            def __init__(self):
                super().__init__()
                statistics.append(self)

        module.ObservationStatistics = Watched
    collect, found = module.collect, {"rollouts": 0, "cuts": 0, "both": 0, "problems": []}

    def watched(environments, act, estimates, value_of, *rest):
        asked = []

        def watched_value_of(observations):
            values = value_of(observations)
            # The statistics the networks' inputs are normalized by at this moment.
            moments = [(s.mean.numpy(), s.var.numpy()) for s in statistics]
            asked.append((tf.nest.map_structure(np.array, observations), values.numpy(), moments))
            return values

        first = len(scripted_env.STEPS)
        rollout = collect(environments, act, estimates, watched_value_of, *rest)
        steps = scripted_steps(first, envs)
        assert len(steps) == rollout_steps, len(steps)
        rewards = np.zeros((rollout_steps, envs))
        ended = np.zeros((rollout_steps, envs))
        cuts = []  # each step's (copy, observation reached) of the episodes cut there
        for t, taken in enumerate(steps):
            cuts.append([])
            for copy, episode, step, reward, terminated in taken:
                truncated = step == scripted_env.LIMIT
                rewards[t, copy] = reward
                ended[t, copy] = terminated or truncated
                found["both"] += bool(terminated and truncated)
                if truncated and not terminated:  # cut: the task went on
                    cuts[t].append((copy, scripted_observation(copy, episode, step, parts)))
            found["cuts"] += len(cuts[t])
        expected = [t for t, reached in enumerate(cuts) if reached]  # value_of() asked there
        after = [
            scripted_observation(c, e + 1, 0, parts) if t or s == scripted_env.LIMIT
            else scripted_observation(c, e, s, parts)
            for c, e, s, _, t in steps[-1]
        ]  # fmt: skip
        if len(asked) != len(expected) + 1:
            found["problems"].append(
                f"value_of() asked {len(asked)} times, not at the {len(expected)} steps that "
                "cut an episode and the rollout's end"
            )
            return rollout
        calls = iter(asked)
        bootstrap = np.zeros((rollout_steps, envs))
        for t in expected:
            reached = cuts[t]
            given, values, moments = next(calls)
            want = stacked([observation for _, observation in reached], parts)
            if moments:
                want = normalized(want, *moments[0])
            if not alike(given, want):
                found["problems"].append(
                    f"step {t}: value_of() given {listed(given)} for the cut episodes' last "
                    f"observations {listed(want)}"
                )
                continue
            for (copy, _), value in zip(reached, values, strict=True):
                bootstrap[t, copy] = value
        given, last_values, moments = next(calls)
        want = stacked(after, parts)
        if moments:
            want = normalized(want, *moments[0])
        if not alike(given, want):
            found["problems"].append(
                f"the rollout's end: value_of() given {listed(given)}, not the observations "
                f"after it {listed(want)}"
            )
        values = rollout["values"].reshape(rollout_steps, envs)
        advantages = gae_reference(rewards + module.GAMMA * bootstrap, values, ended,
                                   last_values, module.GAMMA, module.GAE_LAMBDA)  # fmt: skip
        got = rollout["returns"].reshape(rollout_steps, envs)
        difference = relative_diff(got, advantages + values)
        if "advantages" in rollout:
            got = rollout["advantages"].reshape(rollout_steps, envs)
            difference = max(difference, relative_diff(got, advantages))
        if difference > 1e-5:
            found["problems"].append(f"the returns are {difference} off GAE of the steps taken")
        found["rollouts"] += 1
        return rollout

    module.collect = watched
    module.main(list(argv))
    if statistics:
        (watched_statistics,) = statistics
        # Every observation acted on: each step's, before it (the step counted one less).
        seen = np.array([[c, e, s - 1] for c, e, s, _, _ in scripted_env.STEPS], np.float64)
        # Gymnasium's RunningMeanStd starts from mean 0, variance 1 over a count of 1e-4.
        count = len(seen) + 1e-4
        mean = seen.sum(0) / count
        var = (np.sum((seen - mean) ** 2, 0) + 1e-4 * (1 + mean**2)) / count
        found["mean_diff"] = relative_diff(watched_statistics.mean.numpy(), mean)
        found["var_diff"] = relative_diff(watched_statistics.var.numpy(), var)
    return found


def dqn_transitions(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV) in scripted_env (its copies observing [copy,
    episode, step]), watching the minibatches the replay buffer hands the train step: each
    transition against the step the environment took from its observation, whose reached
    observation is the same episode's next (at an episode's end too: the last, not the next
    episode's first), its reward that step's, and its end a termination only."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    import scripted_env

    module = load_script(script)
    sample, drawn = module.ReplayBuffer.sample, []

    def watched(self, *args, **kwargs):
        batch = sample(self, *args, **kwargs)
        drawn.append(tf.nest.map_structure(np.array, batch))
        return batch

    module.ReplayBuffer.sample = watched
    module.main(list(argv))

    def rows(observations):  # a Dict's parts back to [copy, episode, step]
        if isinstance(observations, dict):
            return np.concatenate([observations["episode"], observations["step"]], axis=-1)
        return observations

    found = {"batches": len(drawn), "transitions": 0, "cut": 0, "terminated": 0, "both": 0,
             "problems": []}  # fmt: skip
    for observations, _, rewards, reached, terminated in drawn:
        for seen, reward, then, end in zip(rows(observations), rewards, rows(reached), terminated,
                                           strict=True):  # fmt: skip
            copy, episode, step = (int(v) for v in seen)
            ends = scripted_env.terminates_at(copy, episode) == step + 1
            truncated = step + 1 == scripted_env.LIMIT
            found["transitions"] += 1
            found["cut"] += truncated and not ends
            found["terminated"] += ends and not truncated
            found["both"] += ends and truncated
            want = ([copy, episode, step + 1], scripted_env.reward(step + 1), float(ends))
            wrong = then.tolist() != want[0] or abs(reward - want[1]) > 1e-6 or end != want[2]
            if wrong and len(found["problems"]) < 5:
                found["problems"].append(
                    f"from {seen.tolist()}: stored reached {then.tolist()}, reward {reward}, "
                    f"terminated {end}; the environment made {want}"
                )
    return found


def dqn_target_inputs(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV) in the endless task (one observation, always),
    watching what the train step hands dqn_targets(): the Q-network's action values of the
    observation reached (`next_q`, which picks the next action) and the target network's
    (`next_q_target`, which values it). The Q-network learns at every train step, the target
    network moves only at its updates: their values must be those of the network named."""
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    module = load_script(script)
    targets, calls = module.dqn_targets, []

    def watched(rewards, terminated, next_q, next_q_target):
        def record(next_q, next_q_target):
            calls.append((next_q.numpy(), next_q_target.numpy()))
            return 0

        tf.py_function(record, [next_q, next_q_target], tf.int32)
        return targets(rewards, terminated, next_q, next_q_target)

    module.dqn_targets = watched
    # XLA cannot compile the py_function that watches: the step runs uncompiled (its code is
    # the same; performance.xla only sets jit_compile), as --check-numerics has it.
    modes = module.execution_modes
    module.execution_modes = lambda args: modes(args) and False
    module.main(list(argv))
    # The observation never changes: every row of a call is the same.
    same = all(np.ptp(q, axis=0).max() == 0 and np.ptp(t, axis=0).max() == 0 for q, t in calls)
    return {
        "calls": len(calls),
        "rows_alike": bool(same),
        "online_values": len({q[0].tobytes() for q, _ in calls}),
        "target_values": len({t[0].tobytes() for _, t in calls}),
        "last_online": calls[-1][0][0].tolist() if calls else None,
        "online_trace": [round(float(q[0].mean()), 2) for q, _ in calls[::50]],
    }


def relative_diff(a, b) -> float:
    """The largest difference, relative to the value where it is above 1 (float32 keeps 7
    digits)."""
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def served_against_networks(script: str, output_dir: str, observations: str) -> dict:
    """The exported SavedModel on raw observations (loaded as TF Serving would, no class of
    the script's) against the script's networks restored from the newest checkpoint, on the
    observations normalized by the checkpoint's statistics where the script normalizes."""
    given = json.loads(observations)  # a list of observations, or a Dict's parts by name
    if isinstance(given, dict):
        x = {name: np.array(part, np.float32) for name, part in given.items()}
        inputs = {name: tf.constant(part) for name, part in x.items()}
    else:
        x = np.array(given, np.float32)
        inputs = {"observations": tf.constant(x)}
    served = tf.saved_model.load(f"{output_dir}/export/saved_model/1").signatures["serving_default"]
    outputs = {k: v.numpy() for k, v in served(**inputs).items()}
    sys.path.insert(0, str(Path(script).parent))  # where the script finds your modules
    module = load_script(script)
    model = module.build_model()
    networks = {"model": model}
    if hasattr(module, "build_value_network"):
        networks["value_network"] = module.build_value_network()
    if hasattr(module, "ObservationStatistics"):
        networks["observation_statistics"] = module.ObservationStatistics()
    checkpoint = tf.train.Checkpoint(**networks)
    checkpoint.restore(tf.train.latest_checkpoint(f"{output_dir}/checkpoints")).expect_partial()
    inputs = x
    if "observation_statistics" in networks:
        reader = tf.train.load_checkpoint(f"{output_dir}/checkpoints")
        mean = reader.get_tensor("observation_statistics/mean/.ATTRIBUTES/VARIABLE_VALUE")
        var = reader.get_tensor("observation_statistics/var/.ATTRIBUTES/VARIABLE_VALUE")
        inputs = np.clip((x - mean) / np.sqrt(var + 1e-8), -10, 10).astype(np.float32)
    scores = model(inputs).numpy()
    result = {"actions": outputs["actions"].tolist(), "normalized": inputs is not x}
    if hasattr(module, "deterministic_actions"):  # SAC, TD3: the tanh of the (mean) output
        low, high = np.array(module.ACTION_LOW), np.array(module.ACTION_HIGH)
        squashed = np.tanh(scores[:, : module.ACTION_DIM].astype(np.float64))
        expected = low + (squashed + 1) * (high - low) / 2
        result["deterministic_diff"] = float(np.max(np.abs(outputs["actions"] - expected)))
        result["actions_are_best"] = result["deterministic_diff"] <= 1e-6
        result["actions_within_bounds"] = bool(
            np.all((outputs["actions"] >= low) & (outputs["actions"] <= high))
        )
        return result
    if "values" in outputs:
        values = networks["value_network"](inputs).numpy()[:, 0]
        result["values_diff"] = relative_diff(outputs["values"], values)
        result["values"] = outputs["values"].tolist()
    if "probabilities" in outputs:
        result["probabilities_diff"] = relative_diff(
            outputs["probabilities"], tf.nn.softmax(scores).numpy()
        )
    elif "mean" in outputs:
        result["mean_diff"] = relative_diff(outputs["mean"], scores)
        bounded = np.clip(scores, module.ACTION_LOW, module.ACTION_HIGH)
        result["actions_are_best"] = bool(np.allclose(outputs["actions"], bounded, atol=1e-6))
        return result
    else:
        result["q_values_diff"] = relative_diff(outputs["q_values"], scores)
    result["actions_are_best"] = bool(np.array_equal(outputs["actions"], scores.argmax(-1)))
    return result


def scaled_rewards_reference(raw, ended, gamma: float, clip: float = 10.0):
    """Rewards scaled as Stable-Baselines3's VecNormalize scales them, written as the whole
    sums rather than its running update: at step t, each sub-environment's discounted return
    (restarted after an episode's end) joins every return seen before it, and the reward is
    divided by the standard deviation of them all (a prior of variance 1 and weight 1e-4
    included), then clipped. `raw` and `ended`: [steps, sub-environments]. Returns the scaled
    rewards and the final (mean, variance, count, returns)."""
    steps, envs = raw.shape
    returns, seen = np.zeros(envs), []
    scaled = np.zeros((steps, envs))
    count = mean = var = 0.0
    for t in range(steps):
        returns = returns * gamma + raw[t]
        seen.extend(returns)
        values = np.array(seen)
        count = 1e-4 + len(values)
        mean = values.sum() / count  # the prior's mean is 0
        var = (1e-4 * 1.0 + np.square(values).sum()) / count - mean**2
        scaled[t] = np.clip(raw[t] / np.sqrt(var + 1e-8), -clip, clip)
        returns = np.where(ended[t], 0.0, returns)
    return scaled, (mean, var, count, returns)


def reward_scale_reference(script: str) -> dict:
    """The script's RewardScale on rewards of a large and changing scale and random episode
    ends, against the reference of the formulas: the scaled rewards and the statistics."""
    module = load_script(script)
    rng = np.random.default_rng(0)
    steps, envs = 300, module.NUM_ENVS
    raw = (rng.normal(size=(steps, envs)) * np.linspace(1, 300, steps)[:, None]).astype(np.float32)
    raw[[100, 200], 0] *= 1000  # two outliers, which the clip bounds
    ended = rng.random((steps, envs)) < 0.05
    scale = module.RewardScale()
    scaled = np.stack([scale(raw[t], ended[t]) for t in range(steps)])
    expected, (mean, var, count, returns) = scaled_rewards_reference(
        raw.astype(np.float64), ended, module.GAMMA, module.REWARD_CLIP
    )
    # Unscaled, or scaled by the returns' variance without restarting them at an episode's
    # end: how far those would be.
    unrestarted, _ = scaled_rewards_reference(raw.astype(np.float64), ended * 0, module.GAMMA)
    return {
        "scaled_diff": relative_diff(scaled, expected),
        "clipped": int(np.sum(np.abs(expected) >= module.REWARD_CLIP)),
        "unscaled_diff": relative_diff(raw, expected),
        "unrestarted_diff": relative_diff(unrestarted, expected),
        "statistics_diff": relative_diff(
            np.array([scale.mean, scale.var, scale.count]), np.array([mean, var, count])
        ),
        "returns_diff": float(np.max(np.abs(scale.returns - returns))),
    }


def reward_scaling_wiring(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV) on its scripted environment (beside it: each
    sub-environment logs the rewards it gave and how its episodes ended), the value network's
    estimates of what follows a cut episode replaced by 0: the rewards the update's
    advantages are computed from, against the environments' rewards scaled by the reference;
    the logged returns against the environments' own sums; the checkpoint's statistics."""
    sys.path.insert(0, str(Path(script).parent))
    module = load_script(script)
    learnt, held = [], []
    advantages_and_returns, collect = module.advantages_and_returns, module.collect

    def recording(rewards, values, ended, last_values):
        learnt.append((rewards.copy(), ended.copy()))
        return advantages_and_returns(rewards, values, ended, last_values)

    def watched(environments, act, estimates, value_of, *rest):
        held[:] = [environments]
        return collect(environments, act, estimates, lambda o: tf.zeros(len(o)), *rest)

    module.advantages_and_returns, module.collect = recording, watched
    module.main(list(argv))
    envs = [env.unwrapped for env in held[0].envs.envs]
    given = np.array([[step[0] for step in env.log] for env in envs]).T  # [steps, envs]
    ended = np.array([[step[1] or step[2] for step in env.log] for env in envs]).T
    rewards = np.concatenate([r for r, _ in learnt])
    expected, (mean, var, count, returns) = scaled_rewards_reference(
        given, ended, module.GAMMA, module.REWARD_CLIP
    )
    # Each log's mean return, of the episodes that ended in its rollout (a log each rollout).
    episodes = [[] for _ in range(len(learnt))]
    for env in envs:
        total = 0.0
        for t, (reward, terminated, truncated) in enumerate(env.log):
            total += reward
            if terminated or truncated:
                episodes[t // module.ROLLOUT_STEPS].append(total)
                total = 0.0
    logged = [
        json.loads(line)
        for line in Path(argv[argv.index("--output-dir") + 1], "metrics.jsonl")
        .read_text()
        .splitlines()
    ]
    scale = module.RewardScale()
    path = tf.train.latest_checkpoint(argv[argv.index("--output-dir") + 1] + "/checkpoints")
    tf.train.Checkpoint(reward_scale=scale).restore(path).expect_partial()
    return {
        "steps": int(rewards.shape[0]),
        "ends": int(ended.sum()),
        "ended_as_given": bool(np.array_equal(np.concatenate([e for _, e in learnt]), ended)),
        "learnt_diff": relative_diff(rewards, expected),
        "raw_diff": relative_diff(rewards, given),
        "logged_returns": [record.get("episode_return") for record in logged],
        "given_returns": [float(np.mean(e)) if e else None for e in episodes],
        "saved_diff": relative_diff(np.array([scale.mean, scale.var, scale.count, *scale.returns]),
                                    np.array([mean, var, count, *returns])),
    }  # fmt: skip


def pixels_as_bytes(script: str, *argv: str) -> dict:
    """Trains with the script's main(ARGV) on pixels (its collect() watched, where it has
    one): the dtypes of what the policy acted on, of the rollouts, of the replay buffer, of
    the networks' input and of the export's signature; and the export, loaded without the
    script, against the checkpoint's network on the environment's own uint8 frames."""
    module = load_script(script)
    seen = {}
    if hasattr(module, "collect"):
        collect = module.collect

        def watched(environments, act, *rest):
            rollout = collect(environments, act, *rest)
            seen["acted_on"] = act.structured_input_signature[0][0].dtype.name
            seen["rollout"] = rollout["observations"].dtype.name
            return rollout

        module.collect = watched
    module.main(list(argv))
    output_dir = argv[argv.index("--output-dir") + 1]
    path = tf.train.latest_checkpoint(f"{output_dir}/checkpoints")
    model = module.build_model()
    names = {"model": model}
    if hasattr(module, "ReplayBuffer"):
        names["buffer"] = module.ReplayBuffer()
    tf.train.Checkpoint(**names).restore(path).expect_partial()
    if "buffer" in names:
        buffer = names["buffer"]
        seen["buffer"] = [buffer.observations.dtype.name, buffer.reached.dtype.name]
        seen["buffer_frames"] = bool(buffer.observations[: buffer.size].any())
    envs, frames = module.make_envs(3, evaluation=True)
    envs.close()
    served = tf.saved_model.load(f"{output_dir}/export/saved_model/1")
    signature = served.signatures["serving_default"]
    outputs = signature(observations=tf.constant(frames))
    scores = model(tf.constant(frames)).numpy()
    key = "q_values" if "q_values" in outputs else "probabilities"
    expected = scores if key == "q_values" else tf.nn.softmax(scores).numpy()
    return {
        **seen,
        "frames": [frames.dtype.name, list(frames.shape)],
        "network_input": model.inputs[0].dtype,
        "first_layer": type(model.layers[0]).__name__,
        "signature": signature.structured_input_signature[1]["observations"].dtype.name,
        "served_diff": relative_diff(outputs[key].numpy(), expected),
        "actions_are_best": bool(np.array_equal(outputs["actions"], scores.argmax(-1))),
    }


if __name__ == "__main__":
    check, *args = sys.argv[1:]
    print(json.dumps(globals()[check](*args)))
