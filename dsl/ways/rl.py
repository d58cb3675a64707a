"""Reinforcement learning: no dataset; the model makes its own data by acting in the
environment of `data` (an `Environment`), and a training step learns from what it did. PPO
learns a policy and a value function from rollouts; DQN learns action values from a replay
buffer, SAC and TD3 a policy for continuous actions and its critics from one. `loop.steps`
counts environment steps (over all sub-environments), as do the log and checkpoint
cadences."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..base import PositiveFloat, PositiveInt, StrictModel
from ..graph import Graph
from ..model import Functional, Sequential
from ..training import PlainOptimizer

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
    minibatches: PositiveInt | None = 4
    """Minibatches a rollout is split into, in a new order every epoch (CleanRL's
    `num_minibatches`); None where `batch_size` sets them."""
    batch_size: PositiveInt | None = None
    """Transitions per minibatch instead (Stable-Baselines3's and the RL Zoo's `batch_size`):
    the rollout of `data.num_envs x rollout_steps` is split into minibatches of this many. Set
    it and the minibatches follow; set both only if they agree."""
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
    normalize_rewards: bool = False
    """Scale the rewards the update learns from by the running standard deviation of each
    sub-environment's discounted return, clipped to ±10 (Stable-Baselines3's VecNormalize,
    which the RL Zoo's `normalize: true` turns on with the observations'; Gymnasium's
    NormalizeReward). Not centred: a shifted reward would change what ending an episode is
    worth. The statistics are in the checkpoint; the logged returns, `evaluate` and the
    export are the environment's own."""
    initial_log_std: float = 0.0
    """Continuous actions: the log standard deviation the policy starts from."""

    @model_validator(mode="before")
    @classmethod
    def _batch_size_instead(cls, data: Any) -> Any:
        # A batch_size given without minibatches sets them (the count follows from num_envs).
        if isinstance(data, dict) and data.get("batch_size") is not None:
            return {"minibatches": None, **data}
        return data

    def minibatch_count(self, num_envs: int) -> int:
        """Minibatches per epoch: `minibatches`, or the rollout over `batch_size`."""
        if self.minibatches is None:
            return num_envs * self.rollout_steps // (self.batch_size or 1)
        return self.minibatches

    @model_validator(mode="after")
    def _minibatches_fit(self) -> "PPO":
        if self.minibatches is None and self.batch_size is None:
            raise ValueError(
                "minibatches=None and no batch_size: set minibatches (e.g. 4) or batch_size "
                "(transitions per minibatch)"
            )
        if self.minibatches is not None and self.minibatches > self.rollout_steps:
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
    max_grad_norm: PositiveFloat | None = None
    """Clip each gradient step's gradient by this global norm (Stable-Baselines3's DQN and the
    RL Zoo's settings: 10); None: no clipping (CleanRL's)."""

    @model_validator(mode="before")
    @classmethod
    def _no_reward_scaling(cls, data: Any) -> Any:
        return _refuse_reward_scaling("DQN", data)

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
        return f"DQN on {spec.data.id or spec.data.target}{_buffer_memory(spec)}"

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
    normalize_rewards: bool = False
    """As PPO's: the rewards scaled by the running standard deviation of the discounted
    return, in the checkpoint; the logged returns are the environment's."""
    initial_log_std: float = 0.0
    """Continuous actions: the log standard deviation the policy starts from."""

    def describe(self, spec: Any) -> str:
        return f"A2C on {spec.data.id or spec.data.target}"

    def log_names(self) -> list[str]:
        """What the script logs (besides the episodes' returns and lengths)."""
        return ["policy_loss", "value_loss", "entropy"]


