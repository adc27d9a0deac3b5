// SPDX-License-Identifier: MIT
/* Slot math, percentiles, per-CPU merge and 64-bit counts (case C7). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include "hist.h"

/* Reference slot by brute force: the slot whose [lo, hi) holds v. */
static uint32_t slot_by_bounds(uint64_t v, uint32_t p)
{
	for (uint32_t i = 0; i < LH_NSLOTS(p); i++)
		if (v >= lh_slot_lo(i, p) && (v < lh_slot_hi(i, p) || lh_slot_hi(i, p) == UINT64_MAX))
			return i;
	return UINT32_MAX;
}

static void test_log2(void **state)
{
	(void)state;
	assert_int_equal(lh_log2_u64(0), 0);
	assert_int_equal(lh_log2_u64(1), 0);
	for (unsigned int k = 1; k < 64; k++) {
		assert_int_equal(lh_log2_u64(1ULL << k), k);
		assert_int_equal(lh_log2_u64((1ULL << k) - 1), k - 1);
		assert_int_equal(lh_log2_u64((1ULL << k) + 1), k);
	}
	assert_int_equal(lh_log2_u64(UINT64_MAX), 63);
}

static void test_slots_partition_the_range(void **state)
{
	(void)state;
	for (uint32_t p = 0; p <= LH_MAX_PRECISION; p++) {
		uint32_t n = LH_NSLOTS(p);

		assert_int_equal(lh_slot_lo(0, p), 0);
		/* contiguous, increasing, last unbounded */
		for (uint32_t i = 0; i + 1 < n; i++) {
			assert_true(lh_slot_hi(i, p) > lh_slot_lo(i, p));
			assert_int_equal(lh_slot_hi(i, p), lh_slot_lo(i + 1, p));
		}
		assert_true(lh_slot_hi(n - 1, p) == UINT64_MAX);
		/* the last slot starts at its power of two's last sub-slot */
		assert_true(lh_slot_lo(n - 1, p) < (1ULL << (LH_TOP_MSB + 1)));
		assert_true(lh_slot_lo(n - 1, p) >= (1ULL << LH_TOP_MSB));
	}
}

static void test_slot_matches_bounds(void **state)
{
	static const uint64_t probes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33,
					   100, 255, 256, 257, 1000, 1023, 1024, 1025,
					   123456789, 1ULL << 40, (1ULL << 47) - 1, 1ULL << 47,
					   1ULL << 48, (1ULL << 48) + 5, 1ULL << 63, UINT64_MAX };
	(void)state;
	for (uint32_t p = 0; p <= LH_MAX_PRECISION; p++) {
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			uint64_t v = probes[i];
			uint32_t s = lh_slot(v, p);

			assert_true(s < LH_NSLOTS(p));
			assert_int_equal(s, slot_by_bounds(v, p));
		}
		/* every value below 2^12 */
		for (uint64_t v = 0; v < 4096; v++)
			assert_int_equal(lh_slot(v, p), slot_by_bounds(v, p));
	}
}

static void test_runqlat_compatible(void **state)
{
	(void)state;
	/* precision 0: [0,1) [1,2) [2,4) [4,8) ... like runqlat with 0 and 1 apart */
	assert_int_equal(lh_slot(0, 0), 0);
	assert_int_equal(lh_slot(1, 0), 1);
	assert_int_equal(lh_slot(2, 0), 2);
	assert_int_equal(lh_slot(3, 0), 2);
	assert_int_equal(lh_slot(4, 0), 3);
	assert_int_equal(lh_slot(255, 0), 8);
	assert_int_equal(lh_slot(256, 0), 9);
	assert_int_equal(lh_slot_lo(9, 0), 256);
	assert_int_equal(lh_slot_hi(9, 0), 512);
	/* precision 2: four sub-slots per power of two */
	assert_int_equal(lh_slot_lo(lh_slot(256, 2), 2), 256);
	assert_int_equal(lh_slot_hi(lh_slot(256, 2), 2), 320);
	assert_int_equal(lh_slot_lo(lh_slot(511, 2), 2), 448);
}

static void test_quantile(void **state)
{
	struct lh_scheme sc = { 0, 1000 };
	struct lh_hist h;
	(void)state;
	assert_int_equal(lh_hist_init(&h, "wakeup", NULL, &sc), 0);
	assert_int_equal(lh_hist_quantile_slot(&h, 500), -1);
	h.slots[3] = 50;	/* [4,8) */
	h.slots[5] = 49;	/* [16,32) */
	h.slots[10] = 1;	/* [512,1024) */
	h.count = 100;
	assert_int_equal(lh_hist_quantile_slot(&h, 500), 3);
	assert_int_equal(lh_hist_quantile_slot(&h, 510), 5);
	assert_int_equal(lh_hist_quantile_slot(&h, 990), 5);
	assert_int_equal(lh_hist_quantile_slot(&h, 999), 10);
	assert_int_equal(lh_hist_quantile_slot(&h, 1000), 10);
	assert_int_equal(lh_hist_quantile_slot(&h, 0), -1);
	assert_int_equal(lh_hist_quantile_slot(&h, 1001), -1);
	lh_hist_free(&h);
}

