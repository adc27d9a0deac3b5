// SPDX-License-Identifier: MIT
/*
 * lathist report FILE...: read saved lathist/1 JSON (a document, or JSON lines
 * of intervals), check every field's type and range, merge documents of the
 * same tool and slot scheme by exact addition, and render the result in any
 * format; --heatmap draws an interval series as an SVG.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <search.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "cli.h"
#include "anonymize.h"
#include "context.h"
#include "registry.h"
#include "heatmap.h"
#include "report.h"
#include "session.h"
#include "tool.h"
#include "util.h"

#define TOOL "report"
#define MAX_DOC_BYTES (512ULL << 20)	/* refuse a larger document */
#define READ_CHUNK (1U << 20)		/* bytes read at a time */

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
struct merge {
	struct lh_report r;
	bool have;			/* r holds a first document */
	char tool[8], kernel[128], grouping[16], unit[4], clock[64];
	const struct lh_tool_desc *desc;	/* the first document's tool */
	char attach_tp[LH_MAX_ATTACH][32], attach_type[LH_MAX_ATTACH][16];
	uint64_t first_start, last_end;	/* realtime ns */
	uint64_t doc_start;		/* the document being read: its start (realtime ns) */
	uint64_t doc_paired;		/* its paired histograms' counts (registry paired_hists) */
	uint64_t doc_slices;		/* its slice histograms' counts (kind scope SLICES: oncpu) */
	int doc_slice_hists;		/* and how many it has */
	uint64_t doc_ncpus;		/* its meta.ncpus (possible CPUs, 1 to 2^20) */
	int oncpu_docs;			/* inputs with on-CPU slices (--oncpu) */
	int ndocs;
	const char *path;		/* file being read, for messages */
	int line;			/* document number in it */
	struct lh_heatmap *heat;	/* --heatmap: one column per document */
	const char *heat_hist;
	bool pmu_dropped, records_dropped;
	char filters[512];		/* the first document's meta.filters, as JSON */
	bool filters_mixed;
	json_object *filters_obj;	/* a copy of them, applied at the end */
	struct lh_part *parts;		/* every run interval read so far (a merge's meta.parts) */
	struct part_src { const char *path; int doc; } *part_src;	/* where each was read */
	size_t nparts, parts_cap;
	void *runs;			/* tsearch tree of struct run_parts, by run id */
	size_t *noid, nnoid, noid_cap;	/* parts without a run id (any run's time) */
	char host[65];			/* the first document's, or "mixed" */
	bool anonymized;		/* the first document's meta.anonymized */
	uint32_t *hist_doc;		/* per merged histogram: the last document adding to it */
	size_t hist_doc_cap;
	json_object *ctx_vals;		/* meta.context: per field, the distinct values read */
	int ctx_docs, ctx_missing;	/* inputs with a meta.context, and without one */
	json_object *ctx_out;		/* the merged meta.context (merge_context_finish) */
	bool load_unknown;		/* an input has no meta.load */
	bool ctx_quiet;			/* --diff: it shows what differs; no warning */
	struct lh_load load;		/* the inputs' meta.load, added */
};

/* Make s safe to print in a header or a label: '?' for each byte that is not
 * printable ASCII, and (labels) for '"' and '\\'. */
static void printable_only(char *s, bool label)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ||
		    (label && (*s == '"' || *s == '\\')))
			*s = '?';
}

/* "lathist report: PATH (document N): MSG; FIX" (FIX NULL: MSG says the fix). -EINVAL. */
static __attribute__((format(printf, 3, 4)))
int say(struct merge *m, const char *fix, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	fprintf(stderr, "lathist report: %s", m->path);
	if (m->line > 1)
		fprintf(stderr, " (document %d)", m->line);
	fputs(": ", stderr);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message may quote the input: printable ASCII only on the terminal */
	printable_only(msg, false);
	fprintf(stderr, "%s%s%s\n", msg, fix ? "; " : "", fix ? fix : "");
	return -EINVAL;
}

/* A document that is not what lathist -f json writes. */
#define bad(m, ...) say(m, "give a file written by lathist -f json", __VA_ARGS__)

/* A good document that cannot merge with the first: the message names the fix. */
#define unmergeable(m, ...) say(m, NULL, __VA_ARGS__)

/* Field k of o when it has type t; NULL otherwise, and for a string with a NUL
 * in it (\u0000), which every C string of it would cut short. */
static json_object *get(json_object *o, const char *k, json_type t)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, t))
		return NULL;
	if (t == json_type_string &&
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return NULL;
	return v;
}

/* A non-negative integer field (uint64 range); -EINVAL when missing or not one. */
static int get_u64(json_object *o, const char *k, uint64_t *out)
{
	json_object *v = get(o, k, json_type_int);

	if (!v)
		return -EINVAL;
	errno = 0;
	if (json_object_get_int64(v) < 0)
		return -EINVAL;
	*out = json_object_get_uint64(v);
	return errno ? -EINVAL : 0;
}

static int get_str(json_object *o, const char *k, char *buf, size_t len)
{
	json_object *v = get(o, k, json_type_string);

	if (!v || (size_t)json_object_get_string_len(v) >= len)
		return -EINVAL;
	snprintf(buf, len, "%s", json_object_get_string(v));
	return 0;
}

/* Does name hold a byte no kernel disk name has (a space, a quote, a backslash, a control
 * or non-ASCII byte)? */
static bool disk_name_bad(const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '\\')
			return true;
	return false;
}

/* Undo lh_printable's \xNN and \\ escapes of a task name. */
static void unprintable(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len; in++) {
		unsigned int x;

		if (in[0] == '\\' && in[1] == '\\') {
			out[o++] = '\\';
			in++;
		} else if (in[0] == '\\' && in[1] == 'x' && sscanf(in + 2, "%2x", &x) == 1) {
			out[o++] = (char)x;
			in += 3;
		} else {
			out[o++] = *in;
		}
	}
	out[o] = 0;
}

static int parse_key(struct merge *m, json_object *k, struct lh_key *key)
{
	struct { const char *name; unsigned int bit; uint32_t *v; } nums[] = {
		{ "tid", LH_KEY_TID, &key->tid }, { "pid", LH_KEY_PID, &key->pid },
		{ "cpu", LH_KEY_CPU, &key->cpu },
	};
	char comm[72];
	int known = 0;

	memset(key, 0, sizeof(*key));
	if (!k)
		return bad(m, "a histogram has no key object");
	json_object_object_foreach(k, kname, kval) {
		(void)kval;
		for (int i = 0; i < LH_MAX_KEY_FIELDS; i++)
			known += !strcmp(kname, lh_key_field_names[i]);
	}
	if (known != json_object_object_length(k))
		return bad(m, "a histogram key has a field lathist does not write (it writes %s, "
			   "%s, %s, %s, %s, %s, %s, %s, %s)", lh_key_field_names[0],
			   lh_key_field_names[1], lh_key_field_names[2], lh_key_field_names[3],
			   lh_key_field_names[4], lh_key_field_names[5], lh_key_field_names[6],
			   lh_key_field_names[7], lh_key_field_names[8]);
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		uint64_t v;

		if (!json_object_object_get_ex(k, nums[i].name, NULL))
			continue;
		if (get_u64(k, nums[i].name, &v) || v > UINT32_MAX)
			return bad(m, "key field %s is not a number from 0 to 2^32-1", nums[i].name);
		key->fields |= nums[i].bit;
		*nums[i].v = (uint32_t)v;
	}
	if (json_object_object_get_ex(k, "comm", NULL)) {
		if (get_str(k, "comm", comm, sizeof(comm)))
			return bad(m, "key field comm is not a task name");
		unprintable(comm, key->comm, sizeof(key->comm));
		key->fields |= LH_KEY_COMM;
	}
	if (json_object_object_get_ex(k, "start_ns", NULL) &&
	    get_u64(k, "start_ns", &key->birth_ns))
		return bad(m, "key field start_ns is not a number");
	if (json_object_object_get_ex(k, "disk", NULL)) {
		/* a kernel disk name, as /sys/dev/block shows it: printable, no space or quote
		 * (the text prints it as it is) */
		if (get_str(k, "disk", key->disk, sizeof(key->disk)) || !key->disk[0] ||
		    disk_name_bad(key->disk))
			return bad(m, "key field disk is not a disk name (letters, digits and "
				   "punctuation, no space, quote or backslash)");
		key->fields |= LH_KEY_DISK;
	}
	if (json_object_object_get_ex(k, "op", NULL)) {
		json_object *op = get(k, "op", json_type_string);

		if (!op)
			return bad(m, "key field op is not a string (read, write, flush, discard "
				   "or other)");
		if (lh_op_index(json_object_get_string(op)) < 0)
			return bad(m, "key field op is \"%.16s%s\", not an operation lathist writes "
				   "(read, write, flush, discard, other)", json_object_get_string(op),
				   json_object_get_string_len(op) > 16 ? "..." : "");
		snprintf(key->op, sizeof(key->op), "%s", json_object_get_string(op));
		key->fields |= LH_KEY_OP;
	}
	if (json_object_object_get_ex(k, "cgroup", NULL) ||
	    json_object_object_get_ex(k, "cgroup_id", NULL)) {
		const char *path = NULL;
		json_object *p;
		char *raw;

		if (json_object_object_get_ex(k, "cgroup", &p) && json_object_is_type(p, json_type_string))
			path = json_object_get_string(p);
		if (!path || get_u64(k, "cgroup_id", &key->cgroup_id))
			return bad(m, "key fields cgroup and cgroup_id are not a cgroup path and its id");
		/* stored as written (printable): interned raw, as a live run does */
		raw = malloc(strlen(path) + 1);
		if (!raw)
			return -ENOMEM;
		unprintable(path, raw, strlen(path) + 1);
		key->cgroup = lh_cgroup_intern(key->cgroup_id, raw);
		free(raw);
		if (!key->cgroup)
			return -ENOMEM;
		key->fields |= LH_KEY_CGROUP;
	}
	return 0;
}

/* The tool's histogram names (runq: wakeup, preempt, oncpu; bio: queue, device, total). */
/* The tool's histogram kind called name, or NULL. */
static const struct lh_hist_kind *kind_of(const struct merge *m, const char *name)
{
	for (int i = 0; i < m->r.meta.nkinds; i++)
		if (!strcmp(m->r.meta.kinds[i].name, name))
			return &m->r.meta.kinds[i];
	return NULL;
}

