// SPDX-License-Identifier: MIT
/* JSON renderer, schema lathist/1 (docs in README.md), built with json-c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include "outbuf.h"
#include "pmu_user.h"
#include "recline.h"
#include "report.h"
#include "registry.h"
#include "version.h"

static json_object *u64(uint64_t v)
{
	/* json-c keeps uint64 exactly (json_object_new_uint64, 0.14+) */
	return json_object_new_uint64(v);
}

static json_object *key_json(const struct lh_key *k)
{
	json_object *o = json_object_new_object();

	if (k->fields & LH_KEY_TID)
		json_object_object_add(o, "tid", u64(k->tid));
	if (k->fields & LH_KEY_PID)
		json_object_object_add(o, "pid", u64(k->pid));
	if (k->fields & LH_KEY_COMM) {
		char comm[4 * sizeof(k->comm) + 1];

		lh_printable(k->comm, sizeof(k->comm), comm, sizeof(comm));
		json_object_object_add(o, "comm", json_object_new_string(comm));
	}
	if (k->fields & (LH_KEY_TID | LH_KEY_PID))
		json_object_object_add(o, "start_ns", u64(k->birth_ns));
	if (k->fields & LH_KEY_CPU)
		json_object_object_add(o, "cpu", u64(k->cpu));
	if (k->fields & LH_KEY_DISK)
		json_object_object_add(o, "disk", json_object_new_string(k->disk));
	if (k->fields & LH_KEY_OP)
		json_object_object_add(o, "op", json_object_new_string(k->op));
	if (k->fields & LH_KEY_CGROUP) {
		json_object_object_add(o, "cgroup", json_object_new_string(k->cgroup ? k->cgroup : ""));
		json_object_object_add(o, "cgroup_id", u64(k->cgroup_id));
	}
	return o;
}

/*
 * The histograms are written without json-c, as the bytes json-c writes for
 * their tree (JSON_C_TO_STRING_PRETTY | SPACED | NOSLASHESCAPE: a container's
 * bracket, a newline, its members one a line at 2 spaces a level, a newline
 * and the closing bracket at its own level; or PLAIN | NOSLASHESCAPE):
 * tests/unit/test_export.c has json-c parse the document and write it again,
 * byte for byte the same. With thousands of keys a json-c tree per histogram
 * (some 40 objects allocated, printed and freed) took most of an interval.
 */
struct jw {
	struct lh_out *o;	/* the document's histograms, one fwrite per 64 KiB */
	bool compact;
	int depth;		/* the open container's level (json-c's) */
	unsigned int had;	/* bit d: the container at level d has a member */
};

/* Inlined, so that the many copies of a constant length are a move or two. */
static inline __attribute__((always_inline)) void jw_put(struct jw *w, const char *s,
							 size_t len)
{
	lh_out_put(w->o, s, len);
}

/* 2 spaces a level (histograms go 6 levels deep, the writer at most 15). */
static const char jw_spaces[] = "                              ";

/* The indent of level, in bytes of jw_spaces. */
static inline size_t jw_indent_len(int level)
{
	return (size_t)(2 * level < (int)sizeof(jw_spaces) - 1 ? 2 * level :
			(int)sizeof(jw_spaces) - 1);
}

static void jw_indent(struct jw *w, int level)
{
	jw_put(w, jw_spaces, jw_indent_len(level));
}

/* A string as json-c escapes it: '"', '\\' and the control characters; '/' kept. */
static void jw_string(struct jw *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;

	jw_put(w, "\"", 1);
	for (;;) {
		const unsigned char *q = p;
		const char *e;
		char u[6];

		while (*q >= 0x20 && *q != '"' && *q != '\\')	/* a run to copy as it is */
			q++;
		jw_put(w, (const char *)p, (size_t)(q - p));
		if (!*q)
			break;
		switch (*q) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			memcpy(u, "\\u00", 4);
			u[4] = hex[*q >> 4];
			u[5] = hex[*q & 15];
			e = NULL;
			jw_put(w, u, 6);
		}
		if (e)
			jw_put(w, e, strlen(e));
		p = q + 1;
	}
	jw_put(w, "\"", 1);
}

