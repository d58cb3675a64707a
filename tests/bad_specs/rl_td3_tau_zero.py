# Mistake: a Polyak rate of 0: the target networks would never move
from loopgen.dsl import Adam, Dense, Environment, Loop, Sequential, Spec, TD3

spec = Spec(
    name="pendulum_td3",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="relu"), Dense(units=1)]),
    training=TD3(critic=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=1)]), tau=0.0),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=20_000),
)
