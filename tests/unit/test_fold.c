// SPDX-License-Identifier: MIT
/* lathist serve's cumulative aggregate (src/report/fold.c): bounded series, exact
 * sums, and no exposed series that ever goes down. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fold.h"

#define S 1000000000ULL

static const struct lh_hist_kind kinds[] = { { "wakeup", "", LH_SCOPE_EVENTS } };

static struct lh_key thread(uint32_t tid)
{
	struct lh_key k = { .fields = LH_KEY_TID | LH_KEY_PID, .tid = tid, .pid = 1,
			    .birth_ns = 1000 + tid };

	return k;
}

/* One interval: counts[i] waits of thread tids[i] (n of them), 1 us each. */
static void interval(struct lh_report *r, const uint32_t *tids, const uint64_t *counts, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->meta.tool = "runq";
	r->meta.kinds = kinds;
	r->meta.nkinds = 1;
	r->meta.scheme.unit_ns = 1000;
	r->meta.duration_ns = S;
	for (size_t i = 0; i < n; i++) {
		struct lh_key k = thread(tids[i]);
		struct lh_hist *h = lh_report_add_hist(r, "wakeup", &k);

		assert_non_null(h);
		h->slots[1] = counts[i];
		h->count = counts[i];
		h->sum_ns = counts[i] * 1000;
		h->max_ns = counts[i] ? 1000 : 0;
	}
	r->counters[LH_EV_ENDS] = 0;
	for (size_t i = 0; i < n; i++)
		r->counters[LH_EV_ENDS] += counts[i];
}

/* One interval of those waits added to f at now (lh_fold_add succeeds). */
static void feed(struct lh_fold *f, const uint32_t *tids, const uint64_t *counts, size_t n,
		 uint64_t now)
{
	struct lh_report r;

	interval(&r, tids, counts, n);
	assert_int_equal(lh_fold_add(f, &r, now), 0);
	lh_report_clear(&r);
}

static uint64_t total(const struct lh_report *r)
{
	uint64_t t = 0;

	for (size_t i = 0; i < r->nhists; i++)
		t += r->hists[i].count;
	return t;
}

/* The count of thread tid's own series; -1 when it has none. */
static long long own(const struct lh_report *r, uint32_t tid)
{
	for (size_t i = 0; i < r->nhists; i++)
		if (!(r->hists[i].key.fields & LH_KEY_OTHER) && r->hists[i].key.tid == tid)
			return (long long)r->hists[i].count;
	return -1;
}

static long long other(const struct lh_report *r)
{
	for (size_t i = 0; i < r->nhists; i++)
		if (r->hists[i].key.fields & LH_KEY_OTHER)
			return (long long)r->hists[i].count;
	return -1;
}

static bool gone_for_good(const struct lh_key *k)
{
	(void)k;
	return false;
}

static void test_cap_other_and_exact_sums(void **state)
{
	struct lh_fold_opts o = { .max_series = 2 };
	uint32_t tids[] = { 1, 2, 3 };
	uint64_t counts[] = { 5, 7, 11 };
	struct lh_fold f;
	(void)state;
	lh_fold_init(&f, &o);
	feed(&f, tids, counts, 3, 1 * S);
	assert_int_equal(own(&f.cum, 1), 5);
	assert_int_equal(own(&f.cum, 2), 7);
	assert_int_equal(own(&f.cum, 3), -1);	/* past the cap: in other */
	assert_int_equal(other(&f.cum), 11);
	assert_int_equal(total(&f.cum), 23);
	assert_int_equal(f.folded, 1);
	assert_int_equal(f.nown, 2);
	assert_int_equal(f.cum.counters[LH_EV_ENDS], 23);
	/* the other key shows "other" in each field of the grouping */
	for (size_t i = 0; i < f.cum.nhists; i++)
		if (f.cum.hists[i].key.fields & LH_KEY_OTHER)
			assert_int_equal(f.cum.hists[i].key.tid, 0);
	feed(&f, tids, counts, 3, 2 * S);
	assert_int_equal(own(&f.cum, 1), 10);
	assert_int_equal(other(&f.cum), 22);
	assert_int_equal(f.folded, 1);		/* each key counted once */
	assert_int_equal(f.cum.meta.duration_ns, 2 * S);
	lh_fold_free(&f);
}