/* Index of the highest non-empty slot (0 when empty). */
static uint32_t top_slot(const struct lh_hist *h)
{
	for (uint32_t i = h->nslots; i > 0; i--)
		if (h->slots[i - 1])
			return i - 1;
	return 0;
}

/* Has the document being read added to merged histogram i already? Marks it. */
static bool hist_seen(struct merge *m, size_t i)
{
	if (i >= m->hist_doc_cap) {
		size_t cap = m->hist_doc_cap ? 2 * m->hist_doc_cap : 256;
		uint32_t *n;

		while (cap <= i)
			cap *= 2;
		n = realloc(m->hist_doc, cap * sizeof(*n));
		if (!n)
			return false;	/* unchecked rather than refused: memory is short */
		memset(n + m->hist_doc_cap, 0, (cap - m->hist_doc_cap) * sizeof(*n));
		m->hist_doc = n;
		m->hist_doc_cap = cap;
	}
	if (m->hist_doc[i] == (uint32_t)m->ndocs)
		return true;
	m->hist_doc[i] = (uint32_t)m->ndocs;
	return false;
}

/*
 * Can count events in h's slots, the largest max, add up to sum (ns)? An
 * event in a slot (lo, hi] of units of u ns took at least lo*u ns and less
 * than (hi+1)*u (lh_slot: ns / u, floored); none took more than max, and the
 * largest took max: sum >= max, sum <= count * max. Empty: all three are 0.
 */
static bool sum_fits(const struct lh_hist *h, const struct lh_scheme *sc, uint64_t count,
		     uint64_t sum, uint64_t max)
{
	unsigned __int128 low = 0, high = 0;
	bool bounded = true;

	if (!count)
		return !sum && !max;
	for (uint32_t i = 0; i < h->nslots; i++) {
		uint64_t hi = lh_slot_hi(i, sc->precision);

		if (!h->slots[i])
			continue;
		low += (unsigned __int128)h->slots[i] * lh_slot_lo(i, sc->precision) * sc->unit_ns;
		if (hi == UINT64_MAX)
			bounded = false;
		else
			high += (unsigned __int128)h->slots[i] * (hi + 1) * sc->unit_ns;
	}
	return sum >= max && (unsigned __int128)sum <= (unsigned __int128)count * max &&
	       sum >= low && (!bounded || sum <= high);
}

/*
 * say() with fix for histogram name of key: "histogram NAME: PROBLEM (key F V,
 * ...)", the key last (each value cut at 64 bytes: a cgroup path can be long),
 * so that a message cut to say's length loses the key, not the problem. Made
 * only on an error: a good histogram pays nothing for it. -EINVAL.
 */
static __attribute__((format(printf, 5, 6)))
int hist_say(struct merge *m, const char *fix, const char *name, const struct lh_key *key,
	     const char *fmt, ...)
{
	struct lh_kv kv[LH_MAX_KEY_FIELDS];
	int n = lh_key_fields(key, kv);
	char problem[256], keys[LH_MAX_KEY_FIELDS * (16 + 64 + 8)];
	size_t o = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(problem, sizeof(problem), fmt, ap);
	va_end(ap);
	keys[0] = '\0';
	for (int i = 0; i < n && o < sizeof(keys); i++)
		o += (size_t)snprintf(keys + o, sizeof(keys) - o, "%s%s %.64s%s",
				      i ? ", " : " (key ", kv[i].name, kv[i].value,
				      i == n - 1 ? ")" : "");
	return say(m, fix, "histogram %s: %s%s", name, problem, keys);
}

/* A histogram that is not what lathist -f json writes. */
#define bad_hist(m, ...) hist_say(m, "give a file written by lathist -f json", __VA_ARGS__)

static int parse_hist(struct merge *m, json_object *jh, struct lh_hist *tmp)
{
	const struct lh_scheme *sc = &m->r.meta.scheme;
	json_object *slots = get(jh, "slots", json_type_array);
	uint64_t count, sum, max, bytes = 0, total = 0;
	uint32_t top;
	char name[16];
	struct lh_key key;
	const struct lh_hist_kind *k;
	struct lh_hist *h;
	int err;

	if (get_str(jh, "name", name, sizeof(name)))
		return bad(m, "a histogram has no name (or one over 15 bytes)");
	err = parse_key(m, get(jh, "key", json_type_object), &key);
	if (err)
		return err;
	if (key.fields != lh_tool_grouping_fields(m->desc, m->grouping))
		return bad_hist(m, name, &key, "its key's fields do not fit the grouping %s", m->grouping);
	/* meta.ncpus counts the possible CPUs: every CPU number is below it */
	if ((key.fields & LH_KEY_CPU) && key.cpu >= m->doc_ncpus)
		return bad_hist(m, name, &key, "its key's cpu %u is not below meta.ncpus %" PRIu64,
				key.cpu, m->doc_ncpus);
	if (!slots)
		return bad_hist(m, name, &key, "slots is missing or not a list");
	if (get_u64(jh, "count", &count))
		return bad_hist(m, name, &key, "count is not a whole number from 0 to 2^64-1");
	if (get_u64(jh, "sum_ns", &sum))
		return bad_hist(m, name, &key, "sum_ns is not a whole number from 0 to 2^64-1");
	if (get_u64(jh, "max_ns", &max))
		return bad_hist(m, name, &key, "max_ns is not a whole number from 0 to 2^64-1");
	/* the tools that count bytes write them in every histogram: none is not 0 bytes */
	if ((m->desc->has_bytes || json_object_object_get_ex(jh, "bytes", NULL)) &&
	    get_u64(jh, "bytes", &bytes))
		return bad_hist(m, name, &key, "bytes is missing or not a whole number from 0 to "
				"2^64-1");
	if (lh_hist_init(tmp, name, &key, sc))
		return -ENOMEM;
	tmp->name_ns = m->doc_start;	/* of a task's names, the earliest input's is kept */
	for (size_t i = 0; i < json_object_array_length(slots); i++) {
		json_object *s = json_object_array_get_idx(slots, i);
		uint64_t lo, c, hi, want_hi, idx;

		if (get_u64(s, "lo_ns", &lo) || get_u64(s, "count", &c) || lo % sc->unit_ns) {
			lh_hist_free(tmp);
			return bad_hist(m, name, &key, "slot %zu has no lo_ns/count of this scheme",
				   i);
		}
		idx = lh_slot(lo / sc->unit_ns, sc->precision);
		want_hi = lh_slot_hi((uint32_t)idx, sc->precision);	/* units; MAX: unbounded */
		if (lh_slot_lo((uint32_t)idx, sc->precision) != lo / sc->unit_ns ||
		    (want_hi != UINT64_MAX &&
		     (get_u64(s, "hi_ns", &hi) || hi != want_hi * sc->unit_ns))) {
			lh_hist_free(tmp);
			return bad_hist(m, name, &key, "slot (%" PRIu64 " ns, ...] is not a slot of "
				   "precision %u in %s", lo, sc->precision, m->unit);
		}
		if (tmp->slots[idx] + c < c || total + c < c) {
			lh_hist_free(tmp);
			return bad_hist(m, name, &key, "its slots add up past 2^64-1");
		}
		tmp->slots[idx] += c;
		total += c;
	}
	if (total != count) {
		lh_hist_free(tmp);
		return bad_hist(m, name, &key, "slots add up to %" PRIu64 ", count says %" PRIu64,
			   total, count);
	}
	/* the max first: a sum is judged against it */
	top = top_slot(tmp);	/* the maximum lies in it: (lo, hi], slot 0 from 0 */
	if (count && top && max <= lh_slot_lo(top, sc->precision) * sc->unit_ns) {
		lh_hist_free(tmp);
		return bad_hist(m, name, &key, "max_ns %" PRIu64 " is not in its highest slot", max);
	}
	if (count && lh_slot_hi(top, sc->precision) != UINT64_MAX &&
	    max > lh_slot_hi(top, sc->precision) * sc->unit_ns) {
		lh_hist_free(tmp);
		return bad_hist(m, name, &key, "max_ns %" PRIu64 " is above its highest slot", max);
	}
	if (!sum_fits(tmp, sc, count, sum, max)) {
		lh_hist_free(tmp);
		return bad_hist(m, name, &key, "sum_ns %" PRIu64 " does not fit its slots and max_ns %"
			   PRIu64 " (the events it counts cannot add up to it)", sum, max);
	}
	tmp->count = count;
	tmp->sum_ns = sum;
	tmp->max_ns = max;
	tmp->bytes = bytes;
	if (lh_tool_paired_hist(m->desc, name))
		m->doc_paired += count;	/* no overflow: the slots' sum fits, and paired <= events */
	if ((k = kind_of(m, name)) && k->scope == LH_SCOPE_SLICES) {
		m->doc_slices += count;	/* checked against loss.slices: refused past 2^64 there */
		m->doc_slice_hists++;
	}
	if (!k) {
		lh_hist_free(tmp);
		return bad(m, "a %s document has no histogram '%s'", m->tool, name);
	}
	h = lh_report_find_hist(&m->r, name, &key);
	if (!h || hist_seen(m, (size_t)(h - m->r.hists))) {
		lh_hist_free(tmp);
		return h ? bad_hist(m, name, &key, "it appears twice in this document, "
				    "and would be counted twice") : -ENOMEM;
	}
	if (h->count + tmp->count < h->count || h->sum_ns + tmp->sum_ns < h->sum_ns ||
	    h->bytes + tmp->bytes < h->bytes) {
		lh_hist_free(tmp);
		return hist_say(m, "merge fewer documents", name, &key, "the sum of the inputs "
				"overflows 64 bits");
	}
	err = lh_hist_merge(h, tmp);	/* slots, count, sum, bytes add; max is the larger */
	if (m->heat && !strcmp(name, m->heat_hist ? m->heat_hist : m->r.meta.kinds[0].name))
		lh_heatmap_add(m->heat, m->ndocs - 1, tmp);
	lh_hist_free(tmp);
	return err;
}

