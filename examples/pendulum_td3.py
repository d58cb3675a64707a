"""TD3: swing Pendulum-v1 up and hold it there, RL Baselines3 Zoo's settings for
Stable-Baselines3's TD3 (hyperparams/td3.yml: 20,000 steps, 10,000 of them random first,
gamma 0.98, a buffer of 200,000, Gaussian exploration noise of 0.1, networks of 400 and 300
units, a learning rate of 1e-3; SB3's defaults otherwise).

The policy is deterministic: the network's output, squashed by tanh and scaled to the torque's
bounds, plus Gaussian noise while it acts. Two critics learn the value of the target policy's
action, smoothed by clipped noise, and the policy (with the target networks) moves once every
two critic updates. TD3(policy_delay=1, target_noise=0, critics=1) would be DDPG.
"""

from loopgen.dsl import (
    TD3,
    Adam,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="pendulum_td3",
    description="Swing Pendulum-v1 up with TD3.",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(
        input_shape=(3,),
        layers=[
            Dense(units=400, activation="relu"),
            Dense(units=300, activation="relu"),
            Dense(units=1, name="torque"),
        ],
    ),
    training=TD3(
        # An observation (3 values) and a torque side by side, to one value.
        critic=Sequential(
            input_shape=(4,),
            layers=[
                Dense(units=400, activation="relu"),
                Dense(units=300, activation="relu"),
                Dense(units=1, name="q_value"),
            ],
        ),
        buffer_size=200_000,
        batch_size=256,
        gamma=0.98,
        tau=0.005,
        learning_starts=10_000,
        policy_delay=2,
        target_noise=0.2,
        target_noise_clip=0.5,
        exploration_noise=0.1,
    ),
    # PyTorch's Adam epsilon (Keras' default is 1e-7), as the peer trains.
    optimizer=Adam(learning_rate=1e-3, epsilon=1e-8),
    loop=Loop(steps=20_000, log_every_steps=1000),
    checkpoint=Checkpoint(every_steps=5000),
)