class _OffPolicyActorCritic(StrictModel):
    """What SAC and TD3 share: a policy for continuous actions (`model`) and Q-networks
    (`critic`) learnt from a replay buffer, with target critics that follow by Polyak
    averaging. The policy acts in [-1, 1] (a tanh), and its actions are scaled to the
    environment's Box; the buffer and the critics take them in [-1, 1]. Before
    `learning_starts` the agent acts uniformly at random."""

    critic: Annotated[Sequential | Functional, Field(discriminator="kind")]
    """A Q-network: an observation and an action side by side, `input_shape=(observation
    width + action width,)`, to one value (end it in `Dense(units=1)`). The script builds
    `critics` copies of it, each with its own initial weights, and a target copy of each."""
    critics: Literal[1, 2] = 2
    """Q-networks learnt side by side; the targets and the policy take the smaller of their
    values (clipped double Q-learning, against overestimation)."""
    critic_optimizer: PlainOptimizer | None = None
    """The critics' optimizer; None: one of `optimizer`'s settings."""
    buffer_size: PositiveInt = 1_000_000
    """Transitions the replay buffer holds; the oldest are overwritten. The checkpoint keeps
    it whole, so it bounds the checkpoint's size too."""
    batch_size: PositiveInt = 256
    """Transitions per gradient step (drawn with replacement: a buffer that holds fewer at the
    first step is sampled all the same, as Stable-Baselines3 does)."""
    gamma: Discount = 0.99
    """Discount of future rewards."""
    tau: Annotated[float, Field(gt=0, le=1)] = 0.005
    """The target networks move this fraction of the way to the trained ones at each of their
    updates (Polyak averaging); 1 copies them."""
    learning_starts: PositiveInt = 100
    """Environment steps of uniformly random actions before the first gradient step."""
    train_every: PositiveInt = 1
    """Train every this many vector steps (Stable-Baselines3's `train_freq`)."""
    gradient_steps: PositiveInt = 1
    """Gradient steps each time it trains, each on a batch of its own."""
    max_grad_norm: PositiveFloat | None = None
    """Clip the critics' gradient and the policy's, each by this global norm, at every gradient
    step (alpha's, one number, is not); None: no clipping (Stable-Baselines3's and CleanRL's)."""

    @model_validator(mode="before")
    @classmethod
    def _no_reward_scaling(cls, data: Any) -> Any:
        return _refuse_reward_scaling(cls.__name__, data)

    def log_names(self) -> list[str]:
        """What the script logs (besides the episodes' returns and lengths)."""
        return ["critic_loss", "actor_loss", "q_value"]


class SAC(_OffPolicyActorCritic):
    """Soft Actor-Critic (Haarnoja et al., 2018), as Stable-Baselines3 writes it: a stochastic
    policy, `model`, gives each action dimension's mean and then its log standard deviation
    (`Dense(units=2 * action width)`), and acts by tanh(mean + std * noise); the critics learn
    the soft Q-value `r + gamma * (min Q_target(s', a') - alpha * log pi(a'|s'))`, the policy
    maximizes `min Q(s, a) - alpha * log pi(a|s)`, and alpha, the entropy's weight, is tuned so
    that the policy's entropy stays near `target_entropy` (its logarithm is learnt and
    checkpointed). The log-probability of a squashed action takes the tanh's change of
    variables into account."""

    kind: Literal["sac"] = "sac"
    template: ClassVar[str] = "offpolicy"

    alpha: PositiveFloat | Literal["auto"] = "auto"
    """The entropy's weight: "auto" learns it (from `initial_alpha`), a number fixes it."""
    initial_alpha: PositiveFloat | None = None
    """alpha at the start, when it is learnt; None: 1 (Stable-Baselines3's and CleanRL's)."""
    target_entropy: float | Literal["auto"] = "auto"
    """The entropy alpha is tuned towards; "auto": minus the action width."""
    target_update_every: PositiveInt = 1
    """Polyak-update the target critics every this many gradient steps."""
    log_std_bounds: tuple[float, float] = (-20.0, 2.0)
    """The policy's log standard deviations are clipped to these (Stable-Baselines3's)."""

    @model_validator(mode="after")
    def _consistent(self) -> "SAC":
        _buffer_holds_a_batch(self)
        low, high = self.log_std_bounds
        if low >= high:
            raise ValueError(
                f"log_std_bounds={self.log_std_bounds}: the lower bound must be below the "
                "upper, e.g. (-20.0, 2.0)"
            )
        if self.alpha != "auto" and self.initial_alpha is not None:
            raise ValueError(
                f"initial_alpha is set, but alpha={self.alpha} is fixed: initial_alpha is "
                'where a learnt alpha starts; remove it, or set alpha="auto"'
            )
        return self

    def describe(self, spec: Any) -> str:
        return f"SAC on {spec.data.id or spec.data.target}{_buffer_memory(spec)}"

    def log_names(self) -> list[str]:
        learnt = ["alpha", "alpha_loss"] if self.alpha == "auto" else []
        return [*super().log_names(), *learnt]


