// SPDX-License-Identifier: MIT
/* The renderers' output buffer (outbuf.h): its one formatted append. */
#include <stdbool.h>
#include <stdlib.h>
#include "outbuf.h"

void lh_out_printf(struct lh_out *o, const char *fmt, ...)
{
	size_t room = sizeof(o->b) - o->n;
	va_list ap;
	int n, m;

	va_start(ap, fmt);
	n = vsnprintf(o->b + o->n, room, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < room) {	/* it fit, with vsnprintf's NUL after it */
		o->n += (size_t)n;
		return;
	}
	lh_out_flush(o);			/* cut: again after what came before */
	if (n >= 0 && (size_t)n < sizeof(o->b)) {
		va_start(ap, fmt);
		m = vsnprintf(o->b, sizeof(o->b), fmt, ap);
		va_end(ap);
		if (m == n) {			/* the n bytes of the first try, whole */
			o->n = (size_t)n;
			return;
		}
	}
	va_start(ap, fmt);			/* longer than b (or failed): to the stream, */
	vfprintf(o->f, fmt, ap);		/* whose error ferror tells */
	va_end(ap);
}

void lh_out_wrap(struct lh_out *o, const char *text, int col, int indent, int width)
{
	bool fresh = true;	/* no word on this line yet */

	while (*text == ' ')
		text++;
	while (*text) {
		int len = (int)strcspn(text, " ");

		if (!fresh && col + 1 + len > width) {
			lh_out_char(o, '\n');
			for (col = 0; col < indent; col++)
				lh_out_char(o, ' ');
			fresh = true;
		}
		if (!fresh) {
			lh_out_char(o, ' ');
			col++;
		}
		lh_out_put(o, text, (size_t)len);
		col += len;
		fresh = false;
		text += len;
		while (*text == ' ')
			text++;
	}
	lh_out_char(o, '\n');
}