/* p90 of 10 values, one per slot, is the 9th (0.9 x 10 is exactly 9, no rounding up) */
static void test_quantile_exact_ranks(void **state)
{
	struct lh_scheme sc = { 0, 1 };
	struct lh_hist h;
	(void)state;
	assert_int_equal(lh_hist_init(&h, "x", NULL, &sc), 0);
	for (int i = 1; i <= 10; i++)
		h.slots[i] = 1;
	h.count = 10;
	assert_int_equal(lh_hist_quantile_slot(&h, 900), 9);
	assert_int_equal(lh_hist_quantile_slot(&h, 500), 5);
	assert_int_equal(lh_hist_quantile_slot(&h, 990), 10);
	memset(h.slots, 0, h.nslots * sizeof(*h.slots));
	h.slots[1] = 54;	/* ranks 1..54 */
	h.slots[2] = 6;		/* ranks 55..60 */
	h.count = 60;
	assert_int_equal(lh_hist_quantile_slot(&h, 900), 1);	/* rank 54 */
	lh_hist_free(&h);
}

/*
 * Percentile bounds under L lost events (DESIGN "Kernel gaps"): 100 events, 50 in
 * slot 3, 49 in slot 5, 1 in slot 10. All L below: the rank ceil((100 + L) q) counts
 * the L first; all L above: the L come after slot 10 (the unbounded last slot).
 */
static void test_quantile_bounds(void **state)
{
	struct lh_scheme sc = { 0, 1000 };
	struct lh_hist h;
	int lo, hi;
	(void)state;
	assert_int_equal(lh_hist_init(&h, "wakeup", NULL, &sc), 0);
	assert_int_equal(lh_hist_quantile_bounds(&h, 500, 3, &lo, &hi), -EINVAL);	/* empty */
	h.slots[3] = 50;
	h.slots[5] = 49;
	h.slots[10] = 1;
	h.count = 100;
	/* no loss: both bounds are the percentile itself */
	for (unsigned int q = 1; q <= 1000; q++) {
		assert_int_equal(lh_hist_quantile_bounds(&h, q, 0, &lo, &hi), 0);
		assert_int_equal(lo, lh_hist_quantile_slot(&h, q));
		assert_int_equal(hi, lo);
	}
	/* 2 lost: p50 rank 51; below: 2 + 50 in slots 0..3 reach it, slot 3; above: 50 < 51,
	 * slot 5. p90 rank 92: below slot 5 (52 + 49), above slot 5: cannot move */
	assert_int_equal(lh_hist_quantile_bounds(&h, 500, 2, &lo, &hi), 0);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 5);
	assert_int_equal(lh_hist_quantile_bounds(&h, 900, 2, &lo, &hi), 0);
	assert_int_equal(lo, 5);
	assert_int_equal(hi, 5);
	/* p99.9 rank ceil(102 x 0.999) = 102: above, past all 100 seen: the last slot */
	assert_int_equal(lh_hist_quantile_bounds(&h, 999, 2, &lo, &hi), 0);
	assert_int_equal(lo, 10);
	assert_int_equal(hi, (int)h.nslots - 1);
	/* 200 lost: p50 rank 150 is among them either way: slot 0 .. the last slot */
	assert_int_equal(lh_hist_quantile_bounds(&h, 500, 200, &lo, &hi), 0);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, (int)h.nslots - 1);
	/* the bounds always hold the percentile between them, whatever L */
	for (uint64_t lost = 0; lost < 300; lost += 7)
		for (unsigned int q = 1; q <= 1000; q += 13) {
			int s = lh_hist_quantile_slot(&h, q);

			assert_int_equal(lh_hist_quantile_bounds(&h, q, lost, &lo, &hi), 0);
			assert_true(lo <= s && s <= hi);
		}
	/* counts near 2^64 do not overflow the rank */
	h.slots[3] = UINT64_MAX - 100;
	h.count = UINT64_MAX - 50;
	assert_int_equal(lh_hist_quantile_bounds(&h, 1000, UINT64_MAX, &lo, &hi), 0);
	assert_int_equal(hi, (int)h.nslots - 1);
	lh_hist_free(&h);
}

/*
 * The one-pass quantiles are the single scans' answers: random histograms
 * (fixed seed), every loss from none to more than the events, near 2^64 too;
 * permilles that are not ascending are refused.
 */
