// SPDX-License-Identifier: MIT
/*
 * The text side of sequence models (vtpu_text.h): sentence-pair files,
 * the generated date corpus, tokenization, vocabularies, length buckets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu_text.h"
#include "data_priv.h"

/* ---- sentence pairs ------------------------------------------------------ */

void vtpu_text_pairs_free(struct vtpu_text_pairs *p)
{
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->src ? p->src[i] : NULL);
		free(p->tgt ? p->tgt[i] : NULL);
	}
	free(p->src);
	free(p->tgt);
	free(p->line);
	memset(p, 0, sizeof(*p));
}

/* Room for one more pair; the arrays grow by doubling. */
static int pairs_grow(struct vtpu_text_pairs *p, uint32_t *cap)
{
	uint32_t c = *cap ? *cap * 2 : 1024;
	char **s, **t;
	uint32_t *l;

	if (p->n < *cap)
		return 0;
	if (c <= *cap)
		return -ENOMEM;
	s = realloc(p->src, (size_t)c * sizeof(*s));
	if (!s)
		return -ENOMEM;
	p->src = s;
	t = realloc(p->tgt, (size_t)c * sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->tgt = t;
	l = realloc(p->line, (size_t)c * sizeof(*l));
	if (!l)
		return -ENOMEM;
	p->line = l;
	*cap = c;
	return 0;
}

/* Append a pair of copies of [s, s + slen) and [t, t + tlen). */
static int pairs_add(struct vtpu_text_pairs *p, uint32_t *cap, const char *s,
		     size_t slen, const char *t, size_t tlen, uint32_t line)
{
	char *a, *b;

	if (pairs_grow(p, cap))
		return -ENOMEM;
	a = malloc(slen + 1);
	b = malloc(tlen + 1);
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	memcpy(a, s, slen);
	a[slen] = '\0';
	memcpy(b, t, tlen);
	b[tlen] = '\0';
	p->src[p->n] = a;
	p->tgt[p->n] = b;
	p->line[p->n] = line;
	p->n++;
	return 0;
}

/*
 * The length of the UTF-8 sequence at @s (at most @n bytes), or 0 when it
 * is not one: a bad lead byte, a missing continuation, an overlong form, a
 * surrogate or a code point past U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* Trim spaces at both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Check one line (without its end of line) and add its pair. */
static int parse_line(struct vtpu_text_pairs *p, uint32_t *cap,
		      const char *path, uint32_t lineno, const char *buf,
		      size_t n, char *err, size_t errlen)
{
	const char *tab, *t, *end;
	size_t i, k, slen, tlen;

	for (i = 0; i < n; i += k) {
		if (!buf[i])
			return vtpu__errf(err, errlen, -EINVAL,
					  "%s:%u: a NUL byte in the line", path,
					  lineno);
		k = utf8_len((const unsigned char *)buf + i, n - i);
		if (!k)
			return vtpu__errf(err, errlen, -EINVAL,
					  "%s:%u: byte %zu is not UTF-8", path,
					  lineno, i + 1);
	}
	tab = memchr(buf, '\t', n);
	if (!tab)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s:%u: no tab: expected \"source<TAB>target\"",
				  path, lineno);
	t = tab + 1;
	end = memchr(t, '\t', (size_t)(buf + n - t));
	if (!end)
		end = buf + n;
	slen = (size_t)(tab - buf);
	tlen = (size_t)(end - t);
	trim(&buf, &slen);
	trim(&t, &tlen);
	if (!slen || !tlen)
		return vtpu__errf(err, errlen, -EINVAL, "%s:%u: empty %s sentence",
				  path, lineno, !slen ? "source" : "target");
	if (pairs_add(p, cap, buf, slen, t, tlen, lineno))
		return vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory",
				  path);
	return 0;
}

