// SPDX-License-Identifier: MIT
/*
 * vtpu-make-image-folder: Fashion-MNIST (or MNIST) as an image folder of
 * JPEGs, the kind of input build/bin/flowers and vtpu_load_image_folder()
 * read, so that the whole JPEG path can be trained and measured on a data
 * set with a known accuracy:
 *
 *   vtpu-make-image-folder --size 32 ../shared/datasets/fashion-mnist \
 *       /tmp/fm32
 *   -> /tmp/fm32/train/{Ankle_boot,Bag,...}/00000.jpg (60000 files)
 *      /tmp/fm32/test/...                             (10000 files)
 *
 * The idx files are read with vtpu_load_mnist(); each picture is made RGB
 * (the grey copied), resized with the loader's filters and written with
 * vtpu_image_folder_write(). The folders are named after Fashion-MNIST's
 * classes, or the digits when the idx folder's path does not say
 * "fashion" (MNIST).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vtpu_data.h"

static const char *const fashion[10] = {
	"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot",
};

static const char *const digits[10] = {
	"0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
};

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: vtpu-make-image-folder [options] IDX_DIR OUT_DIR\n"
		"  IDX_DIR          the four idx .gz files of Fashion-MNIST (or\n"
		"                   MNIST: classes named 0 ... 9)\n"
		"  OUT_DIR          gets train/ and test/, a folder per class\n"
		"  --size N         the JPEGs' side (default 32)\n"
		"  --quality Q      JPEG quality 1..100 (default 90)\n"
		"  --grey           greyscale JPEGs (default RGB)\n"
		"  --limit N        the first N images of each side only\n"
		"  --version        print the version and exit\n");
	exit(status);
}

static uint32_t number(const char *opt, const char *arg, uint32_t max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || !v || v > max) {
		fprintf(stderr, "vtpu-make-image-folder: %s wants a number 1..%u, not '%s'\n",
			opt, max, arg);
		exit(2);
	}
	return (uint32_t)v;
}

/* one side: load, truncate, write; 0 or 1 */
static int side(const char *data, bool train, uint32_t limit,
		const char *out, const char *const *names,
		const struct vtpu_image_folder_write_opts *wo)
{
	struct vtpu_dataset ds;
	char err[512], *dir;
	int ret;

	if (vtpu_load_mnist(data, train, &ds, err, sizeof(err))) {
		fprintf(stderr, "vtpu-make-image-folder: %s\n", err);
		return 1;
	}
	if (limit && limit < ds.n)
		vtpu_dataset_truncate(&ds, limit);
	dir = malloc(strlen(out) + 8);
	if (!dir) {
		vtpu_dataset_free(&ds);
		return 1;
	}
	sprintf(dir, "%s/%s", out, train ? "train" : "test");
	ret = vtpu_image_folder_write(dir, &ds, names, 10, wo, err,
				      sizeof(err));
	if (ret)
		fprintf(stderr, "vtpu-make-image-folder: %s\n", err);
	else
		printf("%s: %u images, %ux%ux%u JPEGs\n", dir, ds.n,
		       wo->width, wo->height, wo->channels);
	free(dir);
	vtpu_dataset_free(&ds);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "quality", required_argument, NULL, 'q' },
		{ "grey", no_argument, NULL, 'g' },
		{ "limit", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	VTPU_IMAGE_FOLDER_WRITE_OPTS(wo, .height = 32, .width = 32,
				     .channels = 3, .quality = 90);
	const char *data, *out;
	const char *const *names;
	uint32_t limit = 0;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			wo.height = wo.width = number("--size", optarg, 8192);
			break;
		case 'q': wo.quality = number("--quality", optarg, 100); break;
		case 'g': wo.channels = 1; break;
		case 'l': limit = number("--limit", optarg, UINT32_MAX); break;
		case 'h': usage(0); break;
		case 'V':
			printf("vtpu-make-image-folder %s\n", VTPU_VERSION);
			return 0;
		default: usage(2);
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "vtpu-make-image-folder: want IDX_DIR and OUT_DIR\n");
		usage(2);
	}
	data = argv[optind];
	out = argv[optind + 1];
	names = strstr(data, "fashion") ? fashion : digits;
	if (mkdir(out, 0777) && errno != EEXIST) {
		fprintf(stderr, "vtpu-make-image-folder: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	return side(data, true, limit, out, names, &wo) ||
	       side(data, false, limit, out, names, &wo);
}