/* First document: the tool, scheme and metadata every later one must match. */
static int first_meta(struct merge *m, json_object *meta, json_object *hs)
{
	struct lh_meta *mt = &m->r.meta;
	char tool_names[64] = "";

	for (int i = 0; lh_tools[i]; i++)
		snprintf(tool_names + strlen(tool_names), sizeof(tool_names) - strlen(tool_names),
			 "%s%s", i ? ", " : "", lh_tools[i]->name);
	json_object *attach;
	uint64_t p, unit_ns, nslots;

	if (get_str(meta, "tool", m->tool, sizeof(m->tool)) || !(m->desc = lh_tool_find(m->tool)))
		return bad(m, "meta.tool is not a lathist tool (%s)", tool_names);
	if (get_u64(hs, "precision", &p) || get_u64(hs, "unit_ns", &unit_ns) ||
	    get_u64(hs, "nslots", &nslots) || get_str(hs, "unit", m->unit, sizeof(m->unit)))
		return bad(m, "meta.hist_scheme lacks precision, unit, unit_ns or nslots");
	if (p > LH_MAX_PRECISION || nslots != LH_NSLOTS(p) ||
	    !((unit_ns == 1 && !strcmp(m->unit, "ns")) ||
	      (unit_ns == 1000 && !strcmp(m->unit, "us")) ||
	      (unit_ns == 1000000 && !strcmp(m->unit, "ms"))))
		return bad(m, "meta.hist_scheme is not a lathist slot scheme");
	mt->tool = m->tool;
	mt->desc = m->desc;
	mt->has_bytes = m->desc->has_bytes;
	mt->kinds = m->desc->kinds;
	mt->nkinds = m->desc->nkinds;
	mt->scheme.precision = (uint32_t)p;
	mt->scheme.unit_ns = unit_ns;
	mt->unit = m->unit;
	if (get_str(meta, "kernel", m->kernel, sizeof(m->kernel)))
		snprintf(m->kernel, sizeof(m->kernel), "?");
	if (get_str(meta, "grouping", m->grouping, sizeof(m->grouping)))
		snprintf(m->grouping, sizeof(m->grouping), "?");
	mt->grouping = m->grouping;
	if (get_str(meta, "clock", m->clock, sizeof(m->clock)))
		snprintf(m->clock, sizeof(m->clock), "?");
	mt->clock = m->clock;
	attach = get(meta, "attach", json_type_object);
	if (!attach)
		return bad(m, "meta.attach is not an object");
	json_object_object_foreach(attach, tp, type) {
		const char *ty = json_object_is_type(type, json_type_string) ?
				 json_object_get_string(type) : "";

		if (!tp[0] || strlen(tp) >= sizeof(m->attach_tp[0]) ||
		    strspn(tp, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(tp) ||
		    (strcmp(ty, "tp_btf") && strcmp(ty, "raw_tp") && strcmp(ty, "tracepoint")))
			return bad(m, "meta.attach: not a tracepoint name and attach type");
		if (mt->nattach == LH_MAX_ATTACH)
			break;
		snprintf(m->attach_tp[mt->nattach], sizeof(m->attach_tp[0]), "%s", tp);
		snprintf(m->attach_type[mt->nattach], sizeof(m->attach_type[0]), "%s",
			 json_object_get_string(type));
		mt->attach[mt->nattach].tracepoint = m->attach_tp[mt->nattach];
		mt->attach[mt->nattach].type = m->attach_type[mt->nattach];
		mt->nattach++;
	}
	mt->ncpus = 0;
	if (!lh_tool_grouping_known(m->desc, m->grouping))
		return bad(m, "meta.grouping '%s' is not a %s grouping", m->grouping, m->tool);
	m->have = true;
	return 0;
}

/*
 * loss.missed_switch_per_cpu (runq): at most meta.ncpus counts that add up to
 * loss.missed_switch; added to the merge CPU by CPU, by CPU number.
 */
static int add_gaps(struct merge *m, json_object *loss, uint64_t ncpus)
{
	uint64_t sum = 0, total = 0;
	json_object *a, *e;
	size_t n;
	int err;

	if (!json_object_object_get_ex(loss, "missed_switch_per_cpu", &a)) {
		/* a document of a lathist before the per-CPU counts has no missed_switch */
		if (!get_u64(loss, "missed_switch", &total) && total)
			return bad(m, "loss.missed_switch %" PRIu64 " without "
				   "loss.missed_switch_per_cpu: the gap's CPUs are unknown", total);
		return 0;
	}
	if (!json_object_is_type(a, json_type_array) ||
	    (n = json_object_array_length(a)) > LH_MAX_GAP_CPUS || n > ncpus)
		return bad(m, "loss.missed_switch_per_cpu is not an array of at most meta.ncpus "
			   "(%" PRIu64 ") counts", ncpus);
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		e = json_object_array_get_idx(a, i);
		errno = 0;
		if (!json_object_is_type(e, json_type_int) || json_object_get_int64(e) < 0)
			return bad(m, "loss.missed_switch_per_cpu[%zu] is not a whole number from 0 "
				   "to 2^64-1", i);
		v = json_object_get_uint64(e);
		if (errno || sum + v < sum)
			return bad(m, "loss.missed_switch_per_cpu[%zu] is past 2^64-1", i);
		sum += v;
	}
	/* a machine past LH_MAX_GAP_CPUS CPUs has the others' gaps in the total only */
	if (get_u64(loss, "missed_switch", &total) || sum > total ||
	    (sum != total && n < LH_MAX_GAP_CPUS))
		return bad(m, "loss.missed_switch_per_cpu adds up to %" PRIu64 ", not to "
			   "loss.missed_switch", sum);
	err = lh_report_gaps(&m->r, (uint32_t)n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		m->r.gap_cpu[i] = lh_add_sat(m->r.gap_cpu[i],
					     json_object_get_uint64(json_object_array_get_idx(a, i)));
	return 0;
}

/*
 * loss.charged_to_keys (runq per process/thread): [{"pid", "tid" (per thread
 * only), "start_ns", "lost"}], adding up to loss.lost_charged_to_keys, which is
 * at most the losses detected with their task known; merged by key.
 */
static int add_charges(struct merge *m, json_object *loss)
{
	static const char *const f[4] = { "pid", "tid", "start_ns", "lost" };
	static const char *const known[] = { "unpaired_no_start", "missed_switch_in",
					     "missed_wait", "unchecked_start", "negative_delta",
					     "absurd_delta", "hist_map_full", "hist_map_enomem",
					     "hist_map_error" };
	bool thread = !strcmp(m->grouping, "thread"), process = !strcmp(m->grouping, "process");
	uint64_t sum = 0, total = 0, tasks = 0, v[4];
	size_t first = m->r.ncharges;	/* this document's charges go after the others' */
	struct lh_key_charge twice;
	json_object *a;

	if (!json_object_object_get_ex(loss, "charged_to_keys", &a)) {
		if (json_object_object_get_ex(loss, "lost_charged_to_keys", NULL))
			return bad(m, "loss.lost_charged_to_keys without loss.charged_to_keys: "
				   "the losses cannot be given to their keys");
		return 0;
	}
	if (!thread && !process)
		return bad(m, "loss.charged_to_keys in a document grouped by %s: losses are "
			   "charged to keys per process or per thread only", m->grouping);
	if (!json_object_is_type(a, json_type_array))
		return bad(m, "loss.charged_to_keys is not an array");
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);
		struct lh_key_charge k;

		if (!json_object_is_type(e, json_type_object) ||
		    json_object_object_length(e) != (thread ? 4 : 3) ||
		    json_object_object_get_ex(e, "tid", NULL) != thread)
			return bad(m, "loss.charged_to_keys[%zu] is not {pid, %sstart_ns, lost} (the "
				   "key of a %s)", i, thread ? "tid, " : "", m->grouping);
		for (int j = 0; j < 4; j++) {
			v[j] = 0;
			if ((j != 1 || thread) && get_u64(e, f[j], &v[j]))
				return bad(m, "loss.charged_to_keys[%zu].%s is not a whole number from 0 "
					   "to 2^64-1", i, f[j]);
		}
		if (!v[0] || v[0] > UINT32_MAX || (thread && (!v[1] || v[1] > UINT32_MAX)) ||
		    sum + v[3] < sum)
			return bad(m, "loss.charged_to_keys[%zu]: pid or tid not from 1 to 2^32-1, "
				   "or the sum is past 2^64-1", i);
		if (!v[3])
			return bad(m, "loss.charged_to_keys[%zu].lost is 0: an entry is a key that "
				   "lost waits", i);
		k.pid = (uint32_t)v[0];
		k.tid = (uint32_t)v[1];
		k.birth_ns = v[2];
		k.lost = v[3];
		sum += v[3];
		if (lh_report_charge(&m->r, &k))
			return -ENOMEM;
	}
	if (!lh_charges_sort_unique(m->r.charges + first, m->r.ncharges - first, &twice))
		return bad(m, "loss.charged_to_keys names the key pid %" PRIu32 " tid %" PRIu32
			   " start_ns %" PRIu64 " twice: one entry per key", twice.pid, twice.tid,
			   twice.birth_ns);
	if (get_u64(loss, "lost_charged_to_keys", &total) || total != sum)
		return bad(m, "loss.charged_to_keys adds up to %" PRIu64 ", not to "
			   "loss.lost_charged_to_keys", sum);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		uint64_t n = 0;

		if (json_object_object_get_ex(loss, known[i], NULL) && get_u64(loss, known[i], &n))
			return bad(m, "loss.%s is not a whole number from 0 to 2^64-1", known[i]);
		tasks = lh_add_sat(tasks, n);
	}
	if (sum > tasks)
		return bad(m, "loss.lost_charged_to_keys %" PRIu64 " is more than the losses "
			   "detected with their task known (%" PRIu64 ": unpaired_no_start, "
			   "missed_switch_in, missed_wait, unchecked_start, negative_delta, absurd_delta, "
			   "hist_map_*)", sum, tasks);
	return 0;
}

/*
 * One run interval a document covers (o: its meta, or one of a merge's
 * meta.parts): run_id (32 hex digits; absent or null in a document from a
 * lathist before run ids), host, interval_index, start_realtime_ns, duration_ns.
 */
static int parse_part(struct merge *m, json_object *o, const char *where, struct lh_part *p)
{
	json_object *id = NULL;
	uint64_t idx;

	memset(p, 0, sizeof(*p));
	if (o && json_object_object_get_ex(o, "run_id", &id) && id) {
		if (!json_object_is_type(id, json_type_string) ||
		    !lh_is_run_id(json_object_get_string(id)))
			return bad(m, "%s.run_id is not 32 hex digits", where);
		snprintf(p->run_id, sizeof(p->run_id), "%s", json_object_get_string(id));
	}
	if (get_str(o, "host", p->host, sizeof(p->host)))
		snprintf(p->host, sizeof(p->host), "?");
	printable_only(p->host, true);	/* printed in headers and labels */
	if (get_u64(o, "interval_index", &idx) || idx > UINT32_MAX ||
	    get_u64(o, "start_realtime_ns", &p->start_realtime_ns) ||
	    get_u64(o, "duration_ns", &p->duration_ns) ||
	    p->start_realtime_ns + p->duration_ns < p->start_realtime_ns)
		return bad(m, "%s: interval_index, start_realtime_ns or duration_ns is not a whole "
			   "number (or the span runs past 2^64 ns)", where);
	p->interval_index = (uint32_t)idx;
	{
		uint64_t ins;

		/* lathist numbers intervals only with -i (a merge's parts carry no
		 * interval_ns: their documents were checked when they were merged) */
		if (idx && !strcmp(where, "meta") && (get_u64(o, "interval_ns", &ins) || !ins))
			return bad(m, "%s.interval_index is %" PRIu64 " without an interval_ns above "
				   "0: a run without -i has no intervals", where, idx);
	}
	return 0;
}