int vtpu_text_load_pairs(const char *path, uint32_t max_pairs,
			 struct vtpu_text_pairs *p, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t bufcap = 0;
	uint32_t cap = 0, lineno = 0;
	int ret = 0;
	FILE *f;

	memset(p, 0, sizeof(*p));
	f = fopen(path, "rb");
	if (!f)
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
	while (!max_pairs || p->n < max_pairs) {
		ssize_t r = getline(&buf, &bufcap, f);
		char *s = buf;
		size_t n;

		if (r < 0)
			break;
		lineno++;
		n = (size_t)r;
		if (n && buf[n - 1] == '\n')
			n--;
		if (n && buf[n - 1] == '\r')
			n--;
		if (n > VTPU_TEXT_MAX_LINE) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s:%u: longer than %u bytes", path,
					 lineno, VTPU_TEXT_MAX_LINE);
			break;
		}
		if (lineno == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) {
			s += 3;
			n -= 3;
		}
		if (!n)
			continue;
		ret = parse_line(p, &cap, path, lineno, s, n, err, errlen);
		if (ret)
			break;
	}
	if (!ret && ferror(f))
		ret = vtpu__errf(err, errlen, -EIO, "%s: read error", path);
	if (!ret && !p->n)
		ret = vtpu__errf(err, errlen, -EINVAL, "%s: no sentence pairs",
				 path);
	fclose(f);
	free(buf);
	if (ret)
		vtpu_text_pairs_free(p);
	return ret;
}

/* ---- the date corpus ----------------------------------------------------- */

static const char *const month_names[12] = {
	"january", "february", "march",     "april",   "may",      "june",
	"july",    "august",   "september", "october", "november", "december",
};

static const char *const day_names[7] = {
	"sunday",   "monday", "tuesday",  "wednesday",
	"thursday", "friday", "saturday",
};

/* Days since 1970-01-01 to a civil date (H. Hinnant's civil_from_days). */
static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

/* "st", "nd", "rd" or "th" after day @d. */
static const char *ordinal(int d)
{
	if (d / 10 == 1)
		return "th";
	switch (d % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	}
	return "th";
}

/* @s with its first letter upper-cased, into @buf (names are short). */
static const char *cap(char *buf, size_t n, const char *s)
{
	snprintf(buf, n, "%s", s);
	if (buf[0] >= 'a' && buf[0] <= 'z')
		buf[0] = (char)(buf[0] - 'a' + 'A');
	return buf;
}

/* @s upper-cased, into @buf. */
static const char *upper(char *buf, size_t n, const char *s)
{
	size_t i;

	snprintf(buf, n, "%s", s);
	for (i = 0; buf[i]; i++)
		if (buf[i] >= 'a' && buf[i] <= 'z')
			buf[i] = (char)(buf[i] - 'a' + 'A');
	return buf;
}

