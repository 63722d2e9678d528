# SPDX-License-Identifier: MIT
"""What the examples beside it share: vtpu found in a checkout when it is
not installed (importing this module sees to it), and their common
command-line options."""
import argparse
import os
import sys

try:
    import vtpu  # noqa: F401
except ImportError:  # run from a checkout: its python/ directory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), os.pardir, os.pardir, "python"))


def parser(doc, dataset, data_help=None):
    """An argument parser described by @doc's first line, with --device and
    --data (the directory of @dataset, e.g. "MNIST"; or what @data_help
    says)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--device", help="/dev/vtpuN or cpu")
    p.add_argument("--data", help=data_help or "the %s directory (default: "
                   "where tools/get-datasets puts it)" % dataset)
    return p
