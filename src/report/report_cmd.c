// SPDX-License-Identifier: MIT
/*
 * lathist report FILE...: the verb. Its options, its inputs and outputs, the
 * merge of the inputs (merge.h: read, checked and added by exact addition) and
 * its rendering in any format; --heatmap draws an interval series as an SVG,
 * --diff sets two runs side by side.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "cli.h"
#include "merge.h"
#include "anonymize.h"
#include "context.h"
#include "registry.h"
#include "heatmap.h"
#include "report.h"
#include "session.h"
#include "tool.h"
#include "util.h"
#include "file_opts.h"
#include "verbs.h"

#define TOOL "report"

enum { OPT_HEATMAP = 0x300, OPT_HEATMAP_HIST, OPT_ANONYMIZE, OPT_DIFF };

static const char report_help[] =
	"Usage: lathist report [OPTIONS] FILE...\n"
	"Read saved lathist JSON (-f json: a document, or JSON lines of intervals), merge\n"
	"the documents of one tool and slot scheme by exact addition (hosts, intervals),\n"
	"and print the result; - reads standard input.\n"
	"  -f, --format FMT       text (default), json, csv, openmetrics or prometheus\n"
	"  -o, --output FILE      write to FILE (replaced atomically) instead of stdout\n"
	"      --sort BY          grouped text: rank by total (default), count, p99, max\n"
	"      --top N            grouped text: rows of the ranked table (10; or all)\n"
	"      --histograms N     grouped text: the top N keys' histograms (1; or all)\n"
	"  -v, --verbose          context, percentile bounds, every counter\n"
	"      --buckets SPEC     metrics: le buckets, MIN..MAX (1us..1m) or bounds\n"
	"      --label NAME=VALUE\n"
	"                         metrics: a label on every series (repeatable)\n"
	"      --heatmap SVG      also draw the documents as a heatmap (time x, latency\n"
	"                         slot y, colour = count): needs interval documents (-i)\n"
	"      --heatmap-hist NAME\n"
	"                         which histogram to draw (default: the first)\n"
	"      --anonymize        pids, tids and task names as stable salted hashes\n"
	"      --diff A B         two runs side by side (text): the context that differs;\n"
	"                         per histogram count, p50..p99.9, max and the change\n"
	"  -h, --help             this help\n";

/* What the merged documents have in common, and strings the report points at. */
/* --heatmap draws one time line: runs that overlap in time (two hosts, two
 * runs at once) would paint over each other. True (said) when some do. */
/* One run's span over the parts read of it. */
struct run_span {
	const char *run_id, *host;
	uint64_t start, end;
};

/*
 * Do two runs overlap in time (any two for a heatmap, which draws one time
 * line; two of one host otherwise, which with the same filters traced the same
 * events: a merge would count them twice)? Said in one line. A run's parts
 * are its intervals, one after the other: its span is theirs.
 */
static bool concurrent(const struct merge *m, bool heatmap)
{
	struct run_span *r = malloc((m->idx.n ? m->idx.n : 1) * sizeof(*r));
	size_t n = 0;
	bool bad = false;

	if (!r)
		return false;
	for (size_t i = 0; i < m->idx.n; i++) {
		const struct lh_part *p = &m->idx.parts[i];
		size_t k = 0;

		while (k < n && (strcmp(r[k].run_id, p->run_id) || !p->run_id[0]))
			k++;
		if (k == n)
			r[n++] = (struct run_span){ p->run_id, p->host, p->start_realtime_ns,
						    p->start_realtime_ns + p->duration_ns };
		if (p->start_realtime_ns < r[k].start)
			r[k].start = p->start_realtime_ns;
		if (p->start_realtime_ns + p->duration_ns > r[k].end)
			r[k].end = p->start_realtime_ns + p->duration_ns;
	}
	for (size_t i = 1; i < n && !bad; i++)
		for (size_t j = 0; j < i && !bad; j++) {
			const struct run_span *a = &r[j], *b = &r[i];

			if (b->start >= a->end || a->start >= b->end ||
			    (!heatmap && strcmp(a->host, b->host)))
				continue;
			if (heatmap)
				fprintf(stderr, "lathist report: --heatmap: run %s (host %s) and run %s "
					"(host %s) overlap in time, and one heatmap draws one time "
					"line; draw each run's documents on their own\n",
					a->run_id[0] ? a->run_id : "without id", a->host,
					b->run_id[0] ? b->run_id : "without id", b->host);
			else
				fprintf(stderr, "lathist report: run %s and run %s traced host %s at "
					"the same time with the same filters: their events would be "
					"counted twice; merge runs of other times or hosts (or with "
					"other filters)\n", a->run_id[0] ? a->run_id : "without id",
					b->run_id[0] ? b->run_id : "without id", a->host);
			bad = true;
		}
	free(r);
	return bad;
}