static void test_idle_key_folds_and_room_goes_to_the_busiest(void **state)
{
	struct lh_fold_opts o = { .max_series = 2, .idle_ns = 10 * S };
	uint32_t all[] = { 1, 2, 3, 4 }, later[] = { 2, 3, 4 }, back[] = { 1 };
	uint64_t c1[] = { 5, 7, 11, 1 }, c2[] = { 1, 50, 2 }, c3[] = { 9 };
	struct lh_fold f;
	long long other0;
	(void)state;
	lh_fold_init(&f, &o);
	feed(&f, all, c1, 4, 1 * S);
	other0 = other(&f.cum);
	assert_int_equal(other0, 12);		/* 3 and 4 */
	/* thread 1 goes quiet; 11 s later it has had no event for 10 s: its series goes
	 * (its 5 tallied as retired, not moved into other: rate() would read them as a
	 * burst), and the freed room goes to the busiest waiting (3) */
	feed(&f, later, c2, 3, 12 * S);
	assert_int_equal(own(&f.cum, 1), -1);
	assert_int_equal(f.nown, 2);
	assert_int_equal(f.nretired, 1);
	assert_string_equal(f.retired[0].name, "wakeup");
	assert_int_equal(f.retired[0].count, 5);
	assert_int_equal(total(&f.cum) + f.retired[0].count, 24 + 53);
	/* 3 has the room now, its series from its next interval on: its earlier 11 stay
	 * in other, and this interval's 50 went there too (the room came at its end) */
	assert_int_equal(own(&f.cum, 3), -1);
	assert_int_equal(other(&f.cum), other0 + 50 + 2);
	feed(&f, later, c2, 3, 13 * S);
	assert_int_equal(own(&f.cum, 3), 50);
	/* thread 1 comes back: it had a series, so never again; its counts go to other */
	{
		long long before = other(&f.cum);

		feed(&f, back, c3, 1, 14 * S);
		assert_int_equal(own(&f.cum, 1), -1);
		assert_int_equal(other(&f.cum), before + 9);
	}
	assert_int_equal(f.folded, 3);		/* 3 and 4 waited, 1 retired */
	lh_fold_free(&f);
}

/* Random intervals over many keys: no exposed series ever goes down or comes back,
 * the series' counts and the retired tally add up to every event, the series stay
 * at or under the cap, and what Prometheus's increase() adds up over the series
 * from one scrape to the next (each series now less the same series before, 0 for
 * a new one; a series gone counts nothing) is exactly the interval's events. */
static void test_no_series_goes_down(void **state)
{
	/* the threads here do come back: none may be forgotten (may_return NULL) */
	struct lh_fold_opts o = { .max_series = 8, .idle_ns = 3 * S };
	struct { uint32_t tid; long long n; bool had, gone; } seen[200] = { 0 };
	long long prev_other = -1;
	uint64_t sum = 0;
	struct lh_fold f;
	(void)state;
	srand(7);
	lh_fold_init(&f, &o);
	for (int t = 1; t <= 60; t++) {
		uint32_t tids[20];
		uint64_t counts[20];
		size_t n = (size_t)(rand() % 20);
		struct lh_report r;

		for (size_t i = 0; i < n; i++) {
			/* a storm of short-lived threads beside a few long-lived ones */
			tids[i] = i < 3 ? (uint32_t)(1 + i) : (uint32_t)(1 + rand() % 199);
			counts[i] = (uint64_t)(1 + rand() % 50);
			for (size_t j = 0; j < i; j++)
				if (tids[j] == tids[i])
					tids[i] = 0;
			if (!tids[i])
				counts[i] = 0, tids[i] = 500 + (uint32_t)i;	/* unique, empty */
			sum += counts[i];
		}
		interval(&r, tids, counts, n);
		assert_int_equal(lh_fold_add(&f, &r, (uint64_t)t * S), 0);
		lh_report_clear(&r);
		assert_int_equal(total(&f.cum) + (f.nretired ? f.retired[0].count : 0), sum);
		assert_true(f.nown <= 8);
		{
			long long inc = other(&f.cum) - (prev_other < 0 ? 0 : prev_other);
			uint64_t events = 0;

			for (size_t i = 0; i < n; i++)
				events += counts[i];
			for (uint32_t tid = 1; tid < 200; tid++) {
				long long c = own(&f.cum, tid);

				if (c >= 0)
					inc += c - (seen[tid].n > 0 && !seen[tid].gone ? seen[tid].n : 0);
			}
			assert_int_equal(inc, (long long)events);
			prev_other = other(&f.cum);
		}
		for (uint32_t tid = 1; tid < 200; tid++) {
			long long c = own(&f.cum, tid);

			if (c >= 0) {
				assert_false(seen[tid].gone);		/* never back */
				assert_true(c >= seen[tid].n);		/* never down */
				seen[tid].n = c;
				seen[tid].had = true;
			} else if (seen[tid].had) {
				seen[tid].gone = true;
			}
		}
	}
	lh_fold_free(&f);
}