/* What comes before a member (name) or an element (name NULL) of the open container,
 * written in one piece of the buffer (inlined: the names are literals, their
 * lengths known): the separator, the indent (2 spaces a level, as jw_indent),
 * the quoted name and its colon. */
static inline __attribute__((always_inline)) void jw_item(struct jw *w, const char *name)
{
	unsigned int bit = 1U << w->depth;
	size_t nlen = name ? strlen(name) : 0, ind = w->compact ? 0 : jw_indent_len(w->depth + 1);
	char *p = lh_out_room(w->o, 2 + sizeof(jw_spaces) + nlen + 4), *q = p;

	if (w->had & bit) {
		*q++ = ',';
		if (!w->compact)
			*q++ = '\n';
	}
	w->had |= bit;
	memcpy(q, jw_spaces, ind);
	q += ind;
	if (name) {	/* member names are lathist's own: nothing to escape */
		*q++ = '"';
		memcpy(q, name, nlen);
		q += nlen;
		*q++ = '"';
		*q++ = ':';
		if (!w->compact)
			*q++ = ' ';
	}
	lh_out_wrote(w->o, (size_t)(q - p));
}

/* Open an object ('{') or array ('[') as a member or element. */
static void jw_open(struct jw *w, const char *name, char bracket)
{
	jw_item(w, name);
	jw_put(w, &bracket, 1);
	if (!w->compact)
		jw_put(w, "\n", 1);
	w->depth++;
	w->had &= ~(1U << w->depth);
}

static void jw_close(struct jw *w, char bracket)
{
	if (!w->compact) {
		if (w->had & (1U << w->depth))
			jw_put(w, "\n", 1);
		jw_indent(w, w->depth);
	}
	jw_put(w, &bracket, 1);
	w->depth--;
}

/* inlined, as jw_item: its name is a literal, whose length folds */
static __always_inline void jw_u64(struct jw *w, const char *name, uint64_t v)
{
	char *d;

	jw_item(w, name);
	d = lh_out_room(w->o, 20);
	lh_out_wrote(w->o, (size_t)(lh_put_u64(d, v) - d));
}

static __always_inline void jw_null(struct jw *w, const char *name)
{
	jw_item(w, name);
	jw_put(w, "null", 4);
}

/* A slot bound in ns, null for the unbounded one (UINT64_MAX units). */
static __always_inline void jw_bound(struct jw *w, const char *name, uint64_t units,
				     uint64_t unit_ns)
{
	if (units == UINT64_MAX)
		jw_null(w, name);
	else
		jw_u64(w, name, units * unit_ns);
}

/* {"lo_ns", "hi_ns"} of slot s, the object left open; or null (returns false)
 * for the unbounded last slot when unbounded_null (a bound nothing limits). */
static bool jw_slot(struct jw *w, const char *name, int s, const struct lh_meta *m,
		    bool unbounded_null)
{
	uint32_t p = m->scheme.precision;

	if (unbounded_null && lh_slot_hi((uint32_t)s, p) == UINT64_MAX) {
		jw_null(w, name);
		return false;
	}
	jw_open(w, name, '{');
	jw_bound(w, "lo_ns", lh_slot_lo((uint32_t)s, p), m->scheme.unit_ns);
	jw_bound(w, "hi_ns", lh_slot_hi((uint32_t)s, p), m->scheme.unit_ns);
	return true;
}

static void jw_key(struct jw *w, const struct lh_key *k)
{
	jw_open(w, "key", '{');
	if (k->fields & LH_KEY_TID)
		jw_u64(w, "tid", k->tid);
	if (k->fields & LH_KEY_PID)
		jw_u64(w, "pid", k->pid);
	if (k->fields & LH_KEY_COMM) {
		char comm[4 * sizeof(k->comm) + 1];

		lh_printable(k->comm, sizeof(k->comm), comm, sizeof(comm));
		jw_item(w, "comm");
		jw_string(w, comm);
	}
	if (k->fields & (LH_KEY_TID | LH_KEY_PID))
		jw_u64(w, "start_ns", k->birth_ns);
	if (k->fields & LH_KEY_CPU)
		jw_u64(w, "cpu", k->cpu);
	if (k->fields & LH_KEY_DISK) {
		jw_item(w, "disk");
		jw_string(w, k->disk);
	}
	if (k->fields & LH_KEY_OP) {
		jw_item(w, "op");
		jw_string(w, k->op);
	}
	if (k->fields & LH_KEY_CGROUP) {
		jw_item(w, "cgroup");
		jw_string(w, k->cgroup ? k->cgroup : "");
		jw_u64(w, "cgroup_id", k->cgroup_id);
	}
	jw_close(w, '}');
}

