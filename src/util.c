// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdbool.h>
#include "util.h"

int lh_parse_duration(const char *s, bool allow_zero, uint64_t *ns)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
		{ "m", 60e9 }, { "h", 3600e9 },
	};
	char num[64], *end;
	size_t n;
	double v;

	if (!s)
		return -EINVAL;
	/* decimal digits and one point, then a unit: strtod alone would also take
	 * signs, hex, exponents, inf and nan */
	n = strspn(s, "0123456789.");
	if (!n || n >= sizeof(num) || strchr(s, '.') != strrchr(s, '.'))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = 0;
	errno = 0;
	v = strtod(num, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double t;

		if (strcmp(s + n, units[i].suffix))
			continue;
		t = v * units[i].mult;
		if (t > 1e16)
			return -ERANGE;
		/* under 1 ns but not 0 (0.5ns): no clock tells it, and rounded to 0 it
		 * would mean "every wait" for --slower-than */
		if (t > 0 && t < 1.0)
			return -EDOM;
		if (!allow_zero && t < 1.0)
			return -EINVAL;
		*ns = (uint64_t)llround(t);
		return 0;
	}
	return -EINVAL;
}

const char *lh_duration_str(uint64_t ns, char *buf, size_t len)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "s", 1000000000ULL }, { "ms", 1000000ULL }, { "us", 1000ULL }, { "ns", 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns % units[i].ns == 0 && ns >= units[i].ns)
			break;
	if (i < sizeof(units) / sizeof(units[0]) || !ns) {
		i = ns ? i : 3;
		snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
		return buf;
	}
	for (i = 0; units[i].ns > ns; i++)
		;
	{
		char frac[24];
		int n = snprintf(frac, sizeof(frac), "%0*llu", i == 0 ? 9 : i == 1 ? 6 : 3,
				 (unsigned long long)(ns % units[i].ns));

		while (n > 0 && frac[n - 1] == '0')
			frac[--n] = 0;
		snprintf(buf, len, "%llu.%s%s", (unsigned long long)(ns / units[i].ns), frac,
			 units[i].name);
	}
	return buf;
}

int lh_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v)
{
	unsigned long long x = 0;
	bool neg = s && *s == '-';
	const char *d = s ? s + neg : NULL;

	/* digits only: strtoull would also take leading white space and a sign */
	if (!d || !*d || d[strspn(d, "0123456789")])
		return -EINVAL;
	errno = 0;
	if (!neg)
		x = strtoull(d, NULL, 10);
	else if (d[strspn(d, "0")])	/* below 0 ("-0" is 0) */
		return -ERANGE;
	if (errno == ERANGE || x < min || x > max)
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

/*
 * Can a file be created in dir? access(2) says yes to root on /proc or /sys,
 * whose folders take no new file: create and remove a hidden one to know.
 */
static int probe_create(const char *dir)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s/.lathist-check.XXXXXX", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(tmp);
	return 0;
}

int lh_output_check(const char *path, bool atomic)
{
	char dir[PATH_MAX];
	struct stat st;
	int err, fd;

	if (!path || !*path)
		return -EINVAL;
	if (path[strlen(path) - 1] == '/')
		return -EISDIR;		/* a folder's name: no file can have it */
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;	/* a device, FIFO or socket: never replaced */
		if (st.st_nlink > 1)
			return -EMLINK;	/* a hard link: its other names would change too */
		/* immutable or append-only (chattr +i, +a): neither written nor renamed
		 * over; opened for writing, not truncated, it stays as it is */
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0)
			close(fd);
		else if (errno == EPERM)
			return -EPERM;
	}
	/* "./" and the temporary name's bytes on top (lh_write_atomic) */
	if (strlen(path) + (atomic ? lh_tmp_name_extra() + 2 : 0) >= PATH_MAX)
		return -ENAMETOOLONG;
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(dir, W_OK))
		return -errno;
	if (lh_output_name_len(path) > lh_output_name_max(dir, atomic))
		return -ENAMETOOLONG;	/* else found only when the run's report is written */
	/* a folder that takes no new file (/proc, /sys): its own errno says little */
	err = probe_create(dir);
	return err == -ENAMETOOLONG ? err : err ? -EROFS : 0;
}

size_t lh_tmp_name_extra(void)
{
	char pid[24];
	size_t n = (size_t)snprintf(pid, sizeof(pid), "%d", (int)getpid());

	return 5 + n > 8 ? 5 + n : 8;	/* ".NAME.PID.N", N < 100; mkstemp's ".NAME.XXXXXX" */
}

size_t lh_output_name_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return strlen(slash ? slash + 1 : path);
}

