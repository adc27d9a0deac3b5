// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

int lh_parse_duration(const char *s, bool allow_zero, uint64_t *ns)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
	};
	char *end;
	double v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double t;

		if (strcmp(end, units[i].suffix))
			continue;
		t = v * units[i].mult;
		if (t > 1e16 || (!allow_zero && t < 1.0))
			return -EINVAL;
		*ns = (uint64_t)llround(t);
		return 0;
	}
	return -EINVAL;
}

int lh_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v)
{
	unsigned long long x;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (x < min || x > max)
		return -ERANGE;
	*v = (uint32_t)x;
	return 0;
}

int lh_parse_unit(const char *s, uint64_t *unit_ns)
{
	if (!strcmp(s, "ns"))
		*unit_ns = 1;
	else if (!strcmp(s, "us"))
		*unit_ns = 1000;
	else if (!strcmp(s, "ms"))
		*unit_ns = 1000000;
	else
		return -EINVAL;
	return 0;
}

static int parse_cpu(const char **p, long *v)
{
	char *end;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtol(*p, &end, 10);
	if (errno)
		return -EINVAL;
	*p = end;
	return 0;
}

int lh_parse_cpulist(const char *s, uint64_t *mask, size_t nwords, int ncpus, long *bad)
{
	const char *p = s;

	memset(mask, 0, nwords * sizeof(*mask));
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		long a, b;

		if (parse_cpu(&p, &a))
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (parse_cpu(&p, &b) || b < a)
				return -EINVAL;
		}
		for (long c = a; c <= b; c++) {
			if (c >= ncpus || c >= (long)(nwords * 64)) {
				*bad = c;
				return -ERANGE;
			}
			mask[c / 64] |= 1ULL << (c % 64);
		}
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

static void dir_of(const char *path, char *dir, size_t len)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, len, "%s", dirname(tmp));
}

int lh_output_check(const char *path)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!path || !*path)
		return -EINVAL;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
	}
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(dir, W_OK))
		return -errno;
	return 0;
}

int lh_write_atomic(const char *path, const char *data, size_t len)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 32], *base, copy[PATH_MAX];
	struct stat st;
	size_t off = 0;
	int fd, err = 0;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return -ELOOP;
	dir_of(path, dir, sizeof(dir));
	snprintf(copy, sizeof(copy), "%s", path);
	base = basename(copy);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t lh_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t lh_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}
