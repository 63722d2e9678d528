/* SPDX-License-Identifier: MIT */
/*
 * libvtpu text side of training sequence models: sentence-pair corpora
 * (tab-separated files, as the translation tutorials' spa-eng file, and a
 * generated corpus of dates written in human styles with their ISO form),
 * tokenization, vocabularies with reserved ids, and batches grouped by
 * padded length (length buckets), so that a model compiled once per bucket
 * serves every batch.
 *
 * Conventions as in vtpu_data.h: 0 or -errno, messages into err/errlen.
 *
 * Usage (a translation trainer):
 *
 *	struct vtpu_text_pairs corpus = { 0 };
 *	struct vtpu_vocab src = { 0 }, tgt = { 0 };
 *	if (vtpu_text_load_pairs("spa.txt", 0, &corpus, err, sizeof(err)))
 *		die("%s", err);
 *	vtpu_vocab_build(&src, corpus.src, ntrain, VTPU_TOKENIZE_WORDS,
 *			 8000, 1, err, sizeof(err));
 *	...
 *	uint32_t ids[32], len;
 *	vtpu_vocab_encode(&src, corpus.src[i], 32, ids, &len, err, n);
 */
#ifndef LIBVTPU_VTPU_TEXT_H
#define LIBVTPU_VTPU_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vtpu_data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sentence pairs ------------------------------------------------------ */

/**
 * struct vtpu_text_pairs - a corpus of (source, target) sentences
 * @n: number of pairs
 * @src, @tgt: @n sentences each, UTF-8, NUL-terminated, as in the file
 *	(tokenization normalises them later)
 * @line: the file line of each pair (1-based), for messages; 0 when
 *	generated
 *
 * Owned by the struct: free with vtpu_text_pairs_free().
 */
struct vtpu_text_pairs {
	uint32_t n;
	char **src;
	char **tgt;
	uint32_t *line;
};

/** vtpu_text_pairs_free() - free the sentences and zero @p (NULL-safe). */
VTPU_API void vtpu_text_pairs_free(struct vtpu_text_pairs *p);

/**
 * vtpu_text_load_pairs() - read a tab-separated sentence-pair file
 * @path: one pair per line, "source<TAB>target", more tab-separated
 *	columns ignored (the Tatoeba/Anki files add an attribution column);
 *	a UTF-8 byte-order mark on the first line and CR before LF are
 *	accepted; blank lines are skipped
 * @max_pairs: stop after this many pairs (0: all)
 * @p: filled on success; zeroed on failure
 *
 * Errors name the file and the line: a line without a tab, an empty
 * source or target, a line longer than VTPU_TEXT_MAX_LINE bytes, a NUL
 * byte, bytes that are not UTF-8, an empty file.
 *
 * Return: 0, or -ENOENT, -EINVAL (bad content), -EIO, -ENOMEM.
 */
VTPU_API int vtpu_text_load_pairs(const char *path, uint32_t max_pairs,
				  struct vtpu_text_pairs *p, char *err,
				  size_t errlen);

#define VTPU_TEXT_MAX_LINE 4096u

/**
 * vtpu_text_dates() - generate a corpus of dates and their ISO forms
 * @n: pairs to generate
 * @seed: the same seed gives the same corpus on every machine
 * @p: filled: src a date between 1950-01-01 and 2099-12-31 written in one
 *	of VTPU_TEXT_DATE_STYLES human styles ("tuesday 24 november 2026",
 *	"24.11.26", "Nov 24, 2026", "11/24/2026", ...), tgt its ISO 8601 form
 *	("2026-11-24")
 *
 * Every source maps to exactly one target: two-digit years are written
 * only for 2000-2099, day.month orders use dots and month/day orders
 * slashes, and weekdays are the real ones. Solving it needs to look at
 * different source positions for different output characters: a small
 * task that wants attention.
 *
 * Return: 0, -EINVAL (@n is 0), -ENOMEM.
 */
VTPU_API int vtpu_text_dates(uint32_t n, uint64_t seed,
			     struct vtpu_text_pairs *p);

#define VTPU_TEXT_DATE_STYLES 16u

/* ---- tokens and vocabularies -------------------------------------------- */

/* Reserved token ids, the same in every vocabulary. */
#define VTPU_TOK_PAD 0u		/* padding: counts for nothing */
#define VTPU_TOK_START 1u	/* starts every encoded sentence */
#define VTPU_TOK_END 2u		/* ends it */
#define VTPU_TOK_UNK 3u		/* a token outside the vocabulary */
#define VTPU_TOK_RESERVED 4u

/**
 * enum vtpu_tokenize - how a sentence becomes tokens
 * @VTPU_TOKENIZE_WORDS: lower-cased (ASCII and Latin-1 letters), the
 *	punctuation . , ? ! ; : " ¿ ¡ split off as tokens of their own, then
 *	split at white space (the translation tutorial's normalisation,
 *	without removing accents)
 * @VTPU_TOKENIZE_CHARS: lower-cased, one token per character (UTF-8 code
 *	point), white space included
 */
enum vtpu_tokenize {
	VTPU_TOKENIZE_WORDS = 0,
	VTPU_TOKENIZE_CHARS = 1,
};

/**
 * struct vtpu_vocab - tokens and their ids
 * @size: ids are 0..size-1, the first VTPU_TOK_RESERVED reserved
 * @mode: how sentences are tokenized for it
 * @tokens: @size strings (the reserved ones "<pad>", "<start>", "<end>",
 *	"<unk>")
 * @priv: the lookup table (private)
 */
struct vtpu_vocab {
	uint32_t size;
	enum vtpu_tokenize mode;
	char **tokens;
	void *priv;
};

/** vtpu_vocab_free() - free and zero @v (NULL-safe). */
VTPU_API void vtpu_vocab_free(struct vtpu_vocab *v);

