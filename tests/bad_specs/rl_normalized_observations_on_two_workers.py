# Mistake: PPO's running observation statistics on several workers (they would exchange every step)
from loopgen.dsl import Adam, Dense, Environment, Loop, MultiWorker, PPO, Sequential, Spec

spec = Spec(
    name="pendulum_ppo",
    seed=1,
    data=Environment(id="Pendulum-v1", num_envs=4),
    model=Sequential(
        input_shape=(3,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=1, name="mean")],
    ),
    training=PPO(
        value=Sequential(input_shape=(3,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]),
        rollout_steps=16,
        minibatches=4,
        normalize_observations=True,
    ),
    optimizer=Adam(learning_rate=3e-4),
    loop=Loop(steps=10_000),
    distribute=MultiWorker(),
)
