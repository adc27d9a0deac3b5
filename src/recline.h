/* SPDX-License-Identifier: MIT */
/*
 * A line written into a caller's buffer, for the per-event records
 * (--slower-than): decimal integers, fixed-point numbers and JSON strings
 * appended without printf, allocation or a json-c tree.
 *
 * The output is the same, byte for byte, as what the records were written
 * with before: lh_line_u64 as printf's "%" PRIu64, lh_line_fixed as printf's
 * "%*.*f" (glibc: the exact binary value, rounded half to even),
 * lh_line_json_str and the lh_json_* members as json-c's
 * json_object_to_json_string_ext(JSON_C_TO_STRING_PLAIN |
 * JSON_C_TO_STRING_NOSLASHESCAPE). tests/unit/test_records.c checks each
 * against printf and json-c.
 *
 * Appends never write past the buffer and count the bytes the line needs,
 * like snprintf: once one does not fit, it and all later ones write nothing,
 * and buf holds the line up to there.
 */
#ifndef LATHIST_RECLINE_H
#define LATHIST_RECLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct lh_line {
	char *buf;
	size_t cap;		/* bytes of buf, its terminating NUL included */
	size_t len;		/* bytes the line needs so far (>= cap: it did not fit) */
	size_t kept;		/* bytes written into buf (len, until one did not fit) */
	bool first;		/* inside a JSON object with no member yet */
};

/* Start an empty line in buf (cap bytes; cap 0 writes nothing). */
static inline void lh_line_init(struct lh_line *l, char *buf, size_t cap)
{
	l->buf = buf;
	l->cap = cap;
	l->len = l->kept = 0;
	l->first = false;
}

/* Where n more bytes go, or NULL when they do not fit (nothing is written then
 * or later); either way they are counted. */
static inline char *lh_line_room(struct lh_line *l, size_t n)
{
	char *p = NULL;

	if (l->kept == l->len && l->cap - l->len > n) {	/* and room for the NUL */
		p = l->buf + l->len;
		l->kept += n;
	}
	l->len += n;
	return p;
}

/* Append n bytes of s as they are. */
static inline void lh_line_mem(struct lh_line *l, const char *s, size_t n)
{
	char *p = lh_line_room(l, n);

	if (p)
		memcpy(p, s, n);
}

/* Append a NUL-terminated string as it is. */
static inline void lh_line_str(struct lh_line *l, const char *s)
{
	lh_line_mem(l, s, strlen(s));
}

/* Append one byte. */
static inline void lh_line_char(struct lh_line *l, char c)
{
	char *p = lh_line_room(l, 1);

	if (p)
		*p = c;
}

/* Append s and then spaces up to width bytes (printf's "%-*s"). */
void lh_line_str_left(struct lh_line *l, const char *s, size_t width);

/* Append v in decimal (printf's "%" PRIu64). */
void lh_line_u64(struct lh_line *l, uint64_t v);

/* v in decimal (printf's "%" PRIu64) at p, 1 to 20 bytes and no NUL; returns
 * the end. The one decimal writer of the text, JSON and record outputs. */
char *lh_put_u64(char *p, uint64_t v);
/* The number of decimal digits of v (1 for 0). */
size_t lh_u64_len(uint64_t v);
/* v in decimal written backwards, ending at end (no NUL); returns where it
 * starts, end - lh_u64_len(v): for a caller that knows the length already. */
char *lh_put_u64_back(char *end, uint64_t v);

/*
 * Append v with decimals digits after the point (0..9; none and no point for 0),
 * right-aligned in width bytes: printf's "%*.*f". Done in integers for a
 * non-negative finite v below 2^64 (the exact binary value scaled by
 * 10^decimals, rounded half to even, as glibc rounds it); anything else goes
 * through snprintf.
 */
void lh_line_fixed(struct lh_line *l, double v, unsigned int decimals, unsigned int width);

/*
 * Append s (NUL-terminated) as a JSON string the way json-c writes it with
 * JSON_C_TO_STRING_NOSLASHESCAPE: in double quotes; '"' and '\' escaped with a
 * backslash; \b \t \n \f \r as such; the other bytes below 0x20 as \u00xx
 * (lowercase hex); every other byte as it is ('/', 0x7f and bytes of 0x80 and
 * up included: json-c does not check UTF-8).
 */
void lh_line_json_str(struct lh_line *l, const char *s);

/* A JSON object's braces; members in between come in the order they are added. */
static inline void lh_json_begin(struct lh_line *l)
{
	lh_line_char(l, '{');
	l->first = true;
}

static inline void lh_json_end(struct lh_line *l)
{
	lh_line_char(l, '}');
	l->first = false;
}

/* A member's "key": (after a comma but for an object's first). key is written
 * as it is: plain ASCII that JSON needs no escape for (the records' own names). */
static inline void lh_json_key(struct lh_line *l, const char *key)
{
	size_t n = strlen(key);
	char *p = lh_line_room(l, n + 3 + !l->first);

	if (p) {
		if (!l->first)
			*p++ = ',';
		*p++ = '"';
		memcpy(p, key, n);
		p[n] = '"';
		p[n + 1] = ':';
	}
	l->first = false;
}

/* Members "key":value (a decimal, a string as lh_line_json_str writes it, null). */
static inline void lh_json_u64(struct lh_line *l, const char *key, uint64_t v)
{
	lh_json_key(l, key);
	lh_line_u64(l, v);
}

static inline void lh_json_string(struct lh_line *l, const char *key, const char *v)
{
	lh_json_key(l, key);
	lh_line_json_str(l, v);
}

static inline void lh_json_null(struct lh_line *l, const char *key)
{
	lh_json_key(l, key);
	lh_line_mem(l, "null", 4);
}

/*
 * End the line with '\n' and a NUL. Returns the line's length without the NUL,
 * as snprintf does: >= cap means it did not fit (buf then holds what did, up
 * to a whole append, NUL-terminated when cap > 0). INT32_MAX at most.
 */
int lh_line_end(struct lh_line *l);

#endif /* LATHIST_RECLINE_H */
