# SPDX-License-Identifier: MIT
CDEF = ""