static void test_quantile_slots_match_single_scans(void **state)
{
	static const struct lh_percentile q[] = {
		{ "a", 1 }, { "b", 250 }, { "c", 500 }, { "d", 500 }, { "e", 900 },
		{ "f", 990 }, { "g", 999 }, { "h", 1000 },
	}, bad[] = { { "p90", 900 }, { "p50", 500 } }, zero[] = { { "p0", 0 } };
	const size_t n = sizeof(q) / sizeof(q[0]);
	struct lh_scheme sc = { 0, 1000 };
	int slot[8], low[8], high[8];
	unsigned int seed = 7;
	struct lh_hist h;
	(void)state;
	assert_int_equal(lh_hist_init(&h, "wakeup", NULL, &sc), 0);
	assert_int_equal(lh_hist_quantile_slots(&h, q, n, 0, slot, NULL, NULL), -EINVAL);
	for (int round = 0; round < 2000; round++) {
		uint64_t lost = round % 4 == 0 ? 0 : round % 4 == 1 ? (uint64_t)rand_r(&seed) % 5 :
				round % 4 == 2 ? (uint64_t)rand_r(&seed) % 400 : UINT64_MAX;

		memset(h.slots, 0, h.nslots * sizeof(*h.slots));
		h.count = 0;
		for (int k = rand_r(&seed) % 6 + 1; k; k--) {
			uint32_t i = (uint32_t)rand_r(&seed) % h.nslots;
			uint64_t c = round % 50 == 49 ? UINT64_MAX / 8 : (uint64_t)rand_r(&seed) % 100 + 1;

			h.slots[i] += c;
			h.count += c;
		}
		assert_int_equal(lh_hist_quantile_slots(&h, q, n, lost, slot, low, high), 0);
		for (size_t i = 0; i < n; i++) {
			int lo, hi;

			assert_int_equal(slot[i], lh_hist_quantile_slot(&h, q[i].permille));
			assert_int_equal(lh_hist_quantile_bounds(&h, q[i].permille, lost, &lo, &hi), 0);
			assert_int_equal(low[i], lo);
			assert_int_equal(high[i], hi);
		}
	}
	/* a count with no slot behind it (no real histogram): the last slot, as a scan says */
	memset(h.slots, 0, h.nslots * sizeof(*h.slots));
	h.count = 5;
	assert_int_equal(lh_hist_quantile_slots(&h, q, n, 3, slot, low, high), 0);
	for (size_t i = 0; i < n; i++) {
		int lo, hi;

		assert_int_equal(slot[i], lh_hist_quantile_slot(&h, q[i].permille));
		assert_int_equal(lh_hist_quantile_bounds(&h, q[i].permille, 3, &lo, &hi), 0);
		assert_int_equal(low[i], lo);
		assert_int_equal(high[i], hi);
	}
	assert_int_equal(lh_hist_quantile_slots(&h, bad, 2, 0, slot, NULL, NULL), -EINVAL);
	assert_int_equal(lh_hist_quantile_slots(&h, zero, 1, 0, slot, NULL, NULL), -EINVAL);
	assert_int_equal(lh_hist_quantile_slots(&h, q, LH_MAX_QUANTILES + 1, 0, slot, NULL, NULL),
			 -EINVAL);
	lh_hist_free(&h);
}

/* Build one CPU's BPF value: head then nslots counters. */
static void *raw_value(uint32_t nslots, uint64_t sum, uint64_t max, const char *comm)
{
	struct lh_hist_head *head = calloc(1, sizeof(*head) + 8 * nslots);

	head->sum_ns = sum;
	head->max_ns = max;
	if (comm)
		strncpy(head->comm, comm, sizeof(head->comm) - 1);
	return head;
}

static void test_percpu_merge(void **state)
{
	struct lh_scheme sc = { 0, 1 };
	struct lh_key key = { .fields = LH_KEY_PID | LH_KEY_COMM, .pid = 42 };
	uint32_t n = LH_NSLOTS(0);
	struct lh_hist h;
	void *cpu0 = raw_value(n, 100, 60, NULL), *cpu1 = raw_value(n, 40, 70, "worker");
	(void)state;
	((uint64_t *)((struct lh_hist_head *)cpu0 + 1))[3] = 2;
	((uint64_t *)((struct lh_hist_head *)cpu1 + 1))[3] = 1;
	((uint64_t *)((struct lh_hist_head *)cpu1 + 1))[7] = 4;
	assert_int_equal(lh_hist_init(&h, "preempt", &key, &sc), 0);
	lh_hist_add_raw(&h, cpu0);
	lh_hist_add_raw(&h, cpu1);
	assert_int_equal(h.count, 7);
	assert_int_equal(h.slots[3], 3);
	assert_int_equal(h.slots[7], 4);
	assert_int_equal(h.sum_ns, 140);
	assert_int_equal(h.max_ns, 70);
	assert_string_equal(h.key.comm, "worker");	/* first CPU copy that has one */
	free(cpu0);
	free(cpu1);
	lh_hist_free(&h);
}

