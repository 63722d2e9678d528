# SPDX-License-Identifier: MIT
"""vtpu: the virtual TPU from Python.

    import vtpu
    dev = vtpu.Device("/dev/vtpu0")      # or vtpu.Device("cpu")
    buf = dev.buffer((256, 256), "float32")
    buf.array[:] = 1.0                   # numpy, mapped in place

and the Keras-style training API in vtpu.keras.
"""

from .device import (PARAMS, Buffer, CommandBuffer, Device, Fence, Job,
                     Queue, VtpuError, Window, devices)