/* Write the date in style @style into @out. */
static void date_style(char *out, size_t n, unsigned int style, int y, int m,
		       int d, int wd)
{
	const char *mon = month_names[m - 1], *day = day_names[wd];
	char a[16], b[16], ab[4], wab[4];
	bool yy = y >= 2000;

	snprintf(ab, sizeof(ab), "%.3s", mon);
	snprintf(wab, sizeof(wab), "%.3s", day);
	switch (style) {
	case 0:
		snprintf(out, n, "%s %d %s %d", day, d, mon, y);
		break;
	case 1:
		if (yy)
			snprintf(out, n, "%02d.%02d.%02d", d, m, y % 100);
		else
			snprintf(out, n, "%02d.%02d.%d", d, m, y);
		break;
	case 2:
		snprintf(out, n, "%d.%d.%d", d, m, y);
		break;
	case 3:
		snprintf(out, n, "%s %d, %d", cap(a, sizeof(a), ab), d, y);
		break;
	case 4:
		snprintf(out, n, "%s %d, %d", cap(a, sizeof(a), mon), d, y);
		break;
	case 5:
		snprintf(out, n, "%02d/%02d/%d", m, d, y);
		break;
	case 6:
		snprintf(out, n, "%d %s %d", d, cap(a, sizeof(a), ab), y);
		break;
	case 7:
		snprintf(out, n, "%d %s %d", d, upper(a, sizeof(a), mon), y);
		break;
	case 8:
		snprintf(out, n, "%s, %s %d, %d", cap(a, sizeof(a), day),
			 cap(b, sizeof(b), mon), d, y);
		break;
	case 9:
		snprintf(out, n, "%s %d %s %d", wab, d, ab, y);
		break;
	case 10:
		snprintf(out, n, "%d%s of %s %d", d, ordinal(d), mon, y);
		break;
	case 11:
		snprintf(out, n, "%s %d%s, %d", cap(a, sizeof(a), mon), d,
			 ordinal(d), y);
		break;
	case 12:
		snprintf(out, n, "%d/%02d/%02d", y, m, d);
		break;
	case 13:
		snprintf(out, n, "%02d-%s-%d", d, ab, y);
		break;
	case 14:
		if (yy)
			snprintf(out, n, "%d/%d/%02d", m, d, y % 100);
		else
			snprintf(out, n, "%d/%d/%d", m, d, y);
		break;
	default:
		snprintf(out, n, "the %d%s of %s, %d", d, ordinal(d),
			 cap(a, sizeof(a), mon), y);
		break;
	}
}

int vtpu_text_dates(uint32_t n, uint64_t seed, struct vtpu_text_pairs *p)
{
	/* 1950-01-01 and 2099-12-31 in days since 1970-01-01 */
	const int64_t first = -7305, last = 47481;
	struct vtpu_rng rng;
	uint32_t cap = 0, i;
	char src[64], tgt[16];

	memset(p, 0, sizeof(*p));
	if (!n)
		return -EINVAL;
	vtpu_rng_seed(&rng, seed);
	for (i = 0; i < n; i++) {
		int64_t z = first + (int64_t)vtpu_rng_below(&rng, last - first + 1);
		unsigned int style = (unsigned int)vtpu_rng_below(
			&rng, VTPU_TEXT_DATE_STYLES);
		int y, m, d, wd = (int)(((z % 7) + 7 + 4) % 7);

		civil_from_days(z, &y, &m, &d);
		date_style(src, sizeof(src), style, y, m, d, wd);
		snprintf(tgt, sizeof(tgt), "%04d-%02d-%02d", y, m, d);
		if (pairs_add(p, &cap, src, strlen(src), tgt, strlen(tgt), 0)) {
			vtpu_text_pairs_free(p);
			return -ENOMEM;
		}
	}
	return 0;
}

/* ---- tokenization -------------------------------------------------------- */

/*
 * @s lower-cased into a new string: ASCII, and the Latin-1 capitals
 * U+00C0..U+00DE but U+00D7 (C3 80..C3 9E in UTF-8): the byte length
 * does not change.
 */
static char *lower_copy(const char *s)
{
	size_t n = strlen(s), i;
	unsigned char *r = malloc(n + 1);

	if (!r)
		return NULL;
	memcpy(r, s, n + 1);
	for (i = 0; i < n; i++) {
		if (r[i] >= 'A' && r[i] <= 'Z')
			r[i] = (unsigned char)(r[i] - 'A' + 'a');
		else if (r[i] == 0xc3 && i + 1 < n && r[i + 1] >= 0x80 &&
			 r[i + 1] <= 0x9e && r[i + 1] != 0x97)
			r[++i] += 0x20;
	}
	return (char *)r;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
	       c == '\v' || c == '\f';
}

/* The length of the punctuation token at @s, 0 if none. */
static size_t punct_len(const unsigned char *s)
{
	if (s[0] && strchr(".,?!;:\"", s[0]))
		return 1;
	if (s[0] == 0xc2 && (s[1] == 0xbf || s[1] == 0xa1))	/* ¿ ¡ */
		return 2;
	return 0;
}

