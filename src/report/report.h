/* SPDX-License-Identifier: MIT */
/*
 * One measurement: its metadata, histograms and counters, and the renderers
 * (text, JSON) that every tool shares.
 */
#ifndef LATHIST_REPORT_H
#define LATHIST_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "counters_user.h"
#include "hist.h"
#include "pmu.h"

#define LH_SCHEMA "lathist/1"
#define LH_MAX_ATTACH 8
#define LH_MAX_FILTERS 8
#define LH_MAX_MAPS 32
#define LH_MAX_GAP_CPUS 8192	/* CPUs with their own missed_switch count (NR_CPUS max) */

struct lh_attach {
	const char *tracepoint;	/* "sched_switch" */
	const char *type;	/* "tp_btf", "raw_tp" or "tracepoint" */
};

struct lh_filter {
	const char *name;	/* "pid", "tid", "cpus", "cgroup" */
	char value[256];
	bool numeric;		/* render as a JSON number */
};

struct lh_map_size {
	const char *name;
	uint32_t max_entries;
	uint64_t memlock_bytes;	/* from /proc/self/fdinfo; task storage: map only */
};

/* A histogram a tool produces, in the order it prints them. */
struct lh_hist_kind {
	const char *name;	/* "wakeup" */
	const char *desc;	/* "wakeup latency: wakeup to switch-in" */
	unsigned int scope;	/* enum lh_scope: which loss classes may be missing from it */
};

/* Outputs beyond the histograms a run has: counters shown only with them. */
enum lh_feature {
	LH_FEAT_RECORDS = 1,	/* --slower-than */
	LH_FEAT_ONCPU = 2,	/* runq --oncpu / --counters: on-CPU slices */
	LH_FEAT_COUNTERS = 4,	/* runq --counters: counter reads */
	LH_FEAT_TRACEPOINT = 8,	/* a report input carries unchecked_start: every runq
				 * document of lathist 0.1.0 did (non-zero only on its
				 * classic tracepoint path) */
};

#define LH_RUN_ID_LEN 32	/* hex digits of a run id */

/*
 * What one document covers of one run: the whole run (interval_index 0) or
 * one interval of it. lathist report refuses a part that repeats or overlaps
 * one of the same run it has read, so no interval is counted twice.
 */
struct lh_part {
	char run_id[LH_RUN_ID_LEN + 1];	/* 32 hex digits, random per run; "" for a
					 * document from a lathist before run ids */
	char host[65];			/* hostname of the traced host */
	uint32_t interval_index;	/* 1-based with -i, 0 for a whole run */
	uint64_t start_realtime_ns;	/* CLOCK_REALTIME ns */
	uint64_t duration_ns;
};

/* The PMU counters of a run (runq --counters). */
struct lh_pmu_meta {
	int n;				/* counters read, in this order */
	char names[LH_MAX_PMU][32];
	int nunsupported;		/* asked for but not opened (--counters-optional) */
	struct {
		char name[32];
		int err;		/* perf_event_open errno */
	} unsupported[LH_MAX_PMU];
};

/*
 * The CPU time stolen by the hypervisor and the load over one aggregate, from
 * /proc/stat's cpu line and /proc/loadavg at its start and end (src/context.h).
 */
struct lh_load {
	bool known;			/* both samples read (false: null in JSON) */
	uint64_t steal_ns;		/* stolen, summed over CPUs (USER_HZ resolution) */
	uint64_t cpu_ns;		/* online CPUs x its wall time (context.h lh_load_between) */
	bool ends;			/* loadavg_start/_end are this aggregate's (not a merge) */
	double loadavg_start, loadavg_end;	/* 1-minute load average at its ends */
	double loadavg_max;		/* the larger; in a merge the largest of the inputs' */
};

struct lh_tool_desc;