/* Do a and b cover some of the same run? The same run id (or both none: a
 * lathist before run ids), and the same interval or spans that overlap. */
static bool same_coverage(const struct lh_part *a, const struct lh_part *b)
{
	/* a part with no run id cannot be told from a copy of any run's */
	if (a->run_id[0] && b->run_id[0] && strcmp(a->run_id, b->run_id))
		return false;
	if (a->interval_index == b->interval_index && a->run_id[0] && !strcmp(a->run_id, b->run_id))
		return true;
	return a->start_realtime_ns < b->start_realtime_ns + b->duration_ns &&
	       b->start_realtime_ns < a->start_realtime_ns + a->duration_ns;
}

/*
 * The parts of one run read so far, as indexes into merge.parts: by_start in
 * order of (start, end) — the run's parts never overlap, so in that order
 * their ends never decrease (an empty part [s, s) may share its start with
 * the part [s, e) after it) — and by_index in order of interval_index.
 * Lookups are binary searches and a series read in order appends, so reading
 * N intervals is O(N log N).
 */
struct run_parts {
	char run_id[LH_RUN_ID_LEN + 1];
	size_t *by_start, *by_index, n, cap;
};

static int run_cmp(const void *a, const void *b)
{
	return strcmp(((const struct run_parts *)a)->run_id, ((const struct run_parts *)b)->run_id);
}

static void run_free(void *p)
{
	struct run_parts *r = p;

	free(r->by_start);
	free(r->by_index);
	free(r);
}

/* The first position in idx[0..n) whose part's start (by_start) or interval
 * index is not below v. */
static size_t lower_bound(const struct merge *m, const size_t *idx, size_t n, uint64_t v,
			  bool by_start)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct lh_part *q = &m->parts[idx[mid]];

		if ((by_start ? q->start_realtime_ns : q->interval_index) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A part read before that covers some of what p covers (same_coverage), or -1. */
static ssize_t covered_by(const struct merge *m, const struct lh_part *p,
			  const struct run_parts *r)
{
	size_t j;

	if (!p->run_id[0]) {	/* without a run id: any part that overlaps it */
		for (size_t i = 0; i < m->nparts; i++)
			if (same_coverage(p, &m->parts[i]))
				return (ssize_t)i;
		return -1;
	}
	for (size_t i = 0; i < m->nnoid; i++)
		if (same_coverage(p, &m->parts[m->noid[i]]))
			return (ssize_t)m->noid[i];
	if (!r || !r->n)
		return -1;
	j = lower_bound(m, r->by_index, r->n, p->interval_index, false);
	if (j < r->n && m->parts[r->by_index[j]].interval_index == p->interval_index)
		return (ssize_t)r->by_index[j];
	/* of the parts that start before p ends, the last ends last (by_start) */
	j = lower_bound(m, r->by_start, r->n, p->start_realtime_ns + p->duration_ns, true);
	if (j && same_coverage(p, &m->parts[r->by_start[j - 1]]))
		return (ssize_t)r->by_start[j - 1];
	return -1;
}

/* Insert part i at its place in idx (n entries, room for one more): by
 * (start, end) or by interval_index. */
static void insert_at(const struct merge *m, size_t *idx, size_t n, size_t i, bool by_start)
{
	const struct lh_part *p = &m->parts[i];
	size_t j = lower_bound(m, idx, n, by_start ? p->start_realtime_ns : p->interval_index,
			       by_start);

	while (by_start && j < n && m->parts[idx[j]].start_realtime_ns == p->start_realtime_ns &&
	       m->parts[idx[j]].duration_ns < p->duration_ns)
		j++;
	memmove(idx + j + 1, idx + j, (n - j) * sizeof(*idx));
	idx[j] = i;
}

/* Grow *a (of *cap entries) to hold n + 1; -ENOMEM. */
static int grow_idx(size_t **a, size_t n, size_t *cap)
{
	size_t c = *cap ? 2 * *cap : 64, *na;

	if (n < *cap)
		return 0;
	na = realloc(*a, c * sizeof(*na));
	if (!na)
		return -ENOMEM;
	*a = na;
	*cap = c;
	return 0;
}

/* Index the newest part, m->parts[m->nparts - 1], under its run; -ENOMEM. */
static int index_part(struct merge *m, struct run_parts *r)
{
	size_t i = m->nparts - 1, cap;
	void *node;

	if (!m->parts[i].run_id[0]) {
		if (grow_idx(&m->noid, m->nnoid, &m->noid_cap))
			return -ENOMEM;
		m->noid[m->nnoid++] = i;
		return 0;
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		memcpy(r->run_id, m->parts[i].run_id, sizeof(r->run_id));
		node = tsearch(r, &m->runs, run_cmp);
		if (!node || *(struct run_parts **)node != r) {
			run_free(r);
			return -ENOMEM;
		}
	}
	cap = r->cap;
	if (grow_idx(&r->by_start, r->n, &cap))
		return -ENOMEM;
	if (grow_idx(&r->by_index, r->n, &r->cap))
		return -ENOMEM;
	insert_at(m, r->by_start, r->n, i, true);
	insert_at(m, r->by_index, r->n, i, false);
	r->n++;
	return 0;
}

/* Note what a document covers; refused when an input read before covers some
 * of it already (a copy, a repeated line, overlapping series). */
static int add_part(struct merge *m, const struct lh_part *p)
{
	struct run_parts key, **found = NULL, *r;
	ssize_t i;

	if (p->run_id[0]) {
		memcpy(key.run_id, p->run_id, sizeof(key.run_id));
		found = tfind(&key, &m->runs, run_cmp);
	}
	r = found ? *found : NULL;
	i = covered_by(m, p, r);
	if (i >= 0) {
		const struct lh_part *q = &m->parts[i];
		const struct part_src *src = &m->part_src[i];
		char other[300], what[32];

		snprintf(other, sizeof(other), "%s", src->path);
		if (src->doc > 1 || src->path == m->path)
			snprintf(other + strlen(other), sizeof(other) - strlen(other),
				 " (document %d)", src->doc);
		if (!p->run_id[0])
			return unmergeable(m, "has no run id (written by a lathist before run ids) "
					   "and covers time that %s covers too: it cannot be told "
					   "from a copy; give each run once", other);
		if (q->interval_index)
			snprintf(what, sizeof(what), "interval %" PRIu32, q->interval_index);
		else
			snprintf(what, sizeof(what), "all");
		return unmergeable(m, "covers %s of run %s (host %s), which %s covers already: "
				   "it would be counted twice; give each interval once", what,
				   q->run_id, q->host, other);
	}
	if (m->nparts == m->parts_cap) {
		size_t cap = m->parts_cap ? 2 * m->parts_cap : 64;
		struct lh_part *np = realloc(m->parts, cap * sizeof(*np));
		struct part_src *ns;

		if (!np)
			return -ENOMEM;
		m->parts = np;
		ns = realloc(m->part_src, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		m->part_src = ns;
		m->parts_cap = cap;
	}
	m->parts[m->nparts] = *p;
	m->part_src[m->nparts].path = m->path;
	m->part_src[m->nparts].doc = m->line;
	m->nparts++;
	return index_part(m, r);
}

/* meta.run_id with meta.interval_index and its span; or, for a merge (run_id
 * null), every entry of meta.parts. */
static int add_parts(struct merge *m, json_object *meta)
{
	json_object *parts;
	struct lh_part p;
	char where[48];
	int err;

	if (!json_object_object_get_ex(meta, "parts", &parts)) {
		err = parse_part(m, meta, "meta", &p);
		return err ? err : add_part(m, &p);
	}
	if (!json_object_is_type(parts, json_type_array) || !json_object_array_length(parts) ||
	    get(meta, "run_id", json_type_string))
		return bad(m, "meta.parts is not a list of what the merge covers, or comes with a "
			   "meta.run_id");
	for (size_t i = 0; i < json_object_array_length(parts); i++) {
		json_object *e = json_object_array_get_idx(parts, i);

		snprintf(where, sizeof(where), "meta.parts[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return bad(m, "%s is not an object", where);
		err = parse_part(m, e, where, &p);
		if (!err)
			err = add_part(m, &p);
		if (err)
			return err;
	}
	return 0;
}

/* The tool, slot scheme and grouping: what a document must share with the first. */
static int same_kind(struct merge *m, json_object *meta, json_object *hs)
{
	char tool[8] = "?", unit[4] = "?", g[16] = "?";	/* printed even when missing */
	uint64_t p = 0, unit_ns = 0;

	if (get_str(meta, "tool", tool, sizeof(tool)) || strcmp(tool, m->tool))
		return unmergeable(m, "a %s document cannot merge with %s documents: merge the "
				   "runs of one tool", tool, m->tool);
	if (get_u64(hs, "precision", &p) || get_u64(hs, "unit_ns", &unit_ns) ||
	    get_str(hs, "unit", unit, sizeof(unit)) || p != m->r.meta.scheme.precision ||
	    unit_ns != m->r.meta.scheme.unit_ns)
		return unmergeable(m, "slot scheme differs (precision %" PRIu64 ", %s) from the first "
			   "document's (precision %u, %s): merge only runs with the same --precision "
			   "and -u", p, unit, m->r.meta.scheme.precision, m->unit);
	if (get_str(meta, "grouping", g, sizeof(g)) || strcmp(g, m->grouping))
		return unmergeable(m, "grouping '%s' differs from the first document's '%s': merge "
				   "runs with the same --per-* options", g, m->grouping);
	return 0;
}

/* meta.filters: the first document's, or "mixed" once another differs; each
 * one of those lathist writes: pid and tid numbers, the others printable text. */
static int merge_filters(struct merge *m, json_object *meta)
{
	json_object *f = get(meta, "filters", json_type_object), *any = NULL;
	const char *fs = f ? json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN) : "";

	/* absent (a lathist before filters were written) is none; anything else is refused */
	if (!f && json_object_object_get_ex(meta, "filters", &any))
		return bad(m, "meta.filters is not an object (lathist writes {} for none)");

	if (f) {
		json_object_object_foreach(f, fname, fval) {
			bool id = !strcmp(fname, "pid") || !strcmp(fname, "tid");
			bool text = !strcmp(fname, "cpus") || !strcmp(fname, "cgroup") ||
				    !strcmp(fname, "disk") || !strcmp(fname, "mixed");
			const char *v = json_object_get_string(fval);
			uint64_t n;

			if (id && (get_u64(f, fname, &n) || !n || n > UINT32_MAX))
				return bad(m, "meta.filters.%s is not a number from 1 to 2^32-1",
					   fname);
			if (!id && (!text || !json_object_is_type(fval, json_type_string) ||
				    strlen(v) >= sizeof(((struct lh_filter *)0)->value)))
				return bad(m, "meta.filters.%s is not a filter lathist writes (pid, "
					   "tid, cpus, cgroup, disk) with its value", fname);
			for (const char *c = v; text && *c; c++)
				if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
					return bad(m, "meta.filters.%s has a byte that is not "
						   "printable ASCII", fname);
		}
	}
	if (m->ndocs == 0) {
		snprintf(m->filters, sizeof(m->filters), "%s", fs);
		m->filters_obj = f ? json_object_get(f) : NULL;
	} else if (strcmp(fs, m->filters)) {
		m->filters_mixed = true;
	}
	return 0;
}

/* meta.attach: a tracepoint attached by some inputs only, or as another type, is "mixed". */
static int merge_attach(struct merge *m, json_object *meta)
{
	json_object *attach = get(meta, "attach", json_type_object);
	bool seen[LH_MAX_ATTACH] = { false };
	struct lh_meta *mt = &m->r.meta;

	if (!attach)
		return bad(m, "meta.attach is not an object");
	json_object_object_foreach(attach, tp, type) {
		int i;

		for (i = 0; i < mt->nattach && strcmp(m->attach_tp[i], tp); i++)
			;
		if (i == mt->nattach) {
			if (i == LH_MAX_ATTACH || !tp[0] || strlen(tp) >= sizeof(m->attach_tp[0]))
				continue;
			snprintf(m->attach_tp[i], sizeof(m->attach_tp[0]), "%s", tp);
			snprintf(m->attach_type[i], sizeof(m->attach_type[0]), "mixed");
			mt->attach[i].tracepoint = m->attach_tp[i];
			mt->attach[i].type = m->attach_type[i];
			mt->nattach++;
		} else if (!json_object_is_type(type, json_type_string) ||
			   strcmp(m->attach_type[i], json_object_get_string(type))) {
			snprintf(m->attach_type[i], sizeof(m->attach_type[i]), "mixed");
		}
		seen[i] = true;
	}
	for (int i = 0; i < mt->nattach; i++)
		if (!seen[i])
			snprintf(m->attach_type[i], sizeof(m->attach_type[i]), "mixed");
	return 0;
}

#define CTX_MAX_VALUES 16	/* distinct values listed per mixed context field */
#define CTX_MAX_DEPTH 6

/* A copy of v with every string printable ASCII (printable_only) and nothing
 * nested deeper than CTX_MAX_DEPTH (null there): the context is printed. */
static json_object *ctx_clean(json_object *v, int depth)
{
	json_object *o;

	if (!v || depth > CTX_MAX_DEPTH)
		return NULL;
	switch (json_object_get_type(v)) {
	case json_type_string: {
		char *t = strdup(json_object_get_string(v));

		if (!t)
			return NULL;
		printable_only(t, false);
		o = json_object_new_string(t);
		free(t);
		return o;
	}
	case json_type_object:
		o = json_object_new_object();
		json_object_object_foreach(v, k, x) {
			char *kk = strdup(k);

			if (!kk)
				continue;
			printable_only(kk, true);
			json_object_object_add(o, kk, ctx_clean(x, depth + 1));
			free(kk);
		}
		return o;
	case json_type_array:
		o = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(v) && i < 256; i++)
			json_object_array_add(o, ctx_clean(json_object_array_get_idx(v, i), depth + 1));
		return o;
	default:
		return json_object_get(v);	/* numbers, booleans: immutable enough */
	}
}

/* Add v (NULL: the field is missing or null) to the distinct values of one field. */
static void ctx_add_value(json_object *vals, json_object *v)
{
	const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	size_t n = json_object_array_length(vals);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(json_object_to_json_string_ext(json_object_array_get_idx(vals, i),
							   JSON_C_TO_STRING_PLAIN), s))
			return;
	if (n < CTX_MAX_VALUES)
		json_object_array_add(vals, ctx_clean(v, 0));
}

