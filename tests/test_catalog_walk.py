"""The whole catalog, walked: every Keras layer class a spec may use renders in a minimal spec
(one graph node on inputs of the catalog example's shapes), and Keras builds it from the spec
(`validate --build`'s plan) or refuses it at the node's spec path. The render-time shape rules
are held to Keras's shapes on the way. Classes left out are listed with the reason."""

from __future__ import annotations

import json

import pytest
from helpers import EXAMPLES, run_cli
from loopgen.dsl import Data, Graph, Input, KerasLayer, Loop, Node, Npz, Spec, catalog
from loopgen.dsl.build import plan, run_plans
from loopgen.dsl.loader import load_spec
from loopgen.dsl.shapes import check_graph_shapes
from loopgen.dsl.training import KerasLoss, KerasOptimizer
from loopgen.render import render_script

CELLS = ("GRUCell", "LSTMCell", "SimpleRNNCell")
"""Cells are not called on a tensor: they are walked inside RNN(cell=...)."""


def layer_classes() -> list[str]:
    return sorted(
        name
        for name, entry in catalog.data()["layers"].items()
        if not entry.get("alias_of") and not entry.get("excluded")
    )


def minimal_spec(name: str) -> Spec:
    entry = catalog.data()["layers"][name]
    example = entry["example"]
    args = dict(example["args"])
    inputs = example["inputs"]
    if name in CELLS:  # inside an RNN, on a sequence
        args = {"cell": {"kind": entry["kind"], **args}}
        name, entry, inputs = (
            "RNN",
            catalog.data()["layers"]["RNN"],
            [{"shape": [6, 4], "dtype": "float32"}],
        )
    names = [f"input{i + 1}" for i in range(len(inputs))]
    style = entry["call"]["inputs"]
    node_inputs = names * 2 if style == "positional" and len(names) == 1 else names
    given = {
        n: Input(shape=tuple(i["shape"]), dtype=i["dtype"])
        for n, i in zip(names, inputs, strict=True)
    }
    node = Node(name="walked", layer=KerasLayer(kind=entry["kind"], **args), inputs=node_inputs)
    graph = Graph(inputs=given, nodes=[node], outputs="walked")
    x_key = {n: n for n in names} if len(names) > 1 else "x"
    return Spec(
        name="walk",
        data=Data(train=Npz(path="walk.npz", x_key=x_key)),
        model=graph,
        loss=KerasLoss(kind="mean_squared_error"),
        optimizer=KerasOptimizer(kind="sgd"),
        loop=Loop(epochs=1),
    )


def test_excluded_classes_are_listed_with_a_reason():
    excluded = {
        name: entry["excluded"]
        for name, entry in catalog.data()["layers"].items()
        if entry.get("excluded")
    }
    assert {"JaxLayer", "FlaxLayer", "TorchModuleWrapper", "TFSMLayer", "Lambda"} <= set(excluded)
    for name, reason in excluded.items():
        spec = {"kind": catalog.data()["layers"][name]["kind"]}
        with pytest.raises(ValueError, match="cannot be used in a spec") as info:
            KerasLayer(**spec)
        assert reason in str(info.value)


@pytest.mark.slow
def test_every_layer_class_renders_and_keras_builds_it_from_the_spec():
    names = layer_classes()
    assert len(names) > 120
    specs = {}
    for name in names:
        spec = minimal_spec(name)
        source = render_script(spec, spec_file="walk.py")  # every class renders
        assert 'name="walked"' in source, name
        specs[name] = spec
    reports = run_plans([plan(spec) for spec in specs.values()])
    refused = {}
    for (name, spec), report in zip(specs.items(), reports, strict=True):
        if not report.get("ok"):
            # A refusal names the node that raised it.
            assert report["path"] == "model.nodes[0]", (name, report)
            refused[name] = report["error"]
            continue
        # Where the render-time rules know the output shape, it is the one Keras builds.
        known = check_graph_shapes(spec.model, {})["walked"]
        if known is not None:
            built = tuple(report["outputs"][0])
            assert len(known) == len(built) and all(
                k is None or k == b for k, b in zip(known, built, strict=True)
            ), (name, known, built)
    # The catalog's examples build with Keras when called as layers. From a spec, a model of
    # one node is refused only where Keras itself refuses it as a model (Equalization returns
    # its input unchanged at inference, which Keras calls a cycle), and at the node's path.
    assert set(refused) <= {"Equalization"}, refused


EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py"))


@pytest.fixture(scope="module")
def built_examples(shared) -> dict[str, dict]:
    """What Keras reports building each example's model, by the JSON of its build plan: every
    plan carried out by the runner `validate --build` uses, in one process (one TensorFlow
    import for the catalog, each plan after a clear_session, as the CLI's single one is)."""

    def make(folder):
        plans = {}
        for example in EXAMPLE_NAMES:
            try:
                plans[example] = plan(load_spec(EXAMPLES / f"{example}.py"))
            except Exception:  # the CLI reports it, in the test below
                continue
        reports = run_plans(list(plans.values()))
        found = {json.dumps(p, sort_keys=True): r for p, r in zip(plans.values(), reports,
                                                                   strict=True)}  # fmt: skip
        (folder / "reports.json").write_text(json.dumps(found))

    return json.loads((shared("validate-build", make) / "reports.json").read_text())


@pytest.mark.slow
def test_validate_build_runs_keras_in_a_subprocess_from_the_command_line():
    """`loopgen validate --build` as a user runs it: its own process, which starts the Keras
    runner in another (the per-example test below runs the same command in this process, the
    runner's reports made for all examples at once)."""
    proc = run_cli("validate", str(EXAMPLES / "mnist_mlp.py"), "--build")
    assert proc.returncode == 0, proc.stderr
    assert "Keras built it:" in proc.stdout and "parameters" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLE_NAMES, ids=str)
def test_validate_build_accepts_every_example(example, built_examples, monkeypatch):
    """`validate --build` on each example: the CLI command, in this process, with the Keras
    runner's real report on the example's plan (made in one runner process for all)."""
    import loopgen.dsl.build as build_module
    from loopgen.cli import app
    from typer.testing import CliRunner

    real_build = build_module.build

    def batched_build(spec, timeout: float = 600) -> dict:
        report = built_examples.get(json.dumps(plan(spec), sort_keys=True))
        return report if report is not None else real_build(spec, timeout)

    monkeypatch.setattr(build_module, "build", batched_build)
    result = CliRunner().invoke(app, ["validate", str(EXAMPLES / f"{example}.py"), "--build"])
    assert result.exit_code == 0, (result.output, result.exception)
    if example != "shapes_dcgan":
        assert "Keras built it:" in result.stdout and "parameters" in result.stdout