struct lh_meta {
	const char *tool;		/* "runq" */
	const struct lh_tool_desc *desc;	/* the tool's descriptor (registry.h): which
					 * counters it has and what they mean */
	bool has_bytes;			/* histograms carry bytes (bio) */
	char kernel[128];		/* uname release */
	const char *clock;		/* "CLOCK_MONOTONIC (bpf_ktime_get_ns)" */
	struct lh_attach attach[LH_MAX_ATTACH];
	int nattach;
	struct lh_filter filters[LH_MAX_FILTERS];
	int nfilters;
	const struct lh_hist_kind *kinds;
	int nkinds;
	const char *grouping;		/* "total", "process", "thread", "cpu" */
	const char *unit;		/* "ns", "us", "ms" */
	struct lh_scheme scheme;
	int ncpus;
	uint64_t start_realtime_ns;	/* CLOCK_REALTIME when this aggregate began */
	uint64_t duration_ns;		/* covered by this aggregate */
	uint64_t interval_ns;		/* 0 = whole run */
	uint32_t interval_index;	/* 1-based in interval mode, 0 otherwise */
	struct lh_map_size maps[LH_MAX_MAPS];
	int nmaps;
	unsigned int features;		/* enum lh_feature bits */
	struct lh_pmu_meta pmu;
	char run_id[LH_RUN_ID_LEN + 1];	/* this run's id (hex); "" in a merge */
	char host[65];			/* hostname; "mixed" in a merge of hosts */
	bool anonymized;		/* ids, names and host are salted hashes */
	uint64_t filter_exit_realtime_ns;	/* -p/-t task seen gone (CLOCK_REALTIME;
					 * to within 250 ms), 0 if not */
	char unchecked[512];		/* what this kernel kept lathist from checking
					 * (a sweep that could not load), "" if none */
	void *context;			/* meta.context: a json-c object (src/context.h),
					 * not owned; NULL when unknown */
	struct lh_load load;
	const struct lh_part *parts;	/* a merge (lathist report): what it covers */
	size_t nparts;
};

/* Does m's run count counter i: its tool's descriptor names it, and the run has the
 * outputs it needs (its needs, e.g. records_eligible only with records)? */
bool lh_meta_counts(const struct lh_meta *m, int i);

/* What m's tool says counter i means; NULL when it does not count it. */
const char *lh_meta_counter_desc(const struct lh_meta *m, int i);

/* Lost waits charged to one key (runq per process/thread): the key's identity
 * (tid 0 per process) and the count. */
struct lh_key_charge {
	uint32_t pid, tid;
	uint64_t birth_ns;
	uint64_t lost;
};

/* Sort the n charges v by key (pid, tid, birth_ns); whether no key is there
 * twice (a document lists each key that lost waits once); if one is, *twice
 * is its entry. */
bool lh_charges_sort_unique(struct lh_key_charge *v, size_t n, struct lh_key_charge *twice);

/* One counter's sums over the on-CPU slices of one key. */
struct lh_pmu_row {
	struct lh_key key;
	int event;			/* index in meta.pmu.names */
	uint64_t raw;			/* counted */
	uint64_t enabled_ns, running_ns;	/* time_enabled, time_running sums */
	uint64_t slices;		/* slices of the key */
	uint64_t multiplexed;		/* slices with running < enabled */
	uint64_t read_failed;		/* slices left out of the sums: a read failed */
	uint64_t oncpu_ns;		/* the key's on-CPU time (its oncpu histogram's sum) */
};

/* Per-event records (--slower-than) of one aggregate. */
struct lh_records {
	bool on;
	uint64_t slower_than_ns;
	uint64_t ringbuf_bytes;
	uint64_t delivered;		/* read by the loader in this aggregate */
};

struct lh_report {
	struct lh_meta meta;
	struct lh_records records;
	int trend;			/* enum lh_trend: interval mode, losses against load */
	size_t trend_intervals;		/* intervals the trend was computed over */
	struct lh_hist *hists;
	size_t nhists, cap;
	uint64_t counters[LH_NR_COUNTERS];
	/* runq per process/thread: lost waits charged to keys, by key identity
	 * (sorted and one per key after lh_report_sort), and their sum */
	struct lh_key_charge *charges;
	size_t ncharges, charges_cap;
	uint64_t charged;
	/* runq: missed_switch per CPU (index = CPU number), gap_ncpus of them */
	uint64_t *gap_cpu;
	uint32_t gap_ncpus;
	struct lh_pmu_row *pmu;		/* runq --counters: one row per key and counter */
	size_t npmu, pmu_cap;
	/* lh_report_find_hist's open-addressing table: hists[] position + 1 (0 = empty),
	 * covering hists[0..index_n); index_cap slots (a power of two). Rebuilt after
	 * lh_report_sort, lh_report_clear or a change of keys (lh_report_index_reset). */
	size_t *index;
	size_t index_cap, index_n;
	/* lh_report_reset's spare slot arrays (spare_nslots counters each), owned, taken
	 * by lh_report_add_hist before it allocates */
	uint64_t **spare;
	size_t nspare, spare_cap;
	uint32_t spare_nslots;
};