/**
 * vtpu_vocab_build() - a vocabulary from the training sentences
 * @sentences, @n: the training split's sentences of one side
 * @max_size: at most this many ids, reserved ones included (0: no limit;
 *	else > VTPU_TOK_RESERVED)
 * @min_count: tokens seen fewer times are left out (they encode as
 *	VTPU_TOK_UNK)
 *
 * The order is deterministic: by count, most frequent first, ties in byte
 * order. Build it from the training split only, so held-out sentences
 * meet unknown tokens as real input would.
 *
 * Return: 0, -EINVAL (bad arguments, a sentence with no token), -ENOMEM.
 */
VTPU_API int vtpu_vocab_build(struct vtpu_vocab *v, char *const *sentences,
			      uint32_t n, enum vtpu_tokenize mode,
			      uint32_t max_size, uint32_t min_count, char *err,
			      size_t errlen);

/**
 * vtpu_vocab_save() - write @v to @path: a header line
 *	"vtpu-vocab 1 words|chars SIZE", then one token per line, escaped
 *	(\\s space, \\t tab, \\n newline, \\r carriage return, \\\\ backslash),
 *	atomically, as vtpu_ckpt_save() (the old file or the new, never half)
 */
VTPU_API int vtpu_vocab_save(const struct vtpu_vocab *v, const char *path,
			     char *err, size_t errlen);

/**
 * vtpu_vocab_load() - read a file vtpu_vocab_save() wrote; a malformed
 * header or line, a duplicate token or a size that does not match the
 * lines is an error naming the line.
 */
VTPU_API int vtpu_vocab_load(struct vtpu_vocab *v, const char *path,
			     char *err, size_t errlen);

/**
 * vtpu_vocab_hash() - a 64-bit fingerprint of the mode and the tokens in
 * order (FNV-1a)
 */
VTPU_API uint64_t vtpu_vocab_hash(const struct vtpu_vocab *v);

#define VTPU_VOCAB_FINGERPRINT_LEN 17

/**
 * vtpu_vocab_fingerprint() - vtpu_vocab_hash() as 16 lower-case hex digits
 * and a NUL in @out (VTPU_VOCAB_FINGERPRINT_LEN bytes): the string to store
 * with a model's weights (vtpu_model_save_meta()) and require when loading
 * them (vtpu_model_load_meta()), so that a checkpoint is never used with a
 * vocabulary it was not trained with
 */
VTPU_API void vtpu_vocab_fingerprint(const struct vtpu_vocab *v, char *out);

/** vtpu_vocab_id() - the id of one token (@len bytes), VTPU_TOK_UNK if absent. */
VTPU_API uint32_t vtpu_vocab_id(const struct vtpu_vocab *v, const char *tok,
				size_t len);

/**
 * vtpu_vocab_encode() - a sentence to ids: <start>, its tokens, <end>,
 * then <pad> up to @max_len
 * @ids: @max_len ids written
 * @len: the ids before the padding (tokens + 2)
 *
 * Return: 0, -EINVAL (a sentence with no token), -E2BIG (more than
 * @max_len - 2 tokens; the message says how many), with a message.
 */
VTPU_API int vtpu_vocab_encode(const struct vtpu_vocab *v, const char *sentence,
			       uint32_t max_len, uint32_t *ids, uint32_t *len,
			       char *err, size_t errlen);

/**
 * vtpu_vocab_tokens() - the number of tokens @sentence has for @v's mode
 * (without <start> and <end>), to size the compiled length.
 */
VTPU_API uint32_t vtpu_vocab_tokens(const struct vtpu_vocab *v,
				    const char *sentence);

/**
 * vtpu_vocab_decode() - ids back to text: <start> and <pad> skipped,
 * stops at <end>, words joined by one space (characters by nothing);
 * an id >= size prints as "<?>". Always NUL-terminated; truncated to fit.
 *
 * Return: the length the whole text needs (as snprintf).
 */
VTPU_API size_t vtpu_vocab_decode(const struct vtpu_vocab *v,
				  const uint32_t *ids, uint32_t n, char *out,
				  size_t outlen);

/* ---- length buckets ------------------------------------------------------ */

/**
 * struct vtpu_text_batch - one batch of a bucketed epoch
 * @first: its examples are order[first .. first + count)
 * @count: examples in it (the last batch of a bucket may be short)
 * @len: its bucket's length, the padded length of all its examples:
 *	roundup(length, width), the same for every example in the bucket
 */
struct vtpu_text_batch {
	uint32_t first;
	uint32_t count;
	uint32_t len;
};

/**
 * vtpu_text_buckets() - one epoch's batches, grouped by padded length
 * @lens: the @n examples' lengths (ids with <start> and <end>; for a pair,
 *	the longer side's)
 * @width: bucket width: an example of length L goes to the bucket of
 *	length roundup(L, width); 1 pads to the exact length of the longest
 * @batch: examples per batch
 * @rng: shuffles the examples within each bucket and the batches' order
 *	(NULL: sorted, in order)
 * @order: n indices, written: the examples in batch order
 * @batches: room for @n batches (there are at most n), written in order
 * @nbatches: written, how many
 *
 * Padding is then at most width - 1 per example, and a model compiles
 * once per distinct length, not once per batch.
 *
 * Return: 0, -EINVAL (n, width or batch 0, a length 0), -ENOMEM.
 */
VTPU_API int vtpu_text_buckets(const uint32_t *lens, uint32_t n, uint32_t width,
			       uint32_t batch, struct vtpu_rng *rng,
			       uint32_t *order, struct vtpu_text_batch *batches,
			       uint32_t *nbatches);

#ifdef __cplusplus
}
#endif

#endif /* LIBVTPU_VTPU_TEXT_H */
