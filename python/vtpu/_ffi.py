# SPDX-License-Identifier: MIT
"""libvtpu through cffi's ABI mode: the declarations below are the C
headers' (libvtpu/include/*.h), loaded from libvtpu.so.0 at import.

Which library: $VTPU_LIBRARY if set; else the build tree's
build/lib/libvtpu.so.0 when this package is imported from a checkout
(python/vtpu); else the one `make install` recorded in _config.py; else
the dynamic loader's search (libvtpu.so.0 installed in a standard place).
"""
import os

from cffi import FFI

from ._cdef_core import CDEF as _CDEF_CORE
from ._cdef_model import CDEF as _CDEF_MODEL

ffi = FFI()
ffi.cdef(_CDEF_CORE)
ffi.cdef(_CDEF_MODEL)

SONAME = "libvtpu.so.0"


def _candidates():
    env = os.environ.get("VTPU_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, os.pardir, os.pardir, "build", "lib", SONAME)
    found = []
    if os.path.exists(tree):
        found.append(os.path.normpath(tree))
    try:
        from . import _config  # written by make install
        found.append(os.path.join(_config.LIBDIR, SONAME))
    except ImportError:
        pass
    found.append(SONAME)
    return found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("vtpu: cannot load libvtpu (%s); build it with `make`, "
                      "install it with `make install`, or point "
                      "VTPU_LIBRARY at libvtpu.so.0" % "; ".join(errors))


lib, LIBRARY_PATH = _load()