/* The histogram of r with this name and key, appended empty when r has none:
 * a hash lookup, expected O(1); NULL on ENOMEM. */
struct lh_hist *lh_report_find_hist(struct lh_report *r, const char *name,
				    const struct lh_key *key);

/*
 * dst += src: histograms with the same name and key add slot by slot (others
 * are appended), counter rows and loss counters add. For cumulative exports
 * (Prometheus counters never go down). -ENOMEM, -EINVAL on a scheme mismatch.
 */
int lh_report_accumulate(struct lh_report *dst, const struct lh_report *src);

/* lh_report_accumulate, sorted (lh_report_sort) only when sort is set: an
 * unsorted dst keeps its lookup table, and charges may hold a key more than
 * once until it is sorted. */
int lh_report_merge(struct lh_report *dst, const struct lh_report *src, bool sort);

/* A key's hash and equality as histograms are matched: a task's (pid, tid,
 * start time) is its identity, its name only a label. Keys are zero-initialised,
 * padding too. */
uint64_t lh_key_hash(const struct lh_key *k);
bool lh_key_same(const struct lh_key *a, const struct lh_key *b);

/* Forget lh_report_find_hist's table: call after reordering hists or changing keys. */
void lh_report_index_reset(struct lh_report *r);

/* Counter rows are sorted by key: the end (exclusive) of the rows sharing row a's key. */
size_t lh_pmu_key_end(const struct lh_report *r, size_t a);

/*
 * IPC (instructions / cycles) of the rows [a, b) of one key: 0 with *ipc and
 * *estimated (either side scaled), -EDOM when undefined (lh_pmu_ratio), -ENOENT
 * when instructions or cycles is not among them.
 */
int lh_pmu_ipc(const struct lh_report *r, size_t a, size_t b, double *ipc, bool *estimated);

/* Append a zeroed counter row for key and event; NULL on ENOMEM. */
struct lh_pmu_row *lh_report_add_pmu(struct lh_report *r, const struct lh_key *key, int event);

/* Append a zeroed histogram (takes the scheme from meta); NULL on ENOMEM. */
struct lh_hist *lh_report_add_hist(struct lh_report *r, const char *name, const struct lh_key *key);
/* Give every task (pid, tid, start time) one name, the one seen first of its
 * histograms' (least name_ns), on its histograms and counter rows alike; then
 * sort histograms by meta.kinds order, then key. */
void lh_report_sort(struct lh_report *r);
/* Free histograms; meta stays. */
void lh_report_clear(struct lh_report *r);
/*
 * Empty r for its next aggregate (a session's next interval) and keep its
 * storage: the histograms' slot arrays are kept as spares for
 * lh_report_add_hist, and the histogram, counter row, charge and index arrays
 * keep their capacity; meta stays. lh_report_clear frees it all.
 */
void lh_report_reset(struct lh_report *r);

/*
 * A task name as printable ASCII: bytes outside 0x20..0x7e become \xNN and a
 * backslash becomes \\, so text and JSON stay one line and valid UTF-8 and the
 * raw bytes can be recovered. out needs 4 * strlen(in) + 1 bytes (65 for a comm).
 */
void lh_printable(const char *in, size_t inlen, char *out, size_t outlen);

/* One key field as text: name ("pid") and value ("1234", in buf, or a
 * cgroup's path, which can be longer). */
struct lh_kv {
	const char *name;
	const char *value;
	char buf[72];
};
#define LH_MAX_KEY_FIELDS 9

/*
 * The fields of key k in a fixed order (tid, pid, comm, start_ns, cpu, disk,
 * op), values as text (comm printable, see lh_printable). Returns how many.
 */
int lh_key_fields(const struct lh_key *k, struct lh_kv out[LH_MAX_KEY_FIELDS]);

/* The names of every key field, in lh_key_fields order (CSV columns). */
extern const char *const lh_key_field_names[LH_MAX_KEY_FIELDS];

/* A key's block operation names (bio --per-op), in enum bio_op order: the
 * kernel's REQ_OP numbers (read 0, write 1, flush 2, discard 3), then other.
 * Keys sort in this order (lathist report refuses any other name). */
