# Mistake: PPO's linear annealing over a schedule
from loopgen.dsl import Adam, CosineDecay, Dense, Environment, Loop, PPO, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=4),
    model=Sequential(
        input_shape=(4,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=2, name="logits")],
    ),
    training=PPO(value=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="tanh"), Dense(units=1)]), rollout_steps=16, minibatches=4),
    optimizer=Adam(learning_rate=CosineDecay(initial_learning_rate=1e-3, decay_steps=100)),
    loop=Loop(steps=10_000),
)
