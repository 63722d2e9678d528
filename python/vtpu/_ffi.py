# SPDX-License-Identifier: MIT
"""libvtpu through cffi's ABI mode: the declarations are the C headers'
(libvtpu/include/vtpu.h, vtpu_data.h, vtpu_model.h, vtpu_text.h and
uapi/linux/vtpu.h), generated from them at build time by tools/gen-cdef into the module
_cdef_gen.py, and loaded from libvtpu.so.0 at import.

Which declarations: the build tree's build/python/vtpu/_cdef_gen.py when
this package is imported from a checkout (python/vtpu, after `make`); else
the package's own vtpu/_cdef_gen.py, which `make install` puts beside this
file.

Which library: $VTPU_LIBRARY if set; else the build tree's
build/lib/libvtpu.so.0 when this package is imported from a checkout;
else the one `make install` recorded in _config.py; else the dynamic
loader's search (libvtpu.so.0 installed in a standard place).
"""
import importlib.util
import os

from cffi import FFI

_HERE = os.path.dirname(os.path.abspath(__file__))
# the checkout's build tree, seen from python/vtpu
_BUILD = os.path.normpath(os.path.join(_HERE, os.pardir, os.pardir, "build"))

# The few libc functions vtpu.keras needs to hand libvtpu a FILE * (a dup of
# Python's stdout) for its progress output, resolved with ffi.dlopen(None):
# not the project's headers, so written here.
LIBC_CDEF = """
FILE *fdopen(int fd, const char *mode);
int fflush(FILE *stream);
int fclose(FILE *stream);
int dup(int fd);
int close(int fd);
"""


def _generated():
    """The generated module's CDEF: the build tree's, else the package's."""
    path = os.path.join(_BUILD, "python", "vtpu", "_cdef_gen.py")
    if os.path.exists(path):
        spec = importlib.util.spec_from_file_location("vtpu._cdef_gen", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.CDEF
    try:
        from . import _cdef_gen  # put here by make install
    except ImportError:
        raise ImportError(
            "vtpu: no declarations of libvtpu: neither %s nor an installed "
            "vtpu/_cdef_gen.py; they are generated from the C headers: run "
            "make (or make install)" % path) from None
    return _cdef_gen.CDEF


CDEF = _generated()
ffi = FFI()
ffi.cdef(CDEF)
ffi.cdef(LIBC_CDEF)

SONAME = "libvtpu.so.0"


def _candidates():
    env = os.environ.get("VTPU_LIBRARY")
    if env:
        return [env]
    tree = os.path.join(_BUILD, "lib", SONAME)
    found = []
    if os.path.exists(tree):
        found.append(tree)
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
