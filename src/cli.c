// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "anonymize.h"
#include "cli.h"
#include "registry.h"
#include "hist_slot.h"
#include "util.h"

const char lh_common_help[] =
	"Run and output:\n"
	"  -d, --duration SEC     trace for SEC (500ms, 2s, 10m); default: until Ctrl-C\n"
	"  -i, --interval SEC     print every SEC (10ms or more), then start afresh\n"
	"  -u, --unit UNIT        slot unit: ns, us (default) or ms\n"
	"      --precision P      2^P linear sub-slots per power of two (0 to 5; bio 4)\n"
	"  -f, --format FMT       text (default), json, csv, openmetrics or prometheus\n"
	"  -o, --output FILE      write FILE (replaced atomically) instead of stdout\n"
	"      --sort BY          grouped text: rank by total (default), count, p99, max\n"
	"      --top N            grouped text: rows of the ranked table (10; or all)\n"
	"      --histograms N     grouped text: the top N keys' histograms (1; or all)\n"
	"  -v, --verbose          context, bounds, every counter, libbpf messages\n"
	"Filters:\n"
	"  -p, --pid PID          only tasks of process PID\n"
	"      --cgroup PATH      only tasks in cgroup v2 PATH or below\n"
	"Records, series, metrics:\n"
	"      --slower-than DUR  a record per event at or over DUR (0: every event)\n"
	"      --ringbuf-size SIZE\n"
	"                         the records' ring buffer (default 256k)\n"
	"      --events FILE      the records as JSON lines (- = stdout, with -o FILE)\n"
	"      --series FILE      with -i: every interval as a JSON line\n"
	"      --anonymize        pids, tids and task names as salted hashes\n"
	"      --buckets SPEC     metrics: le buckets, MIN..MAX (1us..1m) or bounds\n"
	"      --label NAME=VALUE\n"
	"                         metrics: a label on every series (repeatable)\n"
	"Maps and attach:\n"
	"      --attach TYPE      auto (default: tp_btf, else raw_tp), tp_btf or raw_tp\n"
	"      --max-keys N       entries of the keyed histogram map (default: sized)\n"
	"  -h, --help             this synopsis; -h -v: every counter too\n";

void lh_print_help(const char *tool_help, const char *tool, bool verbose)
{
	const struct lh_tool_desc *d = lh_tool_find(tool);

	fputs(tool_help, stdout);
	fputs(lh_common_help, stdout);
	if (verbose && d && d->counter_desc)
		lh_counters_help(stdout, d->counter_desc);
}

void lh_usage_error(const char *tool, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* messages quote what the user typed: no control bytes to the terminal */
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	fprintf(stderr, "lathist %s: %s\n", tool, msg);
}

void lh_common_defaults(struct lh_common_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->unit_ns = 1000;
	o->unit = "us";
	o->format = LH_FMT_TEXT;
	lh_text_defaults(&o->text);
	o->attach = LH_ATTACH_AUTO;
	o->max_keys = 0;	/* sized from the machine (lh_auto_max_keys) */
	o->max_precision = LH_MAX_PRECISION;
	o->slower_than_ns = UINT64_MAX;
	o->ringbuf_bytes = 256 * 1024;
	/* metric outputs: buckets from 1 us to about a minute (README: --buckets) */
	o->le_min_ns = 1000;
	o->le_max_ns = 60ULL * 1000000000ULL;
}

int lh_parse_ringbuf_size(const char *s, uint64_t *bytes, bool *rounded)
{
	unsigned long long v, mult = 1, page = 4096, want;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno)
		return -EINVAL;
	if (!strcmp(end, "k") || !strcmp(end, "K"))
		mult = 1024;
	else if (!strcmp(end, "m") || !strcmp(end, "M"))
		mult = 1024 * 1024;
	else if (!strcmp(end, "g") || !strcmp(end, "G"))
		mult = 1024 * 1024 * 1024;
	else if (*end)
		return -EINVAL;
	if (!v)
		return -EDOM;		/* zero: too small */
	if (v > (1ULL << 30) / mult)
		return -ERANGE;
	want = v * mult;
	*bytes = page;
	while (*bytes < want)
		*bytes <<= 1;
	*rounded = *bytes != want;
	return 0;
}

