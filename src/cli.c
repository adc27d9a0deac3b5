// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "anonymize.h"
#include "cli.h"
#include "registry.h"
#include "util.h"
#include "file_opts.h"
#include "target.h"

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

bool lh_help_verbose(const struct lh_common_opts *o, int argc, char **argv)
{
	if (o->verbose)
		return true;
	for (int i = optind; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			return true;
	return false;
}

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
		return lh_output_opt(&o->output, arg, tool);
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
		return lh_stream_opt(&o->events_path, "--events", arg, true, tool);
	case LH_OPT_ANONYMIZE:
		if (lh_anon_check_env(tool))
			return -EINVAL;
		o->anonymize = true;
		return 0;
	case LH_OPT_BUCKETS:
		return lh_opt_buckets(o, arg, tool);
	case LH_OPT_LABEL:
		return lh_opt_label(o, arg, tool);
	case LH_OPT_SERIES:
		if (!strcmp(arg, "-")) {
			lh_usage_error(tool, "--series '-': give a file (on stdout, -f json with -i "
				       "already writes one line per interval)");
			return -EINVAL;
		}
		return lh_stream_opt(&o->series_path, "--series", arg, false, tool);
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

/* The text options in LH_OPT_SORT order: bit i of a given mask is text_opts[i]. */
static const char *const text_opts[] = { "--sort", "--top", "--histograms" };

/* The first text option in given (a non-zero mask of lh_text_opt's bits). */
static const char *first_text_opt(unsigned int given)
{
	int i = 0;

	while (!(given & (1U << i)))
		i++;
	return text_opts[i];
}

int lh_text_opt(struct lh_text_opts *t, unsigned int *given, int opt, const char *arg,
		const char *tool)
{
	static const char *const sorts[] = { "total", "count", "p99", "max" };
	uint32_t *n = opt == LH_OPT_TOP ? &t->top : &t->histograms;
	const char *name;

	if (opt != LH_OPT_SORT && opt != LH_OPT_TOP && opt != LH_OPT_HISTOGRAMS)
		return 1;
	name = text_opts[opt - LH_OPT_SORT];
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
	if (!given || format == LH_FMT_TEXT)
		return 0;
	lh_usage_error(tool, "%s shapes the text output; drop it, or drop -f (JSON, CSV and "
		       "OpenMetrics keep every key)", first_text_opt(given));
	return -EINVAL;
}

int lh_text_grouped(unsigned int given, bool grouped, const char *fix, const char *tool)
{
	if (!given || grouped)
		return 0;
	lh_usage_error(tool, "%s shapes the text of a grouped run; %s", first_text_opt(given), fix);
	return -EINVAL;
}

int lh_common_finish(struct lh_common_opts *o, const char *tool)
{
	struct lh_scheme scheme = { .precision = o->precision, .unit_ns = o->unit_ns };

	if (lh_test_hooks(o, tool))
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
