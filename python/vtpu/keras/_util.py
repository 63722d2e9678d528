# SPDX-License-Identifier: MIT
"""Argument checks shared by vtpu.keras: every bad argument is a Python
exception that names it (TypeError for the wrong kind of value, ValueError
for a value out of range), before anything reaches libvtpu."""
import numbers

import numpy as np

UINT32_MAX = 2**32 - 1


def check_int(value, name, minimum=1, maximum=UINT32_MAX, where=""):
    """@value as an int in [minimum, maximum], else TypeError/ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral):
        raise TypeError("%s%s must be an integer, not %r"
                        % (where, name, value))
    value = int(value)
    if value < minimum or value > maximum:
        if maximum >= UINT32_MAX:
            raise ValueError("%s%s must be an integer >= %d, not %d"
                             % (where, name, minimum, value))
        raise ValueError("%s%s must be an integer in [%d, %d], not %d"
                         % (where, name, minimum, maximum, value))
    return value


def check_float(value, name, minimum=None, maximum=None, min_open=False,
                max_open=False, where=""):
    """@value as a finite float within the bounds, else an exception."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Real):
        raise TypeError("%s%s must be a number, not %r" % (where, name, value))
    v = float(value)
    if not np.isfinite(v):
        raise ValueError("%s%s must be finite, not %r" % (where, name, v))
    low_bad = minimum is not None and (v <= minimum if min_open
                                       else v < minimum)
    high_bad = maximum is not None and (v >= maximum if max_open
                                        else v > maximum)
    if low_bad or high_bad:
        lo = "" if minimum is None else ("(" if min_open else "[") + \
            repr(minimum)
        hi = "" if maximum is None else repr(maximum) + \
            (")" if max_open else "]")
        if minimum is None:
            rng = "<%s %r" % ("" if max_open else "=", maximum)
        elif maximum is None:
            rng = ">%s %r" % ("" if min_open else "=", minimum)
        else:
            rng = "in %s, %s" % (lo, hi)
        raise ValueError("%s%s must be %s, not %r" % (where, name, rng, v))
    return v


def check_pair(value, name, where="", minimum=1):
    """An int or a pair of ints (Keras' kernel_size, strides, ...)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError("%s%s must be an integer or a tuple of 2 "
                             "integers, not %r" % (where, name, value))
        return (check_int(value[0], name, minimum, where=where),
                check_int(value[1], name, minimum, where=where))
    v = check_int(value, name, minimum, where=where)
    return (v, v)


def check_choice(value, name, choices, where="", lower=True):
    if not isinstance(value, str):
        raise TypeError("%s%s must be one of %s, not %r"
                        % (where, name, ", ".join(repr(c) for c in choices),
                           value))
    v = value.lower() if lower else value
    if v not in choices:
        raise ValueError("%s%s must be one of %s, not %r"
                         % (where, name, ", ".join(repr(c) for c in choices),
                            value))
    return v
