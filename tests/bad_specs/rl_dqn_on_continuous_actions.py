# Mistake: DQN on Pendulum's continuous actions
from loopgen.dsl import Adam, DQN, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="Pendulum-v1"),
    model=Sequential(
        input_shape=(3,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=1, name="logits")],
    ),
    training=DQN(),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
)
