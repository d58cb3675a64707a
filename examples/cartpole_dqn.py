"""DQN: balance the pole of CartPole-v1 with CleanRL's dqn.py hyperparameters, in TensorFlow.

One environment; the agent acts epsilon-greedily (epsilon falling from 1 to 0.05 over the
first half of training), keeps the last 10,000 transitions in a replay buffer, and from step
10,000 on takes a gradient step every 10 steps on 128 transitions drawn from it, towards the
target of a target network copied every 500 steps: CleanRL's settings. Two things differ from
CleanRL's dqn.py, which are DQN's defaults here: the target is double DQN's (the Q-network
picks the next action, the target network values it; CleanRL takes the target network's
best) and the loss is the Huber loss of the TD error (CleanRL's is its square). The bench
(`python -m bench --parts rl`) sets both to CleanRL's: DQN(double=False, loss="mse").
"""

from loopgen.dsl import (
    DQN,
    Adam,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="cartpole_dqn",
    description="Balance CartPole-v1's pole with DQN.",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=1),
    model=Sequential(
        input_shape=(4,),
        layers=[
            Dense(units=120, activation="relu"),
            Dense(units=84, activation="relu"),
            Dense(units=2, name="q_values"),
        ],
    ),
    training=DQN(
        buffer_size=10_000,
        batch_size=128,
        gamma=0.99,
        learning_starts=10_000,
        train_every=10,
        target_update_every=500,
        start_epsilon=1.0,
        end_epsilon=0.05,
        exploration_fraction=0.5,
    ),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=500_000, log_every_steps=10_000),
    checkpoint=Checkpoint(every_steps=50_000),
)
