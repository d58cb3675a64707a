"""Turning spec values into Python source fragments: the only way user data reaches the script.

Every constant goes through `literal` (built on `repr`, so any string, however hostile, becomes
one string literal), and every name that becomes code goes through `identifier`."""

from __future__ import annotations

import keyword
import math
import textwrap
from typing import Any

from ..dsl.base import Var
from ..dsl.layers import L1, L1L2, L2, Custom, KerasLayer, Repeat


class Code(str):
    """A fragment of code the renderer built itself (e.g. an f-string of a layer's name): written
    as is. Never made from user text."""


class TemplateBug(Exception):
    """A value reached the code generator that it does not know how to write: a loopgen bug."""


def identifier(name: str) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise TemplateBug(f"{name!r} is not an identifier and cannot become code")
    return name


def literal(value: Any) -> str:
    """A Python expression for a spec constant."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, Var):
        return identifier(value.var)
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TemplateBug(f"non-finite float {value!r} in a spec constant")
        return repr(value)
    if isinstance(value, tuple | list):
        items = ", ".join(literal(v) for v in value)
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, L1 | L2 | L1L2):
        return regularizer(value)
    if isinstance(value, KerasLayer):
        return layer(value)  # a layer that another wraps (Bidirectional, TimeDistributed)
    raise TemplateBug(f"cannot write a {type(value).__name__} as a Python literal")


def ratio(value: float) -> str:
    """`1 / 255` rather than `0.00392156862745098` when a number is exactly one over an integer."""
    if value > 0 and value < 1:
        denominator = round(1 / value)
        if 1 / denominator == value:
            return f"1 / {denominator}"
    return literal(value)


def regularizer(value: L1 | L2 | L1L2) -> str:
    if isinstance(value, L1):
        return f"keras.regularizers.L1({literal(value.l1)})"
    if isinstance(value, L2):
        return f"keras.regularizers.L2({literal(value.l2)})"
    return f"keras.regularizers.L1L2(l1={literal(value.l1)}, l2={literal(value.l2)})"


def arguments(args: list[tuple[str | None, Any]]) -> str:
    """`a, b, key=value` from (keyword or None, value) pairs."""
    return ", ".join(literal(v) if k is None else f"{identifier(k)}={literal(v)}" for k, v in args)


def call(callee: str, args: list[tuple[str | None, Any]]) -> str:
    return f"{callee}({arguments(args)})"


def layer(item: KerasLayer | Custom) -> str:
    """Constructor expression of a layer: `layers.Dense(64, activation="relu")`."""
    if isinstance(item, Custom):
        return call(identifier(item.cls), item.arguments())
    if item.kind == "position_embedding":  # the script's own class
        return call("PositionEmbedding", item.arguments())
    return call(f"layers.{item.keras_class}", item.arguments())


def repeat_header(item: Repeat) -> str:
    """The head of a Repeat's loop: `filters in (16, 32)`, or `a, b in zip((...), (...))`."""
    names = [identifier(n) for n in item.over]
    values = [literal(tuple(v)) for v in item.over.values()]
    if len(names) == 1:
        return f"{names[0]} in {values[0]}"
    return f"{', '.join(names)} in zip({', '.join(values)})"


def keras_object(module: str, obj: Any, extra: list[tuple[str | None, Any]] | None = None) -> str:
    """`keras.<module>.<Class>(...)` for a loss, optimizer, schedule or metric, with `extra`
    arguments after the spec's own."""
    return call(f"keras.{module}.{obj.keras_class}", [*obj.arguments(), *(extra or [])])


def _wrapped(text: str, width: int = 88) -> str:
    """Paragraphs longer than a line re-flowed to `width` (black leaves docstrings as they are);
    text already broken into short lines is kept.

    A word longer than a line (a URL, a path) stays whole on a line of its own: cut, it would
    no longer be found or followed, and textwrap cuts it one line at a time, copying the rest
    of the word each time, which takes time quadratic in its length (seconds for a megabyte)."""
    if all(len(line) <= width for line in text.splitlines()):
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        _fill(p.split(), width) if len(p) > width and "\n" not in p.strip() else p
        for p in paragraphs
    )


def _fill(words: list[str], width: int) -> str:
    """`textwrap.fill(" ".join(words), width, break_long_words=False)`: the words, as many to a
    line as fit. Without a hyphen it is done here, in one pass over the words: textwrap's
    regular expressions and chunk lists took 60 % of rendering a 10 MB description (14 s of
    24), a minute of a 50 MB one. With one, textwrap does it (it may break a line after a
    hyphen, which this does not)."""
    if any("-" in word for word in words):
        return textwrap.fill(" ".join(words), width, break_long_words=False)
    lines: list[str] = []
    line: list[str] = []
    length = -1  # of the line's words and the spaces between them
    for word in words:
        if line and length + 1 + len(word) > width:
            lines.append(" ".join(line))
            line, length = [], -1
        line.append(word)
        length += 1 + len(word)
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines)


def docstring(text: str) -> str:
    """A triple-quoted docstring when that is safe to write, else a plain string literal.

    The triple-quoted form cannot end early or escape without a backslash or `\"\"\"`, so it
    is used only when the text has neither (and no control characters)."""
    text = _wrapped(text.strip("\n"))
    safe = (
        '"""' not in text
        and "\\" not in text
        and not text.endswith('"')
        and text.replace("\n", "").isprintable()
    )
    # Either form holds the same string: a multi-line docstring ends in a newline.
    value = f"{text}\n" if "\n" in text else text
    if not safe:
        return literal(value)
    return f'"""{value}"""'
