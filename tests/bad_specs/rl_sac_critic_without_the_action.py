# Mistake: a SAC critic that takes the observation alone, not the action beside it
from loopgen.dsl import Adam, Dense, Environment, Loop, SAC, Sequential, Spec

spec = Spec(
    name="pendulum_sac",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=SAC(critic=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="relu"), Dense(units=1)])),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=20_000),
)
