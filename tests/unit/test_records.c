// SPDX-License-Identifier: MIT
/*
 * The record line writer (recline.c) against independent writers: JSON
 * strings against json-c, numbers against printf, byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "recline.h"

#define LINE 4096

/* splitmix64: a fixed seed, the same values every run */
static uint64_t rng_state = 0x6c617468697374ULL;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A u64 of every magnitude: extremes, random bit lengths, and values ending in
 * 500 (a tie at %.6f of ns / 1e9 before the double rounds it). */
static uint64_t some_u64(void)
{
	static const uint64_t edge[] = {
		0, 1, 499, 500, 501, 999, 1000, 1500, 2500, UINT32_MAX, 1ULL << 32,
		(1ULL << 53) - 1, 1ULL << 53, (1ULL << 53) + 1, 1ULL << 63, UINT64_MAX - 1,
		UINT64_MAX, 9007199254740993ULL, 18446744073709550592ULL, 999999999999999500ULL,
	};
	uint64_t r = rnd();

	switch (r % 5) {
	case 0:
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return rnd() >> (rnd() % 64);
	case 2:
		return (rnd() >> (rnd() % 64)) / 1000 * 1000 + 500;
	case 3:
		return 1000000000ULL * (rnd() % 10000000) + rnd() % 1000000000ULL;	/* a clock */
	default:
		return rnd() % 100000000;	/* a latency up to 100 ms */
	}
}

static const struct { uint64_t ns; const char *name; } units[] = {
	{ 1, "ns" }, { 1000, "us" }, { 1000000, "ms" },
};

static void test_json_string(void **state)
{
	char s[512], want[LINE], got[LINE];
	struct lh_line l;
	(void)state;

	/* each byte alone, inside a string, and all of them in one */
	for (int b = 1; b < 256; b++) {
		for (int form = 0; form < 2; form++) {
			json_object *o;

			if (form)
				snprintf(s, sizeof(s), "a%cz/", b);
			else
				snprintf(s, sizeof(s), "%c", b);
			o = json_object_new_string(s);
			snprintf(want, sizeof(want), "%s", json_object_to_json_string_ext(o,
				 JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(o);
			lh_line_init(&l, got, sizeof(got));
			lh_line_json_str(&l, s);
			assert_int_equal(l.len, strlen(want));
			got[l.len] = 0;
			assert_string_equal(got, want);
		}
	}
	for (int b = 1; b < 256; b++)
		s[b - 1] = (char)b;
	s[255] = 0;
	for (int n = 0; n < 20000; n++) {
		json_object *o;

		if (n) {	/* random strings of any bytes, the first one all of them */
			size_t len = rnd() % 64;

			for (size_t i = 0; i < len; i++)
				s[i] = (char)(1 + rnd() % 255);
			s[len] = 0;
		}
		o = json_object_new_string(s);
		snprintf(want, sizeof(want), "%s", json_object_to_json_string_ext(o,
			 JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
		lh_line_init(&l, got, sizeof(got));
		lh_line_json_str(&l, s);
		got[l.len] = 0;
		assert_string_equal(got, want);
	}
}

/* Objects of u64, string and null members against json-c's. */
static void test_json_object(void **state)
{
	static const char *const keys[] = { "ts_ns", "name", "a", "queue_ns", "x_y", "disk" };
	char s[64], want[LINE], got[LINE];
	struct lh_line l;
	(void)state;

	for (int n = 0; n < 20000; n++) {
		json_object *o = json_object_new_object();
		int members = (int)(rnd() % 7);

		lh_line_init(&l, got, sizeof(got));
		lh_json_begin(&l);
		for (int i = 0; i < members; i++) {
			/* json-c keeps one member per key: keys made distinct */
			char key[32];
			uint64_t v = some_u64();

			snprintf(key, sizeof(key), "%s%d", keys[rnd() % 6], i);
			switch (rnd() % 3) {
			case 0:
				json_object_object_add(o, key, json_object_new_uint64(v));
				lh_json_u64(&l, key, v);
				break;
			case 1:
				for (size_t j = 0, len = rnd() % 20; j <= len; j++)
					s[j] = j == len ? 0 : (char)(1 + rnd() % 255);
				json_object_object_add(o, key, json_object_new_string(s));
				lh_json_string(&l, key, s);
				break;
			default:
				json_object_object_add(o, key, NULL);
				lh_json_null(&l, key);
				break;
			}
		}
		lh_json_end(&l);
		snprintf(want, sizeof(want), "%s\n", json_object_to_json_string_ext(o,
			 JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
		assert_int_equal(lh_line_end(&l), strlen(want));
		assert_string_equal(got, want);
	}
}

static void test_u64(void **state)
{
	char want[32], got[32];
	struct lh_line l;
	(void)state;

	for (int n = 0; n < 200000; n++) {
		uint64_t v = n < 64 ? 1ULL << n : n < 128 ? (1ULL << (n - 64)) - 1 :
			     n < 148 ? UINT64_MAX - (uint64_t)(n - 128) : some_u64();

		snprintf(want, sizeof(want), "%" PRIu64, v);
		lh_line_init(&l, got, sizeof(got));
		lh_line_u64(&l, v);
		assert_int_equal(lh_line_end(&l), strlen(want) + 1);
		assert_int_equal(got[l.len - 1], '\n');
		got[l.len - 1] = 0;
		assert_string_equal(got, want);
	}
}

static void check_fixed(double v, unsigned int dec, unsigned int width)
{
	char want[LINE], got[LINE];
	struct lh_line l;

	snprintf(want, sizeof(want), "%*.*f", (int)width, (int)dec, v);
	lh_line_init(&l, got, sizeof(got));
	lh_line_fixed(&l, v, dec, width);
	assert_int_equal(lh_line_end(&l), strlen(want) + 1);
	got[l.len - 1] = 0;
	if (strcmp(got, want))
		fail_msg("%%*.*f of %a (%u decimals, width %u): printf '%s', lh_line_fixed '%s'", v,
			 dec, width, want, got);
}

static void test_fixed(void **state)
{
	static const double edge[] = {
		0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 0.0005, 0.0015, 1e-9, 4.9e-324,
		2.2250738585072014e-308, 18446744073709549568.0, 18446744073709551616.0,
		9007199254740993.0, 1e300, -1.5, INFINITY, -INFINITY, NAN,
	};
	(void)state;

	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		for (unsigned int dec = 0; dec <= 10; dec++)
			for (unsigned int w = 0; w <= 12; w += 4)
				check_fixed(edge[i], dec, w);
	for (int n = 0; n < 300000; n++) {
		unsigned int dec = n % 3 ? (n % 3 == 1 ? 3 : 6) : (unsigned int)(rnd() % 10);
		unsigned int w = rnd() % 2 ? 10 : (unsigned int)(rnd() % 24);
		uint64_t bits = rnd();
		double v;

		switch (n % 4) {
		case 0:		/* any bit pattern, sign clear: every exponent */
			bits &= ~(1ULL << 63);
			memcpy(&v, &bits, sizeof(v));
			break;
		case 1:		/* what records divide: ns by a unit */
			v = (double)some_u64() / (double)units[rnd() % 3].ns;
			break;
		case 2:		/* ns by 1e9, as the time stamps are */
			v = (double)some_u64() / 1e9;
			break;
		default:	/* a tie: an odd multiple of 2^-(dec + 1), exact in binary */
			v = ldexp((double)((rnd() >> (rnd() % 64)) | 1), -(int)dec - 1);
			break;
		}
		check_fixed(v, dec, w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_json_object),
		cmocka_unit_test(test_u64),
		cmocka_unit_test(test_fixed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