/* One code point's bytes at @s (invalid UTF-8: one byte). */
static size_t char_len(const unsigned char *s)
{
	size_t k = utf8_len(s, strnlen((const char *)s, 4));

	return k ? k : 1;
}

typedef int (*token_fn)(void *ctx, const char *tok, size_t len);

/* Call @fn for each token of the lower-cased sentence @s. */
static int each_token(const char *s, enum vtpu_tokenize mode, token_fn fn,
		      void *ctx)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k;
	int ret;

	while (*p) {
		if (mode == VTPU_TOKENIZE_CHARS) {
			k = char_len(p);
		} else if (is_space(*p)) {
			p++;
			continue;
		} else {
			k = punct_len(p);
			if (!k) {
				do
					k += char_len(p + k);
				while (p[k] && !is_space(p[k]) &&
				       !punct_len(p + k));
			}
		}
		ret = fn(ctx, (const char *)p, k);
		if (ret)
			return ret;
		p += k;
	}
	return 0;
}

static int count_one(void *ctx, const char *tok, size_t len)
{
	(void)tok;
	(void)len;
	(*(uint32_t *)ctx)++;
	return 0;
}

uint32_t vtpu_vocab_tokens(const struct vtpu_vocab *v, const char *sentence)
{
	char *low = lower_copy(sentence);
	uint32_t n = 0;

	if (!low)
		return 0;
	each_token(low, v->mode, count_one, &n);
	free(low);
	return n;
}

/* ---- a string-keyed hash table ------------------------------------------- */

struct tok_map {
	uint32_t cap;		/* a power of two, > 2 * n */
	uint32_t n;
	uint32_t kcap;		/* room in keys (and count) */
	uint32_t *slot;		/* index + 1 into keys, 0 empty */
	char **keys;		/* n keys, NUL-terminated */
	uint32_t *count;	/* n counts (building) */
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ull

/* The slot of key [tok, tok + len): its entry, or the empty slot for it. */
static uint32_t *map_slot(const struct tok_map *m, const char *tok, size_t len)
{
	uint32_t i = (uint32_t)fnv1a(FNV_OFFSET, tok, len) & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		uint32_t e = m->slot[i];

		if (!e || (strlen(m->keys[e - 1]) == len &&
			   !memcmp(m->keys[e - 1], tok, len)))
			return &m->slot[i];
	}
}

static int map_rehash(struct tok_map *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 256, i;
	uint32_t *slot = calloc(cap, sizeof(*slot)), *old = m->slot;

	if (!slot || cap < m->cap) {
		free(slot);
		return -ENOMEM;
	}
	m->slot = slot;
	m->cap = cap;
	for (i = 0; i < m->n; i++)
		*map_slot(m, m->keys[i], strlen(m->keys[i])) = i + 1;
	free(old);
	return 0;
}

