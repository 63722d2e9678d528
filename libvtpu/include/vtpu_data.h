/* SPDX-License-Identifier: MIT */
/*
 * libvtpu data side of training: dataset loaders (MNIST, Fashion-MNIST,
 * CIFAR-10, folders of JPEG and PNG images), reproducible shuffling, batch
 * assembly, Keras-style progress output and checkpoints.
 *
 * Conventions (as the rest of libvtpu): int returns are 0 or -errno, the
 * library never exits and prints only where told to (the progress module
 * writes to the FILE * it is given). Functions that can fail for a reason
 * a person must read take `char *err, size_t errlen` and write a one-line
 * message there (no trailing newline; err may be NULL).
 *
 * Usage (a trainer):
 *
 *	struct vtpu_dataset train, test;
 *	char err[256];
 *	if (vtpu_load_mnist("data/mnist", true, &train, err, sizeof(err)))
 *		die("%s", err);
 *	vtpu_dataset_truncate(&train, limit);          // --limit N
 *	uint32_t *idx = malloc(train.n * sizeof(*idx));
 *	struct vtpu_rng rng;
 *	vtpu_rng_seed(&rng, 42);
 *	struct vtpu_progress *p = vtpu_progress_create(stdout, steps, NULL);
 *	for (epoch = 1; epoch <= epochs; epoch++) {
 *		vtpu_permutation(idx, train.n, &rng);
 *		vtpu_progress_start(p, epoch, epochs);  // "Epoch 1/10"
 *		for (s = 0; s < steps; s++) {
 *			uint32_t first = s * B, cnt = min(B, train.n - first);
 *			vtpu_batch_images(&train, idx, first, cnt, NULL, NULL, x_map);
 *			vtpu_batch_labels(&train, idx, first, cnt, y_map);
 *			...run the step...
 *			struct vtpu_metric m[] = { { "loss", loss }, { "acc", acc } };
 *			vtpu_progress_update(p, s + 1, m, 2);
 *		}
 *		struct vtpu_metric v[] = { { "val_loss", vl }, { "val_acc", va } };
 *		vtpu_progress_end(p, v, 2);
 *	}
 *	vtpu_progress_destroy(p);
 *	vtpu_ckpt_save("model.ckpt", tensors, ntensors, err, sizeof(err));
 *	vtpu_dataset_free(&train);
 */
#ifndef LIBVTPU_VTPU_DATA_H
#define LIBVTPU_VTPU_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * VTPU_API marks what libvtpu.so exports; everything else in the library is
 * built with -fvisibility=hidden (and libvtpu/libvtpu.map lists the same
 * names under the version node VTPU_0.1).
 */
#ifndef VTPU_API
#define VTPU_API __attribute__((visibility("default")))
#endif

/* ---- datasets ------------------------------------------------------------ */

/**
 * struct vtpu_dataset - images and labels in memory, owned by the struct
 * @n: number of examples
 * @height, @width, @channels: one image's shape (MNIST 28x28x1, CIFAR
 *	32x32x3)
 * @classes: labels are 0..classes-1 (10 for all three datasets)
 * @images: n * height * width * channels bytes, NHWC (example, row,
 *	column, channel), contiguous, 0..255 as in the files
 * @labels: n bytes, one class index per example (uint8_t: every dataset
 *	here has at most 256 classes; vtpu_batch_labels() widens them)
 *
 * Zero-initialise or let a loader fill it; free with vtpu_dataset_free().
 * A failed loader leaves it zeroed (nothing to free).
 */
struct vtpu_dataset {
	uint32_t n;
	uint32_t height, width, channels;
	uint32_t classes;
	uint8_t *images;
	uint8_t *labels;
};

/** vtpu_dataset_free() - free the arrays and zero @ds (NULL-safe). */
VTPU_API void vtpu_dataset_free(struct vtpu_dataset *ds);

/** vtpu_dataset_image_size() - bytes (and floats) per image: h * w * c. */
static inline size_t vtpu_dataset_image_size(const struct vtpu_dataset *ds)
{
	return (size_t)ds->height * ds->width * ds->channels;
}

