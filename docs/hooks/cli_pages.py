"""The command-line reference, written at every build of the site from the code: every `loopgen`
command with its arguments and options (read from the command objects typer builds, as `--help`
prints them), and every flag of a generated script by kind of script (read from the argparse
parser of scripts rendered at this build, without TensorFlow: the part of a script above its
`if __name__ == "__main__"` line is its standard-library imports, its constants and
`parse_args()`). Nothing here is hand-kept: a flag added to a template or an option added to
`cli.py` appears at the next build."""

from __future__ import annotations

import argparse
import ast
import re
import types
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The repository."""

PAGE = "cli.md"

STRATEGIES = {
    "single_device": "one device",
    "mirrored": "mirrored",
    "multi_worker": "multi-worker",
    "tpu": "TPU",
}
"""How the page names each strategy (`--variant`)."""


@dataclass(frozen=True)
class ScriptKind:
    """A kind of generated script: the examples rendered to read its flags (the most general
    first: its help texts are the ones shown), and the strategies it is written for."""

    title: str
    anchor: str
    examples: tuple[str, ...]
    strategies: tuple[str, ...]
    what: str


KINDS = (
    ScriptKind(
        "Supervised scripts",
        "supervised-scripts",
        ("houses_tabular", "mnist_mlp", "shapes_dcgan", "shapes_flow"),
        ("single_device", "mirrored", "multi_worker", "tpu"),
        "every way of training on a dataset (supervised, multi-task, GAN, distillation, "
        "adversarial, contrastive, meta-learning, your own step, diffusion and flow matching)",
    ),
    ScriptKind(
        "Reinforcement-learning scripts",
        "reinforcement-learning-scripts",
        ("cartpole_ppo", "cartpole_dqn"),
        ("single_device", "mirrored", "multi_worker"),
        "PPO, A2C, DQN, SAC and TD3 on an environment (no TPU variant)",
    ),
)


# --- loopgen's commands


def loopgen_group() -> Any:
    """The `loopgen` command as click sees it (typer builds it from `cli.app`)."""
    from loopgen import cli

    return cli.typer.main.get_command(cli.app)


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    rows: tuple[tuple[str, str], ...]
    """(the argument or option with what it takes, its help with default and [required])."""


def _rows(command: Any, ctx: Any) -> tuple[tuple[str, str], ...]:
    rows = []
    for param in command.get_params(ctx):
        record = None if param.hidden else param.get_help_record(ctx)
        if record is not None:
            rows.append((record[0], record[1] or ""))
    return tuple(rows)


def commands() -> tuple[Command, tuple[Command, ...]]:
    """`loopgen` itself (its global options) and each of its commands, in the order `--help`
    lists them."""
    group = loopgen_group()
    top = group.context_class(group, info_name="loopgen")
    root = Command("loopgen", group.get_usage(top), group.help or "", _rows(group, top))
    found = []
    for name in group.list_commands(top):
        command = group.get_command(top, name)
        if command is None or command.hidden:
            continue
        ctx = command.context_class(command, info_name=name, parent=top)
        found.append(Command(name, command.get_usage(ctx), command.help or "", _rows(command, ctx)))
    return root, tuple(found)


# --- The generated scripts' flags


class _Parsed(Exception):
    """Raised by the parser in place of parsing: carries the parser `parse_args()` built."""


class _Capturing(argparse.ArgumentParser):
    def parse_args(self, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    parse_intermixed_args = parse_known_args = parse_known_intermixed_args = parse_args


def script_parser(source: str) -> argparse.ArgumentParser:
    """The argparse parser of a generated script, built without TensorFlow: the statements
    above the script's first `if` (the `if __name__ == "__main__": parse_args()` that answers
    `--help` before TensorFlow loads) are run, then `parse_args()` is called with a parser that
    hands itself back instead of parsing."""
    from loopgen.runtime import loopgen_runtime

    tree = ast.parse(source)
    head = []
    for node in tree.body:
        # The import of the runtime beside the script, and the check that it is its render's:
        # the runtime's names come from loopgen's own copy (below).
        if isinstance(node, ast.Try) or (
            isinstance(node, ast.If) and "RUNTIME" in ast.unparse(node.test)
        ):
            continue
        if isinstance(node, ast.If):
            break
        if not isinstance(
            node, (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef)
        ):
            raise ValueError(f"unexpected statement above parse_args(): {ast.unparse(node)[:80]}")
        head.append(node)
    namespace: dict[str, Any] = {
        **vars(loopgen_runtime),
        "__name__": "script",
        "__doc__": ast.get_docstring(tree, False),
    }
    exec(compile(ast.Module(body=head, type_ignores=[]), "<script>", "exec"), namespace)
    namespace["argparse"] = types.SimpleNamespace(
        **{**vars(argparse), "ArgumentParser": _Capturing}
    )
    try:
        namespace["parse_args"]([])
    except _Parsed as parsed:
        return parsed.args[0]
    raise ValueError("parse_args() built no parser")


def golden_file(example: str, strategy: str) -> Path:
    twin = ROOT / "generated" / strategy / f"{example}.py"
    return twin if twin.exists() else ROOT / "generated" / f"{example}.py"


@cache
def script_source(example: str, strategy: str) -> str:
    """The script loopgen renders from `examples/<example>.py` for a strategy (`--variant`).
    Without the `rl` extra an environment's spaces cannot be read (docs-only installs): the
    committed golden file is read then, which the tests hold equal to a fresh render."""
    from loopgen.dsl.loader import load_spec
    from loopgen.errors import LoopgenError
    from loopgen.render import render_script

    spec_file = ROOT / "examples" / f"{example}.py"
    try:
        spec = load_spec(spec_file, "spec", [], strategy)
    except LoopgenError:
        return golden_file(example, strategy).read_text(encoding="utf-8")
    return render_script(spec, spec_file=f"examples/{example}.py", variant=strategy)


@dataclass
class Flag:
    """One flag (or positional argument) of a kind of script, over its renders."""

    names: str
    takes: str
    help: str
    defaults: dict[str, str]
    """The default shown, by example."""
    found: dict[str, set[str]]
    """The examples whose script has it, by strategy."""


def _takes(action: argparse.Action) -> str:
    if isinstance(action, (argparse._StoreTrueAction, argparse._HelpAction)):
        return "—"
    metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if action.nargs == "?" and action.const is not None:
        return f"`[{metavar}]` (`{action.const}` without one)"
    if action.nargs == "*":
        return f"`{metavar} ...`"
    return f"`{metavar}`"


def _default(action: argparse.Action, example: str) -> str:
    value = action.default
    if value in (None, False, argparse.SUPPRESS) or action.option_strings == []:
        return ""
    return str(value).replace(example, "<name>")


def script_flags(kind: ScriptKind) -> tuple[list[Flag], dict[str, dict[str, set[str]]]]:
    """The flags of a kind of script, in the order of its parsers, and its commands (the first
    word, `train` by default): for each, the examples whose script has it, by strategy."""
    flags: dict[str, Flag] = {}
    verbs: dict[str, dict[str, set[str]]] = {}
    for strategy in kind.strategies:
        for example in kind.examples:
            parser = script_parser(script_source(example, strategy))
            if not any(a.dest == "command" for a in parser._actions):  # training alone
                verbs.setdefault("train", {}).setdefault(strategy, set()).add(example)
            for action in parser._actions:
                if action.dest == "command":
                    for verb in action.choices or ():
                        verbs.setdefault(verb, {}).setdefault(strategy, set()).add(example)
                    continue
                names = ", ".join(f"`{n}`" for n in action.option_strings) or f"`{action.dest}`"
                flag = flags.setdefault(
                    names,
                    Flag(names, _takes(action), (action.help or "").replace("%%", "%"), {}, {}),
                )
                flag.defaults[example] = _default(action, example)
                flag.found.setdefault(strategy, set()).add(example)
    return list(flags.values()), verbs


def command_help(kind: ScriptKind) -> str:
    """The positional `command`'s help, from the kind's most general script."""
    parser = script_parser(script_source(kind.examples[0], kind.strategies[0]))
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return action.help or ""


def trains_only(kind: ScriptKind) -> bool:
    """Whether some script of the kind takes no command (training is all it does)."""
    return any(
        all(a.dest != "command" for a in script_parser(script_source(e, s))._actions)
        for e in kind.examples
        for s in kind.strategies
    )


# --- Markdown


def cell(text: str) -> str:
    """Text for a table cell: one line, pipes outside code spans escaped."""
    text = " ".join(text.split())
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def _code_cell(text: str) -> str:
    """An argument or option as `--help` shows it (`-o, --output <path>`), as code spans; a
    choice of values (`<a|b|c>`) as a list that can wrap."""
    choices = re.search(r" <([^<>]*\|[^<>]*)>$", text)
    if choices:
        text = text[: choices.start()]
    out = ", ".join(f"`{part.strip()}`" for part in re.split(r",\s+(?=-)", text))
    if choices:
        out += " one of " + ", ".join(f"`{c}`" for c in choices.group(1).split("|"))
    return out


def strategies_cell(found: dict[str, set[str]], strategies: tuple[str, ...]) -> str:
    """The strategies whose scripts have it: `all`, `all but TPU`, or their list."""
    having = [s for s in strategies if found.get(s)]
    missing = [STRATEGIES[s] for s in strategies if s not in having]
    if not missing:
        return "all"
    if len(missing) == 1 and len(having) > 1:
        return f"all but {missing[0]}"
    return ", ".join(STRATEGIES[s] for s in having)


def _only(found: dict[str, set[str]], examples: tuple[str, ...]) -> str:
    """Which of the examples' scripts have it, when not all do (for one strategy at least)."""
    having = set().union(*found.values())
    if having >= set(examples):
        return ""
    return ", ".join(e for e in examples if e in having)