#define LH_NR_OPS 5
extern const char *const lh_op_names[LH_NR_OPS];

/* The index of op in lh_op_names; -1 when it is not there. */
int lh_op_index(const char *op);

/* "(lo, hi]" of slot s in meta's unit into buf (len bytes): upper bounds
 * inclusive (include/hist_slot.h), slot 0 "[0, hi]", the last "(lo, inf)". */
const char *lh_slot_range(char *buf, size_t len, int s, const struct lh_meta *m);

/*
 * Where the losses could put a percentile: "(lo, hi] .. (lo, hi]" from its
 * slot with every lost event below (low) to the one with every lost event
 * above (high), or "(lo, hi] .. unbounded" when the rank lands among the lost;
 * in meta's unit, into buf (len bytes).
 */
const char *lh_bounds_range(char *buf, size_t len, int low, int high, const struct lh_meta *m);

/* The loss classes that may have kept events out of h (a histogram of r): the
 * L of lh_hist_quantile_bounds(). For a per-process or per-thread key: the
 * losses charged to its key and those charged to no key. */
uint64_t lh_report_hist_lost(const struct lh_report *r, const struct lh_hist *h);

/* One percentile of a histogram: the slot that holds it, and the slots it
 * would have with every lost event below (low) or above (high); -1 when the
 * histogram is empty. */
struct lh_pct {
	int slot, low, high;
};

/* h's percentiles (lh_percentiles order) and their bounds under the losses
 * that could have belonged to it; returns those losses (lh_report_hist_lost). */
uint64_t lh_report_percentiles(const struct lh_report *r, const struct lh_hist *h,
			       struct lh_pct out[LH_NR_PERCENTILES]);

/* Make r->gap_cpu hold at least n CPUs (new ones 0). -ENOMEM, -E2BIG past LH_MAX_GAP_CPUS. */
int lh_report_gaps(struct lh_report *r, uint32_t n);

/* Add a charge (c->lost lost waits of the key c names; tid 0 per process);
 * merged with the same key's by lh_report_sort. -ENOMEM. */
int lh_report_charge(struct lh_report *r, const struct lh_key_charge *c);

/* The lost waits charged to key (after lh_report_sort). */
uint64_t lh_report_key_charge(const struct lh_report *r, const struct lh_key *key);

/* A string field of meta.context ("preempt"): its text ("mixed" in a merge
 * whose inputs differ), NULL when there is no context or the field is null or
 * not a string. */
const char *lh_context_str(const struct lh_meta *m, const char *field);

/*
 * lathist report --diff: runs a (read from path pa) and b side by side as text:
 * the context fields that differ, then for each histogram of a that b has too
 * (same name and key) count, percentiles and max of both and the change (b / a;
 * for a percentile, of its slots' upper bounds). b gains empty histograms
 * (the lookups); render it no more.
 */
void lh_render_diff(FILE *f, const struct lh_report *a, const char *pa, struct lh_report *b,
		    const char *pb);

/* Prefetch the slots of r's histogram two after i, for a renderer that goes
 * through them in order (lh_hist_prefetch). */
static __always_inline void lh_report_prefetch_after(const struct lh_report *r, size_t i)
{
	if (i + 2 < r->nhists)
		lh_hist_prefetch(&r->hists[i + 2]);
}

/* How a grouped run's keys are ranked (--sort): by the time they lost (the sum
 * of their paired histograms), their count, their p99 slot or their max. */
enum lh_rank_by { LH_RANK_TOTAL, LH_RANK_COUNT, LH_RANK_P99, LH_RANK_MAX };

#define LH_TEXT_TOP 10		/* rows of the ranked table (--top) */
#define LH_TEXT_HISTOGRAMS 1	/* keys whose histograms follow it (--histograms) */
#define LH_TEXT_ALL UINT32_MAX	/* --histograms all */

/* What the text shows beyond the answer (every field 0: lh_text_defaults' but for
 * top and histograms). */
struct lh_text_opts {
	bool verbose;		/* -v: the context, each percentile's bounds, every counter */
	enum lh_rank_by sort;
	uint32_t top;		/* ranked rows shown; the rest summed in one line */
	uint32_t histograms;	/* keys, in rank order, whose histograms are shown */
};

/* top LH_TEXT_TOP, histograms LH_TEXT_HISTOGRAMS, by total, not verbose. */
void lh_text_defaults(struct lh_text_opts *t);

