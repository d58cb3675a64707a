"""`loopgen` and `python -m loopgen`: the command, in a process that lives for one command.

The cyclic garbage collector stays off while it runs, and what the process built is frozen
before the interpreter exits. Importing the spec language builds tens of thousands of objects
(pydantic's schemas and validators) that never become garbage; the collector would walk them
several times during the imports and once more at shutdown, about a quarter of a render's wall
time (bench: `python -m bench --parts render`). A command allocates too little for the
collector to matter otherwise: reference counting frees what it drops."""

import gc
import sys


def main() -> None:
    gc.disable()
    from .sweep import early

    early.start(sys.argv[1:])  # `loopgen sweep FILE`: before the imports below
    from .cli import app

    try:
        app()
    finally:
        early.discard()
        gc.freeze()  # the collection at interpreter shutdown skips frozen objects


if __name__ == "__main__":
    main()