/**
 * vtpu_dataset_truncate() - keep only the first @n examples (--limit N)
 *
 * Keeps min(@n, ds->n) examples; the memory of the rest is released.
 * Return: 0, or -EINVAL when @n is 0 (an empty dataset trains nothing).
 */
VTPU_API int vtpu_dataset_truncate(struct vtpu_dataset *ds, uint32_t n);

/**
 * vtpu_load_mnist() - load MNIST or Fashion-MNIST (the same IDX format)
 * @dir: folder holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
 *	t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz (gzip'd as
 *	distributed; the uncompressed names without .gz are used when the .gz
 *	file is absent)
 * @train: the 60000-example training split, else the 10000-example test split
 * @ds: filled on success (height = width = 28 for the real data, channels 1,
 *	classes 10); zeroed on failure
 * @err, @errlen: a message naming the file and the problem
 *
 * Everything is checked: magic numbers, zero or absurd dimensions (no
 * overflow, and no allocation larger than the data actually read), the image
 * and label counts agreeing, truncated or corrupt gzip streams, bytes after
 * the data, labels >= 10.
 *
 * Return: 0, or -ENOENT (a file is missing), -EINVAL (not a valid IDX file
 * or the two files disagree), -EIO (truncated or unreadable), -ENOMEM.
 */
VTPU_API int vtpu_load_mnist(const char *dir, bool train, struct vtpu_dataset *ds,
		    char *err, size_t errlen);

/**
 * vtpu_load_cifar10() - load CIFAR-10, the canonical binary version
 * @dir: the cifar-10-batches-bin folder or the folder containing it
 * @train: data_batch_1.bin .. data_batch_5.bin in order (50000 examples),
 *	else test_batch.bin (10000)
 * @ds: filled on success (32x32x3, NHWC: the files' R, G and B planes are
 *	interleaved; classes 10); zeroed on failure
 *
 * Each record is 1 label byte then 1024 R, 1024 G, 1024 B bytes (32x32,
 * row-major). Any number of records per file is accepted, so long as the
 * file is a whole, non-zero number of records.
 *
 * Return: 0, or -ENOENT (a batch file is missing), -EINVAL (a size that is
 * not a multiple of 3073, a label > 9), -EIO, -ENOMEM.
 */
VTPU_API int vtpu_load_cifar10(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen);

/* ---- image folders ------------------------------------------------------ */

/*
 * A sized options struct (libbpf's style): .sz set to the struct's size,
 * so that the library knows which fields a caller built with an older
 * header has; the fields given, the rest zero.
 */
#ifndef VTPU_SIZED_OPTS_
#define VTPU_SIZED_OPTS_(type, name, ...)                                     \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }
#endif

/**
 * struct vtpu_image_folder_opts - how vtpu_load_image_folder() reads a
 * folder (libbpf-style sized options; VTPU_IMAGE_FOLDER_OPTS() fills @sz)
 * @sz: sizeof(struct vtpu_image_folder_opts)
 * @height, @width: every image is resized to this (1..8192 each)
 * @channels: 1 (grayscale) or 3 (RGB); images of other kinds are converted
 *	(gray to RGB by copying, RGB to gray with Rec. 601 weights as
 *	libjpeg and tf.image.rgb_to_grayscale, alpha dropped as TF's
 *	decode_png(channels=3) does, palettes expanded, Adobe CMYK converted)
 * @validation_split: 0 <= split < 1: the fraction of the files held out
 * @seed: the shuffle of the files and so the split: as Keras' subset=
 *	"training"/"validation" with one seed, the same files go to the same
 *	side for the same seed and folder
 * @threads: decoding threads (0: one per online CPU)
 * @max_pixels: an image whose header claims more pixels than this is
 *	skipped before anything is allocated for it (0: 1 << 26, 64 Mpixel)
 * @warnings: where each skipped file gets a line "NAME: skipped: WHY"
 *	(NULL: nowhere; the counts are in struct vtpu_image_folder_info)
 * @cache_bytes: vtpu_image_folder_open() only: the source keeps every
 *	image it decoded in host memory, and later epochs copy it from there
 *	instead of decoding the file again (tf.data's cache()), if all of
 *	the source's decoded images fit this many bytes (0: a quarter of the
 *	physical memory, at most 4 GiB; < 0: no cache, every epoch decodes).
 *	The device still gets every epoch through the ring (the device
 *	memory cap is unchanged); a file that failed is tried again
 * @decode_nice: vtpu_image_folder_open() only: added to the decoding
 *	threads' nice value, so that on shared cores the training threads,
 *	which wait for nothing else, run first (0: 10; < 0: none)
 */