long lh_tgid_of(uint32_t id)
{
	char path[64], line[256];
	long tgid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", id);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int lh_cgroup2_mount(char *mnt, size_t len)
{
	char dev[256], dir[4096], type[64];
	int found = -ENOENT;
	FILE *f = fopen("/proc/self/mounts", "r");

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(mnt, len, "%s", dir);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

int lh_check_per_cgroup(const char *tool)
{
	char mnt[4096];

	if (!lh_cgroup2_mount(mnt, sizeof(mnt)))
		return 0;
	lh_usage_error(tool, "--per-cgroup: no cgroup v2 file system is mounted, which names "
		       "the cgroups; mount one (mount -t cgroup2 none /sys/fs/cgroup/unified)");
	return -EINVAL;
}

int lh_cgroup_id(const char *path, char *resolved, size_t len, uint64_t *id)
{
	struct statfs sfs;
	struct stat st;
	char mnt[4096];

	if (path[0] == '/') {
		/* an absolute path that is no file, or the file system's root (/, //, /.),
		 * is a cgroup's path under the mount, as /proc/PID/cgroup and
		 * --per-cgroup's labels write it (/system.slice, / for the root) */
		char *real = realpath(path, NULL);
		bool fs_root = real && !strcmp(real, "/"), none = !real && errno == ENOENT;

		free(real);
		if (fs_root || none) {
			if (lh_cgroup2_mount(mnt, sizeof(mnt)))
				return none ? -ENOENT : -EMEDIUMTYPE;
			/* a missing folder under the mount is named as given, not twice */
			snprintf(resolved, len, "%s%s", lh_path_under(path, mnt) ? "" : mnt, path);
		} else {
			snprintf(resolved, len, "%s", path);
		}
	} else {
		if (lh_cgroup2_mount(mnt, sizeof(mnt)))
			return -EMEDIUMTYPE;
		snprintf(resolved, len, "%s/%s", mnt, path);
	}
	{
		/* recorded as the folder it is: a symlink, .. or a trailing / would name
		 * one cgroup two ways (or another one: nctest/..) */
		char *real = realpath(resolved, NULL);

		if (!real)
			return -errno;
		snprintf(resolved, len, "%s", real);
		free(real);
	}
	if (stat(resolved, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (statfs(resolved, &sfs))
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -EMEDIUMTYPE;
	/* on 64-bit kernels a cgroup v2 inode number is its kernfs id (fs/kernfs) */
	*id = st.st_ino;
	return 0;
}

static int opt_pid(struct lh_common_opts *o, const char *arg, const char *tool)
{
	long tgid;
	int err;

	if (o->pid) {
		lh_usage_error(tool, "-p given twice; give one process (or trace all of them)");
		return -EINVAL;
	}
	err = lh_parse_u32(arg, 1, 0x3fffffff, &o->pid);

	if (err) {
		lh_usage_error(tool, "-p '%s': not a process id; give a positive number", arg);
		return -EINVAL;
	}
	tgid = lh_tgid_of(o->pid);
	if (tgid < 0) {
		lh_usage_error(tool, "-p %u: no such process; give the PID of a running process",
			       o->pid);
		return -EINVAL;
	}
	if ((uint32_t)tgid == o->pid && lh_process_start_ticks(o->pid, &o->pid_ticks) == -ESRCH) {
		lh_usage_error(tool, "-p %u: has exited (a zombie, not reaped yet): nothing of it "
			       "can run; give the PID of a running process", o->pid);
		return -EINVAL;
	}
	if ((uint32_t)tgid == o->pid && o->pid_ticks && !o->watch_thread) {
		o->watch_tid = o->pid;
		o->watch_ticks = o->pid_ticks;
	}
	if ((uint32_t)tgid != o->pid) {
		if (o->has_tid_option)
			lh_usage_error(tool, "-p %u: is a thread of process %ld; use -t %u or -p %ld",
				       o->pid, tgid, o->pid, tgid);
		else
			lh_usage_error(tool, "-p %u: is a thread of process %ld; use -p %ld", o->pid,
				       tgid, tgid);
		return -EINVAL;
	}
	return 0;
}

/* Is dir/sub (sub absolute) a folder below dir (not dir itself: /.. is no cgroup)? */
static bool dir_under(const char *dir, const char *sub)
{
	char p[8192], *real;
	struct stat st;
	bool below;

	snprintf(p, sizeof(p), "%s%s", dir, sub);
	real = realpath(p, NULL);
	below = real && lh_path_under(real, dir) && strcmp(real, dir) && !stat(real, &st) &&
		S_ISDIR(st.st_mode);
	free(real);
	return below;
}

static int opt_cgroup(struct lh_common_opts *o, const char *arg, const char *tool)
{
	char mnt[4096];
	int err;

	if (o->cgroup[0]) {
		lh_usage_error(tool, "--cgroup given twice; give one (its descendants are included)");
		return -EINVAL;
	}
	if (!arg[0]) {	/* not the root cgroup by accident: that is every task */
		lh_usage_error(tool, "--cgroup '': empty; give a cgroup v2 folder (for every task, "
			       "leave --cgroup out)");
		return -EINVAL;
	}
	err = lh_cgroup_id(arg, o->cgroup, sizeof(o->cgroup), &o->cgroup_id);
	/* the root cgroup, however named (/, ., the mount's path, a second mount): every
	 * task, as no --cgroup. Its kernfs id is 1 (kernfs_create_root); a cgroup
	 * namespace's root is another cgroup, and filters */
	if (!err && o->cgroup_id == 1) {
		lh_usage_error(tool, "--cgroup '%s': the root cgroup holds every task; for every "
			       "task leave --cgroup out, or give a folder under it", arg);
		o->cgroup[0] = 0;
		return -EINVAL;
	}
	if (!err)
		return 0;
	if (lh_cgroup2_mount(mnt, sizeof(mnt)))
		lh_usage_error(tool, "--cgroup '%s': no cgroup v2 file system is mounted; mount one "
			       "(mount -t cgroup2 none /sys/fs/cgroup/unified)", arg);
	else if (err == -ENOENT && arg[0] == '/' && !lh_path_under(arg, mnt))
		/* neither a folder nor a cgroup's path under the mount */
		lh_usage_error(tool, "--cgroup '%s': no such folder, nor %s%s; give a cgroup v2 "
			       "folder under %s", arg, mnt, arg, mnt);
	else if (err == -EMEDIUMTYPE && arg[0] == '/' && dir_under(mnt, arg))
		/* /tmp is a folder, and a cgroup's name too: the file wins */
		lh_usage_error(tool, "--cgroup '%s': %s is not on a cgroup v2 file system; for "
			       "the cgroup %s under %s give '%s'", arg, o->cgroup, arg, mnt, arg + 1);
	else if (err == -EMEDIUMTYPE)
		lh_usage_error(tool, "--cgroup '%s': %s is not on a cgroup v2 file system; "
			       "give a folder under %s", arg, o->cgroup, mnt);
	else if (!strcmp(arg, o->cgroup))
		lh_usage_error(tool, "--cgroup '%s': %s; give a cgroup v2 folder under %s", arg,
			       strerror(-err), mnt);
	else
		lh_usage_error(tool, "--cgroup '%s': %s: %s; give a cgroup v2 folder under %s",
			       arg, o->cgroup, strerror(-err), mnt);
	o->cgroup[0] = 0;
	return -EINVAL;
}

/* An output path lh_output_check found too long (-ENAMETOOLONG): the path, its
 * name, or a folder's name in it. The path comes last: a message is cut at
 * 1 KiB, and the reason must not be what is cut. */
static void name_too_long(const char *tool, const char *opt, const char *arg, bool atomic)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(arg, '/');
	size_t extra = atomic ? lh_tmp_name_extra() + 2 : 0;

	if (strlen(arg) + extra >= PATH_MAX) {
		if (atomic)
			lh_usage_error(tool, "%s: the path is %zu bytes (%zu with its temporary "
				       "name), over the %d of PATH_MAX; give a shorter one", opt,
				       strlen(arg), strlen(arg) + extra, PATH_MAX - 1);
		else
			lh_usage_error(tool, "%s: the path is %zu bytes, over the %d of PATH_MAX; "
				       "give a shorter one", opt, strlen(arg), PATH_MAX - 1);
		return;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - arg) + 1 : 1,
		 slash ? arg : ".");
	if (lh_output_name_len(arg) > lh_output_name_max(dir, atomic))
		lh_usage_error(tool, "%s: its file name is %zu bytes, over the %zu its folder "
			       "takes%s; give a shorter one than '%s'", opt, lh_output_name_len(arg),
			       lh_output_name_max(dir, atomic), atomic ? " (it is written under a "
			       "longer temporary name first)" : "", arg);
	else
		lh_usage_error(tool, "%s: a folder in '%s' has a name longer than its file system "
			       "takes; give another path", opt, arg);
}

/* An output path ending in '/' (lh_output_check's -EISDIR for it): a folder's name. */
static void ends_in_slash(const char *tool, const char *opt, const char *arg)
{
	lh_usage_error(tool, "%s '%s': ends in '/', which names a folder; give a file name", opt,
		       arg);
}

/* Why output arg of option opt cannot be written (err: lh_output_check's), in
 * one line: "OPT 'ARG': cannot be written (why); give WHAT in a writable folder"
 * or the reason's own words. */
static void say_file_error(const char *tool, const char *opt, const char *arg, int err,
			   const char *what, bool atomic)
{
	if (err == -EMLINK)
		lh_usage_error(tool, "%s '%s': has other hard links, whose content would change "
			       "too; give a file with one name", opt, arg);
	else if (err == -ENAMETOOLONG)
		name_too_long(tool, opt, arg, atomic);
	else if (err == -EISDIR && arg[strlen(arg) - 1] == '/')
		ends_in_slash(tool, opt, arg);
	else if (err == -EPERM)
		lh_usage_error(tool, "%s '%s': is immutable or append-only (chattr +i or +a): it "
			       "cannot be written; give another file, or clear the flag (chattr -i, "
			       "-a)", opt, arg);
	else
		lh_usage_error(tool, "%s '%s': cannot be written (%s); give %s in a writable "
			       "folder", opt, arg, err == -ELOOP ? "a symbolic link" :
			       err == -EINVAL ? "not a regular file" : strerror(-err), what);
}

static int opt_output(struct lh_common_opts *o, const char *arg, const char *tool)
{
	int err;

	if (!strcmp(arg, "-")) {	/* the usual name for standard output */
		o->output = NULL;
		return 0;
	}
	if (!arg[0]) {
		lh_usage_error(tool, "-o '': empty; give a file path, or - for standard output");
		return -EINVAL;
	}
	err = lh_output_check(arg, true);
	if (!err) {
		o->output = arg;
		return 0;
	}
	if (err == -ELOOP)
		lh_usage_error(tool, "-o '%s': is a symbolic link; lathist never writes through "
			       "one, give the real path", arg);
	else if (err == -EINVAL)
		lh_usage_error(tool, "-o '%s': is not a regular file (a device, FIFO or socket); "
			       "give a file path, or - for standard output", arg);
	else if (err == -EROFS)
		lh_usage_error(tool, "-o '%s': its folder takes no new file (read-only, or /proc or "
			       "/sys); give a file in a writable folder", arg);
	else
		say_file_error(tool, "-o", arg, err, "a file", true);
	return -EINVAL;
}

/*
 * A file lathist streams into as it runs (--events, --series): given once, and
 * writable later (see lh_output_check); "-" is stdout where dash_ok.
 */
static int stream_file(const char **path, const char *opt, const char *arg, bool dash_ok,
		       const char *tool)
{
	if (*path) {
		lh_usage_error(tool, "%s given twice; give one file", opt);
		return -EINVAL;
	}
	if (!arg[0]) {	/* as -o '' says it */
		lh_usage_error(tool, "%s '': empty; give a file path%s", opt,
			       dash_ok ? ", or - for standard output" : "");
		return -EINVAL;
	}
	if (!(dash_ok && !strcmp(arg, "-")) &&
	    lh_check_file_opt(opt, arg, "a regular file", false, tool))
		return -EINVAL;
	*path = arg;
	return 0;
}

int lh_check_file_opt(const char *opt, const char *arg, const char *what, bool atomic,
		      const char *tool)
{
	int err = lh_output_check(arg, atomic);

	if (!err)
		return 0;
	say_file_error(tool, opt, arg, err, what, atomic);
	return -EINVAL;
}

/*
 * The one-value options with no check of their own (-d, -i, -u, -f, -o,
 * --precision, --max-keys): a second one is refused, never silently taken
 * over the first. 0, or -EINVAL after the message.
 */
static int given_once(struct lh_common_opts *o, int opt, const char *tool)
{
	static const struct {
		int opt;
		const char *name;
	} one[] = {
		{ 'd', "-d" }, { 'i', "-i" }, { 'u', "-u" }, { 'f', "-f" }, { 'o', "-o" },
		{ LH_OPT_PRECISION, "--precision" }, { LH_OPT_MAX_KEYS, "--max-keys" },
	};

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if (one[i].opt == opt)
			return lh_opt_once(&o->given, 1U << i, one[i].name, tool);
	return 0;
}

int lh_opt_once(unsigned int *seen, unsigned int bit, const char *name, const char *tool)
{
	if (*seen & bit) {
		lh_usage_error(tool, "%s given twice; give it once", name);
		return -EINVAL;
	}
	*seen |= bit;
	return 0;
}

/*
 * --buckets MIN..MAX (durations; the slot bounds from MIN up to the first at or
 * over MAX) or B1,B2,... (each a slot bound, checked against the slot scheme by
 * lh_common_finish). 0, or -EINVAL after the message.
 */
static int opt_buckets(struct lh_common_opts *o, const char *arg, const char *tool)
{
	const char *dots = strstr(arg, "..");
	char *copy, *save = NULL, *w;
	int err = 0;

	if (o->buckets_set) {
		lh_usage_error(tool, "--buckets given twice; give one range or list");
		return -EINVAL;
	}
	o->buckets_set = true;
	if (dots) {
		char min[64];
		size_t n = (size_t)(dots - arg);

		/* a MIN too long for min is no duration: not cut to one */
		snprintf(min, sizeof(min), "%.*s", (int)(n < sizeof(min) ? n : sizeof(min) - 1), arg);
		if (n >= sizeof(min) || lh_parse_duration(min, true, &o->le_min_ns) ||
		    lh_parse_duration(dots + 2, false, &o->le_max_ns) || o->le_max_ns < o->le_min_ns) {
			lh_usage_error(tool, "--buckets '%s': not a range; give MIN..MAX durations, "
				       "e.g. 1us..1m, or slot bounds, e.g. 256us,1024us", arg);
			return -EINVAL;
		}
		return 0;
	}
	if (!(copy = strdup(arg)))
		return -ENOMEM;
	/* "1ms,,4ms" and ",1ms" are no list of bounds ("" is refused below) */
	if (*arg && lh_list_has_empty(arg))
		err = -EINVAL;
	for (w = strtok_r(copy, ",", &save); w && !err; w = strtok_r(NULL, ",", &save)) {
		uint64_t b;

		if (lh_parse_duration(w, false, &b) || o->nle == LH_MAX_LE ||
		    (o->nle && b <= o->le_ns[o->nle - 1]))
			err = -EINVAL;
		else
			o->le_ns[o->nle++] = b;
	}
	free(copy);
	if (err || !o->nle) {
		lh_usage_error(tool, "--buckets '%s': not a list of bounds; give up to %d "
			       "ascending slot bounds, e.g. 256us,1024us, or a range MIN..MAX",
			       arg, LH_MAX_LE);
		return -EINVAL;
	}
	return 0;
}

/* Label names lathist's own series use (and le): --label cannot take them. */
static bool reserved_label(const char *name)
{
	static const char *const names[] = {
		"le", "quantile", "class", "kind", "stage", "lathist_run", "version", "kernel",
		"clock", "grouping", "unit", "precision",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	for (int i = 0; i < LH_MAX_KEY_FIELDS; i++)
		if (!strcmp(name, lh_key_field_names[i]))
			return true;
	return !strncmp(name, "attach_", 7) || !strncmp(name, "filter_", 7) ||
	       !strncmp(name, "__", 2);
}

/* --label KEY=VALUE: KEY a Prometheus label name lathist does not use. */
static int opt_label(struct lh_common_opts *o, const char *arg, const char *tool)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0;
	char name[64];
	long bad;

	if (o->nlabels == LH_MAX_LABELS - 1) {
		lh_usage_error(tool, "--label: at most %d labels; give fewer", LH_MAX_LABELS - 1);
		return -EINVAL;
	}
	if (!eq || !n || n >= sizeof(name) || strlen(eq + 1) >= sizeof(o->labels[0].value) ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n ||
	    (arg[0] >= '0' && arg[0] <= '9')) {
		lh_usage_error(tool, "--label '%s': give NAME=VALUE, NAME of letters, digits and _ "
			       "(not first a digit, at most 63), VALUE at most 255 bytes", arg);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)n, arg);
	if (!eq[1]) {	/* Prometheus: a label with an empty value is no label */
		lh_usage_error(tool, "--label %s=: an empty value, which Prometheus takes as no "
			       "label; give a value, or leave --label %s out", name, name);
		return -EINVAL;
	}
	if ((bad = lh_bad_text_byte(eq + 1)) >= 0) {	/* the value is not echoed: it may hold a newline */
		lh_usage_error(tool, "--label %s: its value has byte 0x%02x at %ld, which is not "
			       "printable UTF-8; give printable text", name,
			       (unsigned char)eq[1 + bad], bad);
		return -EINVAL;
	}
	if (reserved_label(name)) {
		lh_usage_error(tool, "--label '%s': %s %s; give another name", arg, name,
			       !strncmp(name, "__", 2) ? "begins with __, which Prometheus keeps for "
			       "its own labels" : "is a label lathist sets itself");
		return -EINVAL;
	}
	for (int i = 0; i < o->nlabels; i++)
		if (!strcmp(o->labels[i].name, name)) {
			lh_usage_error(tool, "--label '%s': label %s given twice; give each label once",
				       arg, name);
			return -EINVAL;
		}
	snprintf(o->labels[o->nlabels].name, sizeof(o->labels[0].name), "%s", name);
	snprintf(o->labels[o->nlabels].value, sizeof(o->labels[0].value), "%s", eq + 1);
	o->nlabels++;
	return 0;
}

void lh_om_for(const struct lh_common_opts *c, const struct lh_meta *m, bool strict,
	       struct lh_om_opts *o, struct lh_label labels[LH_MAX_LABELS])
{
	struct lh_label *run = &labels[c->nlabels];
	size_t n;

	memset(o, 0, sizeof(*o));
	o->strict = strict;
	o->le_min_ns = c->le_min_ns;
	o->le_max_ns = c->le_max_ns;
	o->le_ns = c->le_ns;
	o->nle = c->nle;
	memcpy(labels, c->labels, (size_t)c->nlabels * sizeof(*labels));
	/* tells this run's series from another's in one textfile folder */
	snprintf(run->name, sizeof(run->name), "lathist_run");
	n = (size_t)snprintf(run->value, sizeof(run->value), "%s", m->grouping ? m->grouping : "");
	for (int i = 0; i < m->nfilters && n < sizeof(run->value); i++)
		n += (size_t)snprintf(run->value + n, sizeof(run->value) - n, ",%s=%s",
				      m->filters[i].name, m->filters[i].value);
	o->labels = labels;
	o->nlabels = c->nlabels + 1;
}

int lh_buckets_usable(const struct lh_common_opts *c, const struct lh_scheme *s,
		      const char *tool)
{
	struct lh_om_opts o = { .le_ns = c->le_ns, .nle = c->nle };
	uint64_t bad, below, above;
	char b[3][32];

	if (!lh_buckets_check(&o, s, &bad, &below, &above))
		return 0;
	lh_usage_error(tool, "--buckets: %s is not a bound of the histogram slots (the bounds "
		       "around it: %s and %s); give slot bounds (-u and --precision set them), or "
		       "a range MIN..MAX", lh_duration_str(bad, b[0], sizeof(b[0])),
		       below ? lh_duration_str(below, b[1], sizeof(b[1])) : "none",
		       above ? lh_duration_str(above, b[2], sizeof(b[2])) : "none");
	return -EINVAL;
}

/*
 * -d or -i (flag): a duration from min_ns (said as min) to 10^7 s into *ns; 0
 * parses, and is refused as too short like any under min. bad: the message
 * for what is no duration at all. 0 or -EINVAL (said).
 */
static int opt_span(const char *tool, char flag, const char *arg, uint64_t min_ns,
		    const char *min, const char *bad, uint64_t *ns)
{
	int err = lh_parse_duration(arg, true, ns);

	if (err == -ERANGE || (!err && *ns > 10000000ULL * 1000000000ULL))
		lh_usage_error(tool, "-%c '%s': too long; give at most 10000000 seconds", flag, arg);
	else if ((!err && *ns < min_ns) || err == -EDOM)
		lh_usage_error(tool, "-%c '%s': too short; give at least %s", flag, arg, min);
	else if (err)
		lh_usage_error(tool, "-%c '%s': %s", flag, arg, bad);
	else
		return 0;
	return -EINVAL;
}

int lh_common_opt(struct lh_common_opts *o, int opt, const char *arg, const char *tool)
{
	int err;

	if (given_once(o, opt, tool))
		return -EINVAL;
	switch (opt) {
	case 'd':
		return opt_span(tool, 'd', arg, 1000000, "1ms", "not a duration; give seconds (at "
				"least 0.001), e.g. 5 or 0.5 or 250ms or 10m", &o->duration_ns);
	case 'i':
		return opt_span(tool, 'i', arg, 10000000, "10ms", "not an interval; give seconds, "
				"at least 0.01", &o->interval_ns);
	case 'u':
		if (lh_parse_unit(arg, &o->unit_ns)) {
			lh_usage_error(tool, "-u '%s': unknown unit; use ns, us or ms", arg);
			return -EINVAL;
		}
		o->unit = o->unit_ns == 1 ? "ns" : o->unit_ns == 1000 ? "us" : "ms";
		return 0;
	case LH_OPT_PRECISION:
		err = lh_parse_u32(arg, 0, o->max_precision, &o->precision);
		if (err) {
			lh_usage_error(tool, "--precision '%s': %s; give 0 to %u", arg,
				       err == -ERANGE ? "out of range" : "not a whole number",
				       o->max_precision);
			return -EINVAL;
		}
		return 0;
	case 'f':
		if (!strcmp(arg, "text")) {
			o->format = LH_FMT_TEXT;
		} else if (!strcmp(arg, "json")) {
			o->format = LH_FMT_JSON;
		} else if (!strcmp(arg, "csv")) {
			o->format = LH_FMT_CSV;
		} else if (!strcmp(arg, "openmetrics")) {
			o->format = LH_FMT_OPENMETRICS;
		} else if (!strcmp(arg, "prometheus")) {
			o->format = LH_FMT_PROMETHEUS;
		} else {
			lh_usage_error(tool, "-f '%s': unknown format; use text, json, csv, "
				       "openmetrics or prometheus", arg);
			return -EINVAL;
		}
		return 0;
	case 'o':
		return opt_output(o, arg, tool);
	case LH_OPT_ATTACH:
		if (o->attach_set) {
			lh_usage_error(tool, "--attach given twice; give one type");
			return -EINVAL;
		}
		o->attach_set = true;
		if (!strcmp(arg, "auto")) {
			o->attach = LH_ATTACH_AUTO;
		} else if (!strcmp(arg, "tracepoint")) {
			/* every kernel with the BTF lathist needs has raw_tp (README) */
			lh_usage_error(tool, "--attach tracepoint: lathist no longer attaches classic "
				       "tracepoints (every kernel with BTF has raw_tp, which pairs "
				       "exactly); use --attach raw_tp or auto");
			return -EINVAL;
		} else if (lh_attach_parse(arg, &o->attach)) {
			lh_usage_error(tool, "--attach '%s': unknown attach type; use auto, tp_btf "
				       "or raw_tp", arg);
			return -EINVAL;
		}
		return 0;
	case LH_OPT_MAX_KEYS:
		if (lh_parse_u32(arg, 1, 1U << 24, &o->max_keys)) {
			lh_usage_error(tool, "--max-keys '%s': give a number from 1 to 16777216", arg);
			return -EINVAL;
		}
		return 0;
	case 'p':
		return opt_pid(o, arg, tool);
	case LH_OPT_CGROUP:
		return opt_cgroup(o, arg, tool);
	case 'v':
		o->verbose = true;
		o->text.verbose = true;
		return 0;
	case 'h':
		o->help = true;
		return 0;
	case LH_OPT_SORT:
	case LH_OPT_TOP:
	case LH_OPT_HISTOGRAMS:
		return lh_text_opt(&o->text, &o->text_given, opt, arg, tool);
	case LH_OPT_SLOWER_THAN:
		if (o->slower_than_ns != UINT64_MAX) {
			lh_usage_error(tool, "--slower-than given twice; give one threshold");
			return -EINVAL;
		}
		err = lh_parse_duration(arg, true, &o->slower_than_ns);
		if (err == -ERANGE || (!err && o->slower_than_ns >= 3600ULL * 1000000000ULL)) {
			/* a wait over an hour is a broken pairing (absurd_delta), never recorded */
			o->slower_than_ns = UINT64_MAX;
			lh_usage_error(tool, "--slower-than '%s': too long; give less than 1 hour (waits "
				       "longer than that are counted as absurd_delta)", arg);
			return -EINVAL;
		}
		if (err == -EDOM) {
			o->slower_than_ns = UINT64_MAX;
			lh_usage_error(tool, "--slower-than '%s': under 1ns, which no clock here tells "
				       "from 0; give 1ns or more, or 0 for every event", arg);
			return -EINVAL;
		}
		if (err) {
			o->slower_than_ns = UINT64_MAX;
			lh_usage_error(tool, "--slower-than '%s': not a duration; give e.g. 10ms, 250us, "
				       "2s (ns, us, ms, s, m, h; a bare number is seconds) or 0 for every "
				       "event", arg);
			return -EINVAL;
		}
		return 0;
	case LH_OPT_RINGBUF_SIZE:
		if (o->ringbuf_set) {
			lh_usage_error(tool, "--ringbuf-size given twice; give one size");
			return -EINVAL;
		}
		err = lh_parse_ringbuf_size(arg, &o->ringbuf_bytes, &o->ringbuf_rounded);
		if (err) {
			lh_usage_error(tool, "--ringbuf-size '%s': %s; give bytes with k, m or g, "
				       "e.g. 4096, 256k, 8m (1 to 1g, rounded up to a power of two of pages)", arg,
				       err == -ERANGE ? "too large" : err == -EDOM ? "too small" :
				       "not a size");
			return -EINVAL;
		}
		o->ringbuf_set = true;
		return 0;
	case LH_OPT_EVENTS:
		return stream_file(&o->events_path, "--events", arg, true, tool);
	case LH_OPT_ANONYMIZE:
		if (lh_anon_check_env(tool))
			return -EINVAL;
		o->anonymize = true;
		return 0;
	case LH_OPT_BUCKETS:
		return opt_buckets(o, arg, tool);
	case LH_OPT_LABEL:
		return opt_label(o, arg, tool);
	case LH_OPT_SERIES:
		if (!strcmp(arg, "-")) {
			lh_usage_error(tool, "--series '-': give a file (on stdout, -f json with -i "
				       "already writes one line per interval)");
			return -EINVAL;
		}
		return stream_file(&o->series_path, "--series", arg, false, tool);
	default:
		return 1;
	}
}

const char *lh_attach_name(enum lh_attach_mode t)
{
	switch (t) {
	case LH_ATTACH_TP_BTF:
		return "tp_btf";
	case LH_ATTACH_RAW_TP:
		return "raw_tp";
	default:
		return "auto";
	}
}

int lh_attach_parse(const char *s, enum lh_attach_mode *t)
{
	for (enum lh_attach_mode i = LH_ATTACH_TP_BTF; i <= LH_ATTACH_RAW_TP; i++) {
		if (!strcmp(s, lh_attach_name(i))) {
			*t = i;
			return 0;
		}
	}
	return -EINVAL;
}

bool lh_same_file(const char *a, const char *b)
{
	char *ca = strdup(a), *cb = strdup(b), *da = NULL, *db = NULL;
	struct stat x, y;
	bool same;

	if (!stat(a, &x) && !stat(b, &y))
		same = x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	else if (!ca || !cb || !(da = strdup(a)) || !(db = strdup(b)))
		same = !strcmp(a, b);
	else	/* the folders by inode, as a bind mount shows one under two paths */
		same = !stat(dirname(da), &x) && !stat(dirname(db), &y) &&
		       x.st_dev == y.st_dev && x.st_ino == y.st_ino &&
		       !strcmp(basename(ca), basename(cb));
	free(ca);
	free(cb);
	free(da);
	free(db);
	return same;
}

bool lh_in_init_pidns(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "pid:[4026531836]");
}

