# Mistake: DQN told to take no gradient step when it trains
from loopgen.dsl import DQN, Adam, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_dqn",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=1),
    model=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=DQN(train_every=4, gradient_steps=0),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=50_000),
)