struct vtpu_image_folder_opts {
	size_t sz;
	uint32_t height, width, channels;
	float validation_split;
	uint64_t seed;
	uint32_t threads;
	uint64_t max_pixels;
	FILE *warnings;
	int64_t cache_bytes;
	int32_t decode_nice;
};

#define VTPU_IMAGE_FOLDER_OPTS(name, ...)                              \
	VTPU_SIZED_OPTS_(vtpu_image_folder_opts, name, __VA_ARGS__)

/**
 * struct vtpu_image_folder_info - what vtpu_load_image_folder() found
 * @classes: the number of class folders (= the datasets' classes)
 * @class_names: @classes folder names, sorted by byte value (Python's
 *	sorted(), as Keras); label i is class_names[i]
 * @files: image files found (.jpg, .jpeg, .png in any case)
 * @decoded: of these, decoded (= train.n + val.n)
 * @skipped: of these, skipped as unreadable, corrupt, truncated, of an
 *	unsupported kind or too large (one warning line each)
 * @ignored: other files (other extensions; hidden files and folders, whose
 *	contents are not counted)
 * @train_files, @val_files: for each example of train and val, its file's
 *	path relative to the folder ("Bag/0003.jpg"); NULL without a val
 *
 * Free with vtpu_image_folder_info_free(). A failed load leaves it zeroed.
 */
struct vtpu_image_folder_info {
	uint32_t classes;
	char **class_names;
	uint32_t files, decoded, skipped, ignored;
	char **train_files, **val_files;
};

/**
 * vtpu_load_image_folder() - a dataset from a folder of class folders of
 * JPEG and PNG files, as tf.keras.utils.image_dataset_from_directory()
 * @dir: holds one folder per class (hidden ones left out); a class's
 *	images are the .jpg/.jpeg/.png files in its folder and the folders
 *	below it; files directly in @dir are ignored
 * @o: the options (required: size and channels)
 * @train: the files not held out, shuffled by @o->seed; u8 NHWC
 * @val: the last floor(split * files) files of that shuffle, as Keras;
 *	may be NULL when the split is 0 (zeroed when it is 0)
 * @info: may be NULL; else filled (names, counts, files)
 * @err, @errlen: a message naming the folder or file
 *
 * The split is decided on the list of files before decoding, so it does
 * not depend on which files turn out corrupt: those are left out of
 * whichever side they fell on. Each image is decoded (libjpeg-turbo,
 * libpng) straight to the requested channels, then resized with an area
 * filter when shrinking (each output pixel the mean of the source pixels it
 * covers: photos shrunk 4-8x keep their detail without aliasing, where
 * bilinear samples only four of them) and bilinear when enlarging (an area
 * filter would give blocks), with pixel centres aligned as TF's
 * half_pixel_centers. Large JPEGs are first decoded at 1/2, 1/4 or 1/8
 * scale (libjpeg's DCT scaling) when that still leaves at least the target
 * size: much faster, and the same averaging.
 *
 * A class folder without images keeps its label (as Keras: the class
 * exists, it has no examples). Decoding runs on @o->threads threads; the
 * warnings are written in file order after all are done.
 *
 * Return: 0, or -ENOENT (@dir missing), -ENOTDIR, -EACCES (@dir or a class
 * folder unreadable), -EINVAL (bad options; no class folders; more than
 * 256 classes; no image decoded; a validation side that would be empty),
 * -ENOMEM.
 */
