"""A test double for a machine without a network, on the real download path: inside `served()`
every host name fails to resolve, as offline ("Name or service not known"), and Keras' cache
(~/.keras) and TFDS's data folder (~/tensorflow_datasets) are empty folders, so a script's
`keras.datasets.mnist.load_data()`, `keras.applications.MobileNetV2(weights="imagenet")` or
`tfds.load("oxford_iiit_pet:4.*.*")` runs the library's own code up to its download (`get_file`,
urllib; TFDS's download manager, requests) and fails there, as it does for a user offline on a
fresh machine (a script looks TFDS's hosts up before its download: they do not resolve). The
waits between urllib3's retries are left out, so that a script which does retry (TFDS's
downloader retries each file 10 times, over 3 minutes) fails its test in seconds, on its
'Retrying' warnings, where the patch holds. tests/data.py `runnable` runs scripts inside it
(double="offline")."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Iterator
from unittest import mock

from keras.src.backend import config
from urllib3.util.retry import Retry


def no_network(*args, **kwargs):
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@contextlib.contextmanager
def served() -> Iterator[str]:
    """Inside: no host resolves, Keras caches in an empty folder (its path yielded), TFDS
    prepares into another (read when TFDS is imported, inside), and retries do not wait."""
    with tempfile.TemporaryDirectory() as keras_home, tempfile.TemporaryDirectory() as tfds:
        with mock.patch.object(socket, "getaddrinfo", no_network):
            with mock.patch.object(config, "_KERAS_DIR", keras_home):
                with mock.patch.dict(os.environ, {"TFDS_DATA_DIR": tfds}):
                    with mock.patch.object(Retry, "sleep", lambda self, response=None: None):
                        yield keras_home