/* Thread 1 once, then only thread 2 for 4 s (idle 1 s): 1 retires and, 2 x idle
 * later, is forgotten unless o->may_return says it may come back. */
static void one_quiet_key(struct lh_fold *f, const struct lh_fold_opts *o)
{
	uint32_t a[] = { 1 }, b[] = { 2 };
	uint64_t c[] = { 3 };

	lh_fold_init(f, o);
	feed(f, a, c, 1, 1 * S);
	for (uint64_t t = 2; t <= 5; t++)
		feed(f, b, c, 1, t * S);
}

/* A retired key that cannot come back (its task gone) is forgotten after 2 x idle;
 * one that may come back is remembered. */
static void test_forgets_only_what_cannot_return(void **state)
{
	struct lh_fold_opts o = { .max_series = 4, .idle_ns = S, .may_return = gone_for_good };
	struct lh_fold f;
	(void)state;
	one_quiet_key(&f, &o);
	assert_int_equal(f.nkeys, 1);		/* 1 retired, then forgotten */
	assert_int_equal(total(&f.cum) + f.retired[0].count, 15);	/* 1's 3 retired */
	lh_fold_free(&f);
	o.may_return = NULL;			/* unknown: kept */
	one_quiet_key(&f, &o);
	assert_int_equal(f.nkeys, 2);
	lh_fold_free(&f);
}

/* A CPU's (or disk's, or operation's) key keeps its series however long it is idle:
 * there are few, and they stay. */
static void test_cpu_keys_never_idle_out(void **state)
{
	struct lh_fold_opts o = { .max_series = 4, .idle_ns = S };
	struct lh_key cpu = { .fields = LH_KEY_CPU, .cpu = 1 };
	struct lh_report r;
	struct lh_fold f;
	struct lh_hist *h;
	(void)state;
	lh_fold_init(&f, &o);
	for (uint64_t t = 1; t <= 10; t++) {
		interval(&r, NULL, NULL, 0);
		if (t == 1 || t == 10) {	/* events at the start and after 9 s idle */
			h = lh_report_add_hist(&r, "wakeup", &cpu);
			assert_non_null(h);
			h->slots[1] = h->count = 4;
			h->sum_ns = 4000;
			h->max_ns = 1000;
		}
		assert_int_equal(lh_fold_add(&f, &r, t * S), 0);
		lh_report_clear(&r);
	}
	assert_int_equal(f.cum.nhists, 1);
	assert_false(f.cum.hists[0].key.fields & LH_KEY_OTHER);
	assert_int_equal(f.cum.hists[0].count, 8);
	assert_int_equal(f.nretired, 0);
	assert_int_equal(f.nown, 1);
	lh_fold_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_other_and_exact_sums),
		cmocka_unit_test(test_cpu_keys_never_idle_out),
		cmocka_unit_test(test_idle_key_folds_and_room_goes_to_the_busiest),
		cmocka_unit_test(test_no_series_goes_down),
		cmocka_unit_test(test_forgets_only_what_cannot_return),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