VTPU_API int vtpu_load_image_folder(const char *dir,
			   const struct vtpu_image_folder_opts *o,
			   struct vtpu_dataset *train, struct vtpu_dataset *val,
			   struct vtpu_image_folder_info *info, char *err,
			   size_t errlen);

/** vtpu_image_folder_info_free() - free what @info holds, zero it (NULL-safe) */
VTPU_API void vtpu_image_folder_info_free(struct vtpu_image_folder_info *info);

/**
 * struct vtpu_image_folder_write_opts - how vtpu_image_folder_write()
 * writes (VTPU_IMAGE_FOLDER_WRITE_OPTS() fills @sz)
 * @sz: sizeof(struct vtpu_image_folder_write_opts)
 * @height, @width: the files' size (0: the dataset's; up to 8192)
 * @channels: 3 (RGB JPEGs; 0 means 3) or 1 (greyscale JPEGs)
 * @quality: libjpeg's quality, 1..100 (0: 90)
 */
struct vtpu_image_folder_write_opts {
	size_t sz;
	uint32_t height, width, channels;
	uint32_t quality;
};

#define VTPU_IMAGE_FOLDER_WRITE_OPTS(name, ...)                        \
	VTPU_SIZED_OPTS_(vtpu_image_folder_write_opts, name, __VA_ARGS__)

/**
 * vtpu_image_folder_write() - a dataset as an image folder that
 * vtpu_load_image_folder() reads back: one folder per class under @dir,
 * each image a JPEG named by its rank in its class ("Bag/00042.jpg")
 * @dir: created if missing (its parent must exist); existing files of the
 *	same names are replaced
 * @ds: u8 images of 1 or 3 channels, labels below @classes
 * @class_names: @classes folder names (not empty, no '/', not hidden)
 * @o: the options (required for @sz)
 * @err, @errlen: a message naming the file or the option
 *
 * Each image is converted (grey to RGB by copying, RGB to grey with Rec.
 * 601's weights) and resized with the loader's filters (an area filter
 * shrinking, bilinear enlarging), then written with libjpeg-turbo. Used by
 * tools/vtpu-make-image-folder (Fashion-MNIST as a folder) and the tests.
 *
 * Return: 0, or -EINVAL (bad options, names or labels), -ENOMEM, or the
 * -errno of a folder or file that could not be made or written.
 */
VTPU_API int vtpu_image_folder_write(const char *dir,
			const struct vtpu_dataset *ds,
			const char *const *class_names, uint32_t classes,
			const struct vtpu_image_folder_write_opts *o,
			char *err, size_t errlen);

/* ---- streamed sources --------------------------------------------------- */

/**
 * struct vtpu_stream_info - what a streamed source holds
 * @n: examples
 * @height, @width, @channels: of every image (u8 HWC)
 * @classes: labels are below this (0 if the dataset did not say)
 */
struct vtpu_stream_info {
	uint32_t n;
	uint32_t height, width, channels;
	uint32_t classes;
};

struct vtpu_stream;

/**
 * vtpu_image_folder_open() - a folder of class folders as a streamed
 * source: listed and split as vtpu_load_image_folder() does (the same
 * files, labels, order and side of the split for the same options), but
 * nothing decoded until asked (vtpu_stream_read(), or the model's fit on
 * it, vtpu_model_fit_stream())
 * @dir, @o: as vtpu_load_image_folder()'s; @o->threads decoding threads
 *	(0: one per online CPU) are started at the first read
 * @validation: the held-out side of @o->validation_split (which must be
 *	> 0) instead of the training side
 * @err, @errlen: a message naming the folder
 *
 * Example i is the i-th file of that side in the loader's order (the
 * loader's dataset leaves out the files that fail to decode, the source
 * cannot know them before reading). A file that fails is skipped as the
 * loader skips it, with a line in @o->warnings, see vtpu_stream_read().
 *
 * Return: the source (vtpu_stream_close()), or NULL with errno set as
 * vtpu_load_image_folder() returns it.
 */
