"""tests/offline.py's machine without a network, on which tensorflow-datasets was installed
alone: TFDS imports importlib_resources to prepare a dataset, but does not install it on Python
3.9 and later (tensorflow/datasets issue 11212). Inside `served()` that import fails as it does
there. tests/data.py `runnable` runs scripts inside it
(double="offline_without_importlib_resources")."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from unittest import mock

import offline


@contextlib.contextmanager
def served() -> Iterator[str]:
    """Offline, and `import importlib_resources` raises ModuleNotFoundError."""
    with offline.served() as keras_home:
        with mock.patch.dict(sys.modules, {"importlib_resources": None}):
            yield keras_home
