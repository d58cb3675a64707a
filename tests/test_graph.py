"""Graph models (dsl/graph.py): named inputs, merges, shared layers, blocks called and repeated,
several outputs. The wiring rules name the nodes involved; the script reads like the functional
API; and the model Keras builds from it is the one the spec describes."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest
from data import small_data_overrides
from helpers import EXAMPLES, run_cli, run_python, tf_check, write_rendered
from loopgen.dsl import (
    SGD,
    Activation,
    Add,
    BatchNormalization,
    Block,
    Checkpoint,
    Concatenate,
    Conv2D,
    Data,
    Dense,
    Embedding,
    Flatten,
    GlobalAveragePooling2D,
    Graph,
    Input,
    Loop,
    MeanSquaredError,
    Node,
    Normalization,
    Npz,
    SparseCategoricalCrossentropy,
    Spec,
    Split,
    var,
)
from loopgen.dsl.loader import load_spec
from loopgen.errors import SpecError
from loopgen.render import render_script
from pydantic import ValidationError

RESIDUAL = Block(
    name="residual_block",
    doc="Two 3x3 convolutions and a projected shortcut.",
    params={"filters": 8, "strides": 1},
    nodes=[
        Node(name="conv1", layer=Conv2D(var("filters"), 3, strides=var("strides"),
                                        padding="same"), inputs="x"),
        Node(name="bn1", layer=BatchNormalization(), inputs="conv1"),
        Node(name="relu1", layer=Activation("relu"), inputs="bn1"),
        Node(name="conv2", layer=Conv2D(var("filters"), 3, padding="same"), inputs="relu1"),
        Node(name="shortcut", layer=Conv2D(var("filters"), 1, strides=var("strides")),
             inputs="x"),
        Node(name="added", layer=Add(), inputs=["conv2", "shortcut"]),
    ],
    output="added",
)  # fmt: skip


def resnet(**changes) -> dict:
    graph = dict(
        inputs={"image": Input(shape=(16, 16, 3))},
        blocks=[RESIDUAL],
        nodes=[
            Node(name="stem", layer=Conv2D(8, 3, padding="same"), inputs="image"),
            Node(name="stages", block="residual_block", inputs="stem",
                 over={"filters": [8, 16], "strides": [1, 2]}),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="stages"),
            Node(name="logits", layer=Dense(4), inputs="pool"),
        ],
        outputs="logits",
    )  # fmt: skip
    graph.update(changes)
    return graph


def spec_of(graph: dict, **fields) -> Spec:
    values = dict(
        name="graph_run",
        data=Data(train=Npz(path="train.npz"), batch_size=8),
        model=Graph(**graph),
        loss=SparseCategoricalCrossentropy(from_logits=True),
        optimizer=SGD(learning_rate=0.05),
        loop=Loop(epochs=1, log_every_steps=1),
    )
    values.update(fields)
    return Spec(**values)


def two_inputs(**changes) -> dict:
    """Numeric features and a category id, one shared Dense on both branches, two outputs."""
    graph = dict(
        inputs={"numeric": Input(shape=(3,)), "city": Input(shape=(1,), dtype="int32")},
        shared={"project": Dense(6, activation="relu")},
        nodes=[
            Node(name="city_vector", layer=Embedding(input_dim=5, output_dim=3), inputs="city"),
            Node(name="city_flat", layer=Flatten(), inputs="city_vector"),
            Node(name="numeric_hidden", shared="project", inputs="numeric"),
            Node(name="city_hidden", shared="project", inputs="city_flat"),
            Node(name="joined", layer=Concatenate(), inputs=["numeric_hidden", "city_hidden"]),
            Node(name="price", layer=Dense(1), inputs="joined"),
            Node(name="demand", layer=Dense(1), inputs="joined"),
        ],
        outputs={"price": "price", "demand": "demand"},
    )
    graph.update(changes)
    return graph


def message(graph: dict) -> str:
    with pytest.raises(ValidationError) as info:
        Graph(**graph)
    return str(info.value)


# --- the script ---------------------------------------------------------------------------------


def test_blocks_become_functions_and_repeats_for_loops():
    source = render_script(spec_of(resnet()), spec_file="spec.py")
    tree = ast.parse(source)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    block = functions["residual_block"]
    assert [a.arg for a in block.args.args] == ["x", "filters", "strides"]
    assert [a.arg for a in block.args.kwonlyargs] == ["name"]
    assert "name=f'{name}_conv1'" in ast.unparse(block)
    build = ast.unparse(functions["build_model"])
    # One loop over the stages, not an unrolled wall; each call names its layers.
    assert build.count("residual_block(") == 1
    assert "for i, (filters, strides) in enumerate(zip((8, 16), (1, 2)), start=1):" in build
    assert "name=f'stages_{i}'" in build
    assert "layers.Add(name=f'{name}_added')([conv2, shortcut])" in ast.unparse(block)
    assert "keras.Model(inputs=image, outputs=logits, name='graph_run')" in build


def test_several_inputs_shared_layers_and_outputs():
    spec = spec_of(
        two_inputs(),
        data=Data(train=Npz(path="t.npz", x_key={"numeric": "x", "city": "c"},
                            y_key={"price": "p", "demand": "d"}), batch_size=8),
        loss=None,
        training={"kind": "multi_task", "tasks": {"price": {"loss": MeanSquaredError()},
                                                  "demand": {"loss": MeanSquaredError()}}},
    )  # fmt: skip
    build = ast.unparse(
        next(f for f in ast.parse(render_script(spec, spec_file="s.py")).body
             if isinstance(f, ast.FunctionDef) and f.name == "build_model")
    )  # fmt: skip
    assert "city = keras.Input(shape=(1,), dtype='int32', name='city')" in build
    assert "project = layers.Dense(6, activation='relu', name='project')" in build
    assert "numeric_hidden = project(numeric)" in build
    assert "city_hidden = project(city_flat)" in build
    assert "inputs={'numeric': numeric, 'city': city}" in build
    assert "outputs={'price': price, 'demand': demand}" in build


def test_nodes_in_any_order_are_built_after_their_inputs():
    graph = resnet()
    graph["nodes"] = list(reversed(graph["nodes"]))
    source = render_script(spec_of(graph), spec_file="spec.py")
    order = [source.index(f"{name} = ") for name in ("stem", "stages", "pool", "logits")]
    assert order == sorted(order)


# --- wiring mistakes, each naming the nodes --------------------------------------------------


def test_a_cycle_is_named_node_by_node():
    graph = resnet()
    graph["nodes"][0] = Node(name="stem", layer=Conv2D(8, 3, padding="same"), inputs="pool")
    graph["inputs"] = {"image": Input(shape=(16, 16, 3))}
    text = message(graph)
    # Each takes the next one's output: stem <- pool <- stages <- stem.
    assert "nodes 'stem' -> 'pool' -> 'stages' -> 'stem' form a cycle" in text


def test_an_unknown_input_suggests_the_closest_name():
    graph = resnet()
    graph["nodes"][2] = Node(name="pool", layer=GlobalAveragePooling2D(), inputs="stagse")
    text = message(graph)
    assert "nodes[2] ('pool') takes 'stagse', which is not an input or a node" in text
    assert "did you mean 'stages'?" in text


def test_an_unused_node_and_an_unused_input_are_errors():
    graph = resnet()
    graph["nodes"].insert(3, Node(name="extra", layer=Dense(3), inputs="pool"))
    assert "nodes[3] ('extra') is not used by any node nor an output" in message(graph)
    graph = resnet(inputs={"image": Input(shape=(16, 16, 3)), "mask": Input(shape=(16, 16, 1))})
    assert "inputs: 'mask' is not used by any node" in message(graph)


def test_two_nodes_with_one_name():
    graph = resnet()
    graph["nodes"].insert(1, Node(name="stem", layer=Activation("relu"), inputs="stem"))
    assert "nodes[1].name='stem' is taken by nodes[0]" in message(graph)


def test_layer_and_block_arity():
    graph = resnet()
    graph["nodes"][3] = Node(name="logits", layer=Dense(4), inputs=["pool", "stem"])
    assert "gives 2 inputs to Dense, which takes one tensor" in message(graph)
    graph = resnet()
    graph["nodes"][2] = Node(name="pool", layer=Add(), inputs=["stages"])
    assert "Add merges several tensors but gets 1" in message(graph)
    graph = resnet()
    graph["nodes"][1] = Node(name="stages", block="residual_block", inputs="stem",
                             over={"filter": [8, 16]})  # fmt: skip
    assert "over gives 'filter', which is not a parameter of block residual_block" in message(graph)
    assert "did you mean 'filters'?" in message(graph)


def test_a_merge_of_mismatched_shapes_names_the_node_and_the_shapes(tmp_path):
    # The shortcut keeps the resolution while the main path halves it.
    block = RESIDUAL.model_copy(
        update={"nodes": [*RESIDUAL.nodes[:4],
                          Node(name="shortcut", layer=Conv2D(var("filters"), 1), inputs="x"),
                          RESIDUAL.nodes[5]]}
    )  # fmt: skip
    with pytest.raises(ValidationError) as info:
        spec_of(resnet(blocks=[block]))
    text = str(info.value)
    assert "model.blocks[0].nodes[5] (called by model.nodes[1], repetition 2)" in text
    assert "Add combines tensors element by element, but gets shapes (8, 8, 16) and " in text
    assert "(16, 16, 16)" in text


def test_data_features_must_be_the_model_inputs():
    with pytest.raises(ValidationError) as info:
        spec_of(two_inputs(outputs="price", nodes=two_inputs()["nodes"][:-1]))
    assert "model.inputs are ['city', 'numeric'] but data.train gives one input" in str(info.value)
    with pytest.raises(ValidationError) as info:
        spec_of(
            two_inputs(outputs="price", nodes=two_inputs()["nodes"][:-1]),
            data=Data(train=Npz(path="t.npz", x_key={"numeric": "x", "town": "c"})),
            loss=MeanSquaredError(),
        )
    assert "no feature feeds ['city']; ['town'] feed no input" in str(info.value)


def test_json_graph_errors_carry_the_spec_path(tmp_path):
    data = json.loads(spec_of(resnet()).model_dump_json())
    data["model"]["nodes"][3]["layer"]["unit"] = 4
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    proc = run_cli("render", str(path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    line = "spec.model.nodes[3].layer.unit: Dense has no argument 'unit'; did you mean"
    assert line in proc.stderr
    with pytest.raises(SpecError):
        load_spec(path)


# --- nodes that exist only where a condition on the block's parameters holds ------------------


def conditional(*shortcut: Node) -> Block:
    """RESIDUAL with its shortcut replaced by `shortcut` nodes (the last one named shortcut)."""
    nodes = [*RESIDUAL.nodes[:4], *shortcut, RESIDUAL.nodes[5]]
    return RESIDUAL.model_copy(update={"nodes": nodes})


PROJECTION = Node(name="shortcut", layer=Conv2D(var("filters"), 1, strides=var("strides")),
                  inputs="x", when="strides != 1")  # fmt: skip


def test_a_conditional_node_becomes_an_if_with_the_identity_otherwise():
    source = render_script(spec_of(resnet(blocks=[conditional(PROJECTION)])), spec_file="s.py")
    block = next(
        f for f in ast.parse(source).body
        if isinstance(f, ast.FunctionDef) and f.name == "residual_block"
    )  # fmt: skip
    (branch,) = [s for s in block.body if isinstance(s, ast.If)]
    assert ast.unparse(branch.test) == "strides != 1"
    assert "name=f'{name}_shortcut')(x)" in ast.unparse(branch.body)
    assert ast.unparse(branch.orelse) == "shortcut = x"
    assert "layers.Add(name=f'{name}_added')([conv2, shortcut])" in ast.unparse(block)
    # Nodes that share a condition share the `if`; `else` names only what is used after it.
    two = conditional(
        Node(name="projected", layer=Conv2D(var("filters"), 1, strides=var("strides")),
             inputs="x", when="strides != 1"),
        Node(name="shortcut", layer=BatchNormalization(), inputs="projected",
             when="strides != 1"),
    )  # fmt: skip
    source = render_script(spec_of(resnet(blocks=[two])), spec_file="s.py")
    assert source.count("if strides != 1:") == 1
    assert "    else:\n        shortcut = x\n    added = " in source


def test_the_shapes_are_checked_for_each_call_s_branch():
    # Where the condition leaves the identity, the shortcut must already fit: here the second
    # stage doubles the width without a stride, and the condition looks at the stride alone.
    stages = Node(name="stages", block="residual_block", inputs="stem",
                  over={"filters": [8, 16], "strides": [1, 1]})  # fmt: skip
    graph = resnet(blocks=[conditional(PROJECTION)])
    graph["nodes"][1] = stages
    with pytest.raises(ValidationError) as info:
        spec_of(graph)
    text = str(info.value)
    assert "model.blocks[0].nodes[5] (called by model.nodes[1], repetition 2)" in text
    assert "gets shapes (16, 16, 16) and (16, 16, 8)" in text
    # Reading the width too, it projects there and the spec holds.
    wider = PROJECTION.model_copy(update={"when": "strides != 1 or filters != 8"})
    assert spec_of({**graph, "blocks": [conditional(wider)]})


def test_the_build_plan_leaves_the_node_out_of_the_calls_that_do_not_meet_its_condition():
    from loopgen.dsl.build import plan

    steps = plan(spec_of(resnet(blocks=[conditional(PROJECTION)])))["steps"]
    shortcuts = [s["path"] for s in steps if s["path"].startswith("model.blocks[0].nodes[4]")]
    assert shortcuts == ["model.blocks[0].nodes[4] (called by model.nodes[1], repetition 2)"]
    added = [s for s in steps if s["path"].startswith("model.blocks[0].nodes[5]")]
    stem = next(s["out"] for s in steps if s["path"] == "model.nodes[0]")
    assert added[0]["in"][1] == stem  # repetition 1 adds its input itself


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("stride != 1", "when='stride != 1' reads 'stride', which is not a parameter of block "
                        "residual_block (its params: ['filters', 'strides']); did you mean "
                        "'strides'?"),
        ("strides = 2", "'strides = 2' is not an expression Python can read (invalid syntax; "
                        "compare with ==, not =)"),
        ('__import__("os").system("id") == 0', "has no place in a condition"),
        ("strides is None", "'is' has no place in a condition"),
        ("filters * 2 > 16", "'filters * 2' has no place in a condition"),
    ],
)  # fmt: skip
def test_a_bad_condition_is_refused_naming_the_field(when, expected):
    with pytest.raises(ValidationError) as info:
        Graph(**resnet(blocks=[conditional(PROJECTION.model_copy(update={"when": when}))]))
    assert expected in str(info.value)
    # The same through the constructor, where the field's own check runs.
    if "Python can read" in expected or "no place" in expected:
        with pytest.raises(ValidationError) as info:
            Node(name="s", layer=Dense(1), inputs="x", when=when)
        assert "when\n" in str(info.value) and expected in str(info.value)


def test_a_condition_belongs_to_a_block_s_node_with_one_input():
    graph = resnet()
    graph["nodes"][2] = Node(name="pool", layer=GlobalAveragePooling2D(), inputs="stages",
                             when="1 == 1")  # fmt: skip
    assert "nodes[2].when is set, but a condition reads a block's parameters" in message(graph)
    added = Node(name="added", layer=Add(), inputs=["conv2", "shortcut"], when="strides == 1")
    block = RESIDUAL.model_copy(update={"nodes": [*RESIDUAL.nodes[:5], added]})
    text = message(resnet(blocks=[block]))
    assert "blocks[0].nodes[5] ('added') has a condition and 2 inputs" in text


# --- Keras builds the model the spec describes -------------------------------------------------


@pytest.mark.slow
def test_the_rendered_graph_builds_and_trains(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "t.npz", x=rng.normal(size=(32, 3)).astype("float32"),
             c=rng.integers(0, 5, size=(32, 1)), p=rng.normal(size=(32, 1)),
             d=rng.normal(size=(32, 1)))  # fmt: skip
    spec = spec_of(
        two_inputs(),
        data=Data(train=Npz(path="t.npz", x_key={"numeric": "x", "city": "c"},
                            y_key={"price": "p", "demand": "d"}), batch_size=8),
        loss=None,
        training={"kind": "multi_task", "tasks": {"price": {"loss": MeanSquaredError()},
                                                  "demand": {"loss": MeanSquaredError()}}},
    )  # fmt: skip
    script = tmp_path / "train.py"
    write_rendered(script, render_script(spec, spec_file="spec.py"))
    run_python(script, "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    built = tf_check("model_layers", str(script), cwd=tmp_path)
    # The shared layer exists once and is applied twice; names are the nodes'.
    assert built["layers"].count("project") == 1
    assert built["inbound"]["project"] == 2
    assert {"city_vector", "joined", "price", "demand"} <= set(built["layers"])
    assert sorted(built["outputs"]) == ["demand", "price"]


def resnet20_parameters() -> int:
    """cifar10_resnet's parameters counted by hand: 3x3 convolutions without bias, 4 values per
    channel of each BatchNormalization (gamma, beta, moving mean and variance), a 1x1
    projection only in the two blocks that halve the resolution (the seven others add their
    input itself), and the Dense head."""

    def conv(size: int, channels: int, filters: int) -> int:
        return size * size * channels * filters

    total = conv(3, 3, 16) + 4 * 16  # the stem
    channels = 16
    for filters, strides in zip([16] * 3 + [32] * 3 + [64] * 3, [1, 1, 1, 2, 1, 1, 2, 1, 1],
                                strict=True):  # fmt: skip
        total += conv(3, channels, filters) + 4 * filters + conv(3, filters, filters) + 4 * filters
        if strides != 1:
            total += conv(1, channels, filters)
        channels = filters
    return total + 64 * 10 + 10


@pytest.mark.slow
def test_resnet_blocks_project_only_where_the_shapes_change(tmp_path):
    """cifar10_resnet: Keras builds the identity blocks without projection weights, and the
    model, from the script and from `validate --build`, has the hand-counted parameters."""
    assert resnet20_parameters() == 273_658  # ResNet-20's 0.27M
    script = tmp_path / "train.py"
    spec = load_spec(EXAMPLES / "cifar10_resnet.py")
    write_rendered(script, render_script(spec, spec_file="s.py"))
    built = tf_check("model_layers", str(script), cwd=tmp_path)
    assert built["parameters"] == resnet20_parameters()
    assert [n for n in built["layers"] if n.endswith("_shortcut")] == [
        "stages_4_shortcut", "stages_7_shortcut"
    ]  # fmt: skip
    proc = run_cli("validate", str(EXAMPLES / "cifar10_resnet.py"), "--build")
    assert proc.returncode == 0, proc.stderr
    assert f"Keras built it: {resnet20_parameters():,} parameters" in proc.stdout


@pytest.mark.slow
def test_adapted_layers_learn_from_the_training_inputs_the_model_is_fed(render, tmp_path):
    """adapt=True learns from every training example as the batches feed it: from arrays with
    data.rescale, the statistics of the rescaled pixels, without the held-out split; from CSV
    files streamed (houses_tabular), the columns' statistics over every training file's rows
    and none of the validation file's. Checked on the checkpoint the run trained into."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(32, 6, 6, 1)).astype("uint8")
    np.savez(tmp_path / "img.npz", x=x, y=rng.integers(0, 3, size=32))
    graph = dict(
        inputs={"image": Input(shape=(6, 6, 1))},
        nodes=[
            Node(name="norm", layer=Normalization(), inputs="image", adapt=True),
            Node(name="flat", layer=Flatten(), inputs="norm"),
            Node(name="logits", layer=Dense(3), inputs="flat"),
        ],
        outputs="logits",
    )
    data = Data(train=Npz(path="img.npz"), validation=Split(fraction=0.25), batch_size=8,
                rescale=1 / 255)  # fmt: skip
    script = tmp_path / "arrays.py"
    spec = spec_of(graph, data=data, checkpoint=Checkpoint(every_epochs=1))
    write_rendered(script, render_script(spec, spec_file="spec.py"))
    run_python(script, "--output-dir", str(tmp_path / "arrays"), cwd=tmp_path)
    state = tf_check("adapted_state", str(script), str(tmp_path / "arrays" / "checkpoints"),
                     "norm", cwd=tmp_path)  # fmt: skip
    trained = x[:24].astype("float64") / 255  # the last 8 are held out for validation
    assert state["mean"] == pytest.approx([trained.mean()], rel=1e-5)
    assert state["variance"] == pytest.approx([trained.var()], rel=1e-4)

    script = render("houses_tabular", *small_data_overrides("houses_tabular", tmp_path))
    run_python(script, "--epochs", "1", "--output-dir", str(tmp_path / "csv"), cwd=tmp_path)
    state = tf_check("adapted_state", str(script), str(tmp_path / "csv" / "checkpoints"),
                     "scaled", cwd=tmp_path)  # fmt: skip
    rows = np.concatenate([
        np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
        for path in sorted((tmp_path / "houses").glob("train-*.csv"))
    ])  # fmt: skip
    assert len(rows) == 80
    assert state["mean"] == pytest.approx(rows.mean(axis=0).tolist(), rel=1e-5)
    assert state["variance"] == pytest.approx(rows.var(axis=0).tolist(), rel=1e-4)
