"""Whether code or data belongs to an installed distribution (`installed`), not to the person's
own files.

The whole-model readings run a library's function again (``_forms/sources/factory.py``) and read the
JSON files a library ships beside its code (``_forms/sources/shipped.py``). A library's model factories
are builders made to be called, and its package directory holds its own files only. A person's
notebook or script is neither: a function of theirs named as a string the model keeps may load
data or write files before it makes the model, and the directory of a single-file module is
their project (a virtual environment, datasets, thousands of JSON files). So both readings take
installed code only: a file under one of this interpreter's site-packages directories.
"""

from __future__ import annotations

import functools
import os
import site
import sysconfig

__all__ = ["installed"]


@functools.lru_cache(maxsize=1)
def _roots() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k) for k in ("purelib", "platlib")}
    try:
        paths.update(site.getsitepackages())
        paths.add(site.getusersitepackages())
    except AttributeError:  # a virtualenv's old site.py lacks them
        pass
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


def installed(path: str | None) -> bool:
    """Whether ``path`` (a module's ``__file__``) lies in an installed distribution."""
    if not path:
        return False
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    return real.startswith(_roots()) or "site-packages" in parts or "dist-packages" in parts
