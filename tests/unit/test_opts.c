// SPDX-License-Identifier: MIT
/* lathist runq option parsing: good values land, bad ones are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "runq_cli.h"

#define ARGS(...) (char *[]){ "runq", __VA_ARGS__, NULL }
#define NARGS(...) (int)(sizeof((char *[]){ "runq", __VA_ARGS__ }) / sizeof(char *))
#define PARSE(o, ...) runq_parse_args(NARGS(__VA_ARGS__), ARGS(__VA_ARGS__), o)

static void test_defaults(void **state)
{
	struct runq_opts o;
	char *argv[] = { "runq", NULL };
	(void)state;
	assert_int_equal(runq_parse_args(1, argv, &o), 0);
	assert_int_equal(o.group, RUNQ_GROUP_TOTAL);
	assert_true(o.c.unit_ns == 1000);
	assert_int_equal(o.c.precision, 0);
	assert_true(o.c.duration_ns == 0 && o.c.interval_ns == 0);
	assert_int_equal(o.c.format, LH_FMT_TEXT);
	assert_int_equal(o.c.attach, LH_ATTACH_AUTO);
	assert_null(o.c.output);
}

static void test_good_values(void **state)
{
	struct runq_opts o;
	char pid[16];
	(void)state;
	snprintf(pid, sizeof(pid), "%d", getpid());
	assert_int_equal(PARSE(&o, "-d", "2.5", "-i", "500ms", "-u", "ns", "--precision", "5",
			       "--per-thread", "-p", pid, "-t", pid, "--cpus", "0", "-f", "json",
			       "--attach", "raw_tp", "--max-keys", "100", "-v"), 0);
	assert_true(o.c.duration_ns == 2500000000ULL);
	assert_true(o.c.interval_ns == 500000000ULL);
	assert_true(o.c.unit_ns == 1);
	assert_string_equal(o.c.unit, "ns");
	assert_int_equal(o.c.precision, 5);
	assert_int_equal(o.group, RUNQ_GROUP_THREAD);
	assert_int_equal(o.c.pid, getpid());
	assert_int_equal(o.tid, getpid());
	assert_true(o.cpus_set && o.cpu_mask[0] == 1);
	assert_int_equal(o.c.format, LH_FMT_JSON);
	assert_int_equal(o.c.attach, LH_ATTACH_RAW_TP);
	assert_int_equal(o.c.max_keys, 100);
	assert_true(o.c.verbose);
	assert_int_equal(PARSE(&o, "--per-cpu"), 0);
	assert_int_equal(o.group, RUNQ_GROUP_CPU);
	assert_int_equal(PARSE(&o, "--per-process"), 0);
	assert_int_equal(o.group, RUNQ_GROUP_PROCESS);
}

static void test_bad_values(void **state)
{
	struct runq_opts o;
	(void)state;
	assert_int_equal(PARSE(&o, "--precision", "6"), -EINVAL);
	assert_int_equal(PARSE(&o, "--precision", "-1"), -EINVAL);
	assert_int_equal(PARSE(&o, "-u", "s"), -EINVAL);
	assert_int_equal(PARSE(&o, "-d", "0"), -EINVAL);
	assert_int_equal(PARSE(&o, "-i", "0.001"), -EINVAL);
	assert_int_equal(PARSE(&o, "-i", "2", "-d", "1"), -EINVAL);
	assert_int_equal(PARSE(&o, "-p", "0"), -EINVAL);
	assert_int_equal(PARSE(&o, "-p", "999999999"), -EINVAL);
	assert_int_equal(PARSE(&o, "-t", "x"), -EINVAL);
	assert_int_equal(PARSE(&o, "--cpus", "100000"), -EINVAL);
	assert_int_equal(PARSE(&o, "--per-thread", "--per-process"), -EINVAL);
	assert_int_equal(PARSE(&o, "-f", "yaml"), -EINVAL);
	assert_int_equal(PARSE(&o, "--attach", "fentry"), -EINVAL);
	assert_int_equal(PARSE(&o, "--max-keys", "0"), -EINVAL);
	assert_int_equal(PARSE(&o, "--nope"), -EINVAL);
	assert_int_equal(PARSE(&o, "-d"), -EINVAL);
	assert_int_equal(PARSE(&o, "stray"), -EINVAL);
	assert_int_equal(PARSE(&o, "-o", "/nonexistent-lathist/out.json"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
