# Mistake: a Graph policy whose inputs are not named after the Dict observation's parts
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
    name="corridor_ppo",
    data=Environment(target="examples.envs.corridor:make", kwargs={"length": 8}),
    model=network(2, inputs={"position": Input(shape=(8,)), "target": Input(shape=(8,))}),
    training=PPO(value=network(1), rollout_steps=16, minibatches=4),
    optimizer=Adam(learning_rate=3e-3),
    loop=Loop(steps=4096),
)
