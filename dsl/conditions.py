"""Conditions on a block's parameters (`Node.when`): the node exists only in the calls whose
arguments make it true, as a ResNet block projects its shortcut only where it changes the
resolution.

A condition is a small Python expression, kept small on purpose: the block's parameters and
constants, compared (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`) and joined with `and`,
`or`, `not`. It is parsed with `ast` and checked against that grammar, so that the script gets
it back as code that can do nothing else (`ast.unparse` of the checked tree, never the text),
and so that the render-time checks can evaluate it for each call's arguments."""

from __future__ import annotations

import ast
import operator
import re
from functools import cache
from typing import Any

COMPARISONS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

GRAMMAR = (
    "a condition compares the block's parameters with constants (==, !=, <, <=, >, >=, in, "
    "not in) and joins comparisons with and, or, not; e.g. 'strides != 1'"
)


@cache
def parse(text: str) -> ast.expr:
    """The checked syntax tree of a condition; ValueError saying what is wrong otherwise."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        hint = "; compare with ==, not =" if re.search(r"(?<![=!<>])=(?!=)", text) else ""
        raise ValueError(
            f"{text!r} is not an expression Python can read ({error.msg}{hint}); {GRAMMAR}"
        ) from None
    _check(tree, text, top=True)
    return tree


def _check(node: ast.expr, text: str, top: bool = False) -> None:
    if isinstance(node, ast.BoolOp):
        for operand in node.values:
            _check(operand, text, top=True)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _check(node.operand, text, top=True)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in COMPARISONS:
                symbol = {ast.Is: "is", ast.IsNot: "is not"}.get(type(op), type(op).__name__)
                raise ValueError(f"{text!r}: {symbol!r} has no place in a condition; {GRAMMAR}")
        for operand in (node.left, *node.comparators):
            _check_operand(operand, text)
    elif top and isinstance(node, ast.Name):
        pass  # a parameter that is a flag: `when="project"`
    else:
        _refuse(node, text)


CONSTANTS = (bool, int, float, str, type(None))
"""The constants a condition may hold (and tuples of them)."""


def _check_operand(node: ast.expr, text: str) -> None:
    if isinstance(node, ast.Name):
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, CONSTANTS):
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int | float):
            return  # a negative number
    if isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            _check_operand(element, text)
        return
    _refuse(node, text)


def _refuse(node: ast.expr, text: str) -> None:
    raise ValueError(f"{text!r}: {ast.unparse(node)!r} has no place in a condition; {GRAMMAR}")


def names(text: str) -> list[str]:
    """The parameters a condition reads, in order of appearance."""
    found = [n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(found))


def code(text: str) -> str:
    """The condition as the script writes it: `strides != 1`."""
    return ast.unparse(parse(text))


def holds(text: str, params: dict[str, Any]) -> bool:
    """Whether the condition is true for a call with these parameter values."""
    return bool(_evaluate(parse(text), params))


def _evaluate(node: ast.expr, params: dict[str, Any]) -> Any:
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, params) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, params)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, params)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, params)
            if not COMPARISONS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Name):
        return _plain(params[node.id])
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_evaluate(e, params) for e in node.elts)
    assert isinstance(node, ast.Constant)
    return node.value


def _plain(value: Any) -> Any:
    """A parameter's value as the script has it: a list given in a spec is a tuple there."""
    return tuple(_plain(v) for v in value) if isinstance(value, list | tuple) else value
