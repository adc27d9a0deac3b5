// SPDX-License-Identifier: MIT
/*
 * Per-event record lines (--slower-than) against independent writers: JSON
 * against json-c, text against printf. The oracles are the code that wrote
 * the records before recline.c (a json-c object per record, snprintf with
 * doubles); every line must be the same, byte for byte.
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
#include "records.h"
#include "recline.h"
#include "report.h"
#include "runq.h"
#include "runq_cli.h"
#include "bio.h"
#include "bio_cli.h"

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

/* 16 bytes of a comm: printable names, hostile bytes, none or no NUL. */
static void some_comm(char comm[16])
{
	static const char *const names[] = {
		"", "swapper/0", "sched-pipe", "a\"b", "back\\slash", "\"", "\\", "tab\there",
		"nl\nx", "\x7f\x80\xff", "\xc3\xa9t\xc3\xa9", "/\\/", "kworker/u8:0-ev",
	};
	uint64_t r = rnd();

	memset(comm, 0, 16);
	switch (r % 4) {
	case 0:
		snprintf(comm, 16, "%s", names[(r >> 8) % (sizeof(names) / sizeof(names[0]))]);
		break;
	case 1:		/* any bytes, no NUL */
		for (int i = 0; i < 16; i++)
			comm[i] = (char)(1 + rnd() % 255);
		break;
	case 2:		/* any bytes, NULs included */
		for (int i = 0; i < 16; i++)
			comm[i] = (char)rnd();
		break;
	default:	/* bytes JSON and lh_printable escape */
		for (int i = 0; i < 16; i++)
			comm[i] = "\"\\\x01\x1f /\x7f\xff"[rnd() % 8];
		break;
	}
}

static const struct { uint64_t ns; const char *name; } units[] = {
	{ 1, "ns" }, { 1000, "us" }, { 1000000, "ms" },
};

static char *jsonc_line(json_object *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return buf;
}

/* The runq record line as it was written before recline.c. */
static char *old_runq_line(const struct runq_record *r, bool json, uint64_t unit_ns,
			   const char *unit, char *buf, size_t len)
{
	const char *kind = r->kind == RUNQ_PREEMPT ? "preempt" : "wakeup";
	char comm[65], prev[65];

	lh_printable(r->comm, sizeof(r->comm), comm, sizeof(comm));
	lh_printable(r->prev_comm, sizeof(r->prev_comm), prev, sizeof(prev));
	if (json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "ts_ns", json_object_new_uint64(r->ts_ns));
		json_object_object_add(o, "name", json_object_new_string(kind));
		json_object_object_add(o, "latency_ns", json_object_new_uint64(r->latency_ns));
		json_object_object_add(o, "pid", json_object_new_uint64(r->pid));
		json_object_object_add(o, "tid", json_object_new_uint64(r->tid));
		json_object_object_add(o, "comm", json_object_new_string(comm));
		json_object_object_add(o, "cpu", json_object_new_uint64(r->cpu));
		json_object_object_add(o, "start_cpu", json_object_new_uint64(r->start_cpu));
		json_object_object_add(o, "prev_tid", json_object_new_uint64(r->prev_tid));
		json_object_object_add(o, "prev_comm", json_object_new_string(prev));
		return jsonc_line(o, buf, len);
	}
	snprintf(buf, len, "%.6f %-7s %10.3f %s  tid %u pid %u comm %s  cpu %u "
		 "(%s on cpu %u)  after tid %u %s\n",
		 (double)r->ts_ns / 1e9, kind, (double)r->latency_ns / (double)unit_ns, unit, r->tid,
		 r->pid, comm, r->cpu, r->kind == RUNQ_PREEMPT ? "preempted" : "woken",
		 r->start_cpu, r->prev_tid, prev);
	return buf;
}

static void add_ns(json_object *o, const char *name, unsigned long long v)
{
	json_object_object_add(o, name, v == ~0ULL ? NULL : json_object_new_uint64(v));
}

static void stage(unsigned long long ns, double unit_ns, char *buf, size_t len)
{
	if (ns == ~0ULL)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", (double)ns / unit_ns);
}

