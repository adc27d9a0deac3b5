// SPDX-License-Identifier: MIT
/* Option value parsing and atomic output files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"

static void test_duration(void **state)
{
	uint64_t ns;
	(void)state;
	assert_int_equal(lh_parse_duration("5", false, &ns), 0);
	assert_true(ns == 5000000000ULL);
	assert_int_equal(lh_parse_duration("0.5", false, &ns), 0);
	assert_true(ns == 500000000ULL);
	assert_int_equal(lh_parse_duration("250us", false, &ns), 0);
	assert_true(ns == 250000ULL);
	assert_int_equal(lh_parse_duration("10ms", false, &ns), 0);
	assert_true(ns == 10000000ULL);
	assert_int_equal(lh_parse_duration("2s", false, &ns), 0);
	assert_true(ns == 2000000000ULL);
	assert_int_equal(lh_parse_duration("1.5m", false, &ns), 0);
	assert_true(ns == 90000000000ULL);
	assert_int_equal(lh_parse_duration("2h", false, &ns), 0);
	assert_true(ns == 7200000000000ULL);
	assert_int_equal(lh_parse_duration("1mn", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("0", true, &ns), 0);
	assert_true(ns == 0);
	assert_int_equal(lh_parse_duration("0", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("-1", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("abc", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("5x", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("nan", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("inf", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("1e30", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("0x10", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("1e9", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("1.2.3", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration(".", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("+5", false, &ns), -EINVAL);
	assert_int_equal(lh_parse_duration("100000000", false, &ns), -ERANGE);
	assert_int_equal(lh_parse_duration(".5", false, &ns), 0);
	assert_true(ns == 500000000ULL);
	/* under 1 ns but not 0: refused, not rounded to 0 (every wait) or to 1 */
	assert_int_equal(lh_parse_duration("0.0000000001", true, &ns), -EDOM);
	assert_int_equal(lh_parse_duration("0.5ns", false, &ns), -EDOM);
	assert_int_equal(lh_parse_duration("0.0ns", true, &ns), 0);
	assert_true(ns == 0);
	assert_int_equal(lh_parse_duration("1ns", true, &ns), 0);
	assert_true(ns == 1);
}

