"""One error hierarchy: what the CLI prints to the user, and what is a bug of ours."""

from __future__ import annotations

from pydantic import ValidationError


class LoopgenError(Exception):
    """A problem the user can fix; the CLI prints the message and exits non-zero, no traceback."""


class SpecError(LoopgenError):
    """The spec file cannot be loaded or does not validate."""


class OutputError(LoopgenError):
    """The output cannot be written."""


def format_validation_error(error: ValidationError, root: str = "spec") -> str:
    """Turns a pydantic error into `field.path: message` lines, one per problem."""
    lines = []
    for item in error.errors(include_url=False):
        path = root
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field; remove it or check its spelling"
        elif item["type"] == "missing":
            message = "required field is missing; add it"
        elif item["type"] == "union_tag_invalid":
            message = message + "; pick one of those kinds"
        lines.append(f"  {path}: {message}")
    count = len(lines)
    return f"the spec has {count} error{'s' if count > 1 else ''}:\n" + "\n".join(lines)