/* C7: more than 2^32 events in a slot: 64-bit, no wrap; saturate at 2^64-1. */
static void test_counts_beyond_2_32(void **state)
{
	struct lh_scheme sc = { 0, 1 };
	uint32_t n = LH_NSLOTS(0);
	struct lh_hist a, b;
	void *cpu = raw_value(n, 0, 0, NULL);
	uint64_t *slots = (uint64_t *)((struct lh_hist_head *)cpu + 1);
	(void)state;
	slots[5] = (1ULL << 32) - 1;
	assert_int_equal(lh_hist_init(&a, "wakeup", NULL, &sc), 0);
	assert_int_equal(lh_hist_init(&b, "wakeup", NULL, &sc), 0);
	lh_hist_add_raw(&a, cpu);
	lh_hist_add_raw(&a, cpu);	/* two CPUs with 2^32-1 each */
	assert_true(a.slots[5] == 2 * ((1ULL << 32) - 1));
	assert_true(a.count == 2 * ((1ULL << 32) - 1));
	b.slots[5] = 3ULL << 32;
	b.count = 3ULL << 32;
	assert_int_equal(lh_hist_merge(&a, &b), 0);
	assert_true(a.slots[5] == 2 * ((1ULL << 32) - 1) + (3ULL << 32));
	assert_int_equal(lh_hist_quantile_slot(&a, 999), 5);
	b.slots[5] = UINT64_MAX;
	b.count = UINT64_MAX;
	assert_int_equal(lh_hist_merge(&a, &b), 0);
	assert_true(a.slots[5] == UINT64_MAX);
	assert_true(a.count == UINT64_MAX);
	free(cpu);
	lh_hist_free(&a);
	lh_hist_free(&b);
}

static void test_merge_mismatch(void **state)
{
	struct lh_scheme s0 = { 0, 1 }, s3 = { 3, 1 };
	struct lh_hist a, b;
	(void)state;
	assert_int_equal(lh_hist_init(&a, "x", NULL, &s0), 0);
	assert_int_equal(lh_hist_init(&b, "x", NULL, &s3), 0);
	assert_int_equal(lh_hist_merge(&a, &b), -EINVAL);
	lh_hist_free(&a);
	lh_hist_free(&b);
}

/* C9: a latency equal to a bound is counted in the slot it bounds (upper bounds inclusive). */
static void test_value_slot_upper_inclusive(void **state)
{
	(void)state;
	for (uint32_t p = 0; p <= LH_MAX_PRECISION; p++)
		for (uint64_t unit = 1; unit <= 1000000; unit *= 1000)
			for (uint32_t i = 1; i + 1 < LH_NSLOTS(p) && lh_slot_hi(i, p) < (1ULL << 40);
			     i++) {
				uint64_t lo = lh_slot_lo(i, p) * unit, hi = lh_slot_hi(i, p) * unit;

				assert_int_equal(lh_value_slot(hi, unit, p), i);
				assert_int_equal(lh_value_slot(lo + 1, unit, p), i);
				assert_int_equal(lh_value_slot(lo, unit, p), i - 1);
				assert_int_equal(lh_value_slot(hi + 1, unit, p), i + 1);
			}
	/* 256 us in a log2 us histogram: (128, 256], not (256, 512] */
	assert_int_equal(lh_slot_hi(lh_value_slot(256000, 1000, 0), 0), 256);
	assert_int_equal(lh_slot_lo(lh_value_slot(256001, 1000, 0), 0), 256);
	assert_int_equal(lh_value_slot(0, 1000, 0), 0);
	assert_int_equal(lh_value_slot(1000, 1000, 0), 0);	/* [0, 1] us */
	assert_int_equal(lh_value_slot(1001, 1000, 0), 1);	/* (1, 2] us */
	assert_int_equal(lh_value_slot(UINT64_MAX, 1, 0), LH_NSLOTS(0) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value_slot_upper_inclusive),
		cmocka_unit_test(test_log2),
		cmocka_unit_test(test_slots_partition_the_range),
		cmocka_unit_test(test_slot_matches_bounds),
		cmocka_unit_test(test_runqlat_compatible),
		cmocka_unit_test(test_quantile),
		cmocka_unit_test(test_quantile_exact_ranks),
		cmocka_unit_test(test_quantile_bounds),
		cmocka_unit_test(test_quantile_slots_match_single_scans),
		cmocka_unit_test(test_percpu_merge),
		cmocka_unit_test(test_counts_beyond_2_32),
		cmocka_unit_test(test_merge_mismatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