/* At most this many histograms get a reason line of their own in bias.reasons. */
#define MAX_HIST_REASONS 8

/*
 * How far each histogram's losses could move its percentiles, tallied while
 * the histograms are written (their percentiles are computed once): movable
 * of all percentiles, and which histograms (by index) have any movable, the
 * first MAX_HIST_REASONS of them by index and the rest counted in more.
 */
struct bias_tally {
	uint64_t movable, all;
	size_t reasons[MAX_HIST_REASONS], nreasons, more;
};

/* How many of h's percentiles its lost events could move (pct and lost from
 * lh_report_percentiles); 0 for an empty histogram. */
static int pcts_movable(const struct lh_hist *h, uint64_t lost, const struct lh_pct *pct)
{
	int moved = 0;

	if (!h->count || !lost)
		return 0;
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++)
		if (pct[i].low >= 0 && pct[i].low != pct[i].high)
			moved++;
	return moved;
}

static void tally_hist(struct bias_tally *t, size_t idx, const struct lh_hist *h, uint64_t lost,
		       const struct lh_pct *pct)
{
	int moved = pcts_movable(h, lost, pct);

	if (h->count)
		t->all += LH_NR_PERCENTILES;
	t->movable += (uint64_t)moved;
	if (!moved)
		return;
	if (t->nreasons < MAX_HIST_REASONS)
		t->reasons[t->nreasons++] = idx;
	else
		t->more++;
}

/*
 * One histogram as an element of the document's histograms array (level 1),
 * after put()'s separator: name, key, counts, the events lost that could have
 * belonged here and what they could make the max, each percentile's slot and
 * bounds, the non-empty slots.
 */
static void put_hist(struct lh_out *o, const struct lh_hist *h, const struct lh_report *r,
		     bool compact, bool *first, struct bias_tally *t)
{
	const struct lh_meta *m = &r->meta;
	struct lh_pct pct[LH_NR_PERCENTILES];
	uint64_t u = m->scheme.unit_ns, lost = lh_report_percentiles(r, h, pct);
	uint32_t p = m->scheme.precision;
	struct jw w = { .o = o, .compact = compact, .depth = 1, .had = *first ? 0 : 2 };

	tally_hist(t, (size_t)(h - r->hists), h, lost, pct);

	if (*first && !compact)		/* put()'s newline before the first element */
		jw_put(&w, "\n", 1);
	*first = false;
	jw_open(&w, NULL, '{');
	jw_item(&w, "name");
	jw_string(&w, h->name);
	jw_key(&w, &h->key);
	jw_u64(&w, "count", h->count);
	jw_u64(&w, "sum_ns", h->sum_ns);
	jw_u64(&w, "max_ns", h->max_ns);
	jw_u64(&w, "lost", lost);
	if (h->key.fields & LH_KEY_PID && r->meta.desc && r->meta.desc->charges_keys)
		jw_u64(&w, "key_lost", lh_report_key_charge(r, &h->key));
	if (lost)
		jw_null(&w, "max_ns_high");
	else
		jw_u64(&w, "max_ns_high", h->max_ns);
	if (m->has_bytes)
		jw_u64(&w, "bytes", h->bytes);
	jw_open(&w, "percentiles", '{');
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		if (pct[i].slot < 0 || pct[i].low < 0) {
			jw_null(&w, lh_percentiles[i].name);
			continue;
		}
		jw_slot(&w, lh_percentiles[i].name, pct[i].slot, m, false);
		if (jw_slot(&w, "low", pct[i].low, m, false))
			jw_close(&w, '}');
		if (jw_slot(&w, "high", pct[i].high, m, true))
			jw_close(&w, '}');
		jw_close(&w, '}');
	}
	jw_close(&w, '}');
	jw_open(&w, "slots", '[');
	for (uint32_t i = 0; i < h->nslots; i++) {
		if (!h->slots[i])
			continue;
		jw_open(&w, NULL, '{');
		jw_bound(&w, "lo_ns", lh_slot_lo(i, p), u);
		jw_bound(&w, "hi_ns", lh_slot_hi(i, p), u);
		jw_u64(&w, "count", h->slots[i]);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
}