def loopgen_section() -> list[str]:
    root, found = commands()
    lines = [
        "## loopgen { #loopgen }",
        "",
        cell(root.help),
        "",
        f"```text\n{root.usage}\n```",
        "",
        "| Option | What it does |",
        "|---|---|",
    ]
    lines += [f"| {_code_cell(name)} | {cell(text)} |" for name, text in root.rows]
    lines += ["", "| Command | What it does |", "|---|---|"]
    lines += [
        f"| [`{c.name}`](#loopgen-{c.name}) | {cell(c.help.split(chr(10) * 2)[0])} |" for c in found
    ]
    lines.append("")
    for command in found:
        lines += [
            f"### loopgen {command.name} {{ #loopgen-{command.name} }}",
            "",
            command.help,
            "",
            f"```text\n{command.usage}\n```",
            "",
            "| Argument or option | What it does |",
            "|---|---|",
        ]
        lines += [f"| {_code_cell(name)} | {cell(text)} |" for name, text in command.rows]
        lines.append("")
    return lines


def kind_section(kind: ScriptKind) -> list[str]:
    flags, verbs = script_flags(kind)
    examples = ", ".join(f"[{e}](gallery/{e}.md)" for e in kind.examples)
    lines = [
        f"### {kind.title} {{ #{kind.anchor} }}",
        "",
        f"For {kind.what}. Read at this build from the scripts of {examples}, each rendered "
        "for every strategy (`--variant`: "
        + ", ".join(STRATEGIES[s] for s in kind.strategies)
        + "). A flag that depends on the spec (its data, its way of training) names the "
        "scripts that have it.",
        "",
        "**The command**, the first word (`python train.py evaluate`): "
        + cell(command_help(kind))
        + "."
        + (" A script that can only train takes none." if trains_only(kind) else ""),
        "",
        "| Command | Strategies | Of the scripts read, only |",
        "|---|---|---|",
    ]
    for verb, found in verbs.items():
        where = strategies_cell(found, kind.strategies)
        lines.append(f"| `{verb}` | {where} | {_only(found, kind.examples)} |")
    lines += [
        "",
        "| Flag | Takes | Default | Strategies | What it does |",
        "|---|---|---|---|---|",
    ]
    for flag in flags:
        defaults = {d for d in flag.defaults.values() if d}
        default = (
            f"`{defaults.pop()}`" if len(defaults) == 1 else ("the spec's" if defaults else "")
        )
        where = strategies_cell(flag.found, kind.strategies)
        only = _only(flag.found, kind.examples)
        what = cell(flag.help) + (f" *(of the scripts read, {only})*" if only else "")
        lines.append(f"| {flag.names} | {flag.takes} | {default} | {where} | {what} |")
    lines.append("")
    return lines