size_t lh_output_name_max(const char *dir, bool atomic)
{
	long max = pathconf(dir, _PC_NAME_MAX);
	size_t extra = atomic ? lh_tmp_name_extra() : 0;

	if (max <= 0)
		max = NAME_MAX;
	return (size_t)max > extra ? (size_t)max - extra : 0;
}

/* Mode and owner for the new file: the old file's, or 0666 less the umask. */
static void new_file_attrs(const struct stat *old, int fd)
{
	mode_t mask;

	if (old) {
		if (fchmod(fd, old->st_mode & 07777) == 0 && fchown(fd, old->st_uid, old->st_gid))
			(void)0;	/* not allowed to give it away: keep ours */
		return;
	}
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask))
		(void)0;
}

static int write_all(int fd, const char *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int lh_write_atomic_with(const char *path, int (*fill)(int fd, void *ctx), void *ctx)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 32], *base, copy[PATH_MAX], fdpath[64];
	struct stat st;
	bool exists = false, named = false;
	int fd, err;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		if (st.st_nlink > 1)
			return -EMLINK;
		exists = true;
	}
	dir_of(path, dir, sizeof(dir));
	snprintf(copy, sizeof(copy), "%s", path);
	base = basename(copy);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base);
	/* an unnamed file while it is written: nothing is left behind if we die */
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		fd = mkstemp(tmp);
		if (fd < 0)
			return -errno;
		named = true;
	}
	new_file_attrs(exists ? &st : NULL, fd);
	err = fill(fd, ctx);
	if (!err && fsync(fd))
		err = -errno;
	if (!err && !named) {
		/* give it a temporary name, then rename it over the target */
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		for (int i = 0; i < 100; i++) {
			snprintf(tmp, sizeof(tmp), "%s/.%s.%d.%d", dir, base, (int)getpid(), i);
			if (linkat(AT_FDCWD, fdpath, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
				named = true;
				break;
			}
			if (errno != EEXIST) {
				err = -errno;
				break;
			}
		}
		if (!named && !err)
			err = -EEXIST;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err && named)
		unlink(tmp);
	return err;
}

struct bytes { const char *data; size_t len; };

static int write_bytes(int fd, void *ctx)
{
	const struct bytes *b = ctx;

	return write_all(fd, b->data, b->len);
}

int lh_write_atomic(const char *path, const char *data, size_t len)
{
	struct bytes b = { data, len };

	return lh_write_atomic_with(path, write_bytes, &b);
}

void lh_format_cpulist(const uint64_t *mask, size_t nwords, char *buf, size_t len)
{
	size_t n = nwords * 64, used = 0;

	if (len)
		buf[0] = 0;
	for (size_t c = 0; c < n; c++) {
		size_t e = c;

		if (!((mask[c / 64] >> (c % 64)) & 1))
			continue;
		while (e + 1 < n && ((mask[(e + 1) / 64] >> ((e + 1) % 64)) & 1))
			e++;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, e > c ? "%s%zu-%zu" : "%s%zu",
						 used ? "," : "", c, e);
		c = e;
	}
	if (used >= len && len) {	/* too long to say whole: say how many, never a part */
		size_t count = 0;

		for (size_t w = 0; w < nwords; w++)
			count += (size_t)__builtin_popcountll(mask[w]);
		snprintf(buf, len, "%zu CPUs", count);
	}
}

int lh_task_start_ticks(uint32_t tid, uint64_t *ticks)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	char state;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", tid);	/* threads too */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -ENOENT;
	buf[len] = 0;
	/* after the comm, which may hold spaces and parentheses: field 3 on */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu", &state, &start) != 2)
		return -EINVAL;
	*ticks = start;
	/* a zombie (or dead) task has exited: nothing of it runs any more */
	return state == 'Z' || state == 'X' || state == 'x' ? -ESRCH : 0;
}

int lh_process_start_ticks(uint32_t pid, uint64_t *ticks)
{
	int err = lh_task_start_ticks(pid, ticks);
	struct dirent *e;
	char path[64];
	uint64_t t;
	DIR *d;

	if (err != -ESRCH)
		return err;
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	if (!(d = opendir(path)))
		return err;
	while (err && (e = readdir(d))) {
		uint32_t tid;

		if (!lh_parse_u32(e->d_name, 1, UINT32_MAX, &tid) && tid != pid &&
		    !lh_task_start_ticks(tid, &t))
			err = 0;	/* another thread runs on: so does the process */
	}
	closedir(d);
	return err;
}

/* Does a start time of ticks (boot-based clock ticks, /proc) name the task that
 * started at start_mono_ns? */