/* Add key [tok, tok + len) if absent; *@idx its index. */
static int map_add(struct tok_map *m, const char *tok, size_t len,
		   uint32_t *idx, bool counts)
{
	uint32_t *s, cap;
	char *k;

	if ((uint64_t)(m->n + 1) * 2 > m->cap && map_rehash(m))
		return -ENOMEM;
	s = map_slot(m, tok, len);
	if (*s) {
		*idx = *s - 1;
		return 0;
	}
	if (m->n == m->kcap) {
		char **keys;
		uint32_t *c;

		cap = m->kcap ? m->kcap * 2 : 64;
		if (cap < m->kcap)
			return -ENOMEM;
		keys = realloc(m->keys, (size_t)cap * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		m->keys = keys;
		if (counts) {
			c = realloc(m->count, (size_t)cap * sizeof(*c));
			if (!c)
				return -ENOMEM;
			m->count = c;
		}
		m->kcap = cap;
	}
	k = malloc(len + 1);
	if (!k)
		return -ENOMEM;
	memcpy(k, tok, len);
	k[len] = '\0';
	m->keys[m->n] = k;
	if (counts)
		m->count[m->n] = 0;
	*idx = m->n++;
	*s = m->n;
	return 0;
}

static void map_free(struct tok_map *m, bool keys)
{
	uint32_t i;

	if (keys)
		for (i = 0; i < m->n; i++)
			free(m->keys[i]);
	free(m->keys);
	free(m->slot);
	free(m->count);
	memset(m, 0, sizeof(*m));
}

/* ---- vocabularies -------------------------------------------------------- */

static const char *const reserved[VTPU_TOK_RESERVED] = {
	"<pad>", "<start>", "<end>", "<unk>",
};

void vtpu_vocab_free(struct vtpu_vocab *v)
{
	struct tok_map *m;

	if (!v)
		return;
	m = v->priv;
	if (m) {
		/* the map's keys are v->tokens */
		m->keys = NULL;
		map_free(m, false);
		free(m);
	}
	if (v->tokens) {
		uint32_t i;

		for (i = 0; i < v->size; i++)
			free(v->tokens[i]);
		free(v->tokens);
	}
	memset(v, 0, sizeof(*v));
}

/*
 * Make @v from @m's keys in the order @idx (@n of them), after the
 * reserved tokens; @m keeps its keys (they are copied).
 */
static int vocab_from(struct vtpu_vocab *v, enum vtpu_tokenize mode,
		      char *const *keys, const uint32_t *idx, uint32_t n)
{
	struct tok_map *m = calloc(1, sizeof(*m));
	uint32_t i, id;

	memset(v, 0, sizeof(*v));
	v->mode = mode;
	if (!m)
		return -ENOMEM;
	v->priv = m;
	for (i = 0; i < VTPU_TOK_RESERVED + n; i++) {
		const char *k = i < VTPU_TOK_RESERVED ?
					reserved[i] :
					keys[idx ? idx[i - VTPU_TOK_RESERVED] :
						   i - VTPU_TOK_RESERVED];

		if (map_add(m, k, strlen(k), &id, false))
			goto nomem;
		if (id != i) {	/* a duplicate (only from a file) */
			v->tokens = m->keys;
			v->size = m->n;
			return -EEXIST;
		}
	}
	v->tokens = m->keys;
	v->size = m->n;
	return 0;
nomem:
	v->tokens = m->keys;
	v->size = m->n;
	vtpu_vocab_free(v);
	return -ENOMEM;
}

struct build_ctx {
	struct tok_map *m;
	uint32_t tokens;
};

static int build_one(void *ctx, const char *tok, size_t len)
{
	struct build_ctx *b = ctx;
	uint32_t idx;

	if (map_add(b->m, tok, len, &idx, true))
		return -ENOMEM;
	b->m->count[idx]++;
	b->tokens++;
	return 0;
}

/* By count, descending, then bytes (qsort_r's comparison over @ctx). */
static int by_count(const void *a, const void *b, void *ctx)
{
	const struct tok_map *sort_map = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (sort_map->count[i] != sort_map->count[j])
		return sort_map->count[i] > sort_map->count[j] ? -1 : 1;
	return strcmp(sort_map->keys[i], sort_map->keys[j]);
}

int vtpu_vocab_build(struct vtpu_vocab *v, char *const *sentences, uint32_t n,
		     enum vtpu_tokenize mode, uint32_t max_size,
		     uint32_t min_count, char *err, size_t errlen)
{
	struct tok_map m = { 0 };
	struct build_ctx b = { &m, 0 };
	uint32_t *idx = NULL, i, keep;
	int ret = 0;

	memset(v, 0, sizeof(*v));
	if (!n || (max_size && max_size <= VTPU_TOK_RESERVED) ||
	    (mode != VTPU_TOKENIZE_WORDS && mode != VTPU_TOKENIZE_CHARS))
		return vtpu__errf(err, errlen, -EINVAL,
				  "vocabulary: %s", !n ? "no sentences" :
				  mode > VTPU_TOKENIZE_CHARS ? "unknown tokenization" :
				  "max_size leaves no room past the 4 reserved ids");
	for (i = 0; i < n && !ret; i++) {
		char *low = lower_copy(sentences[i]);

		if (!low) {
			ret = -ENOMEM;
			break;
		}
		b.tokens = 0;
		ret = each_token(low, mode, build_one, &b);
		free(low);
		if (!ret && !b.tokens)
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "vocabulary: sentence %u has no token",
					 i + 1);
	}
	if (!ret) {
		idx = malloc((size_t)(m.n ? m.n : 1) * sizeof(*idx));
		if (!idx)
			ret = -ENOMEM;
	}
	if (!ret) {
		for (i = 0; i < m.n; i++)
			idx[i] = i;
		qsort_r(idx, m.n, sizeof(*idx), by_count, &m);
		for (keep = 0; keep < m.n && m.count[idx[keep]] >= min_count;
		     keep++)
			;
		if (max_size && keep > max_size - VTPU_TOK_RESERVED)
			keep = max_size - VTPU_TOK_RESERVED;
		/* a token spelt like a reserved one is that one */
		ret = vocab_from(v, mode, m.keys, idx, keep);
		if (ret == -EEXIST) {
			uint32_t j, w = 0;

			vtpu_vocab_free(v);
			for (j = 0; j < keep; j++) {
				uint32_t r;

				for (r = 0; r < VTPU_TOK_RESERVED; r++)
					if (!strcmp(m.keys[idx[j]], reserved[r]))
						break;
				if (r == VTPU_TOK_RESERVED)
					idx[w++] = idx[j];
			}
			ret = vocab_from(v, mode, m.keys, idx, w);
		}
	}
	if (ret == -ENOMEM)
		vtpu__errf(err, errlen, ret, "vocabulary: out of memory");
	if (ret)
		vtpu_vocab_free(v);
	free(idx);
	map_free(&m, true);
	return ret;
}

