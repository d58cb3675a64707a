# Mistake: DQN on several workers (its replay buffer is one process's: use one device or mirrored replicas)
from loopgen.dsl import DQN, Adam, Dense, Environment, Loop, MultiWorker, Sequential, Spec

spec = Spec(
    name="cartpole_dqn",
    seed=1,
    data=Environment(id="CartPole-v1", num_envs=4),
    model=Sequential(
        input_shape=(4,),
        layers=[Dense(units=64, activation="relu"), Dense(units=2, name="q_values")],
    ),
    training=DQN(buffer_size=10_000, batch_size=64, learning_starts=1000),
    optimizer=Adam(learning_rate=2.5e-4),
    loop=Loop(steps=10_000),
    distribute=MultiWorker(),
)