static json_object *pmu_meta_json(const struct lh_pmu_meta *pm);

/* A double written as fmt gives it (json-c would write all 17 digits). */
static json_object *dbl(double v, const char *fmt)
{
	char buf[64];

	snprintf(buf, sizeof(buf), fmt, v);
	return json_object_new_double_s(v, buf);
}

/* meta.load: steal and load over the aggregate; null when not read. */
static json_object *load_json(const struct lh_load *l)
{
	json_object *o;

	if (!l->known)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "steal_ns", u64(l->steal_ns));
	json_object_object_add(o, "cpu_ns", u64(l->cpu_ns));
	json_object_object_add(o, "steal_ratio", l->cpu_ns ?
			       dbl((double)l->steal_ns / (double)l->cpu_ns, "%.6f") : NULL);
	json_object_object_add(o, "loadavg_1m_start", l->ends ?
			       dbl(l->loadavg_start, "%.2f") : NULL);
	json_object_object_add(o, "loadavg_1m_end", l->ends ?
			       dbl(l->loadavg_end, "%.2f") : NULL);
	json_object_object_add(o, "loadavg_1m_max", dbl(l->loadavg_max, "%.2f"));
	return o;
}

static json_object *part_json(const struct lh_part *p)
{
	json_object *po = json_object_new_object();

	json_object_object_add(po, "run_id", p->run_id[0] ? json_object_new_string(p->run_id) : NULL);
	json_object_object_add(po, "host", json_object_new_string(p->host));
	json_object_object_add(po, "interval_index", u64(p->interval_index));
	json_object_object_add(po, "start_realtime_ns", u64(p->start_realtime_ns));
	json_object_object_add(po, "duration_ns", u64(p->duration_ns));
	return po;
}