VTPU_API struct vtpu_stream *vtpu_image_folder_open(const char *dir,
		const struct vtpu_image_folder_opts *o, bool validation,
		char *err, size_t errlen);

/**
 * vtpu_stream_from_dataset() - an in-memory dataset as a streamed source
 * (borrowed: @ds must outlive the source), so that streamed and resident
 * training can be compared on identical data.
 * Return: the source, or NULL with errno EINVAL (empty) or ENOMEM.
 */
VTPU_API struct vtpu_stream *vtpu_stream_from_dataset(const struct vtpu_dataset *ds);

/** vtpu_stream_close() - stop the source's threads, free it (NULL-safe). */
VTPU_API void vtpu_stream_close(struct vtpu_stream *s);

/** vtpu_stream_get_info() - @s's size and shape. Return: 0 or -EINVAL. */
VTPU_API int vtpu_stream_get_info(const struct vtpu_stream *s,
				  struct vtpu_stream_info *info);

/**
 * vtpu_stream_read() - examples @idx[0..@count) (each < n) into @images
 * (@count images, u8 HWC) and @labels, decoded by the source's threads
 * @skipped: may be NULL; else the number of bad examples is added to it
 *
 * A file that cannot be read or decoded (corrupt, truncated, not an image,
 * too large) is a warning line and a count, never an error: its slot gets
 * a copy of the next good example of the same read (cyclically), or, if
 * none in this read decoded, of the last good one of an earlier read, so
 * the batch keeps its size and every slot a real, correctly labelled
 * example.
 *
 * Return: 0, or -EINVAL (an index out of range), -ENOMEM, -EIO (no
 * example of the read decoded and none ever did before).
 */
VTPU_API int vtpu_stream_read(struct vtpu_stream *s, const uint32_t *idx,
			      uint32_t count, uint8_t *images,
			      uint32_t *labels, uint32_t *skipped);

/* ---- reproducible shuffling --------------------------------------------- */

/**
 * struct vtpu_rng - splitmix64 (Steele, Lea, Flood 2014): a 64-bit state
 * advanced by a Weyl step and mixed; small, fast, and the same sequence on
 * every machine for a given seed.
 */
struct vtpu_rng {
	uint64_t state;
};

/** vtpu_rng_seed() - start the sequence for @seed (any value). */
VTPU_API void vtpu_rng_seed(struct vtpu_rng *rng, uint64_t seed);

/** vtpu_rng_next() - the next 64 random bits. */
VTPU_API uint64_t vtpu_rng_next(struct vtpu_rng *rng);

/** vtpu_rng_below() - uniform in [0, @bound), unbiased; 0 when @bound is 0. */
VTPU_API uint64_t vtpu_rng_below(struct vtpu_rng *rng, uint64_t bound);

/** vtpu_shuffle() - shuffle @idx[0..@n) in place (Fisher-Yates). */
VTPU_API void vtpu_shuffle(uint32_t *idx, uint32_t n, struct vtpu_rng *rng);

/**
 * vtpu_permutation() - @idx = 0..@n-1, then shuffled: one epoch's order.
 * Called once per epoch with one rng seeded once, a run is reproducible.
 */
VTPU_API void vtpu_permutation(uint32_t *idx, uint32_t n, struct vtpu_rng *rng);

/* ---- augmentation --------------------------------------------------------- */

/**
 * struct vtpu_augment - random changes to each training image, drawn anew
 * every epoch: Keras' RandomFlip("horizontal") and RandomTranslation with
 * fill_mode="constant"
 * @flip: mirror left to right with probability 1/2
 * @shift: move by dx and dy drawn uniformly from [-shift, shift] pixels;
 *	pixels that come in from outside the image are 0
 *
 * Zero-initialised: no change.
 */
struct vtpu_augment {
	bool flip;
	uint32_t shift;
};

/**
 * vtpu_image_transform() - @dst = @src (h x w x c, u8) mirrored left to
 * right when @flip, then moved @dx columns right and @dy rows down
 * (negative: left, up); what comes in from outside is 0. @dst and @src
 * must not overlap.
 */
