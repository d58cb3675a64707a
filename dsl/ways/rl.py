"""Reinforcement learning: no dataset; the model makes its own data by acting in the
environment of `data` (an `Environment`), and a training step learns from what it did. PPO
learns a policy and a value function from rollouts; DQN learns action values from a replay
buffer. `loop.steps` counts environment steps (over all sub-environments), as do the log and
checkpoint cadences."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..base import PositiveFloat, PositiveInt, StrictModel
from ..graph import Graph
from ..model import Functional, Sequential

Network = Annotated[Sequential | Functional | Graph, Field(discriminator="kind")]
"""A Graph takes a Dict observation: its inputs are the Dict's parts, by name."""
Discount = Annotated[float, Field(gt=0, le=1)]
"""gamma: from 0 (excluded: nothing would be learnt of the future) to 1."""
Fraction = Annotated[float, Field(ge=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]


class PPO(StrictModel):
    """Proximal Policy Optimization (Schulman et al., 2017), as CleanRL's `ppo.py` writes it:
    each update collects `rollout_steps` steps in every sub-environment with the current
    policy, computes advantages by GAE(lambda), then takes `update_epochs` passes over the
    rollout in `minibatches` minibatches, each one gradient step on the clipped surrogate,
    the (clipped) value loss and the entropy bonus. `model` is the policy: observations to
    one logit per action (Discrete actions, a Categorical policy) or to the mean action
    (continuous actions, a diagonal Gaussian with a learnt log standard deviation per action).
    `value` is the value network: observations to one value. `optimizer` updates both."""

    kind: Literal["ppo"] = "ppo"
    template: ClassVar[str] = "ppo"

    value: Network
    """The value network: observations (the policy's input shape) to one value each (end it in
    `Dense(units=1)`)."""
    rollout_steps: PositiveInt = 128
    """Steps taken in each sub-environment per update: a rollout holds
    `data.num_envs * rollout_steps` transitions."""
    gamma: Discount = 0.99
    """Discount of future rewards."""
    gae_lambda: Fraction = 0.95
    """lambda of GAE: 0 is the one-step TD advantage, 1 the Monte Carlo return less the
    value."""
    minibatches: PositiveInt = 4
    """Minibatches a rollout is split into, in a new order every epoch."""
    update_epochs: PositiveInt = 4
    """Passes over each rollout."""
    clip: PositiveFloat = 0.2
    """epsilon of the clipped surrogate: the probability ratio is clipped to 1 ± clip."""
    clip_value_loss: bool = True
    """Clip the value's change as the ratio is (CleanRL's default); False: plain squared
    error."""
    entropy_coef: NonNegative = 0.01
    """Weight of the entropy bonus, which keeps the policy exploring."""
    value_coef: PositiveFloat = 0.5
    """Weight of the value loss in the total loss."""
    max_grad_norm: PositiveFloat | None = 0.5
    """Clip the gradients by this global norm; None: no clipping."""
    normalize_advantages: bool = True
    """Normalize the advantages of each minibatch (mean 0, standard deviation 1)."""
    anneal_learning_rate: bool = True
    """Lower the learning rate linearly from `optimizer.learning_rate` to 0 over `loop.steps`,
    as CleanRL does (then `optimizer.learning_rate` must be a number, not a schedule)."""
    normalize_observations: bool = False
    """Normalize the observations by their running mean and variance (as Gymnasium's
    NormalizeObservation), clipped to ±10, before the policy and value network see them. The
    statistics are in the checkpoint (a resumed run normalizes as the run did) and in the
    export (the served model takes raw observations)."""
    initial_log_std: float = 0.0
    """Continuous actions: the log standard deviation the policy starts from."""

    @model_validator(mode="after")
    def _minibatches_fit(self) -> "PPO":
        if self.minibatches > self.rollout_steps:
            raise ValueError(
                f"minibatches={self.minibatches} is more than rollout_steps="
                f"{self.rollout_steps}: a minibatch would hold less than one step of each "
                "sub-environment; use fewer minibatches or longer rollouts"
            )
        return self

    def describe(self, spec: Any) -> str:
        return f"PPO on {spec.data.id or spec.data.target}"

    def log_names(self) -> list[str]:
        """What the script logs (besides the episodes' returns and lengths)."""
        return ["policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"]


class DQN(StrictModel):
    """Deep Q-Network (Mnih et al., 2015), as CleanRL's `dqn.py` writes it: the agent acts
    epsilon-greedily on `model`'s action values (observations to one value per Discrete
    action), stores every transition in a replay buffer, and every `train_every` steps takes
    `gradient_steps` gradient steps, each on a minibatch drawn from it, towards the target
    `r + gamma * max_a' Q_target(s', a')` (double DQN: the online network picks a', the
    target network values it). The target network follows the online one every
    `target_update_every` steps (a copy, or Polyak averaging by `tau`)."""

    kind: Literal["dqn"] = "dqn"
    template: ClassVar[str] = "dqn"

    buffer_size: PositiveInt = 10_000
    """Transitions the replay buffer holds; the oldest are overwritten. The checkpoint keeps it
    whole, so it bounds the checkpoint's size too."""
    batch_size: PositiveInt = 128
    """Transitions per gradient step."""
    gamma: Discount = 0.99
    """Discount of future rewards."""
    learning_starts: PositiveInt = 10_000
    """Environment steps of acting before the first gradient step (the buffer fills)."""
    train_every: PositiveInt = 10
    """Train every this many environment steps of each sub-environment (Stable-Baselines3's
    `train_freq`, CleanRL's `train_frequency`)."""
    gradient_steps: PositiveInt = 1
    """Gradient steps each time it trains, each on a batch of its own (Stable-Baselines3's
    `gradient_steps`)."""
    target_update_every: PositiveInt = 500
    """Update the target network every this many environment steps."""
    tau: Annotated[float, Field(gt=0, le=1)] = 1.0
    """1.0 copies the online network into the target network; less moves it that fraction of
    the way (Polyak averaging)."""
    start_epsilon: Fraction = 1.0
    """Probability of a random action at the start."""
    end_epsilon: Fraction = 0.05
    """Probability of a random action after the exploration phase."""
    exploration_fraction: Annotated[float, Field(gt=0, le=1)] = 0.5
    """Fraction of `loop.steps` over which epsilon falls linearly from start to end."""
    double: bool = True
    """Double DQN: the online network chooses the next action, the target network values it."""
    loss: Literal["huber", "mse"] = "huber"
    """Huber (smooth L1, the paper's clipped error) or squared error of the TD error."""

    @model_validator(mode="after")
    def _buffer_holds_a_batch(self) -> "DQN":
        if self.buffer_size < self.batch_size:
            raise ValueError(
                f"buffer_size={self.buffer_size} is smaller than batch_size={self.batch_size}: "
                "a minibatch is drawn from the buffer; make the buffer larger"
            )
        if self.end_epsilon > self.start_epsilon:
            raise ValueError(
                f"end_epsilon={self.end_epsilon} is above start_epsilon={self.start_epsilon}: "
                "exploration falls over training; swap them"
            )
        return self

    def describe(self, spec: Any) -> str:
        return f"DQN on {spec.data.id or spec.data.target}"

    def log_names(self) -> list[str]:
        """What the script logs (besides the episodes' returns and lengths)."""
        return ["loss", "q_value", "epsilon"]


class ActorCritic(StrictModel):
    """Advantage actor-critic (A2C: Mnih et al., 2016, synchronous), the TensorFlow
    actor-critic tutorial's method over several environments: each update collects
    `rollout_steps` steps in every sub-environment, computes n-step returns bootstrapped from
    the value of the last observation (GAE(lambda) with `gae_lambda` below 1), and takes one
    gradient step on the whole rollout: the policy gradient of the advantages, the value's
    squared error and the entropy bonus. `model` is the policy, `value` the value network, as
    for PPO; `optimizer` updates both."""

    kind: Literal["actor_critic"] = "actor_critic"
    template: ClassVar[str] = "ppo"  # PPO's rollouts; its own loss and update

    value: Network
    """The value network: observations to one value each (end it in `Dense(units=1)`)."""
    rollout_steps: PositiveInt = 5
    """n of the n-step returns: steps taken in each sub-environment per update."""
    gamma: Discount = 0.99
    """Discount of future rewards."""
    gae_lambda: Fraction = 1.0
    """1: plain n-step returns; below 1, GAE(lambda) within the rollout."""
    entropy_coef: NonNegative = 0.0
    """Weight of the entropy bonus."""
    value_coef: PositiveFloat = 0.5
    """Weight of the value loss in the total loss."""
    max_grad_norm: PositiveFloat | None = 0.5
    """Clip the gradients by this global norm; None: no clipping."""
    normalize_advantages: bool = False
    """Normalize the advantages of each rollout (mean 0, standard deviation 1)."""
    anneal_learning_rate: bool = False
    """Lower the learning rate linearly from `optimizer.learning_rate` to 0 over
    `loop.steps`."""
    normalize_observations: bool = False
    """As PPO's: running statistics, in the checkpoint and the export."""
    initial_log_std: float = 0.0
    """Continuous actions: the log standard deviation the policy starts from."""

    def describe(self, spec: Any) -> str:
        return f"A2C on {spec.data.id or spec.data.target}"

    def log_names(self) -> list[str]:
        """What the script logs (besides the episodes' returns and lengths)."""
        return ["policy_loss", "value_loss", "entropy"]
