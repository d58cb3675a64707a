# Mistake: reward normalization on DQN, whose replay buffer keeps rewards for a long time
from loopgen.dsl import DQN, Adam, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_dqn",
    data=Environment(id="CartPole-v1", num_envs=1),
    model=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=DQN(normalize_rewards=True),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=50_000),
)
