// SPDX-License-Identifier: MIT
/* Loss classes, per-CPU sums and the bias rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "counters_user.h"
#include "registry.h"
#include "report.h"

static void test_every_counter_named(void **state)
{
	(void)state;
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);

		assert_non_null(ci);
		assert_non_null(ci->name);
		/* every class means something to a tool, in its own words */
		assert_true(lh_tool_find("runq")->counter_desc[i] || lh_tool_find("bio")->counter_desc[i]);
		assert_int_equal(ci->loss, i >= LH_FIRST_LOSS);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ci->name, lh_counter_info(j)->name);
	}
	assert_null(lh_counter_info(LH_NR_COUNTERS));
	assert_null(lh_counter_info(-1));
}

/* Each tool's descriptions speak of that tool only (runq of tasks and switch-ins,
 * bio of requests). */
static void test_each_tool_speaks_of_itself(void **state)
{
	const char *const *runq = lh_tool_find("runq")->counter_desc;
	const char *const *bio = lh_tool_find("bio")->counter_desc;
	(void)state;
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		if (runq[i]) {
			assert_null(strstr(runq[i], "bio"));
			assert_null(strstr(runq[i], "request"));
			assert_null(strstr(runq[i], "--max-requests"));
		}
		if (bio[i]) {
			assert_null(strstr(bio[i], "runq"));
			assert_null(strstr(bio[i], "switch-in"));
			assert_null(strstr(bio[i], "--max-tasks"));
		}
	}
}

static void test_sum_percpu(void **state)
{
	struct lh_counters pc[3] = {};
	uint64_t out[LH_NR_COUNTERS];
	(void)state;
	pc[0].v[LH_EV_ENDS] = 10;
	pc[2].v[LH_EV_ENDS] = 5;
	pc[1].v[LH_LOSS_UNPAIRED] = UINT64_MAX;
	pc[2].v[LH_LOSS_UNPAIRED] = 1;	/* saturates, never wraps */
	lh_counters_sum(out, pc, 3);
	assert_true(out[LH_EV_ENDS] == 15);
	assert_true(out[LH_LOSS_UNPAIRED] == UINT64_MAX);
}

static void test_bias_rule(void **state)
{
	uint64_t v[LH_NR_COUNTERS] = {};
	char *r[LH_NR_COUNTERS];
	size_t n;
	(void)state;
	v[LH_EV_ENDS] = 1000;
	v[LH_EV_PAIRED] = 990;
	v[LH_EV_BEFORE_TRACE] = 7;	/* coverage, not a loss */
	v[LH_EV_FILTERED] = 500;	/* not a loss */
	assert_int_equal(lh_bias_reasons(v, 0, r, LH_NR_COUNTERS), 0);
	assert_true(lh_counters_lost(v) == 0);
	v[LH_LOSS_UNPAIRED] = 2;
	v[LH_LOSS_HIST_E2BIG] = 1;
	n = lh_bias_reasons(v, 0, r, LH_NR_COUNTERS);
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "unpaired_no_start: 2 (0.20% of events)");
	assert_string_equal(r[1], "hist_map_full: 1 (0.10% of events)");
	for (size_t i = 0; i < n; i++)
		free(r[i]);
	v[LH_LOSS_START_E2BIG] = 5;	/* counted at starts: not a share of events */
	n = lh_bias_reasons(v, 0, r, LH_NR_COUNTERS);
	assert_int_equal(n, 3);
	assert_string_equal(r[1], "start_map_full: 5");
	v[LH_LOSS_START_E2BIG] = 0;
	assert_true(lh_counters_lost(v) == 3);	/* start_map_full reset above */
	for (size_t i = 0; i < n; i++)
		free(r[i]);
	/* with slices traced, a full map fails slices too: hist_map_full is no share of
	 * events (it showed 199.09%), unpaired_no_start still is */
	n = lh_bias_reasons(v, LH_FEAT_ONCPU, r, LH_NR_COUNTERS);
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "unpaired_no_start: 2 (0.20% of events)");
	assert_string_equal(r[1], "hist_map_full: 1");
	for (size_t i = 0; i < n; i++)
		free(r[i]);
	assert_false(lh_counter_of_events(LH_LOSS_NEGATIVE, LH_FEAT_COUNTERS));
	assert_true(lh_counter_of_events(LH_LOSS_NEGATIVE, 0));
	assert_true(lh_counter_of_events(LH_EV_PAIRED, LH_FEAT_COUNTERS));
	assert_false(lh_counter_of_events(LH_LOSS_START_E2BIG, 0));
	v[LH_EV_ENDS] = 0;	/* losses with no events still flag */
	n = lh_bias_reasons(v, 0, r, 1);
	assert_int_equal(n, 1);
	assert_string_equal(r[0], "unpaired_no_start: 2");
	free(r[0]);
}

