"""The run's machinery that `loopgen render` writes beside every script as loopgen_runtime.py:
ordinary Python, written once here, linted and unit-tested by import (tests/test_runtime.py).

It is a library in all but packaging: a rendered script imports it (script -> runtime, never
the other way) and passes in what depends on its spec, as the class attributes of its own
RunDirectory. It never imports loopgen, and TensorFlow loads only when the script has
checked its flags."""
