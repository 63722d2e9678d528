# SPDX-License-Identifier: MIT
"""numpy arrays -> what libvtpu's datasets hold: uint8 images and uint8
labels.

libvtpu's device reads 8-bit images and computes each input value as
pixel * scale + shift in the compiled program (vtpu_compile_opts'
input_scale and input_shift). So:

- uint8 images are the values themselves (Keras feeds them to the model
  as 0..255): transform (1, 0), used in place when C-contiguous: the
  dataset's pointer is the array's memory, no copy;
- float (or other integer) images are accepted when every value is
  pixel * scale + shift for 8-bit pixels 0..255 and one scale and shift:
  raw 0..255 values (scale 1), x / 255 (scale 1/255), standardised
  (x / 255 - mean) / std, ... They are converted to uint8 once, in chunks
  (no full-size float64 temporaries), and every value is checked to come
  back within float tolerance. Anything else (random normal data, values
  of 9 bits, NaN) is a ValueError saying why.

Data for a model that has its transform already (evaluate, predict,
validation, a second fit) is converted with the model's transform when it
can be; a training set that needs another one changes the model's
(vtpu_model_set_input_scale()).
"""
import numbers

import numpy as np

from ._util import UINT32_MAX

# elements per conversion chunk (float64 temporaries of 8 MiB)
CHUNK = 1 << 20
# elements in the sample the scale is guessed from
SAMPLE = 1 << 18
EPS32 = float(np.finfo(np.float32).eps)

ONE = np.float32(1)
RAW = (np.float32(1), np.float32(0))
UNIT = (np.float32(1) / np.float32(255), np.float32(0))


def transform_str(t):
    s, b = float(t[0]), float(t[1])
    if (t[0], t[1]) == RAW:
        return "raw 0..255 pixel values (scale 1)"
    k = round(1 / s)
    if k >= 2 and t[0] == ONE / np.float32(k):
        scale = "1/%d" % k
    else:
        scale = "%.9g" % s
    return "pixel * %s%s" % (scale, "" if b == 0 else " %+.9g" % b)


class NotImageData(ValueError):
    pass


def as_array(x, what):
    """@x as an ndarray of numbers, or TypeError naming @what."""
    if isinstance(x, np.ndarray):
        a = x
    elif hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        if isinstance(x, (list, tuple)) and x and all(
                isinstance(e, np.ndarray) for e in x):
            raise TypeError("%s is a list of arrays: vtpu.keras models have "
                            "one input and one output; pass one numpy "
                            "array" % what)
        a = np.asarray(x)
    else:
        raise TypeError("%s must be a numpy array, not %s (tf.data datasets, "
                        "generators and keras Sequence objects are not "
                        "supported)" % (what, type(x).__name__))
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer) or
                                   np.issubdtype(a.dtype, np.floating)):
        raise TypeError("%s has dtype %s: vtpu.keras takes uint8 images or "
                        "float (or integer) arrays" % (what, a.dtype))
    return a