static void test_u32_and_unit(void **state)
{
	uint32_t v;
	uint64_t u;
	(void)state;
	assert_int_equal(lh_parse_u32("5", 0, 5, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(lh_parse_u32("6", 0, 5, &v), -ERANGE);
	assert_int_equal(lh_parse_u32("-1", 0, 5, &v), -ERANGE);
	assert_int_equal(lh_parse_u32("-", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("-0", 0, 5, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(lh_parse_u32("-00", 1, 5, &v), -ERANGE);
	assert_int_equal(lh_parse_u32(" 5", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("\t5", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("5 ", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("+5", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("-1x", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("1x", 0, 5, &v), -EINVAL);
	assert_int_equal(lh_parse_u32("99999999999999999999", 0, 5, &v), -ERANGE);
	assert_int_equal(lh_parse_unit("ns", &u), 0);
	assert_true(u == 1);
	assert_int_equal(lh_parse_unit("ms", &u), 0);
	assert_true(u == 1000000);
	assert_int_equal(lh_parse_unit("s", &u), -EINVAL);
}

static void test_cpulist(void **state)
{
	uint64_t m[2];
	long bad = -1;
	(void)state;
	assert_int_equal(lh_parse_cpulist("0-3,7", m, 2, 8, &bad), 0);
	assert_true(m[0] == 0x8f && m[1] == 0);
	assert_int_equal(lh_parse_cpulist("65", m, 2, 128, &bad), 0);
	assert_true(m[0] == 0 && m[1] == 2);
	assert_int_equal(lh_parse_cpulist("8", m, 2, 8, &bad), -ERANGE);
	assert_int_equal(bad, 8);
	assert_int_equal(lh_parse_cpulist("1-", m, 2, 8, &bad), -EINVAL);
	assert_int_equal(lh_parse_cpulist("3-1", m, 2, 8, &bad), -EINVAL);
	assert_int_equal(lh_parse_cpulist("1,,2", m, 2, 8, &bad), -EINVAL);
	assert_int_equal(lh_parse_cpulist("a", m, 2, 8, &bad), -EINVAL);
	assert_int_equal(lh_parse_cpulist("", m, 2, 8, &bad), -EINVAL);
}

/* A CPU list is said as the CPUs it means, never as typed, never cut short. */
static void test_cpulist_canonical(void **state)
{
	uint64_t m[2] = { 0 }, every_other[2] = { 0x5555555555555555ULL, 0x5555555555555555ULL };
	char buf[64];
	long bad = -1;
	(void)state;
	assert_int_equal(lh_parse_cpulist("0,0", m, 2, 128, &bad), 0);
	lh_format_cpulist(m, 2, buf, sizeof(buf));
	assert_string_equal(buf, "0");
	assert_int_equal(lh_parse_cpulist("7,1,0-3,2,64-65,127", m, 2, 128, &bad), 0);
	lh_format_cpulist(m, 2, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,7,64-65,127");
	lh_format_cpulist(every_other, 2, buf, sizeof(buf));
	assert_string_equal(buf, "64 CPUs");
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_atomic_write(void **state)
{
	char dir[] = "/tmp/lathist-unit-XXXXXX", path[256], link[256], buf[64] = { 0 };
	FILE *f;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.json", dir);
	snprintf(link, sizeof(link), "%s/link.json", dir);
	assert_int_equal(lh_output_check(path, true), 0);
	assert_int_equal(lh_write_atomic(path, "first", 5), 0);
	assert_int_equal(lh_write_atomic(path, "second", 6), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) == 6);
	fclose(f);
	assert_string_equal(buf, "second");
	assert_int_equal(count_entries(dir), 1);	/* no temporary left behind */
	/* the replacement keeps the old file's mode and owner (giving it away needs root) */
	if (geteuid() == 0) {
		struct stat st;

		assert_int_equal(chmod(path, 0600), 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(lh_write_atomic(path, "second", 6), 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65534);
	}
	/* never through a symlink; the link target stays untouched */
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(lh_output_check(link, true), -ELOOP);
	assert_int_equal(lh_write_atomic(link, "evil", 4), -ELOOP);
	assert_int_equal(lh_output_check(dir, true), -EISDIR);
	assert_int_equal(lh_output_check("/nonexistent-lathist/x", true), -ENOENT);
	/* folders that take no new file, even for root (access(2) says they do) */
	assert_true(lh_output_check("/proc/lathist-x.json", true) < 0);
	assert_true(lh_output_check("/sys/lathist-x.json", true) < 0);
	/* never replace a device or a FIFO */
	assert_int_equal(lh_output_check("/dev/null", true), -EINVAL);
	assert_int_equal(lh_write_atomic("/dev/null", "x", 1), -EINVAL);
	{
		char fifo[256];
		struct stat st;

		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(lh_output_check(fifo, true), -EINVAL);
		assert_int_equal(lh_write_atomic(fifo, "x", 1), -EINVAL);
		assert_int_equal(lstat(fifo, &st), 0);
		assert_true(S_ISFIFO(st.st_mode));
		unlink(fifo);
	}
	{
		/* the longest name the check passes is one lh_write_atomic writes (its
		 * temporary name has room), one byte more is refused; a stream's name
		 * may take the whole NAME_MAX; a name ending in '/' is a folder's */
		size_t max = lh_output_name_max(dir, true);
		char name[600];
		int n = snprintf(name, sizeof(name), "%s/", dir);

		assert_int_equal(max + lh_tmp_name_extra(), (size_t)pathconf(dir, _PC_NAME_MAX));
		memset(name + n, 'n', max);
		name[n + max] = 0;
		assert_int_equal(lh_output_check(name, true), 0);
		assert_int_equal(lh_write_atomic(name, "x", 1), 0);
		assert_int_equal(unlink(name), 0);
		name[n + max] = 'n';
		name[n + max + 1] = 0;
		assert_int_equal(lh_output_check(name, true), -ENAMETOOLONG);
		memset(name + n, 's', NAME_MAX);
		name[n + NAME_MAX] = 0;
		assert_int_equal(lh_output_check(name, false), 0);
		name[n + NAME_MAX] = 's';
		name[n + NAME_MAX + 1] = 0;
		assert_int_equal(lh_output_check(name, false), -ENAMETOOLONG);
		snprintf(name, sizeof(name), "%s/missing/", dir);
		assert_int_equal(lh_output_check(name, true), -EISDIR);
		assert_int_equal(count_entries(dir), 2);	/* out.json, link.json */
	}
	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* Printable UTF-8 (RFC 3629): each kind of bad byte found at its offset. */
static void test_path_under(void **state)
{
	(void)state;
	assert_true(lh_path_under("/sys/fs/cgroup", "/sys/fs/cgroup"));
	assert_true(lh_path_under("/sys/fs/cgroup/a/b", "/sys/fs/cgroup"));
	assert_false(lh_path_under("/sys/fs/cgroupX/a", "/sys/fs/cgroup"));
	assert_false(lh_path_under("/sys/fs", "/sys/fs/cgroup"));
	assert_false(lh_path_under("/tmp", "/sys/fs/cgroup"));
}

static void test_list_has_empty(void **state)
{
	(void)state;
	assert_false(lh_list_has_empty("runq"));
	assert_false(lh_list_has_empty("runq,bio"));
	assert_false(lh_list_has_empty("a,b,c"));
	assert_true(lh_list_has_empty(""));
	assert_true(lh_list_has_empty(","));
	assert_true(lh_list_has_empty("runq,"));
	assert_true(lh_list_has_empty(",runq"));
	assert_true(lh_list_has_empty("runq,,bio"));
}

static void test_bad_text_byte(void **state)
{
	(void)state;
	assert_int_equal(lh_bad_text_byte(""), -1);
	assert_int_equal(lh_bad_text_byte("prod-eu 1"), -1);
	assert_int_equal(lh_bad_text_byte("\xc3\xaele \xe2\x82\xac \xf0\x9f\x98\x80"), -1);
	assert_int_equal(lh_bad_text_byte("ab\ncd"), 2);		/* control */
	assert_int_equal(lh_bad_text_byte("x\x7f"), 1);		/* DEL */
	assert_int_equal(lh_bad_text_byte("x\xc2\x85"), 1);	/* NEL, a C1 control */
	assert_int_equal(lh_bad_text_byte("\xc2\xa0"), -1);	/* no-break space */
	assert_int_equal(lh_bad_text_byte("x\xff"), 1);		/* never in UTF-8 */
	assert_int_equal(lh_bad_text_byte("x\x80"), 1);		/* a lone continuation */
	assert_int_equal(lh_bad_text_byte("x\xc3"), 1);		/* cut before its end */
	assert_int_equal(lh_bad_text_byte("\xc0\xaf"), 0);		/* overlong '/' */
	assert_int_equal(lh_bad_text_byte("\xe0\x80\xaf"), 0);	/* overlong, 3 bytes */
	assert_int_equal(lh_bad_text_byte("\xed\xa0\x80"), 0);	/* a surrogate, U+D800 */
	assert_int_equal(lh_bad_text_byte("\xf4\x90\x80\x80"), 0);	/* past U+10FFFF */
	assert_int_equal(lh_bad_text_byte("ok\xf4\x8f\xbf\xbf"), -1);	/* U+10FFFF itself */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_u32_and_unit),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_cpulist_canonical),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_bad_text_byte),
		cmocka_unit_test(test_list_has_empty),
		cmocka_unit_test(test_path_under),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