def page() -> str:
    lines = [
        "# Command line",
        "",
        "Two programs take flags: `loopgen`, which validates and renders specs, and the "
        "script it writes (`python train.py`). *This page is generated from the code when the "
        "site is built: `loopgen`'s commands from the command objects typer builds (what "
        "`loopgen COMMAND --help` prints), the scripts' flags from the argparse parsers of "
        "scripts rendered at the build.*",
        "",
    ]
    lines += loopgen_section()
    lines += [
        "## Generated scripts { #generated-scripts }",
        "",
        "`python train.py [COMMAND] [FLAGS]`. A script answers `--help` and refuses a mistyped "
        "flag before TensorFlow loads. What it trains is the spec's, written into the script "
        "as constants; the flags choose what to do (the command), how long, where to write "
        "and start from, and how the steps execute: the [debugging guide](guides/debugging.md) "
        "shows the debugging flags at work, [after training](guides/after-training.md) "
        "`evaluate` and `predict`, and [strategies and clusters](guides/strategies.md) the "
        "variants.",
        "",
    ]
    for kind in KINDS:
        lines += kind_section(kind)
    return "\n".join(lines)


def pages() -> dict[str, str]:
    script_source.cache_clear()  # `mkdocs serve` rebuilds in one process: render afresh
    return {PAGE: page()}


def nav() -> str:
    return PAGE