VTPU_API void vtpu_image_transform(uint8_t *dst, const uint8_t *src, uint32_t h,
			  uint32_t w, uint32_t c, bool flip, int32_t dx,
			  int32_t dy);

/**
 * vtpu_image_augment() - vtpu_image_transform() with a flip and a shift
 * drawn from @rng as @aug asks (nothing drawn for what it does not ask).
 */
VTPU_API void vtpu_image_augment(uint8_t *dst, const uint8_t *src, uint32_t h,
			uint32_t w, uint32_t c, const struct vtpu_augment *aug,
			struct vtpu_rng *rng);

/* ---- batches ------------------------------------------------------------ */

/*
 * The batch functions take examples @first .. @first+@count-1 of an order:
 * example i of the batch is @idx[@first + i], or @first + i when @idx is
 * NULL (evaluation in file order). They write exactly @count rows (a last,
 * short batch leaves the rest of the caller's buffer as it was) and return
 * 0, or -EINVAL when a range or an index is outside the dataset (nothing is
 * written then).
 */

/**
 * vtpu_batch_images() - @out (count, h, w, c) = pixels as floats
 * @mean, @std: NULL for x / 255; else arrays of ds->channels values and
 *	out = (x / 255 - mean[c]) / std[c] (see vtpu_dataset_channel_stats());
 *	both or neither; a std that is not > 0 is -EINVAL
 * @out: e.g. a device buffer's mapping; count * vtpu_dataset_image_size()
 *	floats
 */
VTPU_API int vtpu_batch_images(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, const float *mean,
		      const float *std, float *out);

/** vtpu_batch_labels() - @out (count) = the class indices. */
VTPU_API int vtpu_batch_labels(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, uint32_t *out);

/** vtpu_batch_onehot() - @out (count, classes) = one-hot rows of 0.0 / 1.0. */
VTPU_API int vtpu_batch_onehot(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, float *out);

/**
 * vtpu_dataset_channel_stats() - per-channel mean and (population) standard
 * deviation of x / 255 over the whole dataset, for vtpu_batch_images().
 * @mean, @std: ds->channels floats each.
 * Return: 0, or -EINVAL for an empty dataset.
 */
VTPU_API int vtpu_dataset_channel_stats(const struct vtpu_dataset *ds, float *mean,
			       float *std);

/**
 * vtpu_dataset_pixel_stats() - the same over all pixels of all channels:
 * one mean and standard deviation, e.g. to standardise a model's input
 * (struct vtpu_compile_opts' input_scale = 1 / (255 * std), input_shift =
 * -mean / std).
 * Return: 0, or -EINVAL for an empty dataset.
 */
VTPU_API int vtpu_dataset_pixel_stats(const struct vtpu_dataset *ds, float *mean,
			     float *std);

/* ---- Keras-style progress ----------------------------------------------- */

/** struct vtpu_metric - one "name: value" of a progress line. */
struct vtpu_metric {
	const char *name;
	double value;
};

/**
 * struct vtpu_progress_opts - options; NULL for all defaults
 * @sz: sizeof(struct vtpu_progress_opts), so the struct can grow
 * @tty: 1 redraw one line in place with '\r', 0 plain lines, -1 (and
 *	the zero default) decide with isatty(fileno(out))
 * @log_every: plain lines only: also print a line every this many steps
 *	(0: only each epoch's final line). On a terminal the bar is redrawn
 *	at most every 50 ms, and always for the last step.
 * @now: a clock in seconds (monotonic); NULL for CLOCK_MONOTONIC. Tests
 *	inject a fake one.
 * @now_ctx: passed to @now
 */
struct vtpu_progress_opts {
	size_t sz;
	int tty;
	uint32_t log_every;
	double (*now)(void *ctx);
	void *now_ctx;
};

/** An epoch progress bar: opaque. */
struct vtpu_progress;

/**
 * vtpu_progress_create() - a bar of @total_steps steps per epoch on @out
 * Return: the bar, to free with vtpu_progress_destroy(), or NULL with errno
 * set (EINVAL: @out NULL or @total_steps 0; ENOMEM).
 */