def _rows(a, n_elems):
    """(start, stop) row ranges of @a of about @n_elems elements each."""
    per_row = max(1, int(np.prod(a.shape[1:], dtype=np.int64)))
    step = max(1, n_elems // per_row)
    for i in range(0, a.shape[0], step):
        yield i, min(i + step, a.shape[0])


def _tolerance(a, scale, lo, hi):
    """How far a value may be from pixel * scale + shift and still be that
    8-bit value: float rounding of the user's arithmetic."""
    if np.issubdtype(a.dtype, np.integer):
        return 1e-9
    eps = max(float(np.finfo(a.dtype).eps), EPS32)
    return 1e-3 * abs(float(scale)) + 8 * eps * max(abs(lo), abs(hi), 1e-30)


def _minmax(a, what):
    if a.size == 0:
        raise ValueError("%s is empty" % what)
    lo, hi = a.min(), a.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise NotImageData("%s holds NaN or infinite values: vtpu.keras takes "
                           "image data (8-bit pixel values, scaled)" % what)
    return float(lo), float(hi)


def _sample(a):
    """About SAMPLE values from rows spread over @a (whole rows: an
    image's neighbouring pixel values)."""
    n = a.shape[0]
    per_row = max(1, int(np.prod(a.shape[1:], dtype=np.int64)))
    k = min(n, max(1, SAMPLE // per_row))
    idx = np.unique(np.linspace(0, n - 1, k).astype(np.int64))
    return a[idx].reshape(-1)


def _is_lattice(values, scale, shift, tol):
    u = np.rint((values.astype(np.float64) - float(shift)) / float(scale))
    return bool(np.all((u >= 0) & (u <= 255)) and
                np.all(np.abs(u * float(scale) + float(shift) -
                              values) <= tol))


def _fit(values, lo, hi, a, what):
    """A transform under which every one of @values (distinct, sorted) is
    an 8-bit pixel value; None when the values say nothing (one value)."""
    if len(values) > 256:
        raise NotImageData(
            "%s has more than 256 distinct values: float input must be 8-bit "
            "image data (pixel * scale + shift for pixels 0..255), because "
            "libvtpu's device reads 8-bit images and scales them in the "
            "compiled program; convert other data yourself, or pass uint8 "
            "images" % what)
    if len(values) < 2:
        return None
    gap = float(np.min(np.diff(values.astype(np.float64))))
    steps = int(round((hi - lo) / gap))
    if steps > 255:
        raise NotImageData(
            "%s spans %d steps of its smallest gap %.6g (%g .. %g): float "
            "input must be 8-bit image data (at most 255 steps of one scale "
            "from the smallest to the largest value), because libvtpu's "
            "device reads 8-bit images and scales them in the compiled "
            "program" % (what, steps, gap, lo, hi))
    scale = (hi - lo) / steps
    k = int(round(1 / scale))
    if k >= 1 and abs(scale * k - 1) <= 1e-6:
        s32 = ONE / np.float32(k)          # as C's 1.0f / k
    else:
        s32 = np.float32(scale)
    tol = _tolerance(a, s32, lo, hi)
    # the canonical transform when the data fits it (x / 255 whose darkest
    # pixel is not 0 is still pixel / 255), else one from the smallest value
    if lo >= -tol and _is_lattice(np.array([lo, hi]), s32, 0.0, tol):
        return (s32, np.float32(0))
    return (s32, np.float32(lo))


def detect(a, what):
    """The transform of image data @a (not uint8), from a sample: the
    canonical ones (raw, / 255) when they fit, else one fitted."""
    lo, hi = _minmax(a, what)
    sample = _sample(a)
    for t in (RAW, UNIT):
        tol = _tolerance(a, t[0], lo, hi)
        if lo >= -tol and hi <= 255 * float(t[0]) + tol and \
                _is_lattice(sample, t[0], t[1], tol):
            return t, lo, hi
    t = _fit(np.unique(sample), lo, hi, a, what)
    if t is None:   # one value: it is pixel 0 of ... anything; be canonical
        t = RAW if (lo == round(lo) and 0 <= lo <= 255) else \
            (np.float32(1), np.float32(lo))
    return t, lo, hi


def _all_values(a, what):
    """The distinct values of @a, reading it in chunks; NotImageData as soon
    as there are more than 256."""
    seen = np.empty(0, dtype=np.float64)
    for i, j in _rows(a, CHUNK):
        seen = np.union1d(seen, np.unique(a[i:j]).astype(np.float64))
        if len(seen) > 256:
            break
    return seen


def convert(a, t, what, out=None):
    """@a as uint8 pixels under transform @t: a new C-contiguous array (or
    @out). NotImageData naming @what when a value is not pixel * scale +
    shift for a pixel 0..255."""
    scale, shift = float(t[0]), float(t[1])
    lo, hi = _minmax(a, what)
    tol = _tolerance(a, t[0], lo, hi)
    if out is None:
        out = np.empty(a.shape, dtype=np.uint8)
    for i, j in _rows(a, CHUNK):
        c = a[i:j]
        v = np.subtract(c, shift, dtype=np.float64)
        v /= scale
        u = np.rint(v, out=v)
        bad = (u < 0) | (u > 255)
        if not bad.any():
            back = u * scale
            back += shift
            back -= c
            np.abs(back, out=back)
            bad = back > tol
        if bad.any():
            k = np.argwhere(bad)[0]
            idx = (i + int(k[0]),) + tuple(int(d) for d in k[1:])
            raise NotImageData(
                "%s[%s] = %r is not an 8-bit pixel value under the input "
                "transform %s: float input must be 8-bit image data "
                "(pixel * scale + shift for pixels 0..255, the same for all "
                "data a model sees), because libvtpu's device reads 8-bit "
                "images and scales them in the compiled program"
                % (what, ", ".join(map(str, idx)), a[idx].item(),
                   transform_str(t)))
        out[i:j] = u
    return out


def check_shape(a, input_shape, what):
    """@a's shape against the model's per-example @input_shape (a trailing
    channel dimension of 1 may be missing); returns n."""
    if a.ndim < 1 or a.shape[1:] not in (
            input_shape, input_shape[:-1] if len(input_shape) == 3 and
            input_shape[-1] == 1 else input_shape):
        want = "(n,) + %r" % (input_shape,)
        if len(input_shape) == 3 and input_shape[-1] == 1:
            want += " (or (n,) + %r)" % (input_shape[:-1],)
        raise ValueError("%s has shape %r, the model takes %s"
                         % (what, a.shape, want))
    n = a.shape[0]
    if n == 0:
        raise ValueError("%s has no examples" % what)
    if n > UINT32_MAX:
        raise ValueError("%s has %d examples, libvtpu takes at most 2^32 - 1"
                         % (what, n))
    return n


def images(x, input_shape, what, model_t=None, fixed=False):
    """@x as uint8 images for a model taking @input_shape.

    @model_t: the model's transform (None: it has none yet); @fixed: the
    data must use it (evaluate, predict, validation), else it may bring
    its own (training).
    Return: (uint8 C-contiguous array, transform); the array is @x itself
    when it can be.
    """
    a = as_array(x, what)
    check_shape(a, input_shape, what)
    if a.dtype == np.uint8 and (model_t is None or
                                (model_t[0], model_t[1]) == RAW or
                                not fixed):
        if a.flags.c_contiguous:
            return a, RAW
        return np.ascontiguousarray(a), RAW
    if model_t is not None:
        try:
            return convert(a, model_t, what), model_t
        except NotImageData as e:
            if fixed:
                raise NotImageData(
                    "%s: the model was trained on %s; evaluate, predict and "
                    "validation data must be the same kind of data"
                    % (e, transform_str(model_t)))
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a), RAW
    t, lo, hi = detect(a, what)
    try:
        return convert(a, t, what), t
    except NotImageData:
        # the sample missed values (a smaller gap, a canonical transform
        # that only the sample fitted): decide from all of them
        t = _fit(_all_values(a, what), lo, hi, a, what) or t
        return convert(a, t, what), t


def labels(y, n, classes, categorical, what="y"):
    """@y as uint8 class indices (n,): integer-valued numbers in
    [0, classes) as (n,) or (n, 1), or one-hot rows (n, classes) for
    categorical_crossentropy."""
    a = as_array(y, what)
    if a.shape[:1] != (n,):
        raise ValueError("%s has %d labels for %d examples"
                         % (what, a.shape[0] if a.ndim else 0, n))
    if categorical:
        if a.shape != (n, classes):
            raise ValueError(
                "%s has shape %r: categorical_crossentropy takes one-hot "
                "labels (n, %d) (sparse_categorical_crossentropy takes "
                "class indices)" % (what, a.shape, classes))
        ok = True
        for i, j in _rows(a, CHUNK):
            c = a[i:j]
            ok = bool(np.all((c == 0) | (c == 1)) and
                      np.all(c.sum(axis=1) == 1))
            if not ok:
                break
        if not ok:
            raise ValueError(
                "%s: categorical_crossentropy here takes one-hot labels "
                "(one 1 per row, the rest 0): libvtpu's loss takes class "
                "indices (no soft labels or label smoothing)" % what)
        return np.ascontiguousarray(a.argmax(axis=1).astype(np.uint8))
    if a.ndim == 2 and a.shape[1] == classes and classes > 1:
        raise ValueError(
            "%s has shape %r, one-hot labels: sparse_categorical_crossentropy"
            " takes class indices (n,); use loss='categorical_crossentropy' "
            "or y.argmax(axis=1)" % (what, a.shape))
    if not (a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 1)):
        raise ValueError("%s has shape %r: labels are class indices (n,) or "
                         "(n, 1)" % (what, a.shape))
    a = a.reshape(n)
    if np.issubdtype(a.dtype, np.floating):
        if not np.all(np.isfinite(a)) or np.any(a != np.floor(a)):
            raise ValueError("%s holds values that are not whole numbers: "
                             "labels are class indices" % what)
    lo, hi = a.min(), a.max()
    if lo < 0 or hi >= classes:
        bad = lo if lo < 0 else hi
        raise ValueError("%s holds label %s, not in [0, %d): the model's "
                         "last layer has %d units" % (
                             what, bad.item() if hasattr(bad, "item")
                             else bad, classes, classes))
    if a.dtype == np.uint8 and a.flags.c_contiguous:
        return a
    return a.astype(np.uint8)


def is_integer(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)
