# Mistake: DQN learning before the buffer holds a minibatch
from loopgen.dsl import Adam, DQN, Dense, Environment, Loop, Sequential, Spec

spec = Spec(
    name="cartpole_ppo",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=4),
    model=Sequential(
        input_shape=(4,),
        layers=[Dense(units=64, activation="tanh"), Dense(units=2, name="logits")],
    ),
    training=DQN(learning_starts=64, batch_size=128),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
)
