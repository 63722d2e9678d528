// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of libvtpu's text side (vtpu_text.h): the sentence-pair
 * loader on generated files, good and damaged (each error names its line);
 * tokenization in both modes; vocabularies (order, limits, unknown tokens,
 * files and their damage, fingerprints); encoding and decoding; the date
 * corpus (deterministic, every source with one target, weekdays right);
 * length buckets.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vtpu_text.h"

#define EXPECT_MSG(err, sub) do {					\
	if (!strstr((err), (sub)))					\
		TH_LOG("message \"%s\" lacks \"%s\"", (err), (sub));	\
	EXPECT_TRUE(strstr((err), (sub)) != NULL);			\
} while (0)

FIXTURE(tmp) {
	char dir[64];
	char path[128];
};

FIXTURE_SETUP(tmp)
{
	strcpy(self->dir, "/tmp/vtpu-test-text.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/file", self->dir);
}

FIXTURE_TEARDOWN(tmp)
{
	unlink(self->path);
	rmdir(self->dir);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	fwrite(buf, 1, len, f);
	fclose(f);
}

#define WRITE_STR(path, s) write_file(path, s, sizeof(s) - 1)

TEST_F(tmp, pairs_good)
{
	struct vtpu_text_pairs p;
	char err[256] = "";

	WRITE_STR(self->path, "\xef\xbb\xbfGo.\tVe.\r\n"
			      "\n"
			      "  Who?\t\xc2\xbfQui\xc3\xa9n?  \tCC-BY 2.0 (France)\n"
			      "Run!\tCorre!");
	ASSERT_EQ(0, vtpu_text_load_pairs(self->path, 0, &p, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(3u, p.n);
	EXPECT_STREQ("Go.", p.src[0]);
	EXPECT_STREQ("Ve.", p.tgt[0]);
	EXPECT_STREQ("Who?", p.src[1]);
	EXPECT_STREQ("\xc2\xbfQui\xc3\xa9n?", p.tgt[1]);
	EXPECT_STREQ("Corre!", p.tgt[2]);
	EXPECT_EQ(1u, p.line[0]);
	EXPECT_EQ(3u, p.line[1]);
	EXPECT_EQ(4u, p.line[2]);
	vtpu_text_pairs_free(&p);
	EXPECT_EQ(0u, p.n);
	EXPECT_EQ(NULL, p.src);

	ASSERT_EQ(0, vtpu_text_load_pairs(self->path, 2, &p, err, sizeof(err)));
	EXPECT_EQ(2u, p.n);
	vtpu_text_pairs_free(&p);
}

TEST_F(tmp, pairs_bad)
{
	static const struct {
		const char *text;
		size_t len;
		const char *msg;
	} bad[] = {
#define B(s, m) { s, sizeof(s) - 1, m }
		B("a\tb\nno tab here\n", ":2: no tab"),
		B("a\tb\n\t b\n", ":2: empty source"),
		B("a\tb\nc\td\ne\t  \n", ":3: empty target"),
		B("a\tb\nc\xff\td\n", ":2: byte 2 is not UTF-8"),
		B("a\tb\nc\xc3\td\n", ":2: byte 2 is not UTF-8"),
		B("a\xed\xa0\x80\tb\n", ":1: byte 2 is not UTF-8"),
		B("a\tb\nc\0d\te\n", ":2: a NUL byte"),
		B("", "no sentence pairs"),
		B("\n\r\n\n", "no sentence pairs"),
#undef B
	};
	struct vtpu_text_pairs p;
	char err[256], *line;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(self->path, bad[i].text, bad[i].len);
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, vtpu_text_load_pairs(self->path, 0, &p, err,
							sizeof(err)));
		EXPECT_MSG(err, bad[i].msg);
		EXPECT_MSG(err, self->path);
		EXPECT_EQ(0u, p.n);
		EXPECT_EQ(NULL, p.src);
	}

	/* a line over the limit */
	line = malloc(VTPU_TEXT_MAX_LINE + 8);
	memset(line, 'x', VTPU_TEXT_MAX_LINE + 7);
	line[10] = '\t';
	line[VTPU_TEXT_MAX_LINE + 7] = '\n';
	write_file(self->path, line, VTPU_TEXT_MAX_LINE + 8);
	free(line);
	EXPECT_EQ(-EINVAL, vtpu_text_load_pairs(self->path, 0, &p, err,
						sizeof(err)));
	EXPECT_MSG(err, ":1: longer than 4096 bytes");

	EXPECT_EQ(-ENOENT, vtpu_text_load_pairs("/nonexistent/spa.txt", 0, &p,
						err, sizeof(err)));
	EXPECT_MSG(err, "/nonexistent/spa.txt");
}

