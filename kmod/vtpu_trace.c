// SPDX-License-Identifier: GPL-2.0-only
/* The tracepoints' definitions (kmod/vtpu_trace.h), made once here. */
#define CREATE_TRACE_POINTS
#include "vtpu_trace.h"
