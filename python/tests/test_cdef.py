# SPDX-License-Identifier: MIT
"""The cffi declarations against the C headers: every struct's size and
field offsets, every constant's value (compiled with gcc against
libvtpu/include and uapi/), and every VTPU_API function of vtpu.h
declared and found in libvtpu.so."""
import os
import re
import shutil
import subprocess

import pytest

from vtpu import _cdef_core, _cdef_model
from vtpu._ffi import ffi, lib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                   os.pardir))
CDEFS = _cdef_core.CDEF + _cdef_model.CDEF


def _structs():
    """(C expression, cffi type) of every named struct the cdefs define,
    with its fields, nested structs' fields as dotted paths."""
    for name in sorted(set(re.findall(r"\bstruct\s+(\w+)\s*\{", CDEFS))):
        yield "struct " + name


def _fields(ctype, prefix=()):
    """(path, offset, size) of each field, nested ones as paths."""
    for fname, field in ctype.fields:
        path = prefix + (fname,)
        yield path, field.offset, ffi.sizeof(field.type)
        if field.type.kind == "struct":
            for sub, off, size in _fields(field.type, path):
                yield sub, field.offset + off, size


def _constants():
    names = re.findall(r"^#define\s+(\w+)\s", CDEFS, re.M)
    for enum in sorted(set(re.findall(r"\benum\s+(\w+)\s*\{", CDEFS))):
        names.extend(ffi.typeof("enum " + enum).relements)
    return sorted(set(names))


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    """What the C compiler says: {key: value} for 'sizeof S',
    'offsetof S f.g', 'sizeof S f.g' and each constant's name."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler (gcc) to check the cffi layouts against")
    lines = []
    for s in _structs():
        lines.append('P("sizeof %s", sizeof(%s));' % (s, s))
        for path, _, _ in _fields(ffi.typeof(s)):
            dotted = ".".join(path)
            lines.append('P("offsetof %s %s", offsetof(%s, %s));'
                         % (s, dotted, s, dotted))
            lines.append('P("sizeof %s %s", sizeof(((%s *)0)->%s));'
                         % (s, dotted, s, dotted))
    for name in _constants():
        lines.append('P("%s", (unsigned long long)(%s));' % (name, name))
    src = ("#include <stddef.h>\n#include <stdio.h>\n"
           "#include <vtpu.h>\n#include <vtpu_data.h>\n"
           "#include <vtpu_model.h>\n"
           "#define P(k, v) printf(\"%s=%llu\\n\", k, "
           "(unsigned long long)(v))\n"
           "int main(void)\n{\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    d = tmp_path_factory.mktemp("layout")
    (d / "layout.c").write_text(src)
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror",
                    "-I", os.path.join(TOP, "libvtpu", "include"),
                    "-I", os.path.join(TOP, "uapi"),
                    "-o", str(d / "layout"), str(d / "layout.c")],
                   check=True)
    out = subprocess.run([str(d / "layout")], check=True,
                         capture_output=True, text=True).stdout
    return dict(line.rsplit("=", 1) for line in out.splitlines())


@pytest.mark.parametrize("struct", list(_structs()))
def test_struct_layout(c_layout, struct):
    ctype = ffi.typeof(struct)
    assert ffi.sizeof(ctype) == int(c_layout["sizeof " + struct])
    fields = list(_fields(ctype))
    assert fields, struct
    for path, off, size in fields:
        dotted = ".".join(path)
        assert off == int(c_layout["offsetof %s %s" % (struct, dotted)]), \
            dotted
        assert size == int(c_layout["sizeof %s %s" % (struct, dotted)]), \
            dotted


def test_constants(c_layout):
    names = _constants()
    assert "VTPU_API_VERSION" in names and "VTPU_OP_GEMM" in names
    wrong = {n: (getattr(lib, n), int(c_layout[n])) for n in names
             if getattr(lib, n) != int(c_layout[n])}
    assert not wrong, "cffi value != C value: %r" % wrong


def test_every_vtpu_h_function_declared():
    with open(os.path.join(TOP, "libvtpu", "include", "vtpu.h")) as f:
        header = f.read()
    funcs = re.findall(r"^VTPU_API\b[^;(]*?\b(vtpu_\w+)\s*\(", header, re.M)
    assert len(funcs) > 40
    missing = [f for f in funcs if not re.search(r"\b%s\s*\(" % f, CDEFS)]
    assert not missing, "vtpu.h functions not in the cdef: %s" % missing
    for f in funcs:
        assert callable(getattr(lib, f)), f