/* Build a vocabulary of @n sentences (asserting success). */
static void build(struct __test_metadata *_metadata, struct vtpu_vocab *v,
		  const char *const *s, uint32_t n, enum vtpu_tokenize mode,
		  uint32_t max_size, uint32_t min_count)
{
	char err[256] = "";

	ASSERT_EQ(0, vtpu_vocab_build(v, (char *const *)s, n, mode, max_size,
				      min_count, err, sizeof(err)))
		TH_LOG("%s", err);
}

TEST(vocab_words)
{
	static const char *const s[] = {
		"\xc2\xbf" "D\xc3\x93NDE est\xc3\xa1 el ba\xc3\xb1o?",
		"El gato, el perro.",
		"<pad> el",
	};
	struct vtpu_vocab v;
	uint32_t ids[16], len, i;
	char out[128];

	build(_metadata, &v, s, 3, VTPU_TOKENIZE_WORDS, 0, 1);
	EXPECT_STREQ("<pad>", v.tokens[VTPU_TOK_PAD]);
	EXPECT_STREQ("<start>", v.tokens[VTPU_TOK_START]);
	EXPECT_STREQ("<end>", v.tokens[VTPU_TOK_END]);
	EXPECT_STREQ("<unk>", v.tokens[VTPU_TOK_UNK]);
	/* "el" 4 times first, then count 1 in byte order; "<pad>" is the
	 * reserved one, not a second entry */
	EXPECT_STREQ("el", v.tokens[4]);
	EXPECT_STREQ(",", v.tokens[5]);
	EXPECT_STREQ(".", v.tokens[6]);
	EXPECT_STREQ("?", v.tokens[7]);
	EXPECT_STREQ("ba\xc3\xb1o", v.tokens[8]);
	/* ¿ dónde está el baño ? el gato , el perro . : 10 distinct + 4 */
	EXPECT_EQ(4u + 10u, v.size);
	for (i = 0; i < v.size; i++)
		EXPECT_EQ(i, vtpu_vocab_id(&v, v.tokens[i], strlen(v.tokens[i])));
	EXPECT_EQ(VTPU_TOK_UNK, vtpu_vocab_id(&v, "gatos", 5));

	EXPECT_EQ(6u, vtpu_vocab_tokens(&v, s[0]));
	ASSERT_EQ(0, vtpu_vocab_encode(&v, "El  gatO rojo?", 8, ids, &len,
				       NULL, 0));
	EXPECT_EQ(6u, len);
	EXPECT_EQ(VTPU_TOK_START, ids[0]);
	EXPECT_EQ(4u, ids[1]);
	EXPECT_EQ(vtpu_vocab_id(&v, "gato", 4), ids[2]);
	EXPECT_EQ(VTPU_TOK_UNK, ids[3]);
	EXPECT_EQ(7u, ids[4]);
	EXPECT_EQ(VTPU_TOK_END, ids[5]);
	EXPECT_EQ(VTPU_TOK_PAD, ids[6]);
	EXPECT_EQ(VTPU_TOK_PAD, ids[7]);
	EXPECT_EQ(strlen("el gato <unk> ?"),
		  vtpu_vocab_decode(&v, ids, 8, out, sizeof(out)));
	EXPECT_STREQ("el gato <unk> ?", out);
	vtpu_vocab_free(&v);
	EXPECT_EQ(0u, v.size);

	/* limits: min_count 2 keeps "el" only; max_size 6 keeps two */
	build(_metadata, &v, s, 3, VTPU_TOKENIZE_WORDS, 0, 2);
	EXPECT_EQ(5u, v.size);
	vtpu_vocab_free(&v);
	build(_metadata, &v, s, 3, VTPU_TOKENIZE_WORDS, 6, 1);
	EXPECT_EQ(6u, v.size);
	EXPECT_STREQ(",", v.tokens[5]);
	vtpu_vocab_free(&v);
}

