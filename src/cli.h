/* SPDX-License-Identifier: MIT */
/*
 * Options every tracing verb shares (-i -d -u -o -f -v -p --cgroup
 * --precision --attach --max-keys), parsed once here (cli.c; the metric options
 * in metrics_opts.c, the test hooks in test_hooks.c; file options: file_opts.h;
 * who is traced: target.h).
 */
#ifndef LATHIST_CLI_H
#define LATHIST_CLI_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "report.h"

enum lh_format { LH_FMT_TEXT, LH_FMT_JSON, LH_FMT_CSV, LH_FMT_OPENMETRICS, LH_FMT_PROMETHEUS };
/* --attach: AUTO tries the others in this order (tp_btf, raw_tp). */
enum lh_attach_mode { LH_ATTACH_AUTO, LH_ATTACH_TP_BTF, LH_ATTACH_RAW_TP };

/* Exit statuses of every verb. */
enum { LH_EXIT_OK = 0, LH_EXIT_RUNTIME = 1, LH_EXIT_USAGE = 2 };

struct lh_common_opts {
	uint64_t duration_ns;	/* 0 = until Ctrl-C */
	uint64_t interval_ns;	/* 0 = one aggregate at the end */
	uint64_t unit_ns;	/* slot unit */
	const char *unit;	/* "ns", "us", "ms" */
	uint32_t precision;	/* 0..LH_MAX_PRECISION */
	const char *output;	/* NULL = stdout */
	enum lh_format format;
	enum lh_attach_mode attach;
	bool attach_set;	/* --attach given (twice is refused) */
	unsigned int given;	/* bit per one-value option given so far (cli.c given_once) */
	bool verbose;
	bool help;		/* -h: the synopsis (with -v, the counter glossary too) */
	struct lh_text_opts text;	/* text output: -v, --sort, --top, --histograms */
	unsigned int text_given;	/* bit per text option given (refused with another -f) */
	uint32_t pid;		/* 0 = any process */
	uint64_t pid_ticks;	/* -p: its start (/proc stat starttime): a pid reused later is
				 * another process, not traced */
	uint32_t watch_tid;	/* the -p process (or -t thread) whose exit the run notes */
	uint64_t watch_ticks;	/* its start time, as pid_ticks */
	bool watch_thread;	/* watch_tid is a -t thread */
	char cgroup[PATH_MAX];	/* "" = any cgroup */
	uint64_t cgroup_id;	/* cgroup v2 id (kernfs node id) */
	uint32_t max_keys;	/* entries of keyed histogram maps; 0: sized from the machine */
	uint32_t max_precision;	/* the tool's limit (LH_MAX_PRECISION, bio less) */
	uint64_t slower_than_ns;	/* records for events >= this; UINT64_MAX = none */
	uint64_t ringbuf_bytes;		/* ring buffer size, a power-of-two number of pages */
	bool ringbuf_rounded;		/* --ringbuf-size was rounded up (said with -v) */
	bool ringbuf_set;		/* --ringbuf-size given */
	const char *events_path;	/* --events FILE: records as JSON lines */
	const char *series_path;	/* --series FILE: every interval as a JSON line */
	bool anonymize;			/* --anonymize: hashed pids, tids and task names */
	const char *verb;		/* for messages when not the report's tool (report) */
	uint32_t consumer_delay_us;	/* test only: sleep per record consumed */
	bool kernel_wakeup;		/* bench only: the kernel's ring buffer wakeups */
	unsigned int test_reject;	/* test only: bit 1 << type fails that type's load */
	bool test_no_sweep;		/* test only: the sweeps act as if refused (-EPERM) */
	bool test_no_atomics;		/* test only: BPF atomics act as if refused (-EINVAL) */
	bool test_no_batch;		/* test only: keyed maps read key by key, as before 5.6 */
	unsigned int test_batch_count;	/* test only: elements per batch read (0: by size) */
	bool has_tid_option;	/* the tool has -t (for the -p hint) */
	/* metric outputs (-f openmetrics/prometheus, lathist serve): --buckets (a
	 * range, or the nle bounds le_ns) and --label (lh_om_for makes the options) */
	uint64_t le_min_ns, le_max_ns;
	uint64_t le_ns[LH_MAX_LE];
	size_t nle;
	bool buckets_set;
	struct lh_label labels[LH_MAX_LABELS - 1];	/* the last place is lathist_run's */
	int nlabels;
	bool serving;		/* lathist serve: metrics without -f */
};

enum {
	LH_OPT_PRECISION = 0x100,
	LH_OPT_ATTACH,
	LH_OPT_CGROUP,
	LH_OPT_MAX_KEYS,
	LH_OPT_SLOWER_THAN,
	LH_OPT_RINGBUF_SIZE,
	LH_OPT_EVENTS,
	LH_OPT_SERIES,
	LH_OPT_ANONYMIZE,
	LH_OPT_BUCKETS,
	LH_OPT_LABEL,
	LH_OPT_SORT,
	LH_OPT_TOP,
	LH_OPT_HISTOGRAMS,
	LH_OPT_TOOL_BASE = 0x200,	/* tool-specific long options start here */
};