#define CTX_MAX_STR 1024		/* bytes of a context string */
#define CTX_MAX_MEMBERS 64		/* cmdline settings, disks */

/* A context string: printable-length, or the fix names the field. */
static int ctx_str(struct merge *m, const char *field, json_object *v, bool null_ok)
{
	if (!v && null_ok)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return bad(m, "meta.context.%s is %s, not a string", field,
			   json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	if (json_object_get_string_len(v) > CTX_MAX_STR)
		return bad(m, "meta.context.%s is %d bytes long (at most %d)", field,
			   json_object_get_string_len(v), CTX_MAX_STR);
	return 0;
}

/*
 * One field of meta.context as lathist writes it (docs/lathist-1.schema.json):
 * strings or null, preempt and preempt_source from their lists, cmdline an
 * object of strings and booleans, disks a list of disk objects; "mixed" where
 * an input is a merge, with mixed[field] listing the values (each checked too).
 */
static int ctx_field(struct merge *m, const char *k, json_object *v, bool in_mixed)
{
	static const char *const strs[] = { "boot_id", "kernel_release", "kernel_version", "machine",
					    "cpu_model", "cpus_online", "smt", "governor",
					    "hypervisor", "lathist_version", "git_revision",
					    "libbpf_version" };
	static const char *const models[] = { "none", "voluntary", "full", "lazy", "rt" };
	static const char *const sources[] = { "version", "debugfs", "cmdline", "config" };
	const char *sv = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

	if (!in_mixed && sv && !strcmp(sv, "mixed"))
		return 0;	/* a merge's: its values are in mixed, checked there */
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!strcmp(k, strs[i]))
			return ctx_str(m, k, v, true);
	if (!strcmp(k, "preempt") || !strcmp(k, "preempt_source")) {
		bool src = !strcmp(k, "preempt_source");
		const char *const *list = src ? sources : models;
		size_t n = src ? 4 : 5;

		if (!v)
			return 0;
		for (size_t i = 0; sv && i < n; i++)
			if (!strcmp(sv, list[i]))
				return 0;
		return bad(m, "meta.context.%s is %.64s, not one of %s", k,
			   json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), src ?
			   "version, debugfs, cmdline, config" : "none, voluntary, full, lazy, rt");
	}
	if (!strcmp(k, "cmdline")) {
		if (!v)
			return 0;
		if (!json_object_is_type(v, json_type_object) ||
		    json_object_object_length(v) > CTX_MAX_MEMBERS)
			return bad(m, "meta.context.cmdline is not an object of at most %d settings",
				   CTX_MAX_MEMBERS);
		json_object_object_foreach(v, ck, cv) {
			bool flag = json_object_is_type(cv, json_type_boolean) &&
				    json_object_get_boolean(cv);
			bool str = json_object_is_type(cv, json_type_string) &&
				   json_object_get_string_len(cv) <= CTX_MAX_STR;
			size_t i;

			for (i = 0; lh_context_cmdline_names[i] &&
				    strcmp(lh_context_cmdline_names[i], ck); i++)
				;
			if (!lh_context_cmdline_names[i])
				return bad(m, "meta.context.cmdline.%.64s is not a setting lathist "
					   "records", ck);
			if (!(flag || str))
				return bad(m, "meta.context.cmdline.%.64s is not a setting (a string "
					   "of at most %d bytes, or true for a flag)", ck, CTX_MAX_STR);
		}
		return 0;
	}
	if (!strcmp(k, "disks")) {
		static const char *const dk[] = { "name", "scheduler", "nr_requests", "rotational",
						  "queue_depth" };

		if (!v)
			return 0;
		if (!json_object_is_type(v, json_type_array) ||
		    json_object_array_length(v) > CTX_MAX_MEMBERS)
			return bad(m, "meta.context.disks is not a list of at most %d disks",
				   CTX_MAX_MEMBERS);
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *d = json_object_array_get_idx(v, i), *x;

			if (!json_object_is_type(d, json_type_object) ||
			    json_object_object_length(d) != 5)
				return bad(m, "meta.context.disks[%zu] is not {name, scheduler, "
					   "nr_requests, rotational, queue_depth}", i);
			for (size_t j = 0; j < 5; j++) {
				bool ok = json_object_object_get_ex(d, dk[j], &x);
				json_type t = json_object_get_type(x);

				ok = ok && (j == 0 ? t == json_type_string : !x ? true :
					    j == 1 ? t == json_type_string :
					    j == 3 ? t == json_type_boolean :
					    t == json_type_int && json_object_get_int64(x) >= 0);
				if (!ok || (t == json_type_string &&
					    json_object_get_string_len(x) > 64))
					return bad(m, "meta.context.disks[%zu].%s is missing or not "
						   "what lathist writes", i, dk[j]);
			}
		}
		return 0;
	}
	if (!strcmp(k, "inputs_without_context") && !in_mixed) {
		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
			return 0;
		return bad(m, "meta.context.inputs_without_context is not a count");
	}
	return bad(m, "meta.context has an unknown field '%.64s'", k);
}