/* The bio record line as it was written before recline.c. */
static char *old_bio_line(const struct bio_record *r, const char *disk, bool json,
			  uint64_t unit_ns, const char *unit, char *buf, size_t len)
{
	static const char *const op_names[] = { "read", "write", "flush", "discard", "other" };
	const char *op = op_names[r->op <= BIO_OP_OTHER ? r->op : BIO_OP_OTHER];
	double u = (double)unit_ns;
	char comm[65], queue[400], device[400];

	lh_printable(r->comm, sizeof(r->comm), comm, sizeof(comm));
	if (json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "ts_ns", json_object_new_uint64(r->ts_ns));
		add_ns(o, "total_ns", r->total_ns);
		add_ns(o, "queue_ns", r->queue_ns);
		add_ns(o, "device_ns", r->device_ns);
		json_object_object_add(o, "pid", json_object_new_uint64(r->pid));
		json_object_object_add(o, "comm", json_object_new_string(comm));
		json_object_object_add(o, "disk", json_object_new_string(disk));
		json_object_object_add(o, "op", json_object_new_string(op));
		json_object_object_add(o, "bytes", json_object_new_uint64(r->bytes));
		return jsonc_line(o, buf, len);
	}
	stage(r->queue_ns, u, queue, sizeof(queue));
	stage(r->device_ns, u, device, sizeof(device));
	snprintf(buf, len, "%.6f total %10.3f %s (queue %s, device %s)  %s %u bytes  "
		 "disk %s  pid %u comm %s\n", (double)r->ts_ns / 1e9, (double)r->total_ns / u,
		 unit, queue, device, op, r->bytes, disk, r->pid, comm);
	return buf;
}

static void some_runq(struct runq_record *r)
{
	memset(r, 0, sizeof(*r));
	r->type = LH_REC_RUNQ;
	r->kind = rnd() % 4 ? (rnd() % 2 ? RUNQ_PREEMPT : 1) : (unsigned int)rnd();
	r->ts_ns = some_u64();
	r->latency_ns = some_u64();
	r->pid = (unsigned int)some_u64();
	r->tid = (unsigned int)some_u64();
	r->cpu = (unsigned int)some_u64();
	r->start_cpu = (unsigned int)some_u64();
	r->prev_tid = (unsigned int)some_u64();
	some_comm(r->comm);
	some_comm(r->prev_comm);
}

