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
#include "bio_cli.h"
#include "runq_cli.h"
#include <dirent.h>

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
	assert_int_equal(PARSE(&o, "--attach", "tracepoint"), -EINVAL);	/* removed: README */
	assert_int_equal(PARSE(&o, "--attach", "tp_btf"), 0);
	assert_int_equal(o.c.attach, LH_ATTACH_TP_BTF);
	assert_int_equal(PARSE(&o, "--attach", "kprobe"), -EINVAL);
	assert_int_equal(PARSE(&o, "--per-cpu"), 0);
	assert_int_equal(o.group, RUNQ_GROUP_CPU);
	assert_int_equal(PARSE(&o, "--per-process"), 0);
	assert_int_equal(o.group, RUNQ_GROUP_PROCESS);
	assert_true(o.c.slower_than_ns == UINT64_MAX);	/* no records unless asked */
	assert_true(o.c.ringbuf_bytes == 256 * 1024);
	assert_int_equal(PARSE(&o, "--slower-than", "0", "--ringbuf-size", "5000", "--events",
			       "/tmp/lathist-unit-events.json"), 0);
	assert_true(o.c.slower_than_ns == 0);
	assert_true(o.c.ringbuf_bytes == 8192 && o.c.ringbuf_rounded);
	assert_string_equal(o.c.events_path, "/tmp/lathist-unit-events.json");
	assert_int_equal(PARSE(&o, "--slower-than", "250us"), 0);
	assert_true(o.c.slower_than_ns == 250000);
	assert_int_equal(PARSE(&o, "--counters", "cpu-clock,page-faults", "--counters-optional"), 0);
	assert_true(o.npmu == 2 && o.oncpu && o.pmu_optional);
	assert_int_equal(PARSE(&o, "--oncpu"), 0);
	assert_true(o.oncpu && o.npmu == 0);
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
	assert_int_equal(PARSE(&o, "--slower-than", "fast"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "-1ms"), -EINVAL);
	assert_int_equal(PARSE(&o, "--ringbuf-size", "0"), -EINVAL);
	assert_int_equal(PARSE(&o, "--ringbuf-size", "2g"), -EINVAL);
	assert_int_equal(PARSE(&o, "--ringbuf-size", "2048m"), -EINVAL);
	assert_int_equal(PARSE(&o, "--ringbuf-size", "4 k"), -EINVAL);
	/* records need a threshold; a file needs a writable folder */
	assert_int_equal(PARSE(&o, "--events", "/tmp/lathist-ev.json"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "/nonexistent-lathist/e"),
			 -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "/tmp/lathist-same.json",
			       "-o", "/tmp/lathist-same.json"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "-"), -EINVAL);
	assert_int_equal(PARSE(&o, "--ringbuf-size", "8k"), -EINVAL);	/* needs --slower-than */
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--slower-than", "2ms"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "/tmp/a.json",
			       "--events", "/tmp/b.json"), -EINVAL);
	/* one new file named two ways */
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "/tmp/./lathist-new.json",
			       "-o", "/tmp/lathist-new.json"), -EINVAL);
	assert_int_equal(PARSE(&o, "--counters", "cpu-clock,bogus"), -EINVAL);
	assert_int_equal(PARSE(&o, "--counters-optional"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "-", "-o", "-"), -EINVAL);
	assert_int_equal(PARSE(&o, "--slower-than", "1ms", "--events", "-", "-o",
			       "/tmp/lathist-unit-report.json"), 0);
}