int lh_check_pidns(const char *tool, const char *uses_ids)
{
	if (!uses_ids || lh_in_init_pidns())
		return 0;
	lh_usage_error(tool, "%s: lathist runs in a PID namespace of its own (a container), "
		       "and BPF sees the host's pids, not this namespace's; run it in the host's "
		       "(nsenter -t 1 -p, docker run --pid=host), or leave out what takes or shows "
		       "pids", uses_ids);
	return -EINVAL;
}

/*
 * Test and bench hooks, out of the option surface: $LATHIST_TEST, words
 * separated by spaces — reject=TYPE[,TYPE] (that attach type's load fails as
 * a verifier rejection would), no-sweep (the sweeps act as refused),
 * no-atomics (BPF atomics act as refused), no-batch (keyed maps read key by
 * key, as on a kernel without batch map operations), batch-count=N (N
 * elements per batch read, which grows where a hash bucket holds more),
 * consumer-delay-us=N (sleep per record read), kernel-wakeup (the kernel's
 * own ring buffer wakeups). An unknown word is a usage error.
 */
static int test_hooks(struct lh_common_opts *o, const char *tool)
{
	const char *env = getenv("LATHIST_TEST");
	char *list, *save = NULL, *w;
	int err = 0;

	if (!env || !*env)
		return 0;
	if (!(list = strdup(env)))
		return -ENOMEM;
	for (w = strtok_r(list, " ", &save); w && !err; w = strtok_r(NULL, " ", &save)) {
		if (!strcmp(w, "no-sweep")) {
			o->test_no_sweep = true;
		} else if (!strcmp(w, "no-atomics")) {
			o->test_no_atomics = true;
		} else if (!strcmp(w, "no-batch")) {
			o->test_no_batch = true;
		} else if (!strncmp(w, "batch-count=", 12)) {
			if (lh_parse_u32(w + 12, 1, 65536, &o->test_batch_count))
				err = -EINVAL;
		} else if (!strcmp(w, "kernel-wakeup")) {
			o->kernel_wakeup = true;
		} else if (!strncmp(w, "consumer-delay-us=", 18)) {
			if (lh_parse_u32(w + 18, 0, 1000000, &o->consumer_delay_us))
				err = -EINVAL;
		} else if (!strncmp(w, "reject=", 7)) {
			char *save2 = NULL;
			enum lh_attach_mode t;

			for (char *a = strtok_r(w + 7, ",", &save2); a && !err;
			     a = strtok_r(NULL, ",", &save2)) {
				if (lh_attach_parse(a, &t))
					err = -EINVAL;
				else
					o->test_reject |= 1U << t;
			}
		} else {
			err = -EINVAL;
		}
		if (err)
			lh_usage_error(tool, "LATHIST_TEST: '%s' is not a test hook; give reject=TYPES, "
				       "no-sweep, no-atomics, no-batch, batch-count=N, "
				       "consumer-delay-us=N or kernel-wakeup (or unset it)", w);
	}
	free(list);
	return err;
}