class TD3(_OffPolicyActorCritic):
    """Twin Delayed DDPG (Fujimoto et al., 2018), as Stable-Baselines3 and CleanRL write it: a
    deterministic policy, `model`, gives one value per action dimension, squashed by tanh;
    it explores with Gaussian noise of `exploration_noise`. The critics learn
    `r + gamma * min Q_target(s', a')`, where a' is the target policy's action plus clipped
    noise (target policy smoothing); the policy, and every target network, are updated once
    every `policy_delay` critic updates, the policy along the first critic's gradient.
    `TD3(policy_delay=1, target_noise=0, critics=1)` is DDPG (Lillicrap et al., 2016) as
    Stable-Baselines3 writes it."""

    kind: Literal["td3"] = "td3"
    template: ClassVar[str] = "offpolicy"

    policy_delay: PositiveInt = 2
    """Critic updates per policy (and target) update."""
    target_noise: NonNegative = 0.2
    """Standard deviation of the noise added to the target policy's actions (in [-1, 1]
    units); 0: none."""
    target_noise_clip: NonNegative = 0.5
    """That noise is clipped to +- this."""
    exploration_noise: NonNegative = 0.1
    """Standard deviation of the Gaussian noise added to the policy's actions when it acts
    (in [-1, 1] units)."""

    @model_validator(mode="after")
    def _consistent(self) -> "TD3":
        _buffer_holds_a_batch(self)
        if self.target_noise > 0 and self.target_noise_clip == 0:
            raise ValueError(
                f"target_noise={self.target_noise} with target_noise_clip=0: the noise would be "
                "clipped away; set target_noise=0 for none, or a positive target_noise_clip"
            )
        return self

    def describe(self, spec: Any) -> str:
        name = "DDPG" if self.is_ddpg else "TD3"
        return f"{name} on {spec.data.id or spec.data.target}{_buffer_memory(spec)}"

    @property
    def is_ddpg(self) -> bool:
        """TD3 without its three additions: one critic, no smoothing, no delay."""
        return self.critics == 1 and self.target_noise == 0 and self.policy_delay == 1


def _buffer_holds_a_batch(way: Any) -> None:
    if way.buffer_size < way.batch_size:
        raise ValueError(
            f"buffer_size={way.buffer_size} is smaller than batch_size={way.batch_size}: a "
            "minibatch is drawn from the buffer; make the buffer larger"
        )


def _buffer_memory(spec: Any) -> str:
    """What `loopgen validate` says of a replay buffer of a GiB or more, or of pixels."""
    from ..rules.rl import gib, replay_bytes

    size = replay_bytes(spec)
    if size < 2**30 and not spec.data.spaces().pixels:
        return ""
    return f"; its replay buffer of {spec.training.buffer_size:,} transitions takes {gib(size)}"


def _refuse_reward_scaling(way: str, data: Any) -> Any:
    """normalize_rewards is PPO's and A2C's: an off-policy way's replay buffer would hold
    rewards scaled by statistics that have moved on since."""
    if isinstance(data, dict) and "normalize_rewards" in data:
        raise ValueError(
            f"normalize_rewards: {way} learns from a replay buffer, whose rewards would have been "
            "scaled by running statistics that have moved on since they were stored; reward "
            "normalization is PPO's and A2C's. Remove it (scale the rewards in your environment "
            "if they are large)"
        )
    return data
