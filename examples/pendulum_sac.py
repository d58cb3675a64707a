"""SAC: swing Pendulum-v1 up and hold it there, RL Baselines3 Zoo's settings for
Stable-Baselines3's SAC (hyperparams/sac.yml: 20,000 steps, a learning rate of 1e-3, SB3's
defaults otherwise).

The policy is a Gaussian squashed by tanh: the network gives the mean and the log standard
deviation of the torque, and the environment takes the sampled action scaled to its bounds.
Two critics learn the soft Q-value, the policy the smaller of their values plus its entropy,
weighted by alpha, which is tuned so that the entropy stays near minus the action width. The
first 100 steps act at random; from then on each step is followed by a gradient step on 256
transitions of the replay buffer. An episode is 200 steps (a time limit: a truncation,
bootstrapped); -200 or better is an upright pendulum.
"""

from loopgen.dsl import (
    SAC,
    Adam,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="pendulum_sac",
    description="Swing Pendulum-v1 up with SAC.",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(
        input_shape=(3,),
        layers=[
            Dense(units=256, activation="relu"),
            Dense(units=256, activation="relu"),
            Dense(units=2, name="mean_and_log_std"),
        ],
    ),
    training=SAC(
        # An observation (3 values) and a torque side by side, to one value.
        critic=Sequential(
            input_shape=(4,),
            layers=[
                Dense(units=256, activation="relu"),
                Dense(units=256, activation="relu"),
                Dense(units=1, name="q_value"),
            ],
        ),
        buffer_size=1_000_000,
        batch_size=256,
        gamma=0.99,
        tau=0.005,
        learning_starts=100,
    ),
    # PyTorch's Adam epsilon (Keras' default is 1e-7), as the peer trains.
    optimizer=Adam(learning_rate=1e-3, epsilon=1e-8),
    loop=Loop(steps=20_000, log_every_steps=1000),
    checkpoint=Checkpoint(every_steps=5000),
)