#define LH_COMMON_SHORTOPTS "+:i:d:u:o:f:vhp:"
#define LH_COMMON_LONGOPTS                                         \
	{ "interval", required_argument, NULL, 'i' },              \
	{ "duration", required_argument, NULL, 'd' },              \
	{ "unit", required_argument, NULL, 'u' },                  \
	{ "output", required_argument, NULL, 'o' },                \
	{ "format", required_argument, NULL, 'f' },                \
	{ "verbose", no_argument, NULL, 'v' },                     \
	{ "help", no_argument, NULL, 'h' },                        \
	{ "pid", required_argument, NULL, 'p' },                   \
	{ "precision", required_argument, NULL, LH_OPT_PRECISION }, \
	{ "attach", required_argument, NULL, LH_OPT_ATTACH },      \
	{ "cgroup", required_argument, NULL, LH_OPT_CGROUP },      \
	{ "max-keys", required_argument, NULL, LH_OPT_MAX_KEYS },       \
	{ "slower-than", required_argument, NULL, LH_OPT_SLOWER_THAN }, \
	{ "ringbuf-size", required_argument, NULL, LH_OPT_RINGBUF_SIZE }, \
	{ "events", required_argument, NULL, LH_OPT_EVENTS },          \
	{ "series", required_argument, NULL, LH_OPT_SERIES },          \
	{ "anonymize", no_argument, NULL, LH_OPT_ANONYMIZE },         \
	{ "buckets", required_argument, NULL, LH_OPT_BUCKETS },        \
	{ "label", required_argument, NULL, LH_OPT_LABEL },         \
	LH_TEXT_LONGOPTS

/* The text output's options (lathist report has them too). */
#define LH_TEXT_LONGOPTS                                           \
	{ "sort", required_argument, NULL, LH_OPT_SORT },          \
	{ "top", required_argument, NULL, LH_OPT_TOP },            \
	{ "histograms", required_argument, NULL, LH_OPT_HISTOGRAMS }


/* Defaults: us, precision 0 (at most LH_MAX_PRECISION), text, auto attach, 10240 keys. */
void lh_common_defaults(struct lh_common_opts *o);

/*
 * Handle one getopt result. Returns 0 when handled, 1 when opt is not a
 * common option, or -EINVAL after printing a one-line error to stderr
 * ("lathist TOOL: <what> '<value>': <why>; <fix>").
 */
int lh_common_opt(struct lh_common_opts *o, int opt, const char *arg, const char *tool);

/*
 * --sort, --top or --histograms (opt) into t; *given gets a bit per option
 * (a second is refused). 0, 1 when opt is none of them, or -EINVAL after the
 * message.
 */
int lh_text_opt(struct lh_text_opts *t, unsigned int *given, int opt, const char *arg,
		const char *tool);

/* The text options given (given: lh_text_opt's bits) are refused with a format
 * other than text: 0, or -EINVAL after the message. */
int lh_text_only(unsigned int given, enum lh_format format, const char *tool);

/* The text options given shape a grouped run's ranked table: refused without a
 * grouping (grouped false), the message ending in fix. 0, or -EINVAL after it. */
int lh_text_grouped(unsigned int given, bool grouped, const char *fix, const char *tool);

/*
 * Parse a size in bytes ("4096", "64k", "1m", "1g") and round it up to a power-of-two
 * number of pages (what BPF ring buffers need). -EINVAL (not a size), -EDOM
 * (zero) or -ERANGE (over 1 GiB).
 */
int lh_parse_ringbuf_size(const char *s, uint64_t *bytes, bool *rounded);


/*
 * The exposition options of c for a report of meta m: c's buckets and
 * --labels, then lathist_run, which tells this run's series from another's in
 * one textfile folder (m's grouping and filters, "thread,pid=1234"). o points
 * into c and labels (LH_MAX_LABELS places).
 */
void lh_om_for(const struct lh_common_opts *c, const struct lh_meta *m, bool strict,
	       struct lh_om_opts *o, struct lh_label labels[LH_MAX_LABELS]);

/*
 * An explicit --buckets list against slot scheme s: 0, or -EINVAL after a
 * one-line usage error naming the first bound that is not a slot bound and
 * the two around it.
 */
int lh_buckets_usable(const struct lh_common_opts *c, const struct lh_scheme *s,
		      const char *tool);

/* "tp_btf", "raw_tp" (the names --attach takes and meta.attach holds); "auto". */
const char *lh_attach_name(enum lh_attach_mode t);

/* The type named s (not "auto") into *t; -EINVAL when s names none. */
int lh_attach_parse(const char *s, enum lh_attach_mode *t);


/* cli.c's parts (metrics_opts.c, test_hooks.c): --buckets and --label into o, and
 * $LATHIST_TEST's hooks; 0, or -EINVAL (-ENOMEM) after the message. */
int lh_opt_buckets(struct lh_common_opts *o, const char *arg, const char *tool);
int lh_opt_label(struct lh_common_opts *o, const char *arg, const char *tool);
int lh_test_hooks(struct lh_common_opts *o, const char *tool);

/* Checks across options once all are parsed (e.g. -i within -d); -EINVAL after printing. */
int lh_common_finish(struct lh_common_opts *o, const char *tool);

/* Print a usage error "lathist TOOL: ..." to stderr. */
void lh_usage_error(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An option that takes one value, seen again? bit is its bit in *seen: 0 the first
 * time (marked), else "NAME given twice" as a usage error naming tool, -EINVAL. */
int lh_opt_once(unsigned int *seen, unsigned int bit, const char *name, const char *tool);



/* The text shared by every verb's -h for the common options. */
extern const char lh_common_help[];

/* -h was given (o->help, where getopt stopped: optind): is -v, before it or among
 * the words after it (which -h leaves unread)? Then -h adds the glossary. */
bool lh_help_verbose(const struct lh_common_opts *o, int argc, char **argv);

/* A tool's -h on stdout: tool_help (its own options), the common options, and with
 * verbose what every counter of the tool means (its descriptor's counter_desc). */
void lh_print_help(const char *tool_help, const char *tool, bool verbose);

#endif /* LATHIST_CLI_H */