/*
 * A vocabulary file's escapes: the character at i of esc_raw is written
 * as a backslash and the character at i of esc_code.
 */
static const char esc_raw[] = " \t\n\r\\", esc_code[] = "stnr\\";

/* Write @s escaped, then a newline, to @f. */
static void put_escaped(FILE *f, const char *s)
{
	const char *e;

	for (; *s; s++) {
		e = strchr(esc_raw, *s);
		if (e) {
			fputc('\\', f);
			fputc(esc_code[e - esc_raw], f);
		} else {
			fputc(*s, f);
		}
	}
	fputc('\n', f);
}

static const char *mode_name(enum vtpu_tokenize mode)
{
	return mode == VTPU_TOKENIZE_CHARS ? "chars" : "words";
}

int vtpu_vocab_save(const struct vtpu_vocab *v, const char *path, char *err,
		    size_t errlen)
{
	struct vtpu__atomic a;
	uint32_t i;
	int ret;

	ret = vtpu__atomic_begin(&a, path, err, errlen);
	if (ret)
		return ret;
	fprintf(a.f, "vtpu-vocab 1 %s %u\n", mode_name(v->mode), v->size);
	for (i = VTPU_TOK_RESERVED; i < v->size; i++)
		put_escaped(a.f, v->tokens[i]);
	return vtpu__atomic_end(&a, 0, err, errlen);
}

/* Undo put_escaped() in place; false on a bad escape. */
static bool unescape(char *s)
{
	const char *e;
	char *w = s;

	for (; *s; s++) {
		if (*s != '\\') {
			*w++ = *s;
			continue;
		}
		e = *++s ? strchr(esc_code, *s) : NULL;
		if (!e)
			return false;
		*w++ = esc_raw[e - esc_code];
	}
	*w = '\0';
	return true;
}