static bool same_start(uint64_t ticks, uint64_t start_mono_ns)
{
	uint64_t tick = lh_tick_ns(), want;
	struct timespec b, m;

	if (!tick)
		return false;
	clock_gettime(CLOCK_BOOTTIME, &b);
	clock_gettime(CLOCK_MONOTONIC, &m);
	want = (start_mono_ns + (uint64_t)(b.tv_sec - m.tv_sec) * 1000000000ULL +
		(uint64_t)(b.tv_nsec - m.tv_nsec)) / tick;
	return ticks + 2 >= want && want + 2 >= ticks;
}

bool lh_task_alive(uint32_t tid, uint64_t start_mono_ns)
{
	uint64_t ticks;

	return tid && !lh_task_start_ticks(tid, &ticks) && same_start(ticks, start_mono_ns);
}

bool lh_process_alive(uint32_t pid, uint64_t start_mono_ns)
{
	uint64_t ticks;

	return pid && !lh_process_start_ticks(pid, &ticks) && same_start(ticks, start_mono_ns);
}

uint64_t lh_tick_ns(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	return hz > 0 ? 1000000000ULL / (uint64_t)hz : 10000000ULL;
}

int64_t lh_timens_boottime_ns(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "re");
	char name[32];
	long long sec, nsec;
	int64_t off = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3)
		if (!strcmp(name, "boottime") || !strcmp(name, "7"))	/* CLOCK_BOOTTIME */
			off = (int64_t)sec * 1000000000LL + nsec;
	fclose(f);
	return off;
}

void lh_run_id(char out[33])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = lh_realtime_ns(), p = (uint64_t)getpid();

		memcpy(b, &t, 8);
		memcpy(b + 8, &p, 8);
	}
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

bool lh_is_run_id(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
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

int lh_online_cpus(uint64_t *mask, size_t nwords, int ncpus)
{
	char line[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	long bad;
	int err;

	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	memset(mask, 0, nwords * sizeof(*mask));
	err = lh_parse_cpulist(line, mask, nwords, ncpus, &bad);
	/* CPUs the possible count does not cover cannot be traced anyway */
	return err == -ERANGE ? 0 : err;
}

int lh_lines_open(struct lh_lines *l, const char *path)
{
	struct stat st;
	int err;

	memset(l, 0, sizeof(*l));
	/* truncated only once known to be a regular file with one name */
	l->fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
	if (l->fd < 0)
		return -errno;
	if (fstat(l->fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_nlink > 1)
		err = -EMLINK;
	else if (ftruncate(l->fd, 0) || fcntl(l->fd, F_SETFL, 0))
		err = -errno;
	else if (write(l->fd, "", 0) < 0)	/* a file system that takes no write(2): hugetlbfs */
		err = -errno;
	else
		err = 0;
	if (err) {
		close(l->fd);
		l->fd = -1;
		return err;
	}
	l->own = true;
	return 0;
}

void lh_lines_use(struct lh_lines *l, int fd)
{
	memset(l, 0, sizeof(*l));
	l->fd = fd;
}

int lh_lines_write(struct lh_lines *l, const char *buf, size_t len)
{
	size_t off = 0, line_end = 0;

	while (off < len && !l->err) {
		ssize_t n = write(l->fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			l->err = n < 0 ? errno : EIO;
			/* no torn line: back to the end of the last line written whole */
			if (l->own && ftruncate(l->fd, l->whole) == 0)
				lseek(l->fd, l->whole, SEEK_SET);
			break;
		}
		off += (size_t)n;
		for (size_t i = off; i > line_end; i--)	/* whole lines so far */
			if (buf[i - 1] == '\n') {
				l->whole += (off_t)(i - line_end);
				line_end = i;
				break;
			}
	}
	return l->err ? -l->err : 0;
}

void lh_lines_close(struct lh_lines *l)
{
	if (l->own && l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	l->own = false;
}

long lh_bad_text_byte(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (long i = 0; p[i];) {
		unsigned char c = p[i];
		int n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 :
			c >= 0xf0 && c <= 0xf4 ? 3 : -1;
		/* the second byte's range where the first does not allow every 80..bf */
		unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;

		if (n < 0 || (n == 0 && (c < 0x20 || c == 0x7f)) ||
		    (c == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f))	/* C1 controls */
			return i;
		for (int k = 1; k <= n; k++)
			if (p[i + k] < (k == 1 ? lo : 0x80) || p[i + k] > (k == 1 ? hi : 0xbf))
				return i;
		i += n + 1;
	}
	return -1;
}

bool lh_list_has_empty(const char *s)
{
	return !s[0] || s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,");
}

bool lh_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}