TEST(vocab_chars_and_decode)
{
	static const char *const s[] = { "2026-11-24", "1999-01-02" };
	struct vtpu_vocab v;
	uint32_t ids[16], len, bad[] = { 1, 5, 999, 6, 2, 7 };
	char out[32], err[128];

	build(_metadata, &v, s, 2, VTPU_TOKENIZE_CHARS, 0, 1);
	EXPECT_STREQ("-", v.tokens[4]);	/* 4 times */
	ASSERT_EQ(0, vtpu_vocab_encode(&v, "2026-11-24", 12, ids, &len, err,
				       sizeof(err)));
	EXPECT_EQ(12u, len);
	vtpu_vocab_decode(&v, ids, 12, out, sizeof(out));
	EXPECT_STREQ("2026-11-24", out);
	/* truncation: the length it needs, a terminated prefix */
	EXPECT_EQ(10u, vtpu_vocab_decode(&v, ids, 12, out, 5));
	EXPECT_STREQ("2026", out);
	/* an id past the vocabulary, and the stop at <end> */
	vtpu_vocab_decode(&v, bad, 6, out, sizeof(out));
	EXPECT_EQ(0, strncmp(out, v.tokens[5], strlen(v.tokens[5])));
	EXPECT_TRUE(strstr(out, "<?>") != NULL);
	EXPECT_EQ(NULL, strstr(out, v.tokens[7]));

	/* too long, empty */
	EXPECT_EQ(-E2BIG, vtpu_vocab_encode(&v, "2026-11-24", 11, ids, &len,
					    err, sizeof(err)));
	EXPECT_MSG(err, "10 tokens, more than the 9");
	EXPECT_EQ(-EINVAL, vtpu_vocab_encode(&v, "", 12, ids, &len, err,
					     sizeof(err)));
	EXPECT_MSG(err, "empty sentence");
	vtpu_vocab_free(&v);

	/* words: white space only is no sentence */
	build(_metadata, &v, s, 2, VTPU_TOKENIZE_WORDS, 0, 1);
	EXPECT_EQ(-EINVAL, vtpu_vocab_encode(&v, " \t ", 12, ids, &len, err,
					     sizeof(err)));
	vtpu_vocab_free(&v);
}

TEST(vocab_build_bad)
{
	static const char *const s[] = { "a b", "  " };
	struct vtpu_vocab v;
	char err[128] = "";

	EXPECT_EQ(-EINVAL, vtpu_vocab_build(&v, (char *const *)s, 2,
					    VTPU_TOKENIZE_WORDS, 0, 1, err,
					    sizeof(err)));
	EXPECT_MSG(err, "sentence 2 has no token");
	EXPECT_EQ(0u, v.size);
	EXPECT_EQ(-EINVAL, vtpu_vocab_build(&v, (char *const *)s, 1,
					    VTPU_TOKENIZE_WORDS, 4, 1, err,
					    sizeof(err)));
	EXPECT_MSG(err, "reserved");
	EXPECT_EQ(-EINVAL, vtpu_vocab_build(&v, (char *const *)s, 0,
					    VTPU_TOKENIZE_WORDS, 0, 1, err,
					    sizeof(err)));
}

TEST_F(tmp, vocab_files)
{
	static const char *const s[] = { "a b\\c", "b  a\ta" };
	struct vtpu_vocab v, w;
	char err[256] = "";
	uint32_t i;

	build(_metadata, &v, s, 2, VTPU_TOKENIZE_CHARS, 0, 1);
	ASSERT_EQ(0, vtpu_vocab_save(&v, self->path, err, sizeof(err)));
	ASSERT_EQ(0, vtpu_vocab_load(&w, self->path, err, sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(v.size, w.size);
	EXPECT_EQ(v.mode, w.mode);
	for (i = 0; i < v.size; i++)
		EXPECT_STREQ(v.tokens[i], w.tokens[i]);
	EXPECT_EQ(vtpu_vocab_hash(&v), vtpu_vocab_hash(&w));
	EXPECT_EQ(vtpu_vocab_id(&v, "\t", 1), vtpu_vocab_id(&w, "\t", 1));
	vtpu_vocab_free(&w);
	/* the same tokens tokenized as words are another vocabulary */
	build(_metadata, &w, s, 2, VTPU_TOKENIZE_WORDS, 0, 1);
	EXPECT_NE(vtpu_vocab_hash(&v), vtpu_vocab_hash(&w));
	vtpu_vocab_free(&w);
	vtpu_vocab_free(&v);

#define LOAD_BAD(text, msg) do {					\
	WRITE_STR(self->path, text);					\
	err[0] = '\0';							\
	EXPECT_EQ(-EINVAL, vtpu_vocab_load(&w, self->path, err,		\
					   sizeof(err)));		\
	EXPECT_MSG(err, msg);						\
	EXPECT_EQ(0u, w.size);						\
} while (0)
	LOAD_BAD("hello\n", ":1: not a vocabulary");
	LOAD_BAD("vtpu-vocab 1 bytes 6\na\nb\n", ":1: not a vocabulary");
	LOAD_BAD("vtpu-vocab 1 words 6\na\nb\nc\n", ":4: more tokens");
	LOAD_BAD("vtpu-vocab 1 words 7\na\nb\n", "6 tokens, the header says 7");
	LOAD_BAD("vtpu-vocab 1 words 6\na\na\n", ":3: a duplicate token \"a\"");
	LOAD_BAD("vtpu-vocab 1 words 6\na\nb\\q\n", ":3: a bad escape");
	LOAD_BAD("vtpu-vocab 1 words 6\na\n\n", ":3: an empty token");
	LOAD_BAD("vtpu-vocab 1 words 6\na\nb", ":3: no end of line");
#undef LOAD_BAD
}

/* Day of the week of y-m-d, 0 = Sunday (Sakamoto's method). */
static int weekday(int y, int m, int d)
{
	static const int t[] = { 0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4 };

	y -= m < 3;
	return (y + y / 4 - y / 100 + y / 400 + t[m - 1] + d) % 7;
}

static const char *const wdays[] = {
	"sunday", "monday", "tuesday", "wednesday", "thursday", "friday",
	"saturday",
};

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100) || y % 400 == 0;
}