int lh_text_opt(struct lh_text_opts *t, unsigned int *given, int opt, const char *arg,
		const char *tool)
{
	static const char *const sorts[] = { "total", "count", "p99", "max" };
	const char *name = opt == LH_OPT_SORT ? "--sort" : opt == LH_OPT_TOP ? "--top" :
			   "--histograms";
	uint32_t *n = opt == LH_OPT_TOP ? &t->top : &t->histograms;

	if (opt != LH_OPT_SORT && opt != LH_OPT_TOP && opt != LH_OPT_HISTOGRAMS)
		return 1;
	if (lh_opt_once(given, 1U << (opt - LH_OPT_SORT), name, tool))
		return -EINVAL;
	if (opt == LH_OPT_SORT) {
		for (size_t i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++)
			if (!strcmp(arg, sorts[i])) {
				t->sort = (enum lh_rank_by)i;
				return 0;
			}
		lh_usage_error(tool, "--sort '%s': unknown order; use total, count, p99 or max", arg);
		return -EINVAL;
	}
	if (!strcmp(arg, "all")) {
		*n = LH_TEXT_ALL;
		return 0;
	}
	if (lh_parse_u32(arg, opt == LH_OPT_TOP ? 1 : 0, LH_TEXT_ALL - 1, n)) {
		lh_usage_error(tool, "%s '%s': give %u to %u, or all", name, arg,
			       opt == LH_OPT_TOP ? 1U : 0U, LH_TEXT_ALL - 1);
		return -EINVAL;
	}
	return 0;
}

