# Mistake: both a registry id and a target function
from loopgen.dsl import Adam, Dense, Environment, Loop, PPO, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", target="my_envs:make"),
    model=Sequential(
        input_shape=(4,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=2, name="logits")],
    ),
    training=PPO(value=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]), rollout_steps=16, minibatches=4),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
)