int vtpu_vocab_load(struct vtpu_vocab *v, const char *path, char *err,
		    size_t errlen)
{
	char line[VTPU_TEXT_MAX_LINE + 2], mode[16];
	uint32_t size, n = 0, lineno = 1;
	char **keys = NULL;
	int ret = 0;
	FILE *f;

	memset(v, 0, sizeof(*v));
	f = fopen(path, "r");
	if (!f)
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "vtpu-vocab 1 %15s %u", mode, &size) != 2 ||
	    (strcmp(mode, "words") && strcmp(mode, "chars")) ||
	    size <= VTPU_TOK_RESERVED || size > (1u << 24)) {
		fclose(f);
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s:1: not a vocabulary (\"vtpu-vocab 1 words|chars SIZE\")",
				  path);
	}
	keys = calloc(size - VTPU_TOK_RESERVED, sizeof(*keys));
	if (!keys)
		ret = vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory", path);
	while (!ret && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		lineno++;
		if (!len || line[len - 1] != '\n' || len == 1) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s:%u: %s", path, lineno,
					 line[0] == '\n' ? "an empty token" :
					 "no end of line (truncated or too long)");
			break;
		}
		line[len - 1] = '\0';
		if (!unescape(line)) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s:%u: a bad escape", path, lineno);
			break;
		}
		if (n == size - VTPU_TOK_RESERVED) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s:%u: more tokens than the %u the header says",
					 path, lineno, size);
			break;
		}
		keys[n] = strdup(line);
		if (!keys[n++])
			ret = vtpu__errf(err, errlen, -ENOMEM,
					 "%s: out of memory", path);
	}
	if (!ret && n != size - VTPU_TOK_RESERVED)
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: %u tokens, the header says %u", path,
				 n + VTPU_TOK_RESERVED, size);
	fclose(f);
	if (!ret) {
		ret = vocab_from(v, strcmp(mode, "chars") ? VTPU_TOKENIZE_WORDS :
							    VTPU_TOKENIZE_CHARS,
				 keys, NULL, n);
		if (ret == -EEXIST) {
			vtpu__errf(err, errlen, -EINVAL,
				   "%s:%u: a duplicate token \"%s\"", path,
				   v->size - VTPU_TOK_RESERVED + 1 + 1,
				   keys[v->size - VTPU_TOK_RESERVED]);
			vtpu_vocab_free(v);
			ret = -EINVAL;
		} else if (ret) {
			vtpu__errf(err, errlen, ret, "%s: out of memory", path);
		}
	}
	while (keys && n)
		free(keys[--n]);
	free(keys);
	return ret;
}

uint64_t vtpu_vocab_hash(const struct vtpu_vocab *v)
{
	uint64_t h = fnv1a(FNV_OFFSET, mode_name(v->mode), 5);
	uint32_t i;

	for (i = 0; i < v->size; i++)
		h = fnv1a(h, v->tokens[i], strlen(v->tokens[i]) + 1);
	return h;
}

void vtpu_vocab_fingerprint(const struct vtpu_vocab *v, char *out)
{
	snprintf(out, VTPU_VOCAB_FINGERPRINT_LEN, "%016" PRIx64,
		 vtpu_vocab_hash(v));
}

uint32_t vtpu_vocab_id(const struct vtpu_vocab *v, const char *tok, size_t len)
{
	const struct tok_map *m = v->priv;
	uint32_t *s;

	if (!m || !m->cap)
		return VTPU_TOK_UNK;
	s = map_slot(m, tok, len);
	return *s ? *s - 1 : VTPU_TOK_UNK;
}

struct encode_ctx {
	const struct vtpu_vocab *v;
	uint32_t *ids;
	uint32_t max, n;
};

static int encode_one(void *ctx, const char *tok, size_t len)
{
	struct encode_ctx *e = ctx;

	if (e->n + 1 < e->max)	/* room for <end> */
		e->ids[e->n] = vtpu_vocab_id(e->v, tok, len);
	e->n++;
	return 0;
}

