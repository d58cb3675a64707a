# Mistake: a PPO minibatch size that does not divide the rollout (8 sub-environments x 32 steps)
from loopgen.dsl import PPO, Adam, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=8),
    model=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=2)]),
    training=PPO(
        value=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]),
        rollout_steps=32,
        batch_size=100,
    ),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=100_000),
)
