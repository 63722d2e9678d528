# SPDX-License-Identifier: MIT
"""vtpu.keras.utils: set_random_seed, to_categorical,
image_dataset_from_directory (a streamed dataset, vtpu.keras._imagefolder;
vtpu.datasets has the numpy-array loader of the same name)."""
import numpy as np

from . import backend
from ._util import check_int
from ._imagefolder import ImageDataset, \
    image_dataset_from_directory  # noqa: F401


def set_random_seed(seed):
    """The seed of every model compiled from now on without compile(seed=):
    weight initialisation, shuffling and dropout masks (libvtpu's
    vtpu_compile_opts.seed). Keras' keras.utils.set_random_seed()."""
    backend._seed = check_int(seed, "seed", 0, 2**64 - 1)


def to_categorical(y, num_classes=None, dtype="float32"):
    """Integer labels -> one-hot rows, as Keras' to_categorical."""
    y = np.asarray(y)
    if y.ndim > 1 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError("y must hold integer class indices")
        y = y.astype(np.int64)
    if y.size and y.min() < 0:
        raise ValueError("y must hold class indices >= 0")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    num_classes = check_int(num_classes, "num_classes", 1)
    if y.size and y.max() >= num_classes:
        raise ValueError("y holds class %d, not below num_classes=%d"
                         % (int(y.max()), num_classes))
    out = np.zeros(y.shape + (num_classes,), dtype=dtype)
    np.put_along_axis(out, y[..., None].astype(np.intp), 1, axis=-1)
    return out
