"""A test double for a machine without a network, on the real download path: inside `served()`
every host name fails to resolve, as offline ("Name or service not known"), and Keras' cache
(~/.keras) is an empty folder, so a script's `keras.datasets.mnist.load_data()` or
`keras.applications.MobileNetV2(weights="imagenet")` runs Keras' own code up to its download
(`get_file`, urllib) and fails there, as it does for a user offline on a fresh machine.
tests/data.py `runnable` runs scripts inside it (double="offline")."""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Iterator
from unittest import mock

from keras.src.backend import config


def no_network(*args, **kwargs):
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@contextlib.contextmanager
def served() -> Iterator[str]:
    """Inside: no host resolves, and Keras caches in an empty folder (its path yielded)."""
    with tempfile.TemporaryDirectory() as keras_home:
        with mock.patch.object(socket, "getaddrinfo", no_network):
            with mock.patch.object(config, "_KERAS_DIR", keras_home):
                yield keras_home