static json_object *meta_json(const struct lh_meta *m)
{
	json_object *o = json_object_new_object(), *a = json_object_new_object();
	json_object *f = json_object_new_object(), *hs = json_object_new_object();
	json_object *maps = json_object_new_array();

	json_object_object_add(o, "tool", json_object_new_string(m->tool));
	json_object_object_add(o, "version", json_object_new_string(LATHIST_VERSION));
	json_object_object_add(o, "kernel", json_object_new_string(m->kernel));
	json_object_object_add(o, "clock", json_object_new_string(m->clock));
	json_object_object_add(o, "run_id", m->run_id[0] ? json_object_new_string(m->run_id) : NULL);
	json_object_object_add(o, "host", json_object_new_string(m->host));
	json_object_object_add(o, "anonymized", json_object_new_boolean(m->anonymized));
	json_object_object_add(o, "unchecked", m->unchecked[0] ?
			       json_object_new_string(m->unchecked) : NULL);
	if (m->parts)		/* a merge: every run interval it covers (lh_render_json
				 * writes them one by one, here) */
		json_object_object_add(o, "parts", NULL);
	for (int i = 0; i < m->nattach; i++)
		json_object_object_add(a, m->attach[i].tracepoint,
				       json_object_new_string(m->attach[i].type));
	json_object_object_add(o, "attach", a);
	for (int i = 0; i < m->nfilters; i++)
		json_object_object_add(f, m->filters[i].name,
				       m->filters[i].numeric ?
					       u64(strtoull(m->filters[i].value, NULL, 10)) :
					       json_object_new_string(m->filters[i].value));
	json_object_object_add(o, "filters", f);
	json_object_object_add(o, "filter_exit_realtime_ns", m->filter_exit_realtime_ns ?
			       u64(m->filter_exit_realtime_ns) : NULL);
	json_object_object_add(o, "grouping", json_object_new_string(m->grouping));
	json_object_object_add(o, "start_realtime_ns", u64(m->start_realtime_ns));
	json_object_object_add(o, "duration_ns", u64(m->duration_ns));
	json_object_object_add(o, "interval_ns", u64(m->interval_ns));
	json_object_object_add(o, "interval_index", u64(m->interval_index));
	json_object_object_add(o, "ncpus", json_object_new_int(m->ncpus));
	/* shared, not copied: the tree is released after rendering, the context stays */
	json_object_object_add(o, "context", m->context ? json_object_get(m->context) : NULL);
	json_object_object_add(o, "load", load_json(&m->load));
	json_object_object_add(hs, "kind", json_object_new_string("log2-linear"));
	json_object_object_add(hs, "precision", u64(m->scheme.precision));
	json_object_object_add(hs, "unit", json_object_new_string(m->unit));
	json_object_object_add(hs, "unit_ns", u64(m->scheme.unit_ns));
	json_object_object_add(hs, "nslots", u64(lh_nslots(&m->scheme)));
	json_object_object_add(o, "hist_scheme", hs);
	for (int i = 0; i < m->nmaps; i++) {
		json_object *mo = json_object_new_object();

		json_object_object_add(mo, "name", json_object_new_string(m->maps[i].name));
		json_object_object_add(mo, "max_entries", u64(m->maps[i].max_entries));
		json_object_object_add(mo, "memlock_bytes", u64(m->maps[i].memlock_bytes));
		json_object_array_add(maps, mo);
	}
	json_object_object_add(o, "maps", maps);
	if (m->pmu.n || m->pmu.nunsupported)
		json_object_object_add(o, "counters", pmu_meta_json(&m->pmu));
	return o;
}

static json_object *loss_json(const struct lh_report *r)
{
	const uint64_t *v = r->counters;
	json_object *o = json_object_new_object();

	for (int i = 0; i < LH_NR_COUNTERS; i++)
		if (lh_meta_counts(&r->meta, i))
			json_object_object_add(o, lh_counter_info(i)->name, u64(v[i]));
	if (lh_meta_counts(&r->meta, LH_GAP_MISSED_SWITCH)) {
		json_object *a = json_object_new_array();

		for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++)
			json_object_array_add(a, u64(r->gap_cpu[cpu]));
		json_object_object_add(o, "missed_switch_per_cpu", a);
	}
	/* every end without a start, whatever the cause */
	json_object_object_add(o, "unpaired", u64(v[LH_EV_BEFORE_TRACE] + v[LH_LOSS_UNPAIRED]));
	json_object_object_add(o, "lost", u64(lh_counters_lost(v)));
	if (r->ncharges) {
		json_object *a = json_object_new_array();

		for (size_t i = 0; i < r->ncharges; i++) {
			const struct lh_key_charge *c = &r->charges[i];
			json_object *e = json_object_new_object();

			json_object_object_add(e, "pid", u64(c->pid));
			if (c->tid)
				json_object_object_add(e, "tid", u64(c->tid));
			json_object_object_add(e, "start_ns", u64(c->birth_ns));
			json_object_object_add(e, "lost", u64(c->lost));
			json_object_array_add(a, e);
		}
		json_object_object_add(o, "lost_charged_to_keys", u64(r->charged));
		json_object_object_add(o, "charged_to_keys", a);
	}
	json_object_object_add(o, "lost_from_histograms", u64(lh_hist_lost(v)));
	return o;
}

/*
 * The bias reason of a histogram whose percentiles its L lost events could
 * move: "wakeup (pid 12): 3 lost could move p99 (64, 128] to (64, 128] ..
 * (128, 256] us; p50, p90 cannot move"; malloc'd, NULL without memory.
 */
