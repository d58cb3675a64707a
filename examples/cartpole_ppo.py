"""PPO: balance the pole of CartPole-v1, CleanRL's ppo.py in TensorFlow.

Four copies of the environment are stepped together, 128 steps each per update. Each update
computes GAE(0.95) advantages over the rollout, then takes 4 passes over it in 4 minibatches,
each one gradient step on the clipped surrogate, the clipped value loss and an entropy bonus,
with the learning rate annealed linearly to 0. The policy and the value function are separate
64-64 tanh networks, as in CleanRL. A return of 500 is the most an episode can score.
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
    name="cartpole_ppo",
    description="Balance CartPole-v1's pole with PPO.",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=4),
    model=Sequential(
        input_shape=(4,),
        layers=[
            Dense(units=64, activation="tanh"),
            Dense(units=64, activation="tanh"),
            Dense(units=2, name="logits"),
        ],
    ),
    training=PPO(
        value=Sequential(
            input_shape=(4,),
            layers=[
                Dense(units=64, activation="tanh"),
                Dense(units=64, activation="tanh"),
                Dense(units=1, name="value"),
            ],
        ),
        rollout_steps=128,
        gamma=0.99,
        gae_lambda=0.95,
        minibatches=4,
        update_epochs=4,
        clip=0.2,
        entropy_coef=0.01,
        value_coef=0.5,
        max_grad_norm=0.5,
    ),
    optimizer=Adam(learning_rate=2.5e-4, epsilon=1e-5),
    loop=Loop(steps=500_000, log_every_steps=10_240),
    checkpoint=Checkpoint(every_steps=51_200),
)
