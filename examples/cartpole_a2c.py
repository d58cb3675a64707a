"""A2C: balance the pole of CartPole-v1 with the advantage actor-critic.

Eight copies of the environment, five steps each per update: the returns are 5-step returns
bootstrapped from the value of the observation reached, and each update is one gradient step
on those 40 transitions (the policy gradient of the advantages, the value's squared error),
by RMSprop, as Stable-Baselines3's A2C on CartPole.
"""

from loopgen.dsl import (
    ActorCritic,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    RMSprop,
    Sequential,
    Spec,
)

spec = Spec(
    name="cartpole_a2c",
    description="Balance CartPole-v1's pole with A2C.",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=8),
    model=Sequential(
        input_shape=(4,),
        layers=[
            Dense(units=64, activation="tanh"),
            Dense(units=64, activation="tanh"),
            Dense(units=2, name="logits"),
        ],
    ),
    training=ActorCritic(
        value=Sequential(
            input_shape=(4,),
            layers=[
                Dense(units=64, activation="tanh"),
                Dense(units=64, activation="tanh"),
                Dense(units=1, name="value"),
            ],
        ),
        rollout_steps=5,
        gamma=0.99,
        value_coef=0.5,
        max_grad_norm=0.5,
    ),
    optimizer=RMSprop(learning_rate=7e-4, rho=0.99, epsilon=1e-5),
    loop=Loop(steps=500_000, log_every_steps=10_000),
    checkpoint=Checkpoint(every_steps=50_000),
)