static char *hist_reason(const struct lh_hist *h, const struct lh_report *r)
{
	struct lh_pct pct[LH_NR_PERCENTILES];
	uint64_t lost = lh_report_percentiles(r, h, pct);
	char *buf = NULL, a[64], b[160], still[64] = "";
	struct lh_kv kv[LH_MAX_KEY_FIELDS];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n, moved = 0;

	if (!f)
		return NULL;
	fprintf(f, "%s (", h->name);
	n = lh_key_fields(&h->key, kv);
	if (!n)		/* as the text heading says it */
		fputs(r->meta.nfilters ? "all tasks, filtered:" : "all tasks", f);
	for (int i = 0; !n && i < r->meta.nfilters; i++)
		fprintf(f, " %s=%s", r->meta.filters[i].name, r->meta.filters[i].value);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%s %s", i ? ", " : "", kv[i].name, kv[i].value);
	fprintf(f, "): %" PRIu64 " lost could move", lost);
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		if (pct[i].low < 0 || pct[i].low == pct[i].high) {
			snprintf(still + strlen(still), sizeof(still) - strlen(still), "%s%s",
				 still[0] ? ", " : "", lh_percentiles[i].name);
			continue;
		}
		fprintf(f, "%s %s %s to %s %s", moved++ ? ";" : "", lh_percentiles[i].name,
			lh_slot_range(a, sizeof(a), pct[i].slot, &r->meta),
			lh_bounds_range(b, sizeof(b), pct[i].low, pct[i].high, &r->meta), r->meta.unit);
	}
	if (still[0])
		fprintf(f, "; %s cannot move", still);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The document's bias: the loss classes that may bias it, then how far the
 * losses could move the histograms' percentiles (t: tallied by put_hist). */
static json_object *bias_json(const struct lh_report *r, const struct bias_tally *t)
{
	const uint64_t *v = r->counters;
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	json_object *pct = json_object_new_object();
	char *reasons[LH_NR_COUNTERS];
	size_t n = lh_bias_reasons(v, r->meta.features, reasons, LH_NR_COUNTERS), more = t->more;
	uint64_t movable = t->movable, all = t->all;

	for (size_t i = 0; i < n; i++) {
		json_object_array_add(a, json_object_new_string(reasons[i]));
		free(reasons[i]);
	}
	for (size_t i = 0; i < t->nreasons; i++) {
		char *why = hist_reason(&r->hists[t->reasons[i]], r);

		if (why)
			json_object_array_add(a, json_object_new_string(why));
		else		/* no memory for its text: counted */
			more++;
		free(why);
	}
	if (more) {
		char *why;

		if (asprintf(&why, "and %zu more histograms whose percentiles the losses could move",
			     more) > 0) {
			json_object_array_add(a, json_object_new_string(why));
			free(why);
		}
	}
	json_object_object_add(o, "flag", json_object_new_boolean(n > 0));
	json_object_object_add(o, "reasons", a);
	json_object_object_add(pct, "movable", u64(movable));
	json_object_object_add(pct, "of", u64(all));
	json_object_object_add(o, "percentiles", pct);
	json_object_object_add(o, "histograms", json_object_new_boolean(lh_hist_lost(v) > 0));
	json_object_object_add(o, "records", json_object_new_boolean(v[LH_LOSS_RINGBUF] > 0));
	json_object_object_add(o, "counters", json_object_new_boolean(lh_pmu_lost(v) > 0));
	json_object_object_add(o, "kernel_gap", json_object_new_boolean(lh_counters_gaps(v) > 0));
	if (r->trend != LH_TREND_NONE) {
		json_object *t = json_object_new_object();

		json_object_object_add(t, "rises_with_load",
				       json_object_new_boolean(r->trend == LH_TREND_RISES));
		json_object_object_add(t, "intervals", u64(r->trend_intervals));
		json_object_object_add(o, "trend", t);
	} else {
		json_object_object_add(o, "trend", NULL);
	}
	return o;
}

static json_object *estimate_json(const struct lh_pmu_row *w, bool *est)
{
	double v;

	if (!lh_pmu_estimate(w->raw, w->enabled_ns, w->running_ns, &v, est))
		return NULL;	/* undefined: never 0, never infinity */
	return json_object_new_double(v);
}

