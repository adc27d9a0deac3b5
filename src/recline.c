// SPDX-License-Identifier: MIT
/* Lines for the per-event records without printf or json-c (recline.h). */
#include <stdio.h>
#include <string.h>
#include "recline.h"

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

char *lh_put_u64_back(char *end, uint64_t v)
{
	char *p = end;

	while (v >= 100) {
		unsigned int d = (unsigned int)(v % 100) * 2;

		v /= 100;
		*--p = digit_pairs[d + 1];
		*--p = digit_pairs[d];
	}
	if (v >= 10) {
		*--p = digit_pairs[v * 2 + 1];
		*--p = digit_pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

/* 10^i, i = 0..19 */
static const uint64_t pow10_u64[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

size_t lh_u64_len(uint64_t v)
{
	/* t = floor(bits * log10(2)) (1233 / 4096 = 0.30103), one short of the digits
	 * or right; one compare decides (Bit Twiddling Hacks, "integer log base 10").
	 * A loop dividing by 10 was half of the JSON writer's number time. */
	unsigned int bits = 64 - (unsigned int)__builtin_clzll(v | 1);
	unsigned int t = (bits * 1233) >> 12;
	size_t n = t + (v >= pow10_u64[t]);

	return n ? n : 1;
}

char *lh_put_u64(char *p, uint64_t v)
{
	/* the digits written in place, back from the end: no copy (a memcpy of
	 * a length not known here is a call, in the render's hottest path) */
	size_t n = lh_u64_len(v);

	lh_put_u64_back(p + n, v);
	return p + n;
}

void lh_line_u64(struct lh_line *l, uint64_t v)
{
	char tmp[20], *p = lh_put_u64_back(tmp + sizeof(tmp), v);

	lh_line_mem(l, p, (size_t)(tmp + sizeof(tmp) - p));
}

void lh_line_str_left(struct lh_line *l, const char *s, size_t width)
{
	size_t n = strlen(s);
	char *p;

	lh_line_mem(l, s, n);
	if (n < width && (p = lh_line_room(l, width - n)))
		memset(p, ' ', width - n);
}

static const uint64_t pow10[] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
};

/* printf("%*.*f") for what lh_line_fixed leaves to it, into the line itself. */
static void fixed_printf(struct lh_line *l, double v, unsigned int decimals, unsigned int width)
{
	bool room = l->kept == l->len && l->cap > l->len;
	int n = snprintf(room ? l->buf + l->len : NULL, room ? l->cap - l->len : 0, "%*.*f",
			 (int)width, (int)decimals, v);

	if (n < 0)
		return;
	if (room && (size_t)n < l->cap - l->len)
		l->kept += (size_t)n;
	l->len += (size_t)n;
}

/*
 * v = m * 2^e exactly (IEEE 754 binary64). v * 10^d is then m * 10^d * 2^e:
 * for e >= 0 an integer; for e < 0 the quotient of m * 10^d by 2^-e, rounded
 * by its remainder against half of 2^-e, ties to the even quotient, which is
 * how glibc's printf rounds the exact value in the default rounding mode.
 * m < 2^53 and 10^d <= 10^9 < 2^30, so m * 10^d < 2^83 fits 128 bits; v < 2^64
 * keeps e <= 11, and the integer part below 2^64.
 */
void lh_line_fixed(struct lh_line *l, double v, unsigned int decimals, unsigned int width)
{
	unsigned __int128 n, q;
	uint64_t bits, m, ip, fp;
	int e, exp_field;
	char tmp[40], *end = tmp + sizeof(tmp), *p;
	size_t len;

	memcpy(&bits, &v, sizeof(bits));
	exp_field = (int)((bits >> 52) & 0x7ff);
	/* sign set (-0.0 too), NaN, inf, or 2^64 and up: printf */
	if (decimals >= sizeof(pow10) / sizeof(pow10[0]) || (bits >> 63) || exp_field >= 1023 + 64) {
		fixed_printf(l, v, decimals, width);
		return;
	}
	m = bits & ((1ULL << 52) - 1);
	if (exp_field) {
		m |= 1ULL << 52;
		e = exp_field - 1075;
	} else {
		e = -1074;	/* subnormal or zero */
	}
	n = (unsigned __int128)m * pow10[decimals];
	if (e >= 0) {
		q = n << e;
	} else if (-e >= 128) {
		q = 0;		/* n < 2^83 is below half of 2^-e */
	} else {
		unsigned int s = (unsigned int)-e;
		unsigned __int128 rem = n & (((unsigned __int128)1 << s) - 1),
				  half = (unsigned __int128)1 << (s - 1);

		q = n >> s;
		if (rem > half || (rem == half && (q & 1)))
			q++;
	}
	if (q >> 64) {
		ip = (uint64_t)(q / pow10[decimals]);
		fp = (uint64_t)(q % pow10[decimals]);
	} else {
		ip = (uint64_t)q / pow10[decimals];
		fp = (uint64_t)q % pow10[decimals];
	}
	p = end;
	for (unsigned int i = 0; i < decimals; i++) {
		*--p = (char)('0' + fp % 10);
		fp /= 10;
	}
	if (decimals)
		*--p = '.';
	p = lh_put_u64_back(p, ip);
	len = (size_t)(end - p);
	if (len < width) {
		char *pad = lh_line_room(l, width - len);

		if (pad)
			memset(pad, ' ', width - len);
	}
	lh_line_mem(l, p, len);
}

/* json-c's escape for a byte: 0 for none, 'u' for \u00xx, else the letter after '\' */
static const char escape[256] = {
	[0x00 ... 0x07] = 'u', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', [0x0b] = 'u', ['\f'] = 'f',
	['\r'] = 'r', [0x0e ... 0x1f] = 'u', ['"'] = '"', ['\\'] = '\\',
};
static const char hex[] = "0123456789abcdef";

/* s escaped from p on, room enough assumed (6 bytes a byte); returns the end. */
static char *json_escaped(char *p, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		char e = escape[c];

		if (!e) {
			*p++ = (char)c;
		} else if (e != 'u') {
			*p++ = '\\';
			*p++ = e;
		} else {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 15];
			p += 6;
		}
	}
	return p;
}

void lh_line_json_str(struct lh_line *l, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), need = 2;
	char *p;

	if (l->kept == l->len && l->cap - l->len > 6 * n + 2) {	/* room for the worst */
		p = l->buf + l->len;
		*p++ = '"';
		p = json_escaped(p, u, n);
		*p++ = '"';
		l->len = l->kept = (size_t)(p - l->buf);
		return;
	}
	for (size_t i = 0; i < n; i++)	/* near the end of the buffer: exactly */
		need += !escape[u[i]] ? 1 : escape[u[i]] == 'u' ? 6 : 2;
	p = lh_line_room(l, need);
	if (p) {
		*p++ = '"';
		p = json_escaped(p, u, n);
		*p = '"';
	}
}

int lh_line_end(struct lh_line *l)
{
	lh_line_char(l, '\n');
	if (l->cap)
		l->buf[l->kept] = 0;
	return l->len > INT32_MAX ? INT32_MAX : (int)l->len;
}
