# Mistake: reward normalization on SAC (the RL Zoo's normalize: true, copied from a PPO config)
from loopgen.dsl import SAC, Adam, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="pendulum_sac",
    data=Environment(id="Pendulum-v1", num_envs=1),
    model=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=SAC(
        critic=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=1)]),
        normalize_rewards=True,
    ),
    optimizer=Adam(learning_rate=1e-3),
    loop=Loop(steps=20_000),
)