VTPU_API struct vtpu_progress *vtpu_progress_create(FILE *out, uint32_t total_steps,
					   const struct vtpu_progress_opts *opts);

/** vtpu_progress_destroy() - free @p (NULL-safe); prints nothing. */
VTPU_API void vtpu_progress_destroy(struct vtpu_progress *p);

/**
 * vtpu_progress_start() - print "Epoch @epoch/@epochs" and restart the clock
 * Pass @epochs 0 to print nothing (e.g. for an evaluation bar).
 */
VTPU_API void vtpu_progress_start(struct vtpu_progress *p, uint32_t epoch,
			 uint32_t epochs);

/**
 * vtpu_progress_update() - step @step (1..total) is done
 * @m, @n: the metrics to show, in order (as Keras, pass the epoch's running
 *	averages); remembered for vtpu_progress_end()
 *
 * While running a line reads
 *   " 12/469 [>.............................] - ETA: 5s - loss: 0.6921"
 * Only the first VTPU_PROGRESS_MAX_METRICS metrics are kept.
 */
VTPU_API void vtpu_progress_update(struct vtpu_progress *p, uint32_t step,
			  const struct vtpu_metric *m, size_t n);

/**
 * vtpu_progress_end() - finish the epoch: the final line, with the last
 * update's metrics followed by @extra (e.g. val_loss, val_acc), then '\n':
 *   "469/469 [==============================] - 1s 2ms/step - loss: 0.2867
 *    - acc: 0.9072 - val_loss: 0.1234 - val_acc: 0.9612"   (one line)
 * The step count shown is the last one updated.
 */
VTPU_API void vtpu_progress_end(struct vtpu_progress *p, const struct vtpu_metric *extra,
		       size_t nextra);

#define VTPU_PROGRESS_MAX_METRICS 16

/**
 * vtpu_progress_format() - format one bar line into @buf, exactly as the
 * progress module prints it (without '\r' or '\n'); what it prints is this
 * function's output, so tests compare strings here.
 * @step, @total: steps done, steps per epoch (@total > 0)
 * @elapsed: seconds since the epoch started
 * @final: the epoch's last line: " - 1s 2ms/step" instead of " - ETA: 5s"
 *
 * Keras' rules (tf.keras Progbar): the count is right-aligned to the width
 * of @total; the bar is 30 characters: int(30 * step / total) of them done,
 * drawn as '=' with the last one '>' while step < total, '.' for the rest;
 * time per step is elapsed / step, shown as "%.0fs", "%.0fms" or "%.0fus"
 * per step (seconds when >= 1 s or 0); the ETA is "%ds", "%d:%02d" past a
 * minute or "%d:%02d:%02d" past an hour; a metric is " - name: %.4f", or
 * %.4e when |value| <= 1e-3.
 *
 * Return: the length of the whole line (as snprintf: the output was cut
 * when >= @len).
 */
VTPU_API int vtpu_progress_format(char *buf, size_t len, uint32_t step, uint32_t total,
			 double elapsed, bool final,
			 const struct vtpu_metric *m, size_t n);

/**
 * vtpu_print_metrics() - one line of metrics, e.g. after evaluate():
 *   "test_loss: 0.0612 - test_acc: 0.9812\n"
 * Return: as fprintf (negative on an output error).
 */
VTPU_API int vtpu_print_metrics(FILE *out, const struct vtpu_metric *m, size_t n);

/* ---- checkpoints -------------------------------------------------------- */

#define VTPU_CKPT_MAX_DIMS 8
#define VTPU_CKPT_MAX_NAME 255

/**
 * struct vtpu_ckpt_tensor - one named float32 tensor
 * @name: 1..VTPU_CKPT_MAX_NAME bytes, unique within a checkpoint
 * @ndim: 0 (a scalar) .. VTPU_CKPT_MAX_DIMS
 * @dims: the shape; the element count is their product
 * @data: the elements (read by save, filled by load)
 */