/* Every field of an input's meta.context, and its mixed lists. */
static int ctx_check(struct merge *m, json_object *ctx)
{
	json_object *mixed = NULL;
	int err;

	json_object_object_get_ex(ctx, "mixed", &mixed);
	json_object_object_foreach(ctx, k, v) {
		json_object *listed;

		if (!strcmp(k, "mixed"))
			continue;
		if ((err = ctx_field(m, k, v, false)))
			return err;
		if (json_object_is_type(v, json_type_string) &&
		    !strcmp(json_object_get_string(v), "mixed") &&
		    !(mixed && json_object_object_get_ex(mixed, k, &listed)))
			return bad(m, "meta.context.%.64s reads \"mixed\" but meta.context.mixed "
				   "does not list its values", k);
	}
	if (!mixed)
		return 0;
	if (!json_object_is_type(mixed, json_type_object))
		return bad(m, "meta.context.mixed is not an object of lists");
	json_object_object_foreach(mixed, mk, mv) {
		json_object *own;

		if (!json_object_is_type(mv, json_type_array) ||
		    json_object_array_length(mv) > CTX_MAX_VALUES ||
		    !json_object_object_get_ex(ctx, mk, &own) ||
		    !json_object_is_type(own, json_type_string) ||
		    strcmp(json_object_get_string(own), "mixed"))
			return bad(m, "meta.context.mixed.%.64s is not the list of values of a "
				   "field that reads \"mixed\"", mk);
		for (size_t i = 0; i < json_object_array_length(mv); i++)
			if ((err = ctx_field(m, mk, json_object_array_get_idx(mv, i), true)))
				return err;
	}
	return 0;
}

/* meta.load.k: a whole number (0..2^64-1) into *out, or a message naming it. */
static int load_u64(struct merge *m, json_object *ld, const char *k, uint64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(ld, k, &v) || get_u64(ld, k, out))
		return bad(m, "meta.load.%s is %s, not a whole number of ns from 0 to 2^64-1", k,
			   v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "missing");
	return 0;
}

/* meta.load.k: a load average (0..1e6) or, when null_ok, null; *out (NAN for null). */
static int load_avg(struct merge *m, json_object *ld, const char *k, bool null_ok, double *out)
{
	json_object *v = NULL;
	bool num;

	json_object_object_get_ex(ld, k, &v);
	*out = NAN;
	if (!v && null_ok)
		return 0;
	num = json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
	if (!num || json_object_get_double(v) < 0 || json_object_get_double(v) > 1e6)
		return bad(m, "meta.load.%s is %s, not a load average from 0 to 10^6", k,
			   v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "missing");
	*out = json_object_get_double(v);
	return 0;
}

/*
 * meta.context and meta.load of one input: every context field's distinct
 * values (a field an input lacks counts as null), the loads added. A context
 * that is not an object, or a load that is not steal_ns, cpu_ns and a load
 * average, is refused.
 */
static int merge_ctx(struct merge *m, json_object *meta)
{
	json_object *ctx = NULL, *listed = NULL, *kr;
	char kernel[128];
	int err;

	if (!json_object_object_get_ex(meta, "context", &ctx) || !ctx) {
		m->ctx_missing++;	/* a lathist before 0.3: nothing known, not "null" */
		return 0;
	}
	if (!json_object_is_type(ctx, json_type_object))
		return bad(m, "meta.context is not an object");
	if ((err = ctx_check(m, ctx)))
		return err;
	if (json_object_object_get_ex(ctx, "kernel_release", &kr) && kr &&
	    strcmp(json_object_get_string(kr), "mixed") &&
	    !get_str(meta, "kernel", kernel, sizeof(kernel)) && strcmp(kernel, "mixed") &&
	    strcmp(kernel, json_object_get_string(kr)))
		return bad(m, "meta.context.kernel_release %.64s is not meta.kernel %s",
			   json_object_get_string(kr), kernel);
	if (!m->ctx_vals && !(m->ctx_vals = json_object_new_object()))
		return -ENOMEM;
	json_object_object_get_ex(ctx, "mixed", &listed);	/* an input that is a merge */
	json_object_object_foreach(ctx, k, v) {
		json_object *vals, *lv;

		if (!strcmp(k, "mixed"))
			continue;
		if (!strcmp(k, "inputs_without_context")) {
			m->ctx_missing += (int)json_object_get_int64(v);
			continue;
		}
		if (!json_object_object_get_ex(m->ctx_vals, k, &vals)) {
			vals = json_object_new_array();
			json_object_object_add(m->ctx_vals, k, vals);
			if (m->ctx_docs)	/* the inputs before had none */
				ctx_add_value(vals, NULL);
		}
		if (json_object_is_type(v, json_type_string) &&
		    !strcmp(json_object_get_string(v), "mixed") && listed &&
		    json_object_object_get_ex(listed, k, &lv) &&
		    json_object_is_type(lv, json_type_array))
			for (size_t i = 0; i < json_object_array_length(lv); i++)
				ctx_add_value(vals, json_object_array_get_idx(lv, i));
		else
			ctx_add_value(vals, v);
	}
	json_object_object_foreach(m->ctx_vals, fk, fvals)
		if (!json_object_object_get_ex(ctx, fk, NULL))
			ctx_add_value(fvals, NULL);
	m->ctx_docs++;
	return 0;
}

/* meta.load of one input: the steal and CPU time added, the largest load average;
 * a merge keeps no start and end load average (a lone input's are kept). */
static int merge_load(struct merge *m, json_object *meta)
{
	json_object *ld;
	uint64_t steal, cpu;
	double lmax, la, lb;
	int err;

	if (!json_object_object_get_ex(meta, "load", &ld) || !ld) {
		m->load_unknown = true;
		return 0;
	}
	if (!json_object_is_type(ld, json_type_object))
		return bad(m, "meta.load is not an object");
	if ((err = load_u64(m, ld, "steal_ns", &steal)) ||
	    (err = load_u64(m, ld, "cpu_ns", &cpu)) ||
	    (err = load_avg(m, ld, "loadavg_1m_max", false, &lmax)) ||
	    (err = load_avg(m, ld, "loadavg_1m_start", true, &la)) ||
	    (err = load_avg(m, ld, "loadavg_1m_end", true, &lb)))
		return err;
	if (steal > cpu)
		return bad(m, "meta.load.steal_ns %" PRIu64 " is more than cpu_ns %" PRIu64
			   " (stolen time is part of all CPU time)", steal, cpu);
	if ((!isnan(la) && lmax < la) || (!isnan(lb) && lmax < lb))
		return bad(m, "meta.load.loadavg_1m_max %.2f is below its %s %.2f", lmax,
			   !isnan(la) && lmax < la ? "start" : "end", !isnan(la) && lmax < la ? la : lb);
	{
		/* derived (written to 6 decimals): it must say what its two counts say */
		json_object *r = NULL;
		double want = cpu ? (double)steal / (double)cpu : 0;

		/* present and null: lathist writes null only for no CPU time */
		if (json_object_object_get_ex(ld, "steal_ratio", &r) && !r && cpu)
			return bad(m, "meta.load.steal_ratio is null beside cpu_ns %" PRIu64
				   ": it is steal_ns / cpu_ns (%.6f)", cpu, (double)steal / (double)cpu);
		if (r && !cpu)
			return bad(m, "meta.load.steal_ratio is %.32s with cpu_ns 0: a ratio of no "
				   "CPU time is null", json_object_to_json_string_ext(r,
				   JSON_C_TO_STRING_PLAIN));
		if (r && (!(json_object_is_type(r, json_type_double) ||
			    json_object_is_type(r, json_type_int)) || !cpu ||
			  fabs(json_object_get_double(r) - want) > 1e-6))
			return bad(m, "meta.load.steal_ratio is %.32s, not steal_ns / cpu_ns (%.6f)",
				   json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN), want);
	}
	m->load.steal_ns = lh_add_sat(m->load.steal_ns, steal);
	m->load.cpu_ns = lh_add_sat(m->load.cpu_ns, cpu);
	if (lmax > m->load.loadavg_max)
		m->load.loadavg_max = lmax;
	m->load.ends = !m->ndocs && !isnan(la) && !isnan(lb);
	m->load.loadavg_start = m->load.ends ? la : 0;
	m->load.loadavg_end = m->load.ends ? lb : 0;
	return 0;
}

/*
 * The merged meta.context: a field all inputs agree on keeps its value; one
 * they differ on reads "mixed" and meta.context.mixed lists its values (up to
 * CTX_MAX_VALUES; null for an input without it). Says in one line on stderr
 * when the fields that move latency differ.
 */
static void merge_context_finish(struct merge *m)
{
	static const char *const moving[] = { "kernel_release", "preempt", "cmdline", "governor",
					      "smt", "hypervisor", "disks" };
	json_object *mixed;
	char said[512] = "";

	if (!m->ctx_vals)
		return;
	m->ctx_out = json_object_new_object();
	mixed = json_object_new_object();
	json_object_object_foreach(m->ctx_vals, k, vals) {
		if (json_object_array_length(vals) == 1) {
			json_object_object_add(m->ctx_out, k,
					       json_object_get(json_object_array_get_idx(vals, 0)));
			continue;
		}
		json_object_object_add(m->ctx_out, k, json_object_new_string("mixed"));
		json_object_object_add(mixed, k, json_object_get(vals));
		for (size_t i = 0; i < sizeof(moving) / sizeof(moving[0]); i++) {
			size_t n = strlen(said);

			if (strcmp(k, moving[i]))
				continue;
			snprintf(said + n, sizeof(said) - n, "%s%s (", n ? ", " : "", k);
			for (size_t j = 0; j < json_object_array_length(vals); j++) {
				n = strlen(said);
				snprintf(said + n, sizeof(said) - n, "%s%s", j ? " | " : "",
					 json_object_to_json_string_ext(json_object_array_get_idx(vals, j),
									JSON_C_TO_STRING_PLAIN));
			}
			n = strlen(said);
			snprintf(said + n, sizeof(said) - n, ")");
		}
	}
	if (m->ctx_missing && m->ctx_docs) {
		json_object_object_add(m->ctx_out, "inputs_without_context",
				       json_object_new_int(m->ctx_missing));
		fprintf(stderr, "lathist report: %d of the %d inputs carry no measurement context (a "
			"lathist before 0.3): meta.context is the others'\n", m->ctx_missing,
			m->ctx_missing + m->ctx_docs);
	}
	if (json_object_object_length(mixed))
		json_object_object_add(m->ctx_out, "mixed", mixed);
	else
		json_object_put(mixed);
	if (said[0] && !m->ctx_quiet)
		fprintf(stderr, "lathist report: the inputs were measured in different contexts: %s; "
			"their latencies may not compare (meta.context.mixed)\n", said);
	m->r.meta.context = json_object_object_length(m->ctx_out) ? m->ctx_out : NULL;
	if (!m->load_unknown && m->ndocs) {
		m->r.meta.load = m->load;
		m->r.meta.load.known = true;
	}
}

/* What the inputs say of themselves: anonymized (all or none), the -p/-t task's
 * exit (the earliest), what was not checked (the first), host and kernel
 * ("mixed" when they differ), CPUs (the most), the span (first start, last end). */