static void test_ringbuf_drops(void **state)
{
	uint64_t v[LH_NR_COUNTERS] = {};
	char *r[LH_NR_COUNTERS];
	size_t n;
	(void)state;
	v[LH_EV_ENDS] = 1000;
	v[LH_EV_PAIRED] = 1000;
	v[LH_EV_RB_ELIGIBLE] = 400;
	v[LH_LOSS_RINGBUF] = 100;	/* a share of the records, not of the events */
	n = lh_bias_reasons(v, 0, r, LH_NR_COUNTERS);
	assert_int_equal(n, 1);
	assert_string_equal(r[0], "ringbuf_drop: 100 (25.00% of records)");
	free(r[0]);
	assert_true(lh_counters_lost(v) == 100);
	assert_true(lh_hist_lost(v) == 0);	/* the histograms still hold every event */
	v[LH_LOSS_UNPAIRED] = 3;
	assert_true(lh_counters_lost(v) == 103);
	assert_true(lh_hist_lost(v) == 3);
	assert_true(lh_counter_info(LH_LOSS_RINGBUF)->needs == LH_FEAT_RECORDS);
	assert_true(lh_counter_info(LH_EV_RB_ELIGIBLE)->needs == LH_FEAT_RECORDS);
	assert_true(lh_counter_info(LH_LOSS_UNPAIRED)->needs == 0);
}

#define TREND(ev, lost) lh_loss_trend(ev, lost, sizeof(ev) / sizeof(ev[0]))

static void test_loss_trend(void **state)
{
	(void)state;
	/* the same 1% at every load: flat */
	uint64_t ev1[] = { 1000, 2000, 3000, 4000 }, ls1[] = { 10, 20, 30, 40 };
	assert_int_equal(TREND(ev1, ls1), LH_TREND_FLAT);
	/* busy intervals lose 1-1.6%, quiet ones ~0.05%: rises, whatever the order */
	uint64_t ev2[] = { 5000, 1000, 5000, 1000, 3000 }, ls2[] = { 50, 0, 80, 1, 2 };
	assert_int_equal(TREND(ev2, ls2), LH_TREND_RISES);
	/* losses at a quiet start (tasks already waiting), none under load: flat */
	uint64_t ev3[] = { 100, 5000, 5000, 5000 }, ls3[] = { 20, 0, 1, 0 };
	assert_int_equal(TREND(ev3, ls3), LH_TREND_FLAT);
	/* 1.5x is the bound: 1.2% against 1% is not a rise */
	uint64_t ev4[] = { 1000, 1000, 2000, 2000 }, ls4[] = { 10, 10, 24, 24 };
	assert_int_equal(TREND(ev4, ls4), LH_TREND_FLAT);
	uint64_t ls5[] = { 10, 10, 31, 31 };
	assert_int_equal(TREND(ev4, ls5), LH_TREND_RISES);
	/* too few intervals, too few losses, no loss: cannot tell */
	uint64_t ev6[] = { 1000, 1000, 5000 }, ls6[] = { 0, 0, 90 };
	assert_int_equal(TREND(ev6, ls6), LH_TREND_NONE);
	uint64_t ls7[] = { 0, 0, 1, 1 };
	assert_int_equal(TREND(ev4, ls7), LH_TREND_NONE);
	uint64_t ls8[] = { 0, 0, 0, 0 };
	assert_int_equal(TREND(ev4, ls8), LH_TREND_NONE);
	/* intervals with no events at all */
	uint64_t ev9[] = { 0, 0, 0, 0 }, ls9[] = { 1, 1, 1, 1 };
	assert_int_equal(TREND(ev9, ls9), LH_TREND_FLAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_counter_named),
		cmocka_unit_test(test_each_tool_speaks_of_itself),
		cmocka_unit_test(test_sum_percpu),
		cmocka_unit_test(test_bias_rule),
		cmocka_unit_test(test_ringbuf_drops),
		cmocka_unit_test(test_loss_trend),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
