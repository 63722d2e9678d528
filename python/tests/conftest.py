# SPDX-License-Identifier: MIT
"""Import the package from this tree (python/vtpu), which loads the build
tree's libvtpu (build/lib/libvtpu.so.0, see vtpu/_ffi.py)."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                os.pardir)))

import pytest  # noqa: E402


def pytest_collection_modifyitems(items):
    """A test that takes a device node (the `node` fixture, or a parameter
    naming /dev/vtpuN) is a `device` test: selftests/vtpu/test-python runs
    those in the guest with `-m device`."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "node" in getattr(item, "fixturenames", ()) or any(
                isinstance(v, str) and v.startswith("/dev/vtpu")
                for v in params.values()):
            item.add_marker(pytest.mark.device)


@pytest.fixture
def fresh_names():
    """vtpu.keras' layer and model names counted afresh (dense, dense_1,
    ...), before and after the test."""
    from vtpu import keras
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()