int lh_text_only(unsigned int given, enum lh_format format, const char *tool)
{
	static const char *const names[] = { "--sort", "--top", "--histograms" };

	if (!given || format == LH_FMT_TEXT)
		return 0;
	for (int i = 0; i < 3; i++)
		if (given & (1U << i)) {
			lh_usage_error(tool, "%s shapes the text output; drop it, or drop -f (JSON, CSV "
				       "and OpenMetrics keep every key)", names[i]);
			break;
		}
	return -EINVAL;
}

int lh_text_grouped(unsigned int given, bool grouped, const char *fix, const char *tool)
{
	static const char *const names[] = { "--sort", "--top", "--histograms" };

	if (!given || grouped)
		return 0;
	for (int i = 0; i < 3; i++)
		if (given & (1U << i)) {
			lh_usage_error(tool, "%s shapes the text of a grouped run; %s", names[i], fix);
			break;
		}
	return -EINVAL;
}

int lh_common_finish(struct lh_common_opts *o, const char *tool)
{
	struct lh_scheme scheme = { .precision = o->precision, .unit_ns = o->unit_ns };

	if (test_hooks(o, tool))
		return -EINVAL;
	if (lh_text_only(o->text_given, o->format, tool))
		return -EINVAL;
	if ((o->buckets_set || o->nlabels) && !o->serving && o->format != LH_FMT_OPENMETRICS &&
	    o->format != LH_FMT_PROMETHEUS) {
		lh_usage_error(tool, "%s is for metrics: it needs -f openmetrics or -f prometheus",
			       o->buckets_set ? "--buckets" : "--label");
		return -EINVAL;
	}
	/* report checks a list against its inputs' scheme, once it has read them */
	if (o->nle && o->verb == NULL && lh_buckets_usable(o, &scheme, tool))
		return -EINVAL;
	if (o->events_path && o->slower_than_ns == UINT64_MAX) {
		lh_usage_error(tool, "--events needs --slower-than (which events to record)");
		return -EINVAL;
	}
	if (o->series_path && !o->interval_ns) {
		lh_usage_error(tool, "--series needs -i (it keeps every interval)");
		return -EINVAL;
	}
	if (o->series_path && ((o->output && lh_same_file(o->series_path, o->output)) ||
			       (o->events_path && lh_same_file(o->series_path, o->events_path)))) {
		lh_usage_error(tool, "--series and %s name the same file '%s'; give two files",
			       o->output && lh_same_file(o->series_path, o->output) ? "-o" :
			       "--events", o->series_path);
		return -EINVAL;
	}
	if (o->ringbuf_set && o->slower_than_ns == UINT64_MAX) {
		lh_usage_error(tool, "--ringbuf-size needs --slower-than (records to carry)");
		return -EINVAL;
	}
	if (o->events_path && !strcmp(o->events_path, "-") &&
	    (!o->output || !strcmp(o->output, "-"))) {
		lh_usage_error(tool, "--events - and the report would share stdout; give the "
			       "report a file with -o FILE");
		return -EINVAL;
	}
	if (o->events_path && o->output && lh_same_file(o->events_path, o->output)) {
		lh_usage_error(tool, "--events and -o name the same file '%s'; give two files",
			       o->events_path);
		return -EINVAL;
	}
	if (o->interval_ns && o->duration_ns && o->interval_ns > o->duration_ns) {
		char i[32], d[32];

		lh_usage_error(tool, "-i %s is longer than -d %s; give an interval within the "
			       "duration", lh_duration_str(o->interval_ns, i, sizeof(i)),
			       lh_duration_str(o->duration_ns, d, sizeof(d)));
		return -EINVAL;
	}
	return 0;
}