TEST(dates)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	const uint32_t n = 20000;
	struct vtpu_text_pairs a, b;
	struct vtpu_vocab v;
	uint32_t i, j, weekdays = 0;

	ASSERT_EQ(0, vtpu_text_dates(n, 7, &a));
	ASSERT_EQ(0, vtpu_text_dates(n, 7, &b));
	ASSERT_EQ(n, a.n);
	for (i = 0; i < n; i++) {
		int y, m, d;
		char low[64], yy[8], dd[8];
		const char *w;

		EXPECT_STREQ(a.src[i], b.src[i]);
		EXPECT_STREQ(a.tgt[i], b.tgt[i]);
		ASSERT_EQ(3, sscanf(a.tgt[i], "%4d-%2d-%2d", &y, &m, &d));
		ASSERT_EQ(10u, strlen(a.tgt[i]));
		ASSERT_TRUE(y >= 1950 && y <= 2099);
		ASSERT_TRUE(m >= 1 && m <= 12);
		ASSERT_TRUE(d >= 1 &&
			    d <= mdays[m - 1] + (m == 2 && leap(y)));
		/* the source says the year (two digits only from 2000), the
		 * day, and a weekday only if it is the real one */
		for (j = 0; a.src[i][j] && j < sizeof(low) - 1; j++)
			low[j] = (char)(a.src[i][j] | (a.src[i][j] >= 'A' &&
					a.src[i][j] <= 'Z' ? 0x20 : 0));
		low[j] = '\0';
		snprintf(yy, sizeof(yy), "%d", y);
		if (!strstr(low, yy)) {
			snprintf(yy, sizeof(yy), "%02d", y % 100);
			EXPECT_TRUE(y >= 2000 && strstr(low, yy))
				TH_LOG("%s -> %s", a.src[i], a.tgt[i]);
		}
		snprintf(dd, sizeof(dd), "%d", d);
		EXPECT_TRUE(strstr(low, dd) != NULL);
		for (j = 0; j < 7; j++) {
			char ab[4];

			snprintf(ab, sizeof(ab), "%.3s", wdays[j]);
			w = strstr(low, ab);
			/* at a word's start (no month name starts so) */
			if (w && (w == low || w[-1] == ' ')) {
				EXPECT_EQ(weekday(y, m, d), (int)j)
					TH_LOG("%s -> %s", a.src[i], a.tgt[i]);
				weekdays++;
			}
		}
	}
	EXPECT_GT(weekdays, n / 16);
	/* characters: digits, letters, punctuation; the ISO side 11 + 4 */
	build(_metadata, &v, (const char *const *)a.src, n,
	      VTPU_TOKENIZE_CHARS, 0, 1);
	EXPECT_LT(v.size, 64u);
	vtpu_vocab_free(&v);
	build(_metadata, &v, (const char *const *)a.tgt, n,
	      VTPU_TOKENIZE_CHARS, 0, 1);
	EXPECT_EQ(4u + 11u, v.size);
	vtpu_vocab_free(&v);
	vtpu_text_pairs_free(&b);
	ASSERT_EQ(0, vtpu_text_dates(n, 8, &b));
	for (i = 0, j = 0; i < n; i++)
		j += !strcmp(a.src[i], b.src[i]);
	EXPECT_LT(j, n / 100);
	vtpu_text_pairs_free(&a);
	vtpu_text_pairs_free(&b);
	EXPECT_EQ(-EINVAL, vtpu_text_dates(0, 1, &a));
}

/* Sources that differ only in case or spacing are one source after
 * tokenization: check that no two of them ask for different targets. */