int vtpu_vocab_encode(const struct vtpu_vocab *v, const char *sentence,
		      uint32_t max_len, uint32_t *ids, uint32_t *len, char *err,
		      size_t errlen)
{
	struct encode_ctx e = { v, ids, max_len, 1 };
	char *low;
	uint32_t i;

	if (max_len < 3)
		return vtpu__errf(err, errlen, -EINVAL,
				  "encode: a length of %u leaves no room for a token",
				  max_len);
	low = lower_copy(sentence);
	if (!low)
		return vtpu__errf(err, errlen, -ENOMEM, "encode: out of memory");
	ids[0] = VTPU_TOK_START;
	each_token(low, v->mode, encode_one, &e);
	free(low);
	if (e.n == 1)
		return vtpu__errf(err, errlen, -EINVAL,
				  "encode: an empty sentence");
	if (e.n + 1 > max_len)
		return vtpu__errf(err, errlen, -E2BIG,
				  "encode: %u tokens, more than the %u a length of %u holds",
				  e.n - 1, max_len - 2, max_len);
	ids[e.n++] = VTPU_TOK_END;
	*len = e.n;
	for (i = e.n; i < max_len; i++)
		ids[i] = VTPU_TOK_PAD;
	return 0;
}

size_t vtpu_vocab_decode(const struct vtpu_vocab *v, const uint32_t *ids,
			 uint32_t n, char *out, size_t outlen)
{
	const char *sep = v->mode == VTPU_TOKENIZE_CHARS ? "" : " ";
	size_t need = 0, k;
	uint32_t i;
	bool first = true;

	if (outlen)
		out[0] = '\0';
	for (i = 0; i < n && ids[i] != VTPU_TOK_END; i++) {
		const char *t;

		if (ids[i] == VTPU_TOK_PAD || ids[i] == VTPU_TOK_START)
			continue;
		t = ids[i] < v->size ? v->tokens[ids[i]] : "<?>";
		k = (size_t)snprintf(need < outlen ? out + need : NULL,
				     need < outlen ? outlen - need : 0, "%s%s",
				     first ? "" : sep, t);
		need += k;
		first = false;
	}
	return need;
}

/* ---- length buckets ------------------------------------------------------ */

/* By key (the padded length), then index. */
static int by_key(const void *a, const void *b, void *ctx)
{
	const uint32_t *sort_keys = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (sort_keys[i] != sort_keys[j])
		return sort_keys[i] < sort_keys[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

int vtpu_text_buckets(const uint32_t *lens, uint32_t n, uint32_t width,
		      uint32_t batch, struct vtpu_rng *rng, uint32_t *order,
		      struct vtpu_text_batch *b, uint32_t *nbatches)
{
	uint32_t *key, i, j, nb = 0, cnt = 0;

	*nbatches = 0;
	if (!n || !width || !batch)
		return -EINVAL;
	key = malloc((size_t)n * sizeof(*key));
	if (!key)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!lens[i] || lens[i] > UINT32_MAX - width) {
			free(key);
			return -EINVAL;
		}
		key[i] = (lens[i] + width - 1) / width * width;
		order[i] = i;
	}
	qsort_r(order, n, sizeof(*order), by_key, key);
	/* each bucket is cut into batches */
	for (i = 0; i < n; i = j) {
		uint32_t k;

		for (j = i; j < n && key[order[j]] == key[order[i]]; j++)
			;
		if (rng)
			vtpu_shuffle(order + i, j - i, rng);
		for (k = i; k < j; k += batch) {
			b[cnt].first = k;
			b[cnt].count = j - k < batch ? j - k : batch;
			b[cnt].len = key[order[k]];
			cnt++;
		}
	}
	nb = cnt;
	if (rng) {
		for (i = nb; i > 1; i--) {
			uint32_t r = (uint32_t)vtpu_rng_below(rng, i);
			struct vtpu_text_batch t = b[i - 1];

			b[i - 1] = b[r];
			b[r] = t;
		}
	}
	free(key);
	*nbatches = nb;
	return 0;
}
