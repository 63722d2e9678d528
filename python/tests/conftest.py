# SPDX-License-Identifier: MIT
"""Import the package from this tree (python/vtpu), which loads the build
tree's libvtpu (build/lib/libvtpu.so.0, see vtpu/_ffi.py)."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                os.pardir)))
