/* SPDX-License-Identifier: MIT */
/*
 * An output buffer in front of a FILE, for the renderers: a report with
 * per-thread keys makes a million small appends a second (a row, a number, a
 * separator), which here are a move or two each, and the FILE gets one
 * fwrite per LH_OUT_BYTES. glibc's fwrite copies a piece that is larger than
 * the stream's own buffer straight through (new_do_write), so the bytes are
 * copied about once on their way to the FILE's destination rather than
 * twice (into stdio's buffer, then out of it).
 */
#ifndef LATHIST_OUTBUF_H
#define LATHIST_OUTBUF_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LH_OUT_BYTES (64 * 1024)

struct lh_out {
	FILE *f;
	size_t n;		/* bytes in b, not yet given to f */
	char b[LH_OUT_BYTES];
};

/* Give what b holds to f (its errors stay on f: ferror). */
static inline void lh_out_flush(struct lh_out *o)
{
	if (o->n)
		fwrite(o->b, 1, o->n, o->f);
	o->n = 0;
}

/* Append len bytes of s (inlined: most lengths are constants). */
static inline __attribute__((always_inline)) void lh_out_put(struct lh_out *o, const char *s,
							     size_t len)
{
	if (o->n + len > sizeof(o->b)) {
		lh_out_flush(o);
		if (len > sizeof(o->b)) {
			fwrite(s, 1, len, o->f);
			return;
		}
	}
	memcpy(o->b + o->n, s, len);
	o->n += len;
}

/* Append a NUL-terminated string. */
static inline void lh_out_str(struct lh_out *o, const char *s)
{
	lh_out_put(o, s, strlen(s));
}

/* Append one byte. */
static inline void lh_out_char(struct lh_out *o, char c)
{
	if (o->n == sizeof(o->b))
		lh_out_flush(o);
	o->b[o->n++] = c;
}

/* Room for len (<= LH_OUT_BYTES) bytes at the end of b, to be filled and then
 * kept with lh_out_wrote. */
static inline char *lh_out_room(struct lh_out *o, size_t len)
{
	if (o->n + len > sizeof(o->b))
		lh_out_flush(o);
	return o->b + o->n;
}

/* Keep the len bytes written at lh_out_room's pointer. */
static inline void lh_out_wrote(struct lh_out *o, size_t len)
{
	o->n += len;
}

/* Append as fprintf would (printf's format checks). */
__attribute__((format(printf, 2, 3))) void lh_out_printf(struct lh_out *o, const char *fmt, ...);

/*
 * text as words wrapped before column width, then '\n': the first word goes at
 * column col (where the line stands now), a wrapped line starts with indent spaces.
 * A word longer than a line is not cut.
 */
void lh_out_wrap(struct lh_out *o, const char *text, int col, int indent, int width);

#endif /* LATHIST_OUTBUF_H */
