/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vtpu_fdinfo.h: one key of a vtpu fd's /proc/self/fdinfo, for the
 * selftests that check the driver's per-client usage (vtpu_observe,
 * vtpu_interop).
 */
#ifndef VTPU_FDINFO_H
#define VTPU_FDINFO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The number at @key in /proc/self/fdinfo/@fd, or -1 when it is absent;
 * @str (@len bytes, may be NULL) gets the value as text.
 */
static inline long long fdinfo_value(int fd, const char *key, char *str, size_t len)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *val = line + klen + 1;

		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		val += strspn(val, " \t");
		val[strcspn(val, "\n")] = 0;
		if (str)
			snprintf(str, len, "%s", val);
		v = strtoll(val, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

#endif /* VTPU_FDINFO_H */
