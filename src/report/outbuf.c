// SPDX-License-Identifier: MIT
/* The renderers' output buffer (outbuf.h): its one formatted append. */
#include <stdlib.h>
#include "outbuf.h"

void lh_out_printf(struct lh_out *o, const char *fmt, ...)
{
	size_t room = sizeof(o->b) - o->n;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->b + o->n, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < room) {			/* it fit, with vsnprintf's NUL after it */
		o->n += (size_t)n;
		return;
	}
	lh_out_flush(o);			/* cut: again after what came before */
	va_start(ap, fmt);
	if ((size_t)n < sizeof(o->b))
		o->n = (size_t)vsnprintf(o->b, sizeof(o->b), fmt, ap);
	else
		vfprintf(o->f, fmt, ap);	/* longer than b: straight to the stream */
	va_end(ap);
}
