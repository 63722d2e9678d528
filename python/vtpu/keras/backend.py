# SPDX-License-Identifier: MIT
"""What vtpu.keras keeps per session: the layer and model name counters
(Keras' "dense", "dense_1", ... are unique within a session) and the seed
set by vtpu.keras.utils.set_random_seed()."""
import re

_uids = {}
_seed = None


def get_uid(prefix=""):
    """1, 2, 3, ... for each @prefix, as Keras' backend.get_uid()."""
    _uids[prefix] = _uids.get(prefix, 0) + 1
    return _uids[prefix]


def unique_object_name(prefix, zero_based=True):
    n = get_uid(prefix)
    if zero_based:
        n -= 1
        return prefix if n == 0 else "%s_%d" % (prefix, n)
    return "%s_%d" % (prefix, n)


def to_snake_case(name):
    """Keras' class name -> layer name: MaxPooling2D -> max_pooling2d."""
    s = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", s).lower()


def clear_session():
    """Restart the name counters (the next Dense is "dense" again)."""
    _uids.clear()


def floatx():
    return "float32"
