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
    sweeping = sys.argv[1:2] == ["sweep"]
    if sweeping:  # its trials' launcher, started before the imports below (sweep/early.py)
        from .sweep import early

        early.start(sys.argv[2:])
    from .cli import app

    try:
        app()
    finally:
        if sweeping:
            early.discard()
        gc.freeze()  # the collection at interpreter shutdown skips frozen objects


if __name__ == "__main__":
    main()
