/* SPDX-License-Identifier: MIT */
/*
 * Small helpers private to libvtpu (not installed, not part of the API),
 * kept here so each is defined once.
 */
#ifndef LIBVTPU_UTIL_PRIV_H
#define LIBVTPU_UTIL_PRIV_H

#include <stdint.h>
#include <string.h>

/* The bits of @f, as the command set carries a float operand. */
static inline uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

#endif /* LIBVTPU_UTIL_PRIV_H */