int lh_report_parse_buffer(const char *buf, size_t len)
{
	struct merge m = { .cur.path = "input" };
	FILE *devnull = fopen("/dev/null", "w");
	int err;

	m.heat = lh_heatmap_new();
	err = merge_read_buffer(&m, buf, len);
	if (!err && devnull) {	/* render every format too */
		lh_report_sort(&m.r);
		struct lh_text_opts t;

		lh_text_defaults(&t);
		lh_render_text(devnull, &m.r, &t);
		t.verbose = true;
		t.histograms = LH_TEXT_ALL;
		lh_render_text(devnull, &m.r, &t);
		lh_render_csv(devnull, &m.r, true);
		struct lh_om_opts om = { .strict = true };

		lh_render_openmetrics(devnull, &m.r, &om);
		om.strict = false;
		om.le_min_ns = 1000;	/* a range too, as the default is */
		om.le_max_ns = 60000000000ULL;
		lh_render_openmetrics(devnull, &m.r, &om);
		free(lh_render_json(&m.r, false));
	}
	if (devnull)
		fclose(devnull);
	merge_free(&m);
	return err;
}

/* report's options (what a test can reach without a merge). */
struct report_opts {
	struct lh_common_opts c;
	const char *heatmap;		/* --heatmap SVG */
	const char *heat_hist;		/* --heatmap-hist NAME */
	bool diff;			/* --diff A B */
	int first;			/* argv index of the first input */
};

/*
 * May --heatmap replace path? When there is nothing there yet, or an SVG (its
 * first bytes "<?xml" or "<svg", as lh_heatmap writes): not a JSON run that the
 * word after --heatmap named by mistake. A file it cannot read is left to the
 * write, which says why it cannot replace it.
 */
static bool svg_or_absent(const char *path)
{
	char head[5];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)		/* absent, or unreadable: the write's own check says why not */
		return true;
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	return (n == 5 && !memcmp(head, "<?xml", 5)) || (n >= 4 && !memcmp(head, "<svg", 4));
}

/* Options into o: 0, -1 after -h, or an exit status (usage error said). */
static int report_options(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "heatmap", required_argument, NULL, OPT_HEATMAP },
		{ "heatmap-hist", required_argument, NULL, OPT_HEATMAP_HIST },
		{ "anonymize", no_argument, NULL, OPT_ANONYMIZE },
		{ "diff", no_argument, NULL, OPT_DIFF },
		{ "buckets", required_argument, NULL, LH_OPT_BUCKETS },
		{ "label", required_argument, NULL, LH_OPT_LABEL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		LH_TEXT_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	lh_common_defaults(&o->c);
	o->c.verb = TOOL;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":f:o:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case 'o':
		case 'v':
		case 'h':
		case LH_OPT_SORT:
		case LH_OPT_TOP:
		case LH_OPT_HISTOGRAMS:
		case LH_OPT_BUCKETS:
		case LH_OPT_LABEL:
			if (lh_common_opt(&o->c, opt, optarg, TOOL) < 0)
				return LH_EXIT_USAGE;
			if (o->c.help) {	/* -h wins over what follows it */
				fputs(report_help, stdout);
				return -1;
			}
			break;
		case OPT_HEATMAP:
			if (o->heatmap) {
				lh_usage_error(TOOL, "--heatmap given twice; give one SVG file");
				return LH_EXIT_USAGE;
			}
			if (!optarg[0]) {
				lh_usage_error(TOOL, "--heatmap '': empty; give an SVG file path");
				return LH_EXIT_USAGE;
			}
			if (strcmp(optarg, "-") &&	/* refused by report_paths, by name */
			    lh_check_file_opt("--heatmap", optarg, "an SVG file", true, TOOL))
				return LH_EXIT_USAGE;
			o->heatmap = optarg;
			break;
		case OPT_HEATMAP_HIST:
			if (o->heat_hist) {
				lh_usage_error(TOOL, "--heatmap-hist given twice; give one histogram");
				return LH_EXIT_USAGE;
			}
			o->heat_hist = optarg;
			break;
		case OPT_DIFF:
			o->diff = true;
			break;
		case OPT_ANONYMIZE:
			if (lh_anon_check_env(TOOL))
				return LH_EXIT_USAGE;
			o->c.anonymize = true;
			break;
		default:
			lh_bad_option(TOOL, opt, argv, longopts);
			return LH_EXIT_USAGE;
		}
	}
	o->first = optind;
	if (optind >= argc && !o->diff) {
		lh_usage_error(TOOL, "no input; give one or more files written by lathist -f json");
		return LH_EXIT_USAGE;
	}
	if (o->diff && argc - optind != 2) {
		lh_usage_error(TOOL, "--diff compares two runs: give two files (A B), not %d; "
			       "merge a side's files first with lathist report -f json -o FILE",
			       argc - optind);
		return LH_EXIT_USAGE;
	}
	if (o->diff && (o->heatmap || o->c.anonymize || o->c.format != LH_FMT_TEXT ||
			o->c.buckets_set || o->c.nlabels || o->c.text_given || o->c.verbose)) {
		lh_usage_error(TOOL, "--diff prints text of its own: leave out %s", o->heatmap ?
			       "--heatmap" : o->c.anonymize ? "--anonymize (anonymize the inputs first)" :
			       o->c.format != LH_FMT_TEXT ? "-f" : o->c.text_given ?
			       "--sort, --top and --histograms" : o->c.verbose ? "-v" :
			       "--buckets and --label");
		return LH_EXIT_USAGE;
	}
	if (lh_text_only(o->c.text_given, o->c.format, TOOL))
		return LH_EXIT_USAGE;
	if (o->heat_hist && !o->heatmap) {
		lh_usage_error(TOOL, "--heatmap-hist needs --heatmap SVG");
		return LH_EXIT_USAGE;
	}
	if ((o->c.buckets_set || o->c.nlabels) && o->c.format != LH_FMT_OPENMETRICS &&
	    o->c.format != LH_FMT_PROMETHEUS) {
		lh_usage_error(TOOL, "%s is for metrics: it needs -f openmetrics or -f prometheus",
			       o->c.buckets_set ? "--buckets" : "--label");
		return LH_EXIT_USAGE;
	}
	return 0;
}

