"""The sweep command: ``python -m memcgsim.sweep FILE [--backend ray --address ADDR] [--out F]``.

The code lives in ``memcgsim._sweep``, which the package imports; this module is the command's
entry only, so that running it with ``-m`` does not execute a module the package has already
imported (Python warns about that with a RuntimeWarning). Importing it gives the same names.

``memcgsim.sweep`` is the function :func:`memcgsim._sweep.sweep`; importing this module
makes the package's attribute this module instead (Python binds a submodule to its package
when it loads), so the module is callable too and does what the function does.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from . import _sweep
from ._sweep import MAX_JOBS, main, sweep

__all__ = ["sweep", "main", "MAX_JOBS"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _sweep.sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
