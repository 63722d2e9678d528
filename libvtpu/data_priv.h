/* SPDX-License-Identifier: MIT */
/*
 * Private helpers shared by data.c and checkpoint.c (not installed, not
 * part of the API).
 */
#ifndef LIBVTPU_DATA_PRIV_H
#define LIBVTPU_DATA_PRIV_H

#include <stddef.h>
#include <stdint.h>

/*
 * vtpu__errf() - format a message into err (NULL-safe, always terminated)
 * and return @ret, so error paths read `return vtpu__errf(err, n, -EIO, ..)`.
 */
int vtpu__errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* LIBVTPU_DATA_PRIV_H */
