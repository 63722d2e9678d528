# SPDX-License-Identifier: MIT
"""Where the tests find MNIST and Fashion-MNIST, as the Makefile's DATASETS
does: $VTPU_SHARED_DATASETS, else the checkout's data/ (tools/get-datasets)
when it has them, else ../shared/datasets beside the checkout."""
import os

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                   os.pardir))


def _shared():
    env = os.environ.get("VTPU_SHARED_DATASETS")
    if env:
        return env
    data = os.path.join(TOP, "data")
    if os.path.isdir(os.path.join(data, "mnist")):
        return data
    return os.path.normpath(os.path.join(TOP, os.pardir, "shared",
                                         "datasets"))


SHARED = _shared()