static int merge_context(struct merge *m, json_object *meta, uint64_t start, uint64_t dur,
			 uint64_t ncpus)
{
	json_object *an = get(meta, "anonymized", json_type_boolean);
	bool anon = an && json_object_get_boolean(an);
	char host[65], k[128];
	uint64_t ex;

	if (!an && json_object_object_get_ex(meta, "anonymized", NULL))
		return bad(m, "meta.anonymized is not true or false");
	if (m->ndocs == 0)
		m->anonymized = anon;
	else if (anon != m->anonymized)
		return unmergeable(m, "is%s anonymized and the first document is%s: their keys "
				   "cannot match; merge the raw documents (with --anonymize if the "
				   "merge is to be shared)", anon ? "" : " not", anon ? " not" : "");
	if (!get_u64(meta, "filter_exit_realtime_ns", &ex) && ex &&
	    (!m->r.meta.filter_exit_realtime_ns || ex < m->r.meta.filter_exit_realtime_ns))
		m->r.meta.filter_exit_realtime_ns = ex;
	{
		/* every input's, once each: what one did not see is not another's */
		char u[sizeof(m->r.meta.unchecked)];
		char *all = m->r.meta.unchecked;
		size_t n = strlen(all);

		if (!get_str(meta, "unchecked", u, sizeof(u)) && u[0] && !strstr(all, u) &&
		    n + strlen(u) + 3 < sizeof(m->r.meta.unchecked))
			snprintf(all + n, sizeof(m->r.meta.unchecked) - n, "%s%s", n ? "; " : "", u);
		else if (!get_str(meta, "unchecked", u, sizeof(u)) && u[0] && !strstr(all, u))
			snprintf(all + (n > 40 ? n - 40 : 0), 41, "%s", "; and more: see the inputs");
		printable_only(all, false);
	}
	if (get_str(meta, "host", host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	if (m->ndocs == 0)
		snprintf(m->host, sizeof(m->host), "%s", host);
	else if (strcmp(host, m->host))
		snprintf(m->host, sizeof(m->host), "mixed");
	if (strcmp(m->kernel, "mixed") &&
	    (get_str(meta, "kernel", k, sizeof(k)) || strcmp(k, m->kernel)))
		snprintf(m->kernel, sizeof(m->kernel), "mixed");
	if (ncpus > (uint64_t)m->r.meta.ncpus)
		m->r.meta.ncpus = (int)ncpus;
	if (!m->first_start || start < m->first_start)
		m->first_start = start;
	m->doc_start = start ? start : 1;	/* 0 would mean "unknown" */
	if (start + dur > m->last_end)
		m->last_end = start + dur;
	return 0;
}

/* loss: every counter the tool knows, added (refused past 2^64), paired <= events;
 * the kernel gap per CPU and the losses charged to keys. */
static int merge_loss(struct merge *m, json_object *loss, uint64_t ncpus)
{
	uint64_t own[LH_NR_COUNTERS] = { 0 };
	int err;

	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);
		uint64_t v;

		if (!json_object_object_get_ex(loss, ci->name, NULL))
			continue;
		if (get_u64(loss, ci->name, &v))
			return bad(m, "loss.%s is not a whole number from 0 to 2^64-1", ci->name);
		if (m->r.counters[i] + v < v)
			return unmergeable(m, "loss.%s: the inputs add up past 2^64-1; merge fewer "
					   "documents", ci->name);
		m->r.counters[i] += v;
		own[i] = v;
		/* a counter the inputs carry is shown, whatever output it belongs to */
		if (ci->needs)
			m->r.meta.features |= ci->needs;
	}
	{
		uint64_t lost = 0, doc_lost = 0;

		for (int i = 0; i < LH_NR_COUNTERS; i++)
			if (lh_counter_info(i)->loss) {
				/* this document's own first: fewer documents would not help */
				if (doc_lost + own[i] < doc_lost)
					return bad(m, "its loss classes add up past 2^64-1");
				doc_lost += own[i];
				if (lost + m->r.counters[i] < lost)
					return unmergeable(m, "the loss classes add up past 2^64-1; merge "
							   "fewer documents");
				lost += m->r.counters[i];
			}
	}
	if (own[LH_EV_PAIRED] > own[LH_EV_ENDS])
		return bad(m, "loss.paired %" PRIu64 " is more than loss.events %" PRIu64 ": every "
			   "paired event is an event", own[LH_EV_PAIRED], own[LH_EV_ENDS]);
	if (json_object_object_get_ex(loss, "events", NULL)) {
		/* every end lathist counts is in exactly one class counted at ends (the BPF
		 * programs count events and then one of them): a share of events is
		 * shown for each, and a sum that is not events makes every share wrong.
		 * With slices (--oncpu, --counters: a "slices" count) *_delta and
		 * hist_map_* count failed slices too: events lies between the sum
		 * without them and the sum with them. */
		bool slices = json_object_object_get_ex(loss, "slices", NULL);
		uint64_t ends = 0, ends_only = 0;

		for (int i = 0; i < LH_NR_COUNTERS; i++)
			if (lh_counter_info(i)->of_events) {
				if (ends + own[i] < ends)
					return bad(m, "the loss classes counted at ends add up past "
						   "2^64-1");
				ends += own[i];
				if (lh_counter_of_events(i, LH_FEAT_ONCPU))	/* no slices in it */
					ends_only += own[i];
			}
		if (!slices && ends != own[LH_EV_ENDS])
			return bad(m, "the loss classes counted at ends (paired, unpaired_*, "
				   "*_delta, hist_map_*) add up to %" PRIu64 ", and loss.events is %"
				   PRIu64 ": each end is in one of them", ends, own[LH_EV_ENDS]);
		if (slices && (own[LH_EV_ENDS] < ends_only || own[LH_EV_ENDS] > ends))
			return bad(m, "the loss classes counted at ends add up to %" PRIu64 " (%"
				   PRIu64 " without *_delta and hist_map_*, which count slices "
				   "too), and loss.events is %" PRIu64 ", not between: each end is "
				   "in one of them", ends, ends_only, own[LH_EV_ENDS]);
	}
	err = add_gaps(m, loss, ncpus);
	return err ? err : add_charges(m, loss);
}

/* unchecked_start is counted only by lathist 0.1.0's classic tracepoint path: a
 * document with some names a tracepoint attach. 0 or -EINVAL (said). */
static int unchecked_only_on_tracepoints(struct merge *m, json_object *meta, json_object *loss)
{
	json_object *attach = get(meta, "attach", json_type_object);
	uint64_t n = 0;

	if (!attach || get_u64(loss, "unchecked_start", &n) || !n)	/* attach: checked before */
		return 0;
	json_object_object_foreach(attach, tp, type) {
		(void)tp;
		if (json_object_is_type(type, json_type_string) &&
		    !strcmp(json_object_get_string(type), "tracepoint"))
			return 0;
	}
	return bad(m, "loss.unchecked_start is %" PRIu64 ", a class of lathist 0.1.0's "
		   "tracepoint attach only, and meta.attach names no tracepoint attach", n);
}

/* One document: checked, then merged into m (an error leaves m to be freed). */
static int add_doc(struct merge *m, json_object *doc)
{
	json_object *meta = get(doc, "meta", json_type_object), *hs, *hists, *loss, *js;
	uint64_t start = 0, dur = 0, ncpus = 0;
	struct lh_hist tmp;
	int err;

	m->line++;
	if (!(js = get(doc, "schema", json_type_string)))
		return bad(m, "not a %s document (no \"schema\": \"%s\")", LH_SCHEMA, LH_SCHEMA);
	if (strcmp(json_object_get_string(js), LH_SCHEMA))
		return say(m, "read it with the lathist that wrote it, or give a " LH_SCHEMA
			   " file", "\"schema\" is \"%.32s%s\", and this lathist reads "
			   LH_SCHEMA " only", json_object_get_string(js),
			   json_object_get_string_len(js) > 32 ? "..." : "");
	hs = get(meta, "hist_scheme", json_type_object);
	hists = get(doc, "histograms", json_type_array);
	loss = get(doc, "loss", json_type_object);
	if (!meta || !hs || !hists || !loss)
		return bad(m, "meta, meta.hist_scheme, histograms or loss is missing");
	if (!m->have && (err = first_meta(m, meta, hs)))
		return err;
	if ((err = same_kind(m, meta, hs)))
		return err;
	if (get_u64(meta, "start_realtime_ns", &start))
		return bad(m, "meta.start_realtime_ns is not a number of ns");
	if (get_u64(meta, "duration_ns", &dur) || start + dur < start)
		return bad(m, "meta.duration_ns is not a number of ns (or runs past 2^64)");
	/* lathist writes its possible CPUs (libbpf), at least 1; the cap: report's own */
	if (get_u64(meta, "ncpus", &ncpus) || !ncpus || ncpus > 1 << 20)
		return bad(m, "meta.ncpus is not a number of CPUs from 1 to 1048576");
	if ((err = merge_filters(m, meta)) || (err = merge_attach(m, meta)) ||
	    (err = merge_context(m, meta, start, dur, ncpus)) || (err = merge_ctx(m, meta)) ||
	    (err = merge_load(m, meta)) || (err = add_parts(m, meta)))
		return err;
	m->ndocs++;
	if (m->heat) {
		uint64_t lost = 0;

		if (json_object_object_get_ex(meta, "parts", NULL))
			return unmergeable(m, "is a merge: --heatmap would draw it as one column over "
					   "its whole span; give the runs' own documents");
		get_u64(loss, "lost", &lost);	/* marks the column; checked as a counter below */
		if (lh_heatmap_column(m->heat, start, dur, lost))
			return -ENOMEM;
	}
	m->doc_paired = m->doc_slices = 0;
	m->doc_slice_hists = 0;
	m->doc_ncpus = ncpus;
	for (size_t i = 0; i < json_object_array_length(hists); i++)
		if ((err = parse_hist(m, json_object_array_get_idx(hists, i), &tmp)))
			return err;
	if ((err = merge_loss(m, loss, ncpus)) ||
	    (err = unchecked_only_on_tracepoints(m, meta, loss)))
		return err;
	{
		uint64_t paired = 0;

		/* "paired means in a histogram" (a full map counts as hist_map_full) */
		if (get_u64(loss, "paired", &paired) || paired != m->doc_paired)
			return bad(m, "loss.paired %" PRIu64 " is not what its histograms count (%"
				   PRIu64 "): every paired event is in one", paired, m->doc_paired);
	}
	/* "slices: on-CPU slices in the oncpu histograms (and in the counter sums)": with
	 * --counters alone the slices are in no histogram */
	if (m->doc_slice_hists || (json_object_object_get_ex(loss, "slices", NULL) &&
				   !get(doc, "counters", json_type_array))) {
		uint64_t slices = 0;

		if (get_u64(loss, "slices", &slices) || slices != m->doc_slices)
			return bad(m, "loss.slices %" PRIu64 " is not what its oncpu histograms count "
				   "(%" PRIu64 "): every slice counted is in one", slices,
				   m->doc_slices);
	}
	m->oncpu_docs += json_object_object_get_ex(loss, "slices", NULL);
	if (get(doc, "counters", json_type_array))
		m->pmu_dropped = true;
	if (get(doc, "records", json_type_object))
		m->records_dropped = true;
	return 0;
}

