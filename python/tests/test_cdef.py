# SPDX-License-Identifier: MIT
"""The cffi declarations, generated from the C headers by tools/gen-cdef
(build/python/vtpu/_cdef_gen.py), against the compiler: every struct's
size and field offsets and every constant's value (compiled with gcc
against libvtpu/include and uapi/), every VTPU_API function of the
headers declared and found in libvtpu.so; the generator's rules on a
header of its own; and the build tree's module is today's headers'."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from vtpu import _ffi
from vtpu._ffi import ffi, lib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                   os.pardir))
GEN = os.path.join(TOP, "tools", "gen-cdef")
INCLUDE = [os.path.join(TOP, "libvtpu", "include"), os.path.join(TOP, "uapi")]
HEADERS = ["vtpu.h", "vtpu_data.h", "vtpu_model.h", "vtpu_text.h"]
CDEFS = _ffi.CDEF


def _cc():
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler (gcc) to check the declarations against")
    return cc


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
    cc = _cc()
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
           + "".join("#include <%s>\n" % h for h in HEADERS) +
           "#define P(k, v) printf(\"%s=%llu\\n\", k, "
           "(unsigned long long)(v))\n"
           "int main(void)\n{\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    d = tmp_path_factory.mktemp("layout")
    (d / "layout.c").write_text(src)
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror"]
                   + ["-I" + i for i in INCLUDE]
                   + ["-o", str(d / "layout"), str(d / "layout.c")],
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


def test_every_vtpu_api_function_declared():
    funcs = []
    for h in HEADERS:
        with open(os.path.join(TOP, "libvtpu", "include", h)) as f:
            funcs += re.findall(r"^VTPU_API\b[^;(]*?\b(vtpu_\w+)\s*\(",
                                f.read(), re.M)
    assert len(funcs) > 100
    missing = [f for f in funcs if not re.search(r"\b%s\s*\(" % f, CDEFS)]
    assert not missing, "VTPU_API functions not in the cdef: %s" % missing
    for f in funcs:
        assert callable(getattr(lib, f)), f


def _generate(tmp_path, incdirs, headers, *extra):
    out = tmp_path / "_cdef_gen.py"
    subprocess.run([sys.executable, GEN, "--cc", _cc(), "-o", str(out)]
                   + ["-I" + i for i in incdirs] + list(extra) + headers,
                   check=True)
    scope = {}
    exec(out.read_text(), scope)
    return out.read_text(), scope["CDEF"]


def test_the_build_trees_declarations_are_todays_headers(tmp_path):
    """What make generated (python/python.mk's command line) is what the
    generator makes of the headers now: else run make."""
    built = os.path.join(TOP, "build", "python", "vtpu", "_cdef_gen.py")
    if not os.path.exists(built):
        pytest.skip("vtpu is not imported from a built checkout")
    text, _ = _generate(tmp_path, INCLUDE, HEADERS, "-DVTPU_API=",
                        "--exclude", "^VTPU_IOCTL_")
    with open(built) as f:
        assert f.read() == text, "stale %s: run make" % built


HEADER = r"""/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#define G_INT (1u << 4)
#define G_SUM (G_INT | 3)
#define G_NEG (-5)
#define G_BIG (1ull << 40)
#define G_STR "text"
#define G_FLOAT 1.5
#define G_REF ((struct g_pair){ .a = 1 })
#define G_FN(x) ((x) + 1)
#define G_GONE 1
#undef G_GONE
#define G_SKIPPED 7
#define G_EMPTY
struct g_pair {
	__u32 a;
#define G_INSIDE 9
	__s64 b;
} __attribute__((aligned(8)));
enum g_kind { G_A, G_B = G_INT };
static inline int g_twice(int x)
{
	return x * 2 + (int)sizeof("}{;");
}
__attribute__((visibility("default"))) int g_call(const struct g_pair *p,
						   FILE *out);
"""


def test_the_generators_rules(tmp_path):
    """On a header of its own: integer macros as literals (strings,
    floats, compound literals, macros with arguments, #undef'd and
    --exclude'd ones left out), function definitions and attributes
    dropped, the kernel's types given typedefs, the system's headers
    left out; the result parses."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "g.h").write_text(HEADER)
    _, cdef = _generate(tmp_path, [str(inc)], ["g.h"],
                        "--exclude", "SKIPPED$")
    defines = dict(re.findall(r"^#define (\w+) (.*)$", cdef, re.M))
    assert defines == {"G_INT": "16", "G_SUM": "19", "G_NEG": "-5",
                       "G_BIG": str(1 << 40), "G_INSIDE": "9"}
    for gone in ("__attribute__", "static", "g_twice", "printf", "G_FN"):
        assert gone not in cdef, gone
    assert "typedef uint32_t __u32;" in cdef
    assert "typedef int64_t __s64;" in cdef
    assert "int g_call(const struct g_pair *p, FILE *out);" in cdef
    g = type(ffi)()
    g.cdef(cdef)
    assert g.sizeof("struct g_pair") == 16
    assert g.offsetof("struct g_pair", "b") == 8
    assert g.typeof("enum g_kind").relements["G_B"] == 16
    assert g.dlopen(None).G_NEG == -5


def test_no_declarations_says_run_make(monkeypatch, tmp_path):
    monkeypatch.setattr(_ffi, "_BUILD", str(tmp_path))
    with pytest.raises(ImportError, match="run make"):
        _ffi._generated()
