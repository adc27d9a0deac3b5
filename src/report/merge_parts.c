// SPDX-License-Identifier: MIT
/*
 * The run intervals the merged documents cover (meta.parts), indexed by run id
 * so that an interval read twice is refused, in any order of the inputs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <search.h>
#include <sys/types.h>
#include "merge.h"
#include "util.h"

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
	if (merge_get_str(o, "host", p->host, sizeof(p->host)))
		snprintf(p->host, sizeof(p->host), "?");
	merge_printable(p->host, true);	/* printed in headers and labels */
	if (merge_get_u64(o, "interval_index", &idx) || idx > UINT32_MAX ||
	    merge_get_u64(o, "start_realtime_ns", &p->start_realtime_ns) ||
	    merge_get_u64(o, "duration_ns", &p->duration_ns) ||
	    p->start_realtime_ns + p->duration_ns < p->start_realtime_ns)
		return bad(m, "%s: interval_index, start_realtime_ns or duration_ns is not a whole "
			   "number (or the span runs past 2^64 ns)", where);
	p->interval_index = (uint32_t)idx;
	{
		uint64_t ins;

		/* lathist numbers intervals only with -i (a merge's parts carry no
		 * interval_ns: their documents were checked when they were merged) */
		if (idx && !strcmp(where, "meta") && (merge_get_u64(o, "interval_ns", &ins) || !ins))
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
		const struct lh_part *q = &m->idx.parts[idx[mid]];

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
		for (size_t i = 0; i < m->idx.n; i++)
			if (same_coverage(p, &m->idx.parts[i]))
				return (ssize_t)i;
		return -1;
	}
	for (size_t i = 0; i < m->idx.nnoid; i++)
		if (same_coverage(p, &m->idx.parts[m->idx.noid[i]]))
			return (ssize_t)m->idx.noid[i];
	if (!r || !r->n)
		return -1;
	j = lower_bound(m, r->by_index, r->n, p->interval_index, false);
	if (j < r->n && m->idx.parts[r->by_index[j]].interval_index == p->interval_index)
		return (ssize_t)r->by_index[j];
	/* of the parts that start before p ends, the last ends last (by_start) */
	j = lower_bound(m, r->by_start, r->n, p->start_realtime_ns + p->duration_ns, true);
	if (j && same_coverage(p, &m->idx.parts[r->by_start[j - 1]]))
		return (ssize_t)r->by_start[j - 1];
	return -1;
}

/* Insert part i at its place in idx (n entries, room for one more): by
 * (start, end) or by interval_index. */
static void insert_at(const struct merge *m, size_t *idx, size_t n, size_t i, bool by_start)
{
	const struct lh_part *p = &m->idx.parts[i];
	size_t j = lower_bound(m, idx, n, by_start ? p->start_realtime_ns : p->interval_index,
			       by_start);

	while (by_start && j < n && m->idx.parts[idx[j]].start_realtime_ns == p->start_realtime_ns &&
	       m->idx.parts[idx[j]].duration_ns < p->duration_ns)
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

/* Index the newest part, m->idx.parts[m->idx.n - 1], under its run; -ENOMEM. */
static int index_part(struct merge *m, struct run_parts *r)
{
	size_t i = m->idx.n - 1, cap;
	void *node;

	if (!m->idx.parts[i].run_id[0]) {
		if (grow_idx(&m->idx.noid, m->idx.nnoid, &m->idx.noid_cap))
			return -ENOMEM;
		m->idx.noid[m->idx.nnoid++] = i;
		return 0;
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		memcpy(r->run_id, m->idx.parts[i].run_id, sizeof(r->run_id));
		node = tsearch(r, &m->idx.runs, run_cmp);
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
		found = tfind(&key, &m->idx.runs, run_cmp);
	}
	r = found ? *found : NULL;
	i = covered_by(m, p, r);
	if (i >= 0) {
		const struct lh_part *q = &m->idx.parts[i];
		const struct part_src *src = &m->idx.src[i];
		char other[300], what[32];

		snprintf(other, sizeof(other), "%s", src->path);
		if (src->doc > 1 || src->path == m->cur.path)
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
	if (m->idx.n == m->idx.cap) {
		size_t cap = m->idx.cap ? 2 * m->idx.cap : 64;
		struct lh_part *np = realloc(m->idx.parts, cap * sizeof(*np));
		struct part_src *ns;

		if (!np)
			return -ENOMEM;
		m->idx.parts = np;
		ns = realloc(m->idx.src, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		m->idx.src = ns;
		m->idx.cap = cap;
	}
	m->idx.parts[m->idx.n] = *p;
	m->idx.src[m->idx.n].path = m->cur.path;
	m->idx.src[m->idx.n].doc = m->cur.line;
	m->idx.n++;
	return index_part(m, r);
}

/* meta.run_id with meta.interval_index and its span; or, for a merge (run_id
 * null), every entry of meta.parts. */
int merge_add_parts(struct merge *m, json_object *meta)
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
	    merge_get(meta, "run_id", json_type_string))
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


void merge_parts_free(struct merge *m)
{
	free(m->idx.parts);
	free(m->idx.src);
	free(m->idx.noid);
	tdestroy(m->idx.runs, run_free);
}
