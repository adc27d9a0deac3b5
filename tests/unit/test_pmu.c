// SPDX-License-Identifier: MIT
/* PMU counters: event names, and the scaling rules for multiplexed counters. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <linux/perf_event.h>
#include "pmu_user.h"

static void test_estimate(void **state)
{
	double v = -1;
	bool est = false;
	(void)state;
	/* multiplexed: ran half the time it was enabled, so the count is doubled */
	assert_true(lh_pmu_estimate(300000, 2000000000ULL, 1000000000ULL, &v, &est));
	assert_true(est);
	assert_true(v == 600000.0);
	/* never ran: undefined, not 0 and not infinity; the output is left alone */
	v = -1;
	assert_false(lh_pmu_estimate(300000, 2000000000ULL, 0, &v, &est));
	assert_true(v == -1);
	assert_false(lh_pmu_estimate(0, 0, 0, &v, &est));
	/* always running: the raw count itself, not an estimate */
	assert_true(lh_pmu_estimate(12345, 1000, 1000, &v, &est));
	assert_false(est);
	assert_true(v == 12345.0);
	/* large counts stay exact enough: 2^53 */
	assert_true(lh_pmu_estimate(1ULL << 53, 7, 7, &v, &est));
	assert_true(v == 9007199254740992.0);
}

static void test_ratio(void **state)
{
	double r = -1;
	bool est = true;
	(void)state;
	/* IPC from exact counts */
	assert_true(lh_pmu_ratio(3000, 10, 10, 2000, 10, 10, &r, &est));
	assert_true(r == 1.5 && !est);
	/* one side scaled: an estimate (instructions x2 over cycles) */
	assert_true(lh_pmu_ratio(3000, 20, 10, 3000, 10, 10, &r, &est));
	assert_true(r == 2.0 && est);
	/* undefined when either never ran, or no cycles */
	assert_false(lh_pmu_ratio(3000, 20, 0, 3000, 10, 10, &r, &est));
	assert_false(lh_pmu_ratio(3000, 20, 10, 3000, 10, 0, &r, &est));
	assert_false(lh_pmu_ratio(3000, 20, 10, 0, 10, 10, &r, &est));
}

static void test_parse(void **state)
{
	struct lh_pmu_event ev[LH_MAX_PMU];
	const char *why = NULL;
	char bad[64];
	(void)state;
	assert_int_equal(lh_pmu_parse("cycles,instructions,cpu-clock,page-faults,r01c2", ev, bad,
				      sizeof(bad), &why), 5);
	assert_true(ev[0].type == PERF_TYPE_HARDWARE && ev[0].config == PERF_COUNT_HW_CPU_CYCLES);
	assert_true(ev[1].config == PERF_COUNT_HW_INSTRUCTIONS);
	assert_true(ev[2].type == PERF_TYPE_SOFTWARE && ev[2].config == PERF_COUNT_SW_CPU_CLOCK);
	assert_true(ev[3].config == PERF_COUNT_SW_PAGE_FAULTS);
	assert_true(ev[4].type == PERF_TYPE_RAW && ev[4].config == 0x1c2);
	assert_string_equal(ev[4].name, "r01c2");
	assert_int_equal(lh_pmu_parse("cycles,bogus", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_string_equal(bad, "bogus");
	assert_int_equal(lh_pmu_parse("rxyz", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_string_equal(bad, "rxyz");
	assert_int_equal(lh_pmu_parse("cycles,cycles", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_string_equal(why, "given twice; give each counter once");
	/* the same event by another name: the name it was given first is said */
	assert_int_equal(lh_pmu_parse("cycles,cpu-cycles", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_string_equal(bad, "cpu-cycles");
	assert_string_equal(why, "the same counter as cycles; give each counter once");
	assert_int_equal(lh_pmu_parse("cycles,,instructions", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_int_equal(lh_pmu_parse("", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_int_equal(lh_pmu_parse("cycles,", ev, bad, sizeof(bad), &why), -EINVAL);
	assert_int_equal(lh_pmu_parse("r1,r2,r3,r4,r5,r6,r7,r8,r9", ev, bad, sizeof(bad), &why),
			 -EINVAL);
	assert_string_equal(bad, "r9");
	assert_int_equal(lh_pmu_parse("r1,r2,r3,r4,r5,r6,r7,r8", ev, bad, sizeof(bad), &why), 8);
}

static void test_why(void **state)
{
	(void)state;
	assert_non_null(strstr(lh_pmu_why(ENOENT), "does not count"));
	assert_non_null(strstr(lh_pmu_why(EACCES), "CAP_PERFMON"));
	assert_non_null(strstr(lh_pmu_why(EMFILE), "ulimit"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_ratio),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