/*
 * Text: a header of at most three lines; a total run's histograms, each with
 * runqlat's `usecs : count distribution` table and one stats line; a grouped
 * run's ranked table of keys, then the histograms of its top keys; one loss
 * line naming every non-zero loss class; one kernel gap line. t NULL: the
 * defaults.
 */
void lh_render_text(FILE *f, const struct lh_report *r, const struct lh_text_opts *t);

/*
 * JSON (schema lathist/1) as a malloc'd NUL-terminated string, pretty unless
 * compact (one line, for JSON lines). NULL on ENOMEM.
 */
char *lh_render_json(const struct lh_report *r, bool compact);

/* The same JSON written to f as it is made (memory: one histogram's tree, not
 * the document's); 0, -ENOMEM, or -EIO when f has an error. */
int lh_render_json_file(FILE *f, const struct lh_report *r, bool compact);

/*
 * CSV (RFC 4180): a header row (written when with_header), then one row per
 * (histogram, key, non-empty slot): metadata, key fields, slot bounds in ns
 * (lo exclusive, hi inclusive; hi empty when unbounded) and the count.
 */
void lh_render_csv(FILE *f, const struct lh_report *r, bool with_header);

/* A label on every sample of an exposition (--label, and lathist_run). */
struct lh_label {
	char name[64];
	char value[256];
};
#define LH_MAX_LABELS 9		/* --label 8 times, and lathist_run */
#define LH_MAX_LE 64		/* an explicit --buckets list */

/* How an exposition is written (lh_render_openmetrics). */
struct lh_om_opts {
	bool strict;			/* OpenMetrics 1.0; else the Prometheus text format 0.0.4 */
	bool no_eof;			/* strict, but leave out the closing "# EOF" (lathist serve
					 * writes several tools' families, then one # EOF) */
	/* the buckets: every slot bound b with le_min_ns <= b up to the first bound at
	 * or over le_max_ns (both 0: every bound); or, when nle, exactly le_ns[0..nle)
	 * (ascending, each a slot bound: lh_buckets_check). +Inf always. */
	uint64_t le_min_ns, le_max_ns;
	const uint64_t *le_ns;
	size_t nle;
	const struct lh_label *labels;	/* on every sample, before lathist's own */
	int nlabels;
};

/*
 * Metrics exposition: histograms with cumulative, upper-inclusive le buckets
 * in seconds (the slot bounds o selects; a value past the last still counts in
 * +Inf, _sum and _count), _sum, _count; counters as _total; gauges for the
 * bias flag, the duration and the metadata (_info). o->strict: OpenMetrics 1.0
 * (counter families named without _total, # UNIT, ends with # EOF unless
 * o->no_eof); else the Prometheus text format 0.0.4 that node_exporter's
 * textfile collector and promtool read (families named as their samples, no
 * # UNIT or # EOF). A key of LH_KEY_OTHER shows each of its fields as "other".
 */
void lh_render_openmetrics(FILE *f, const struct lh_report *r, const struct lh_om_opts *o);

/* One family of one sample: HELP, TYPE (counter: named with _total in the
 * Prometheus format, without it in OpenMetrics) and name{o's labels} value. */
void lh_render_om_sample(FILE *f, const struct lh_om_opts *o, const char *name, const char *type,
			 const char *help, uint64_t value);

/* One family of n samples that differ in one label: name{o's labels,lname="lvals[i]"}
 * values[i]. */
void lh_render_om_labeled(FILE *f, const struct lh_om_opts *o, const char *name,
			  const char *type, const char *help, const char *lname,
			  const char *const *lvals, const uint64_t *values, int n);

/*
 * Is every bound of an explicit bucket list (o->le_ns) a slot bound of
 * scheme s? 0, or -EINVAL with the first that is not in *bad and the slot
 * bounds around it in *below and *above (ns; 0 when none).
 */
int lh_buckets_check(const struct lh_om_opts *o, const struct lh_scheme *s, uint64_t *bad,
		     uint64_t *below, uint64_t *above);

/*
 * Render a JSON object as one line ending in '\n' into buf and release the
 * object (a json_object *, void here to keep json-c out of this header).
 * Returns the length needed, snprintf-like; -1 without memory.
 */
int lh_json_line(void *obj, char *buf, size_t len);

#endif /* LATHIST_REPORT_H */