/*
 * An integer literal past 2^64-1 in one document's text (len bytes), outside
 * strings: json-c reads it as 2^64-1, so it is looked for here, to be refused
 * with the value as written. Returns its offset, or len when there is none;
 * *key is the last string before it (its field name), *klen its length.
 */
static size_t big_number(const char *t, size_t len, const char **key, size_t *klen)
{
	static const char max[] = "18446744073709551615";
	size_t str = 0;

	*key = "";
	*klen = 0;
	for (size_t i = 0; i < len; i++) {
		size_t j = i;

		if (t[i] == '"') {	/* a string: skip it, escapes and all */
			for (j = i + 1; j < len && t[j] != '"'; j++)
				if (t[j] == '\\')
					j++;
			str = i + 1;
			*key = t + str;
			*klen = j < len ? j - str : 0;
			i = j;
			continue;
		}
		if (t[i] < '0' || t[i] > '9')
			continue;
		while (j < len && t[j] >= '0' && t[j] <= '9')
			j++;
		if ((i == 0 || t[i - 1] != '-') &&
		    !(j < len && (t[j] == '.' || t[j] == 'e' || t[j] == 'E')) &&
		    (j - i > sizeof(max) - 1 ||
		     (j - i == sizeof(max) - 1 && memcmp(t + i, max, j - i) > 0)))
			return i;
		i = j - 1;
	}
	return len;
}

/*
 * An input read a chunk at a time: buf holds its bytes from offset base on,
 * from the document being parsed to what was read last, so memory follows
 * the largest document, not the input (a day of -i 1 is one file).
 */
struct input {
	FILE *f;		/* NULL: buf is the whole input, not owned */
	char *buf;
	size_t len, cap;
	uint64_t base;		/* input offset of buf[0] */
	bool eof;
};

/*
 * Keep buf[keep..len) (moved to the front) and read the next chunk after it.
 * 0, or an error said: -EIO (read error), -EFBIG (a document past
 * MAX_DOC_BYTES), -ENOMEM; a NUL byte is refused here, where each byte is
 * first seen.
 */
static int fill(struct merge *m, struct input *in, size_t keep)
{
	const char *nul;
	size_t got;

	memmove(in->buf, in->buf + keep, in->len - keep);
	in->len -= keep;
	in->base += keep;
	if (in->len > MAX_DOC_BYTES) {
		m->line++;	/* the one being parsed */
		return bad(m, "a document is larger than 512 MiB");
	}
	if (in->cap - in->len < READ_CHUNK) {
		size_t cap = in->len + READ_CHUNK;
		char *nb = realloc(in->buf, cap);

		if (!nb)
			return -ENOMEM;
		in->buf = nb;
		in->cap = cap;
	}
	got = fread(in->buf + in->len, 1, in->cap - in->len, in->f);
	if (!got && ferror(in->f)) {
		fprintf(stderr, "lathist report: cannot read %s: %s\n", m->path, strerror(errno));
		return -EIO;
	}
	in->eof = !got;
	nul = memchr(in->buf + in->len, 0, got);
	if (nul) {
		m->line = 0;	/* named by its byte: it may lie between documents */
		return bad(m, "holds a NUL byte at byte %" PRIu64,
			   in->base + (uint64_t)(nul - in->buf));
	}
	in->len += got;
	return 0;
}

/* One parsed document, or the error said: its bytes are in->buf[*off..*end). */
static int parse_doc(struct merge *m, json_tokener *tok, struct input *in, size_t *off,
		     size_t *end, json_object **doc)
{
	size_t fed = *off, pe;
	int err;

	json_tokener_reset(tok);
	for (;;) {
		size_t n = in->len - fed;
		enum json_tokener_error je;

		*doc = json_tokener_parse_ex(tok, in->buf + fed, (int)(n > INT32_MAX ? INT32_MAX : n));
		je = json_tokener_get_error(tok);
		pe = json_tokener_get_parse_end(tok);
		if (!*doc && je == json_tokener_continue && (!in->f || in->eof)) {
			/* a number or literal at the very end (42, null) ends only at what
			 * follows it: a space tells the tokener so; input cut inside one
			 * ({"a": tru) stays an unexpected end */
			*doc = json_tokener_parse_ex(tok, " ", 1);
			if (*doc || json_tokener_get_error(tok) == json_tokener_success) {
				je = json_tokener_success;
				pe = n;
			}
		}
		if (*doc || je != json_tokener_continue || !in->f || in->eof) {
			if (*doc) {
				*end = fed + pe;
				return 0;
			}
			m->line++;
			if (je == json_tokener_success)	/* "null": JSON, but nothing */
				return bad(m, "a document is not a JSON object (null)");
			return bad(m, "not JSON at byte %" PRIu64 " (json-c: %s)", in->base + fed + pe,
				   je == json_tokener_continue ? "unexpected end" :
				   json_tokener_error_desc(je));
		}
		/* the tokener took all of it: read on, keeping the document's bytes */
		fed = in->len - *off;
		err = fill(m, in, *off);
		*off = 0;
		if (err)
			return err;
	}
}

/* Every JSON document of in (one, or JSON lines), in order. */
static int read_input(struct merge *m, struct input *in)
{
	json_tokener *tok = json_tokener_new();
	size_t off = 0, end = 0, big, klen;
	const char *key;
	int err = 0;

	if (!tok)
		return -ENOMEM;
	if (!in->f && (key = memchr(in->buf, 0, in->len)))
		err = bad(m, "holds a NUL byte at byte %zu", (size_t)(key - in->buf));
	while (!err) {
		json_object *doc;

		while (off < in->len && (in->buf[off] == ' ' || in->buf[off] == '\n' ||
					 in->buf[off] == '\r' || in->buf[off] == '\t'))
			off++;
		if (off >= in->len) {
			if (!in->f || in->eof)
				break;
			err = fill(m, in, off);
			off = 0;
			continue;
		}
		err = parse_doc(m, tok, in, &off, &end, &doc);
		if (err)
			break;
		big = big_number(in->buf + off, end - off, &key, &klen);
		if (!json_object_is_type(doc, json_type_object)) {
			m->line++;
			err = bad(m, "a document is not a JSON object");
		} else if (big < end - off) {
			const char *v = in->buf + off + big;
			size_t n = strspn(v, "0123456789");

			m->line++;
			err = bad(m, "\"%.*s\": %.*s%s is past 2^64-1, more than lathist ever counts",
				  (int)(klen > 40 ? 40 : klen), key, (int)(n > 40 ? 40 : n), v,
				  n > 40 ? "..." : "");
		} else {
			err = add_doc(m, doc);
		}
		off = end;
		json_object_put(doc);
	}
	json_tokener_free(tok);
	if (!err && !m->line) {
		m->line = 1;
		err = bad(m, "holds no document");
	}
	return err;
}

/* Every JSON document in buf (len bytes: one document, or JSON lines). */
static int read_buffer(struct merge *m, const char *buf, size_t len)
{
	struct input in = { .buf = (char *)buf, .len = len, .eof = true };

	return read_input(m, &in);
}

static int read_file(struct merge *m, const char *path)
{
	struct input in = { 0 };
	int err;

	m->path = strcmp(path, "-") ? path : "standard input";
	m->line = 0;
	in.f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!in.f) {
		fprintf(stderr, "lathist report: cannot read %s: %s\n", m->path, strerror(errno));
		return -EIO;
	}
	err = read_input(m, &in);
	if (in.f != stdin)
		fclose(in.f);
	free(in.buf);
	return err;
}

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
	struct run_span *r = malloc((m->nparts ? m->nparts : 1) * sizeof(*r));
	size_t n = 0;
	bool bad = false;

	if (!r)
		return false;
	for (size_t i = 0; i < m->nparts; i++) {
		const struct lh_part *p = &m->parts[i];
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

static void merge_free(struct merge *m)
{
	json_object_put(m->filters_obj);
	json_object_put(m->ctx_vals);
	json_object_put(m->ctx_out);
	lh_heatmap_free(m->heat);
	lh_report_clear(&m->r);
	free(m->parts);
	free(m->part_src);
	free(m->noid);
	tdestroy(m->runs, run_free);
	free(m->hist_doc);
}

int lh_report_parse_buffer(const char *buf, size_t len)
{
	struct merge m = { .path = "input" };
	FILE *devnull = fopen("/dev/null", "w");
	int err;

	m.heat = lh_heatmap_new();
	err = read_buffer(&m, buf, len);
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
	if (o->c.help) {
		fputs(report_help, stdout);
		return -1;
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
		err = read_file(m, argv[i]);
	if (err)
		return LH_EXIT_RUNTIME;
	if (m->heat_hist) {
		if (!kind_of(m, m->heat_hist)) {
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
	m->r.meta.parts = m->parts;
	m->r.meta.nparts = m->nparts;
	m->r.meta.anonymized = m->anonymized;
	snprintf(m->r.meta.host, sizeof(m->r.meta.host), "%s", m->host);
	snprintf(m->r.meta.kernel, sizeof(m->r.meta.kernel), "%s", m->kernel);
	printable_only(m->r.meta.host, true);	/* printed in headers and labels */
	printable_only(m->r.meta.kernel, true);
	m->r.meta.start_realtime_ns = m->first_start;
	m->r.meta.duration_ns = m->last_end - m->first_start;
	lh_report_sort(&m->r);
	return 0;
}

/* --diff A B: each side merged on its own, then side by side. An exit status. */
static int report_diff(char **argv, const struct report_opts *ro)
{
	struct merge a = { .ctx_quiet = true }, b = { .ctx_quiet = true };
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
		for (size_t i = 0; i < m.nparts; i++)
			lh_anon_host(&anon, m.parts[i].host, sizeof(m.parts[i].host));
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
