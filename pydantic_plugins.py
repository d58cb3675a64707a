"""No pydantic plugins in a loopgen process unless asked for, and no search for them.

pydantic looks for plugins as it builds its first model: it scans the entry points of every
installed distribution (hundreds beside TensorFlow, a sixth of a render's time), and the module
that does it, `pydantic.plugin._loader`, imports importlib.metadata (email, zipfile, csv,
socket, ...) at its top, 0.02-0.03 s more. Importing this module before the spec language sets
PYDANTIC_DISABLE_PLUGINS (unless it is set already: an empty value brings plugins back) and puts
a stand-in for the loader that answers "no plugins" while they are disabled, as the loader does
before looking at any entry point; for anything else it hands over to the real module."""

import importlib
import os
import sys
import types

LOADER = "pydantic.plugin._loader"
DISABLED = ("__all__", "1", "true")
"""The PYDANTIC_DISABLE_PLUGINS values that disable every plugin (pydantic's own test)."""


class _Loader(types.ModuleType):
    def get_plugins(self):
        if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in DISABLED:
            return ()
        return self._real().get_plugins()

    def __getattr__(self, name: str):
        if name.startswith("__"):  # `__path__`, ...: the import system asks a module these
            raise AttributeError(name)  # and must not import the real loader to learn it has none
        return getattr(self._real(), name)

    def _real(self) -> types.ModuleType:
        if sys.modules.get(LOADER) is self:
            del sys.modules[LOADER]
        return importlib.import_module(LOADER)


os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
sys.modules.setdefault(LOADER, _Loader(LOADER))