struct vtpu_ckpt_tensor {
	const char *name;
	uint32_t ndim;
	uint64_t dims[VTPU_CKPT_MAX_DIMS];
	float *data;
};

/**
 * struct vtpu_ckpt_meta - one string stored with a checkpoint's tensors
 * @key: 1..VTPU_CKPT_MAX_NAME bytes, unique within a checkpoint
 * @value: 0..VTPU_CKPT_MAX_VALUE bytes
 *
 * What the tensors mean beyond their names and shapes: the fingerprint of
 * the vocabulary a model was trained with, a label map. A load that names
 * a key fails unless the file holds the same value.
 */
struct vtpu_ckpt_meta {
	const char *key;
	const char *value;
};

#define VTPU_CKPT_MAX_VALUE 65535
#define VTPU_CKPT_MAX_NMETA 256

/*
 * The file (all integers little-endian):
 *
 *	header, 32 bytes:
 *	  char magic[8]       "VTPUCKPT"
 *	  u32  version        1 without metadata, else 2 (VTPU_CKPT_VERSION)
 *	  u32  ntensors
 *	  u64  payload_bytes  everything after the header
 *	  u32  payload_crc32  zlib crc32() of those bytes
 *	  u32  nmeta          metadata records (version 1: reserved, 0)
 *	payload, per tensor:
 *	  u32 name_len, u32 ndim, u64 dims[ndim], name (no NUL),
 *	  f32 data[product of dims]
 *	then per metadata record:
 *	  u32 key_len, u32 value_len, key, value (neither has a NUL)
 */
#define VTPU_CKPT_MAGIC "VTPUCKPT"
#define VTPU_CKPT_VERSION 2

/**
 * vtpu_ckpt_save() - write @n tensors to @path, atomically
 *
 * Writes a temporary file beside @path, fsyncs it and renames it over
 * @path, so @path is always either the old or the new checkpoint.
 * Return: 0, or -EINVAL (a bad name, ndim or size; duplicate names), or the
 * -errno of the failed file operation.
 */
VTPU_API int vtpu_ckpt_save(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen);

/**
 * vtpu_ckpt_load() - fill @n tensors from @path
 * @t: what the caller expects: for each, the name, ndim and dims must match a
 *	tensor in the file (in any order) and the file must hold no others;
 *	->data receives the elements
 *
 * The whole file is checked (magic, version, sizes, CRC, every record)
 * before any ->data is written: a failed load leaves the caller's tensors
 * as they were.
 * Return: 0, or -ENOENT, -EIO (truncated, checksum mismatch, read error),
 * -EINVAL (bad magic, unsupported version, malformed record, a tensor
 * missing or of another shape), -ENOMEM.
 */
VTPU_API int vtpu_ckpt_load(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen);

/**
 * vtpu_ckpt_save_meta() - vtpu_ckpt_save() with @nmeta strings beside the
 * tensors (-EINVAL for a bad or duplicate key, a value too long)
 */
VTPU_API int vtpu_ckpt_save_meta(const char *path,
				 const struct vtpu_ckpt_tensor *t, size_t n,
				 const struct vtpu_ckpt_meta *meta,
				 size_t nmeta, char *err, size_t errlen);

/**
 * vtpu_ckpt_load_meta() - vtpu_ckpt_load() that also requires each of
 * @meta's keys in the file with the same value, checked before the
 * tensors' names and shapes (a model given another vocabulary is told
 * that, not that its embedding has another shape). The file's other keys
 * are ignored, as vtpu_ckpt_load() ignores them all.
 * Return: as vtpu_ckpt_load(), and -EKEYREJECTED ("the checkpoint's 'KEY'
 * is 'THEIRS', not 'YOURS'") or -ENOKEY ("the checkpoint has no 'KEY'"),
 * before any ->data is written.
 */
VTPU_API int vtpu_ckpt_load_meta(const char *path,
				 const struct vtpu_ckpt_tensor *t, size_t n,
				 const struct vtpu_ckpt_meta *meta,
				 size_t nmeta, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* LIBVTPU_VTPU_DATA_H */
