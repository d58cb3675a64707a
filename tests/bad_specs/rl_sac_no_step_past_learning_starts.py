# Mistake: a SAC run that ends before learning starts
from loopgen.dsl import Adam, Dense, Environment, Loop, SAC, Sequential, Spec

spec = Spec(
    name="pendulum_sac",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=SAC(critic=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=1)]), learning_starts=20_000),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=20_000),
)
