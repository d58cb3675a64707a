# Mistake: minibatches that do not divide a rollout
from loopgen.dsl import Adam, Dense, Environment, Loop, PPO, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=3),
    model=Sequential(
        input_shape=(4,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=2, name="logits")],
    ),
    training=PPO(value=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]), rollout_steps=10, minibatches=4),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
)