static int cmp_str(const void *x, const void *y, void *ctx)
{
	char **s = ctx;

	return strcmp(s[*(const uint32_t *)x], s[*(const uint32_t *)y]);
}

TEST(dates_unambiguous)
{
	const uint32_t n = 200000;
	struct vtpu_text_pairs a;
	uint32_t *order, i, same = 0, i16 = 0;
	char **low;

	ASSERT_EQ(0, vtpu_text_dates(n, 1, &a));
	low = calloc(n, sizeof(*low));
	order = malloc(n * sizeof(*order));
	for (i = 0; i < n; i++) {
		char *p;

		low[i] = strdup(a.src[i]);
		for (p = low[i]; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p += 0x20;
		order[i] = i;
	}
	qsort_r(order, n, sizeof(*order), cmp_str, low);
	for (i = 1; i < n; i++) {
		if (strcmp(low[order[i]], low[order[i - 1]]))
			continue;
		same++;
		EXPECT_STREQ(a.tgt[order[i - 1]], a.tgt[order[i]])
			TH_LOG("\"%s\" and \"%s\"", a.src[order[i - 1]],
			       a.src[order[i]]);
	}
	/* 2-digit-year forms repeat (54750 dates, 16 styles): the check ran */
	EXPECT_GT(same, 100u);
	for (i = 0; i < n; i++) {
		i16 += strlen(a.src[i]) == 8;	/* dd.mm.yy */
		free(low[i]);
	}
	EXPECT_GT(i16, n / 40);
	free(low);
	free(order);
	vtpu_text_pairs_free(&a);
}

TEST(buckets)
{
	const uint32_t n = 1000, batch = 32, width = 4;
	uint32_t lens[1000], order[1000], order2[1000], seen[1000] = { 0 };
	struct vtpu_text_batch b[1000], b2[1000];
	uint32_t nb, nb2, i, k, total = 0;
	struct vtpu_rng rng;

	vtpu_rng_seed(&rng, 3);
	for (i = 0; i < n; i++)
		lens[i] = 3 + (uint32_t)vtpu_rng_below(&rng, 20);
	vtpu_rng_seed(&rng, 5);
	ASSERT_EQ(0, vtpu_text_buckets(lens, n, width, batch, &rng, order, b,
				       &nb));
	for (k = 0; k < nb; k++) {
		EXPECT_TRUE(b[k].count >= 1 && b[k].count <= batch);
		EXPECT_EQ(0u, b[k].len % width);
		for (i = b[k].first; i < b[k].first + b[k].count; i++) {
			EXPECT_LE(lens[order[i]], b[k].len);
			EXPECT_GT(lens[order[i]] + width, b[k].len);
			seen[order[i]]++;
		}
		total += b[k].count;
	}
	EXPECT_EQ(n, total);
	for (i = 0; i < n; i++)
		EXPECT_EQ(1u, seen[i]);
	/* 3..22 in buckets of 4: 4, 8, ..., 24: six buckets */
	EXPECT_LE(nb, n / batch + 6);
	/* the same seed, the same epoch; another, another order */
	vtpu_rng_seed(&rng, 5);
	ASSERT_EQ(0, vtpu_text_buckets(lens, n, width, batch, &rng, order2,
				       b2, &nb2));
	EXPECT_EQ(nb, nb2);
	EXPECT_EQ(0, memcmp(order, order2, sizeof(order)));
	EXPECT_EQ(0, memcmp(b, b2, nb * sizeof(*b)));
	ASSERT_EQ(0, vtpu_text_buckets(lens, n, width, batch, &rng, order2,
				       b2, &nb2));
	EXPECT_NE(0, memcmp(order, order2, sizeof(order)));
	/* no rng: sorted by length, then index */
	ASSERT_EQ(0, vtpu_text_buckets(lens, n, 1, batch, NULL, order2, b2,
				       &nb2));
	for (i = 1; i < n; i++)
		EXPECT_TRUE(lens[order2[i - 1]] < lens[order2[i]] ||
			    (lens[order2[i - 1]] == lens[order2[i]] &&
			     order2[i - 1] < order2[i]));
	EXPECT_EQ(lens[order2[b2[0].first]], b2[0].len);

	lens[7] = 0;
	EXPECT_EQ(-EINVAL, vtpu_text_buckets(lens, n, width, batch, NULL,
					     order, b, &nb));
	EXPECT_EQ(0u, nb);
	EXPECT_EQ(-EINVAL, vtpu_text_buckets(lens, n, 0, batch, NULL, order,
					     b, &nb));
	EXPECT_EQ(-EINVAL, vtpu_text_buckets(lens, n, width, 0, NULL, order,
					     b, &nb));
}

TEST_HARNESS_MAIN
