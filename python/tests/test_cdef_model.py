# SPDX-License-Identifier: MIT
"""The hand-transcribed declarations of _cdef_model.py against the headers:
a C program compiled against libvtpu/include prints every struct's size and
its fields' offsets, which must be cffi's."""
import os
import shutil
import subprocess

import pytest

from vtpu._ffi import ffi

TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))

STRUCTS = [
    "vtpu_dataset", "vtpu_rng", "vtpu_augment", "vtpu_metric",
    "vtpu_progress_opts", "vtpu_ckpt_tensor", "vtpu_compile_opts",
    "vtpu_epoch_stats", "vtpu_fit_opts", "vtpu_weight_info",
    "vtpu_model_info",
]

ENUMS = {
    "VTPU_ACT_NONE": 0, "VTPU_ACT_RELU": 1, "VTPU_ACT_SOFTMAX": 2,
    "VTPU_PAD_VALID": 0, "VTPU_PAD_SAME": 1,
    "VTPU_OPT_ADAM": 0, "VTPU_OPT_SGD": 1,
}


def _c_layouts(tmp_path):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler")
    lines = ['#include <stdio.h>', '#include <stddef.h>',
             '#include "vtpu_model.h"', 'int main(void) {']
    for s in STRUCTS:
        lines.append('printf("%s %%zu\\n", sizeof(struct %s));' % (s, s))
        for name, _ in ffi.typeof("struct " + s).fields:
            lines.append('printf("%s.%s %%zu\\n", offsetof(struct %s, %s));'
                         % (s, name, s, name))
    for e in ENUMS:
        lines.append('printf("%s %%d\\n", (int)%s);' % (e, e))
    lines.append('printf("VTPU_PROGRESS_MAX_METRICS %d\\n", '
                 'VTPU_PROGRESS_MAX_METRICS);')
    lines.append('printf("VTPU_CKPT_MAX_DIMS %d\\n", VTPU_CKPT_MAX_DIMS);')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([gcc, "-std=gnu11", "-I", os.path.join(TOP, "libvtpu",
                                                          "include"),
                    "-I", os.path.join(TOP, "uapi"), "-o", str(exe),
                    str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return dict(line.rsplit(" ", 1) for line in out.splitlines())


def test_struct_layouts_match_the_headers(tmp_path):
    c = _c_layouts(tmp_path)
    mismatches = []
    for s in STRUCTS:
        if int(c[s]) != ffi.sizeof("struct " + s):
            mismatches.append("sizeof(struct %s): C %s, cffi %d"
                              % (s, c[s], ffi.sizeof("struct " + s)))
        for name, _ in ffi.typeof("struct " + s).fields:
            off = ffi.offsetof("struct " + s, name)
            if int(c["%s.%s" % (s, name)]) != off:
                mismatches.append("offsetof(struct %s, %s): C %s, cffi %d"
                                  % (s, name, c["%s.%s" % (s, name)], off))
    assert not mismatches, "\n".join(mismatches)


def test_constants_match_the_headers(tmp_path):
    from vtpu._ffi import lib
    c = _c_layouts(tmp_path)
    for e, v in ENUMS.items():
        assert int(c[e]) == v == getattr(lib, e)
    assert int(c["VTPU_PROGRESS_MAX_METRICS"]) == lib.VTPU_PROGRESS_MAX_METRICS
    assert int(c["VTPU_CKPT_MAX_DIMS"]) == lib.VTPU_CKPT_MAX_DIMS


def test_every_declared_struct_is_checked():
    import re
    from vtpu import _cdef_model
    declared = set(re.findall(r"^struct (\w+) \{", _cdef_model.CDEF, re.M))
    assert declared == set(STRUCTS)