/* meta.counters: what was asked for and what could be counted. */
static json_object *pmu_meta_json(const struct lh_pmu_meta *pm)
{
	json_object *o = json_object_new_object(), *ev = json_object_new_array(),
		    *un = json_object_new_array();

	for (int i = 0; i < pm->n; i++)
		json_object_array_add(ev, json_object_new_string(pm->names[i]));
	for (int i = 0; i < pm->nunsupported; i++) {
		json_object *u = json_object_new_object();

		json_object_object_add(u, "event", json_object_new_string(pm->unsupported[i].name));
		json_object_object_add(u, "errno", json_object_new_int(pm->unsupported[i].err));
		json_object_object_add(u, "reason",
				       json_object_new_string(lh_pmu_why(pm->unsupported[i].err)));
		json_object_array_add(un, u);
	}
	json_object_object_add(o, "events", ev);
	json_object_object_add(o, "unsupported", un);
	return o;
}

/* The counters list: one entry per key and counter; ratios where both counters exist. */
static void pmu_json(json_object *root, const struct lh_report *r)
{
	json_object *list = json_object_new_array(), *ratios = json_object_new_array();

	for (size_t i = 0; i < r->npmu; i++) {
		const struct lh_pmu_row *w = &r->pmu[i];
		json_object *o = json_object_new_object(), *e;
		bool est = false;

		json_object_object_add(o, "key", key_json(&w->key));
		json_object_object_add(o, "event",
				       json_object_new_string(r->meta.pmu.names[w->event]));
		json_object_object_add(o, "raw", u64(w->raw));
		json_object_object_add(o, "time_enabled_ns", u64(w->enabled_ns));
		json_object_object_add(o, "time_running_ns", u64(w->running_ns));
		json_object_object_add(o, "slices", u64(w->slices));
		json_object_object_add(o, "multiplexed_slices", u64(w->multiplexed));
		json_object_object_add(o, "read_failed_slices", u64(w->read_failed));
		json_object_object_add(o, "oncpu_ns", u64(w->oncpu_ns));
		e = estimate_json(w, &est);
		json_object_object_add(o, "estimate", e);
		json_object_object_add(o, "estimated", json_object_new_boolean(e && est));
		json_object_array_add(list, o);
	}
	for (size_t a = 0, b; a < r->npmu; a = b) {
		json_object *o;
		double v;
		bool est = false;
		int err;

		b = lh_pmu_key_end(r, a);
		err = lh_pmu_ipc(r, a, b, &v, &est);
		if (err == -ENOENT)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "key", key_json(&r->pmu[a].key));
		json_object_object_add(o, "name", json_object_new_string("ipc"));
		json_object_object_add(o, "value", err ? NULL : json_object_new_double(v));
		json_object_object_add(o, "estimated", json_object_new_boolean(!err && est));
		json_object_array_add(ratios, o);
	}
	json_object_object_add(root, "counters", list);
	json_object_object_add(root, "counter_ratios", ratios);
}

/*
 * Write v as member name of the root (name NULL: an element of the
 * histograms array) and drop it. Pretty output is json-c's own, shifted right
 * by indent spaces after each newline (json-c escapes newlines in strings, so
 * each one it prints is layout), which gives the bytes json-c writes for the
 * whole tree.
 */
static void put(FILE *f, const char *name, json_object *v, bool compact, bool *first,
		int indent)
{
	const char *s = json_object_to_json_string_ext(v, compact ?
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE :
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

	fputs(*first ? "" : ",", f);
	if (!compact)
		fprintf(f, "\n%*s", indent, "");
	*first = false;
	if (name)
		fprintf(f, compact ? "\"%s\":" : "\"%s\": ", name);
	/* a line at a time, each newline followed by the indent */
	while (s && *s) {
		const char *nl = compact ? NULL : strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);

		fwrite(s, 1, n, f);
		if (nl)
			fprintf(f, "%*s", indent, "");
		s += n;
	}
	if (!s)
		fputs("null", f);
	json_object_put(v);
}

