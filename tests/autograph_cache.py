"""AutoGraph's conversions, kept on disk for the whole test run: the programs forked by
preloaded.py convert the same functions again and again (a script's straight, killed and resumed
runs; every example's data pipeline and step), and a conversion costs 20-300 ms of Python, a
sixth of a tiny run. A conversion is a function of the function's source and code object (at
its lines), the names it can see and the options (AutoGraph reads the values of those names only
for loop-option directives, which no script uses); what is kept is AutoGraph's own
output, the generated module's source and its source map, so a program that finds it runs the
code it would have made itself. Nothing is kept for a function that fails to convert: it fails
again, as it would have.

`install(folder)` patches AutoGraph's transpiler in this process (and the processes forked from
it); TensorFlow is pinned (2.21), and so are the internals used here."""

from __future__ import annotations

import hashlib
import inspect
import json
import marshal
import os
import tempfile
import types

from tensorflow.python.autograph.pyct import loader, origin_info, transpiler

CONVERT = transpiler.PyToPy.transform_function
"""AutoGraph's own, which install() wraps (installing again replaces the wrapper)."""


def _key(fn, subkey) -> str | None:
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None  # no source on disk (AutoGraph then fails, as it would)
    # The whole code object but its file (its lines, columns, constants and names): two lambdas
    # on one line share their source, not their code.
    code = marshal.dumps(_without_file(fn.__code__))
    parts = [source, hashlib.sha256(code).hexdigest(), sorted(fn.__globals__),
             *subkey.as_tuple()[:3], sorted(map(str, subkey.optional_features))]  # fmt: skip
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _without_file(code: types.CodeType) -> types.CodeType:
    """`code` and the code objects nested in it (comprehensions, lambdas, inner functions), each
    without the path of its file: the same function run from another folder is the same."""
    consts = tuple(_without_file(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename="", co_consts=consts)


def _save(path: str, factory, fn) -> None:
    with open(factory.module.__file__, encoding="utf-8") as f:
        source = f.read()
    entries = [
        [where.lineno, info.loc.lineno, info.loc.col_offset, info.function_name,
         info.source_code_line, info.comment]
        for where, info in factory.source_map.items()
        if info.loc.filename == fn.__code__.co_filename
    ]  # fmt: skip
    if len(entries) != len(factory.source_map):
        return  # code from another file inlined: not kept
    record = {"source": source, "name": factory._name, "source_map": entries,
              "outer": factory._unbound_factory.__qualname__.split(".")[0]}  # fmt: skip
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False) as f:
        json.dump(record, f)
    os.replace(f.name, path)


def _load(path: str, fn, extra_locals: dict):
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    module, file_name = loader.load_source(record["source"], delete_on_exit=True)
    factory = transpiler._PythonFnFactory(record["name"], fn.__code__.co_freevars, extra_locals)
    factory._unbound_factory = getattr(module, record["outer"])()
    factory.module = module
    factory.source_map = {
        origin_info.LineLocation(file_name, line): origin_info.OriginInfo(
            origin_info.Location(fn.__code__.co_filename, lineno, col), function, text, comment
        )
        for line, lineno, col, function, text, comment in record["source_map"]
    }
    return factory


def install(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    convert = CONVERT

    def transform_function(self, fn, user_context):
        subkey = self.get_caching_key(user_context)
        key = None if self._cache.has(fn, subkey) else _key(fn, subkey)
        if key is None:
            return convert(self, fn, user_context)
        path = os.path.join(folder, key + ".json")
        if os.path.exists(path):
            self._cache[fn][subkey] = _load(path, fn, self.get_extra_locals())
            return convert(self, fn, user_context)  # instantiates the factory kept above
        result = convert(self, fn, user_context)
        _save(path, self._cache[fn][subkey], fn)
        return result

    transpiler.PyToPy.transform_function = transform_function