/* No input twice, no output over an input or the other output: 0, or an exit status. */
/* Is input argv-word in (a path, or "-": the file standard input is) the file path? */
static bool input_is(const char *in, const char *path)
{
	struct stat a, b;

	if (strcmp(in, "-"))
		return lh_same_file(in, path);
	/* a file redirected to stdin (< FILE) is still that file */
	return !fstat(STDIN_FILENO, &a) && S_ISREG(a.st_mode) && !stat(path, &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int report_paths(int argc, char **argv, const struct report_opts *o)
{
	const char *out = o->c.output;

	for (int i = o->first; i < argc; i++)
		if (!argv[i][0]) {
			lh_usage_error(TOOL, "'': an empty input name; give a file written by "
				       "lathist -f json (or - for standard input)");
			return LH_EXIT_USAGE;
		}

	for (int i = o->first + 1; i < argc; i++)
		for (int j = o->first; j < i; j++)
			if (!strcmp(argv[i], "-") && !strcmp(argv[j], "-")) {
				lh_usage_error(TOOL, "'-' (standard input) is given twice; it can be "
					       "read once");
				return LH_EXIT_USAGE;
			} else if (strcmp(argv[i], "-") && lh_same_file(argv[i], argv[j])) {
				lh_usage_error(TOOL, "'%s' is given twice; give each input once (it "
					       "would be counted twice)", argv[i]);
				return LH_EXIT_USAGE;
			}
	for (int i = o->first; out && strcmp(out, "-") && i < argc; i++)
		if (input_is(argv[i], out)) {
			lh_usage_error(TOOL, "-o '%s' is also an input; give another file", out);
			return LH_EXIT_USAGE;
		}
	if (lh_stdout_closed && (!out || !strcmp(out, "-"))) {
		fprintf(stderr, "lathist report: standard output is closed; give -o FILE\n");
		return LH_EXIT_RUNTIME;
	}
	if (o->heatmap && !strcmp(o->heatmap, "-")) {
		lh_usage_error(TOOL, "--heatmap '-': give an SVG file (the report itself goes to "
			       "stdout)");
		return LH_EXIT_USAGE;
	}
	for (int i = o->first; o->heatmap && i <= argc; i++) {
		/* every input, then (i == argc) the -o file */
		const char *other = i < argc ? argv[i] : out;

		if (other && (i < argc ? input_is(other, o->heatmap) :
			      lh_same_file(o->heatmap, other))) {
			lh_usage_error(TOOL, "--heatmap '%s' names an input or the -o file; give "
				       "another file", o->heatmap);
			return LH_EXIT_USAGE;
		}
	}
	if (o->heatmap && !svg_or_absent(o->heatmap)) {
		lh_usage_error(TOOL, "--heatmap '%s': exists and is not an SVG, and would be "
			       "replaced; give the SVG to write (--heatmap takes the next word) or "
			       "remove the file", o->heatmap);
		return LH_EXIT_USAGE;
	}
	return 0;
}

/*
 * Read inputs argv[first..last) into m and finish the merge (checks that need
 * every input, meta from all of them, sorted). 0, or an exit status.
 */
static int merge_inputs(struct merge *m, char **argv, int first, int last,
			const struct report_opts *ro, const char *heatmap)
{
	const struct lh_common_opts *c = &ro->c;
	int err = 0;

	for (int i = first; i < last && !err; i++)
		err = merge_read_file(m, argv[i]);
	if (err)
		return LH_EXIT_RUNTIME;
	if (m->heat_hist) {
		if (!merge_kind_of(m, m->heat_hist)) {
			char names[128] = "";

			for (int i = 0; i < m->r.meta.nkinds; i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 i ? ", " : "", m->r.meta.kinds[i].name);
			lh_usage_error(TOOL, "--heatmap-hist '%s': %s has no such histogram; give "
				       "one of %s", m->heat_hist, m->tool, names);
			return LH_EXIT_USAGE;
		}
	}
	if (c->nle && lh_buckets_usable(c, &m->r.meta.scheme, TOOL))	/* the inputs' scheme */
		return LH_EXIT_USAGE;
	if ((heatmap && concurrent(m, true)) || (!m->filters_mixed && concurrent(m, false)))
		return LH_EXIT_RUNTIME;
	if (m->oncpu_docs && m->oncpu_docs < m->ndocs)
		fprintf(stderr, "lathist report: %d of the %d inputs have on-CPU slices (--oncpu): "
			"the oncpu histograms cover those runs only\n", m->oncpu_docs, m->ndocs);
	if (heatmap && m->ndocs < 2) {
		fprintf(stderr, "lathist report: --heatmap needs at least two documents (intervals: "
			"run with -i and --series FILE)\n");
		return LH_EXIT_RUNTIME;
	}
	if (heatmap && lh_heatmap_empty(m->heat)) {	/* said before any output is written */
		fprintf(stderr, "lathist report: --heatmap %s: the inputs have no events in the %s "
			"histogram; give another with --heatmap-hist\n", heatmap,
			m->heat_hist ? m->heat_hist : m->r.meta.kinds[0].name);
		return LH_EXIT_RUNTIME;
	}
	if (m->pmu_dropped)
		fprintf(stderr, "lathist report: the inputs' counters (--counters) are not merged; "
			"they are left out\n");
	if (m->records_dropped)
		fprintf(stderr, "lathist report: the inputs' record summaries (--slower-than) are "
			"not merged; they are left out\n");
	if (m->filters_mixed) {
		lh_meta_add_filter(&m->r.meta, "mixed", false, "the inputs had different filters");
	} else if (m->filters_obj) {
		json_object_object_foreach(m->filters_obj, fname, fval) {
			const char *v = json_object_get_string(fval);
			static const char *const names[] = { "pid", "tid", "cpus", "cgroup", "disk" };

			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strcmp(fname, names[i]) && v)
					lh_meta_add_filter(&m->r.meta, names[i],
							   json_object_is_type(fval, json_type_int),
							   "%s", v);
		}
	}
	merge_context_finish(m);
	m->r.meta.parts = m->idx.parts;
	m->r.meta.nparts = m->idx.n;
	m->r.meta.anonymized = m->anonymized;
	snprintf(m->r.meta.host, sizeof(m->r.meta.host), "%s", m->host);
	snprintf(m->r.meta.kernel, sizeof(m->r.meta.kernel), "%s", m->kernel);
	merge_printable(m->r.meta.host, true);	/* printed in headers and labels */
	merge_printable(m->r.meta.kernel, true);
	m->r.meta.start_realtime_ns = m->first_start;
	m->r.meta.duration_ns = m->last_end - m->first_start;
	lh_report_sort(&m->r);
	return 0;
}

/* --diff A B: each side merged on its own, then side by side. An exit status. */
static int report_diff(char **argv, const struct report_opts *ro)
{
	struct merge a = { .ctx.quiet = true }, b = { .ctx.quiet = true };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = merge_inputs(&a, argv, ro->first, ro->first + 1, ro, NULL);

	if (!rc)
		rc = merge_inputs(&b, argv, ro->first + 1, ro->first + 2, ro, NULL);
	if (!rc && strcmp(a.tool, b.tool)) {
		fprintf(stderr, "lathist report: --diff: %s is a %s run and %s a %s run; give two runs "
			"of one tool\n", argv[ro->first], a.tool, argv[ro->first + 1], b.tool);
		rc = LH_EXIT_RUNTIME;
	}
	if (!rc && (a.r.meta.scheme.precision != b.r.meta.scheme.precision ||
		    a.r.meta.scheme.unit_ns != b.r.meta.scheme.unit_ns)) {
		fprintf(stderr, "lathist report: --diff: %s has slots of precision %u in %s and %s "
			"of precision %u in %s: their percentiles' slots do not line up; give two "
			"runs with the same -u and --precision\n", argv[ro->first],
			a.r.meta.scheme.precision, a.unit, argv[ro->first + 1],
			b.r.meta.scheme.precision, b.unit);
		rc = LH_EXIT_RUNTIME;
	}
	if (!rc && strcmp(a.grouping, b.grouping)) {
		fprintf(stderr, "lathist report: --diff: %s is grouped by %s and %s by %s: no "
			"histogram would match; give two runs of one grouping\n", argv[ro->first],
			a.grouping, argv[ro->first + 1], b.grouping);
		rc = LH_EXIT_RUNTIME;
	}
	if (!rc) {
		f = open_memstream(&buf, &len);
		if (!f) {
			rc = LH_EXIT_RUNTIME;
		} else {
			lh_render_diff(f, &a.r, argv[ro->first], &b.r, argv[ro->first + 1]);
			if (fclose(f) || lh_emit_bytes(TOOL, ro->c.output, buf, len))
				rc = LH_EXIT_RUNTIME;
		}
	}
	free(buf);
	merge_free(&a);
	merge_free(&b);
	return rc;
}

int report_main(int argc, char **argv)
{
	struct report_opts ro = {};
	struct lh_common_opts c;
	struct merge m = {};
	const char *heatmap;
	int err = 0, rc = report_options(argc, argv, &ro);

	if (rc)
		return rc < 0 ? LH_EXIT_OK : rc;
	if ((rc = report_paths(argc, argv, &ro)))
		return rc;
	if (ro.diff)
		return report_diff(argv, &ro);
	c = ro.c;
	heatmap = ro.heatmap;
	m.heat_hist = ro.heat_hist;
	if (heatmap && !(m.heat = lh_heatmap_new())) {
		fprintf(stderr, "lathist report: out of memory\n");
		return LH_EXIT_RUNTIME;
	}
	if ((rc = merge_inputs(&m, argv, ro.first, argc, &ro, heatmap)))
		goto out;
	if (lh_text_grouped(c.text_given, strcmp(m.r.meta.grouping, "total") != 0,
			    "these inputs are not grouped (meta.grouping total): drop it", TOOL)) {
		rc = LH_EXIT_USAGE;
		goto out;
	}
	if (c.anonymize && m.anonymized) {	/* hashing hashes again would hide nothing more */
		lh_usage_error(TOOL, "--anonymize: the inputs are anonymized already "
			       "(meta.anonymized); leave --anonymize out");
		rc = LH_EXIT_USAGE;
		goto out;
	}
	if (c.anonymize) {
		struct lh_anon anon;

		if (lh_anon_init(&anon, TOOL)) {
			rc = LH_EXIT_RUNTIME;
			goto out;
		}
		lh_anon_report(&anon, &m.r);
		lh_anon_meta(&anon, &m.r.meta);	/* -p and -t values are ids too */
		for (size_t i = 0; i < m.idx.n; i++)
			lh_anon_host(&anon, m.idx.parts[i].host, sizeof(m.idx.parts[i].host));
	}
	if (lh_emit(&m.r, &c))
		rc = LH_EXIT_RUNTIME;
	if (heatmap) {
		const char *name = m.heat_hist ? m.heat_hist : m.r.meta.kinds[0].name;

		err = lh_heatmap_write(m.heat, heatmap, &m.r.meta, name);
		if (err) {
			fprintf(stderr, "lathist report: --heatmap %s: %s\n", heatmap,
				err == -EDOM ? "the inputs have no events in that histogram" :
				strerror(-err));
			rc = LH_EXIT_RUNTIME;
		}
	}
out:
	merge_free(&m);
	return rc;
}