/* Open member name (NULL: an array element) with '{' or '[', as put() would. */
static void open_member(FILE *f, const char *name, char bracket, bool compact, bool *first,
			int indent)
{
	fputs(*first ? "" : ",", f);
	if (!compact)
		fprintf(f, "\n%*s", indent, "");
	*first = false;
	if (name)
		fprintf(f, compact ? "\"%s\":" : "\"%s\": ", name);
	fputc(bracket, f);
}

/* Close what open_member opened at indent (json-c's layout, empty ones too). */
static void close_member(FILE *f, char bracket, bool compact, int indent)
{
	if (!compact)
		fprintf(f, "\n%*s", indent, "");
	fputc(bracket, f);
}

/* meta: its members as json-c writes them, meta.parts one part at a time (a
 * day of intervals is 86,400 parts). */
static void put_meta(FILE *f, const struct lh_meta *m, bool compact, bool *first)
{
	json_object *o = meta_json(m);
	bool mfirst = true;

	open_member(f, "meta", '{', compact, first, 2);
	json_object_object_foreach(o, k, v) {
		bool pfirst = true;

		if (strcmp(k, "parts") || !m->parts) {
			put(f, k, json_object_get(v), compact, &mfirst, 4);
			continue;
		}
		open_member(f, "parts", '[', compact, &mfirst, 4);
		for (size_t i = 0; i < m->nparts; i++)
			put(f, NULL, part_json(&m->parts[i]), compact, &pfirst, 6);
		close_member(f, ']', compact, 4);
	}
	close_member(f, '}', compact, 2);
	json_object_put(o);
}

/* The document is written one member (one histogram, one part) at a time: a
 * json-c tree of a whole one costs ~20 KiB per histogram. */
int lh_render_json_file(FILE *f, const struct lh_report *r, bool compact)
{
	json_object *rest = json_object_new_object();
	bool first = true, hfirst = true;
	struct bias_tally tally = { 0 };
	struct lh_out *o = malloc(sizeof(*o));	/* 64 KiB */

	if (!rest || !o) {
		json_object_put(rest);
		free(o);
		return -ENOMEM;
	}
	o->f = f;
	o->n = 0;
	fputc('{', f);
	put(f, "schema", json_object_new_string(LH_SCHEMA), compact, &first, 2);
	put_meta(f, &r->meta, compact, &first);
	open_member(f, "histograms", '[', compact, &first, 2);
	for (size_t i = 0; i < r->nhists; i++) {
		lh_report_prefetch_after(r, i);
		put_hist(o, &r->hists[i], r, compact, &hfirst, &tally);
	}
	lh_out_flush(o);
	free(o);
	close_member(f, ']', compact, 2);
	/* the members after the histograms, in their order */
	if (r->meta.pmu.n || r->meta.pmu.nunsupported)
		pmu_json(rest, r);
	json_object_object_add(rest, "loss", loss_json(r));
	json_object_object_add(rest, "bias", bias_json(r, &tally));
	if (r->records.on) {
		json_object *rec = json_object_new_object();

		json_object_object_add(rec, "slower_than_ns", u64(r->records.slower_than_ns));
		json_object_object_add(rec, "ringbuf_bytes", u64(r->records.ringbuf_bytes));
		json_object_object_add(rec, "eligible", u64(r->counters[LH_EV_RB_ELIGIBLE]));
		json_object_object_add(rec, "delivered", u64(r->records.delivered));
		json_object_object_add(rec, "dropped", u64(r->counters[LH_LOSS_RINGBUF]));
		json_object_object_add(rest, "records", rec);
	}
	json_object_object_foreach(rest, k, v)
		put(f, k, json_object_get(v), compact, &first, 2);
	json_object_put(rest);
	fputs(compact ? "}" : "\n}", f);
	return ferror(f) ? -EIO : 0;
}

char *lh_render_json(const struct lh_report *r, bool compact)
{
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	int err;

	if (!f)
		return NULL;
	err = lh_render_json_file(f, r, compact);
	if (fclose(f) || err) {
		free(out);
		return NULL;
	}
	return out;
}

int lh_json_line(void *obj, char *buf, size_t len)
{
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	int n = s ? snprintf(buf, len, "%s\n", s) : -1;

	json_object_put(obj);
	return n;
}
