# Mistake: logging.inspect on PPO (replay --step N shows an update's layers)
from loopgen.dsl import PPO, Adam, Dense, Environment, Inspect, Logging, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=4),
    model=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=2)]),
    training=PPO(
        value=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]),
        rollout_steps=128,
    ),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
    logging=Logging(inspect=Inspect(every_steps=10)),
)