static void test_ringbuf_size(void **state)
{
	uint64_t b;
	bool rounded;
	(void)state;
	assert_int_equal(lh_parse_ringbuf_size("4096", &b, &rounded), 0);
	assert_true(b == 4096 && !rounded);
	assert_int_equal(lh_parse_ringbuf_size("1", &b, &rounded), 0);	/* one page at least */
	assert_true(b == 4096 && rounded);
	assert_int_equal(lh_parse_ringbuf_size("5000", &b, &rounded), 0);
	assert_true(b == 8192 && rounded);
	assert_int_equal(lh_parse_ringbuf_size("256k", &b, &rounded), 0);
	assert_true(b == 256 * 1024 && !rounded);
	assert_int_equal(lh_parse_ringbuf_size("3M", &b, &rounded), 0);
	assert_true(b == 4 * 1024 * 1024 && rounded);
	assert_int_equal(lh_parse_ringbuf_size("1024m", &b, &rounded), 0);
	assert_true(b == 1ULL << 30 && !rounded);
	assert_int_equal(lh_parse_ringbuf_size("1g", &b, &rounded), 0);
	assert_true(b == 1ULL << 30 && !rounded);
	assert_int_equal(lh_parse_ringbuf_size("1025m", &b, &rounded), -ERANGE);
	assert_int_equal(lh_parse_ringbuf_size("2g", &b, &rounded), -ERANGE);
	assert_int_equal(lh_parse_ringbuf_size("0", &b, &rounded), -EDOM);
	assert_int_equal(lh_parse_ringbuf_size("1.5m", &b, &rounded), -EINVAL);
	assert_int_equal(lh_parse_ringbuf_size("-4096", &b, &rounded), -EINVAL);
	assert_int_equal(lh_parse_ringbuf_size("", &b, &rounded), -EINVAL);
	assert_int_equal(lh_parse_ringbuf_size("99999999999999999999", &b, &rounded), -ERANGE);
}

#define BARGS(...) (char *[]){ "bio", __VA_ARGS__, NULL }
#define BPARSE(o, ...) bio_parse_args(NARGS(__VA_ARGS__), BARGS(__VA_ARGS__), o)

/* Any block device of this machine, from /sys/class/block. */
static const char *some_disk(void)
{
	static char name[256];
	DIR *d = opendir("/sys/class/block");
	struct dirent *e;

	name[0] = 0;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(name, sizeof(name), "%s", e->d_name);
			break;
		}
	if (d)
		closedir(d);
	return name;
}

static void test_bio_options(void **state)
{
	struct bio_opts o;
	const char *disk = some_disk();
	char name[64];
	uint32_t dev;
	(void)state;
	assert_int_equal(BPARSE(&o, "--per-process", "--per-op", "-u", "ms"), 0);
	assert_int_equal(o.group, BIO_GROUP_PROCESS | BIO_GROUP_OP);
	assert_true(o.c.unit_ns == 1000000);
	assert_int_equal(o.max_requests, 0);	/* sized from the disks at start */
	assert_int_equal(BPARSE(&o, "--per-disk", "--max-requests", "100"), 0);
	assert_int_equal(o.group, BIO_GROUP_DISK);
	assert_int_equal(o.max_requests, 100);
	assert_int_equal(BPARSE(&o, "--disk", "no-such-disk"), -EINVAL);
	assert_int_equal(BPARSE(&o, "--disk", "../../etc"), -EINVAL);
	assert_int_equal(BPARSE(&o, "--max-requests", "0"), -EINVAL);
	assert_int_equal(BPARSE(&o, "--per-thread"), -EINVAL);
	assert_int_equal(BPARSE(&o, "-t", "1"), -EINVAL);
	if (disk[0]) {
		/* name -> dev_t -> name round trip through /sys */
		assert_int_equal(BPARSE(&o, "--disk", (char *)disk), 0);
		assert_int_equal(bio_dev_of(disk, &dev), 0);
		assert_int_equal(o.dev, dev);
		bio_dev_name(dev, name, sizeof(name));
		assert_string_equal(name, disk);
		/* its /dev path names the same disk */
		snprintf(name, sizeof(name), "/dev/%s", disk);
		assert_int_equal(BPARSE(&o, "--disk", name), 0);
		assert_int_equal(o.dev, dev);
		assert_string_equal(o.disk, disk);
	}
	bio_dev_name((4095U << 20) | 7, name, sizeof(name));
	assert_string_equal(name, "4095:7");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_ringbuf_size),
		cmocka_unit_test(test_bio_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
