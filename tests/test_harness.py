"""The test harness's own shortcuts change nothing a program does: AutoGraph's conversions kept
across the programs of a run (autograph_cache.py) are the code AutoGraph would have made."""

from __future__ import annotations

import json

import pytest
from helpers import start_preloaded

FUNCTION = """import tensorflow as tf


@tf.function
def f(x):
    if x > 0:  # a tensor's condition: AutoGraph makes it a tf.cond
        return x * 2 + sum([x * k for k in ()])  # a comprehension: a code object of its own
    tf.debugging.assert_equal(x, 5.0, message="x must be 5")
    return x


print(float(f(tf.constant(3.0))))
print(float(f(tf.constant(-1.0))))
"""

TWO_ON_A_LINE = """import tensorflow as tf

f, g = tf.function(lambda x: x + 1.0), tf.function(lambda y: y + 100.0)
print(float(f(tf.constant(1.0))), float(g(tf.constant(1.0))))
raise SystemExit(1)  # as the others end
"""

RUN = """import json, runpy, sys
import autograph_cache
from tensorflow.python.autograph.pyct import transpiler
autograph_cache.install(sys.argv[2])
converted = []
parse = transpiler.GenericTranspiler.transform_function
def counted(self, fn, context):
    converted.append(fn.__name__)
    return parse(self, fn, context)
transpiler.GenericTranspiler.transform_function = counted
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
finally:
    print(json.dumps(converted))
"""


@pytest.mark.slow
def test_a_kept_conversion_runs_as_the_original_and_its_errors_name_the_file_run(tmp_path):
    cache = tmp_path / "cache"

    def run(name: str, source: str) -> tuple[list[str], str, str]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.py").write_text(source)
        proc = start_preloaded("-c", RUN, str(tmp_path / name / "f.py"), str(cache), cwd=tmp_path)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 1, stderr[-3000:]  # f(-1.0) fails its assertion
        *printed, converted = stdout.strip().splitlines()
        return json.loads(converted), " ".join(printed), stderr

    converted, printed, stderr = run("first", FUNCTION)
    assert converted == ["f"] and printed == "6.0" and len(list(cache.iterdir())) == 1
    # The same function in another file: no conversion, and its error names that file.
    converted, printed, stderr = run("second", FUNCTION)
    assert converted == [] and printed == "6.0"
    assert "x must be 5" in stderr
    assert f'File "{tmp_path / "second" / "f.py"}", line 8, in f' in stderr, stderr[-3000:]
    assert str(tmp_path / "first") not in stderr
    # A changed line is another function: converted anew, and runs as changed.
    converted, printed, _ = run("third", FUNCTION.replace("x * 2", "x * 3"))
    assert converted == ["f"] and printed == "9.0" and len(list(cache.iterdir())) == 2
    # Two lambdas on one line: one source, two functions.
    converted, printed, _ = run("fourth", TWO_ON_A_LINE)
    assert converted == ["<lambda>", "<lambda>"] and printed == "2.0 101.0", printed
