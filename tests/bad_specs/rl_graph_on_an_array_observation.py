# Mistake: a Graph of named inputs on CartPole's one array observation
from loopgen.dsl import Adam, Concatenate, Dense, Environment, Graph, Input, Loop, Node, PPO, Sequential, Spec


def network(units, inputs=None):
    return Graph(
        inputs=inputs or {"position": Input(shape=(8,)), "goal": Input(shape=(8,))},
        nodes=[
            Node(name="cells", layer=Concatenate(), inputs=sorted(inputs or ["position", "goal"])),
            Node(name="out", layer=Dense(units=units), inputs="cells"),
        ],
        outputs="out",
    )


spec = Spec(
    name="cartpole_ppo",
    data=Environment(id="CartPole-v1"),
    model=network(2, inputs={"cart": Input(shape=(2,)), "pole": Input(shape=(2,))}),
    training=PPO(value=Sequential(input_shape=(4,), layers=[Dense(units=1)]), rollout_steps=16, minibatches=4),
    optimizer=Adam(learning_rate=3e-3),
    loop=Loop(steps=4096),
)