static void some_bio(struct bio_record *r, char disk[32])
{
	memset(r, 0, sizeof(*r));
	r->type = LH_REC_BIO;
	r->op = rnd() % 4 ? (unsigned int)(rnd() % 5) : (unsigned int)rnd();
	r->ts_ns = some_u64();
	r->total_ns = some_u64();
	r->queue_ns = rnd() % 3 ? some_u64() : ~0ULL;
	r->device_ns = rnd() % 3 ? some_u64() : ~0ULL;
	r->pid = (unsigned int)some_u64();
	r->bytes = (unsigned int)some_u64();
	r->dev = (unsigned int)rnd();
	some_comm(r->comm);
	/* a disk name as bio_dev_name leaves it: any bytes up to 31 */
	switch (rnd() % 3) {
	case 0:
		snprintf(disk, 32, "%s", rnd() % 2 ? "vda" : "?");
		break;
	case 1:
		snprintf(disk, 32, "%u:%u", (unsigned int)(rnd() % 4096), (unsigned int)(rnd() % 1048576));
		break;
	default:
		for (int i = 0; i < 31; i++)
			disk[i] = (char)(1 + rnd() % 255);
		disk[rnd() % 32] = 0;
		disk[31] = 0;
		break;
	}
}

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
		/* lh_put_u64 and lh_u64_len (the renderers' numbers) agree with printf */
		assert_int_equal(lh_u64_len(v), strlen(want));
		*lh_put_u64(got, v) = 0;
		assert_string_equal(got, want);
	}
	/* every power of ten and its neighbours, where the digit count turns */
	for (uint64_t p = 1;; p *= 10) {
		uint64_t c[] = { p - 1, p, p + 1 };

		for (int i = 0; i < 3; i++) {
			snprintf(want, sizeof(want), "%" PRIu64, c[i]);
			assert_int_equal(lh_u64_len(c[i]), strlen(want));
		}
		if (p > UINT64_MAX / 10)
			break;
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

static void check_line(const char *want, int got_len, const char *got, const char *what)
{
	if ((size_t)got_len != strlen(want) || strcmp(got, want))
		fail_msg("%s:\n  before: %s  now:    %s", what, want, got);
}

static void test_runq_lines(void **state)
{
	char want[LINE], got[LINE];
	struct runq_record r;
	(void)state;

	for (int n = 0; n < 200000; n++) {
		bool json = n % 2;
		unsigned int u = (unsigned int)(n / 2) % 3;
		int len;

		some_runq(&r);
		old_runq_line(&r, json, units[u].ns, units[u].name, want, sizeof(want));
		len = runq_record_line(&r, json, units[u].ns, units[u].name, got, sizeof(got));
		check_line(want, len, got, json ? "runq JSON" : "runq text");
	}
}

static void test_bio_lines(void **state)
{
	char want[LINE], got[LINE], disk[32];
	struct bio_record r;
	(void)state;

	for (int n = 0; n < 200000; n++) {
		bool json = n % 2;
		unsigned int u = (unsigned int)(n / 2) % 3;
		int len;

		some_bio(&r, disk);
		old_bio_line(&r, disk, json, units[u].ns, units[u].name, want, sizeof(want));
		len = bio_record_line(&r, disk, json, units[u].ns, units[u].name, got, sizeof(got));
		check_line(want, len, got, json ? "bio JSON" : "bio text");
	}
}

/* Every comm byte 0x00-0xff at every place, both comms, both formats. */
static void test_runq_every_byte(void **state)
{
	char want[LINE], got[LINE];
	struct runq_record r;
	(void)state;

	for (int b = 0; b < 256; b++)
		for (int at = 0; at < 16; at++) {
			some_runq(&r);
			memset(r.comm, 'x', sizeof(r.comm));	/* 16 bytes, no NUL */
			r.comm[at] = (char)b;
			memset(r.prev_comm, 0, sizeof(r.prev_comm));
			r.prev_comm[0] = (char)b;
			r.prev_comm[at] = (char)b;
			for (int json = 0; json < 2; json++) {
				int len;

				old_runq_line(&r, json, 1000, "us", want, sizeof(want));
				len = runq_record_line(&r, json, 1000, "us", got, sizeof(got));
				check_line(want, len, got, json ? "runq JSON" : "runq text");
			}
		}
}

/* Too small a buffer: the length needed, never a byte past len, a NUL-terminated
 * beginning of the line. */
static void test_short_buffer(void **state)
{
	char full[LINE], buf[LINE + 16];
	struct runq_record r;
	struct bio_record b;
	char disk[32];
	(void)state;

	for (int n = 0; n < 400; n++) {
		bool json = n % 2;
		int want;

		if (n % 4 < 2) {
			some_runq(&r);
			want = runq_record_line(&r, json, 1000, "us", full, sizeof(full));
		} else {
			some_bio(&b, disk);
			want = bio_record_line(&b, disk, json, 1000, "us", full, sizeof(full));
		}
		for (size_t len = 0; len <= (size_t)want + 1; len++) {
			int got;

			memset(buf, 0x5a, sizeof(buf));
			got = n % 4 < 2 ? runq_record_line(&r, json, 1000, "us", buf, len) :
					  bio_record_line(&b, disk, json, 1000, "us", buf, len);
			assert_int_equal(got, want);
			for (size_t i = len; i < sizeof(buf); i++)
				assert_int_equal((unsigned char)buf[i], 0x5a);
			if (len) {
				size_t kept = strnlen(buf, len);

				assert_true(kept < len);
				assert_memory_equal(buf, full, kept);
				if (len > (size_t)want)
					assert_string_equal(buf, full);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_json_object),
		cmocka_unit_test(test_u64),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_runq_lines),
		cmocka_unit_test(test_bio_lines),
		cmocka_unit_test(test_runq_every_byte),
		cmocka_unit_test(test_short_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
