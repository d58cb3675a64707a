"""PPO with continuous actions: swing Pendulum-v1 up and hold it there.

The policy is a diagonal Gaussian: the network gives the mean torque, a learnt log standard
deviation its spread, and the environment takes the sampled torque clipped to its bounds.
Observations are normalized by their running mean and variance, which the checkpoint and the
export keep. The value loss is not clipped: the returns run to hundreds below zero, and a value
that may move 0.2 an update would never reach them. An episode is 200 steps (a time limit: a
truncation, bootstrapped); -200 or better is an upright pendulum.
"""

from loopgen.dsl import (
    PPO,
    Adam,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="pendulum_ppo",
    description="Swing Pendulum-v1 up with PPO's Gaussian policy.",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=4),
    model=Sequential(
        input_shape=(3,),
        layers=[
            Dense(units=64, activation="tanh"),
            Dense(units=64, activation="tanh"),
            Dense(units=1, name="mean_torque"),
        ],
    ),
    training=PPO(
        value=Sequential(
            input_shape=(3,),
            layers=[
                Dense(units=64, activation="tanh"),
                Dense(units=64, activation="tanh"),
                Dense(units=1, name="value"),
            ],
        ),
        rollout_steps=256,
        minibatches=16,
        update_epochs=10,
        gamma=0.9,
        gae_lambda=0.95,
        clip=0.2,
        clip_value_loss=False,
        entropy_coef=0.0,
        normalize_observations=True,
    ),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=100_000, log_every_steps=8192),
    checkpoint=Checkpoint(every_steps=16384),
)
