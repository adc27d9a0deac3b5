// SPDX-License-Identifier: MIT
/*
 * One saved lathist/1 document, decoded and checked field by field (types,
 * ranges, what the tool and scheme allow), then added to the merge by exact
 * addition: histograms, loss counters, charges, filters, attach paths.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <math.h>
#include "merge.h"

/* Make s safe to print in a header or a label: '?' for each byte that is not
 * printable ASCII, and (labels) for '"' and '\\'. */
void merge_printable(char *s, bool label)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ||
		    (label && (*s == '"' || *s == '\\')))
			*s = '?';
}

/* "lathist report: PATH (document N): MSG; FIX" (FIX NULL: MSG says the fix). -EINVAL. */
int merge_say(struct merge *m, const char *fix, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	fprintf(stderr, "lathist report: %s", m->cur.path);
	if (m->cur.line > 1)
		fprintf(stderr, " (document %d)", m->cur.line);
	fputs(": ", stderr);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message may quote the input: printable ASCII only on the terminal */
	merge_printable(msg, false);
	fprintf(stderr, "%s%s%s\n", msg, fix ? "; " : "", fix ? fix : "");
	return -EINVAL;
}


/* Field k of o when it has type t; NULL otherwise, and for a string with a NUL
 * in it (\u0000), which every C string of it would cut short. */
json_object *merge_get(json_object *o, const char *k, json_type t)
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
int merge_get_u64(json_object *o, const char *k, uint64_t *out)
{
	json_object *v = merge_get(o, k, json_type_int);

	if (!v)
		return -EINVAL;
	errno = 0;
	if (json_object_get_int64(v) < 0)
		return -EINVAL;
	*out = json_object_get_uint64(v);
	return errno ? -EINVAL : 0;
}

int merge_get_str(json_object *o, const char *k, char *buf, size_t len)
{
	json_object *v = merge_get(o, k, json_type_string);

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
		if (merge_get_u64(k, nums[i].name, &v) || v > UINT32_MAX)
			return bad(m, "key field %s is not a number from 0 to 2^32-1", nums[i].name);
		key->fields |= nums[i].bit;
		*nums[i].v = (uint32_t)v;
	}
	if (json_object_object_get_ex(k, "comm", NULL)) {
		if (merge_get_str(k, "comm", comm, sizeof(comm)))
			return bad(m, "key field comm is not a task name");
		unprintable(comm, key->comm, sizeof(key->comm));
		key->fields |= LH_KEY_COMM;
	}
	if (json_object_object_get_ex(k, "start_ns", NULL) &&
	    merge_get_u64(k, "start_ns", &key->birth_ns))
		return bad(m, "key field start_ns is not a number");
	if (json_object_object_get_ex(k, "disk", NULL)) {
		/* a kernel disk name, as /sys/dev/block shows it: printable, no space or quote
		 * (the text prints it as it is) */
		if (merge_get_str(k, "disk", key->disk, sizeof(key->disk)) || !key->disk[0] ||
		    disk_name_bad(key->disk))
			return bad(m, "key field disk is not a disk name (letters, digits and "
				   "punctuation, no space, quote or backslash)");
		key->fields |= LH_KEY_DISK;
	}
	if (json_object_object_get_ex(k, "op", NULL)) {
		json_object *op = merge_get(k, "op", json_type_string);

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
		if (!path || merge_get_u64(k, "cgroup_id", &key->cgroup_id))
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
const struct lh_hist_kind *merge_kind_of(const struct merge *m, const char *name)
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
 * merge_say() with fix for histogram name of key: "histogram NAME: PROBLEM (key F V,
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
	return merge_say(m, fix, "histogram %s: %s%s", name, problem, keys);
}

/* A histogram that is not what lathist -f json writes. */
#define bad_hist(m, ...) hist_say(m, "give a file written by lathist -f json", __VA_ARGS__)

static int parse_hist(struct merge *m, json_object *jh, struct lh_hist *tmp)
{
	const struct lh_scheme *sc = &m->r.meta.scheme;
	json_object *slots = merge_get(jh, "slots", json_type_array);
	uint64_t count, sum, max, bytes = 0, total = 0;
	uint32_t top;
	char name[16];
	struct lh_key key;
	const struct lh_hist_kind *k;
	struct lh_hist *h;
	int err;

	if (merge_get_str(jh, "name", name, sizeof(name)))
		return bad(m, "a histogram has no name (or one over 15 bytes)");
	err = parse_key(m, merge_get(jh, "key", json_type_object), &key);
	if (err)
		return err;
	if (key.fields != lh_tool_grouping_fields(m->desc, m->grouping))
		return bad_hist(m, name, &key, "its key's fields do not fit the grouping %s", m->grouping);
	/* meta.ncpus counts the possible CPUs: every CPU number is below it */
	if ((key.fields & LH_KEY_CPU) && key.cpu >= m->cur.ncpus)
		return bad_hist(m, name, &key, "its key's cpu %u is not below meta.ncpus %" PRIu64,
				key.cpu, m->cur.ncpus);
	if (!slots)
		return bad_hist(m, name, &key, "slots is missing or not a list");
	if (merge_get_u64(jh, "count", &count))
		return bad_hist(m, name, &key, "count is not a whole number from 0 to 2^64-1");
	if (merge_get_u64(jh, "sum_ns", &sum))
		return bad_hist(m, name, &key, "sum_ns is not a whole number from 0 to 2^64-1");
	if (merge_get_u64(jh, "max_ns", &max))
		return bad_hist(m, name, &key, "max_ns is not a whole number from 0 to 2^64-1");
	/* the tools that count bytes write them in every histogram: none is not 0 bytes */
	if ((m->desc->has_bytes || json_object_object_get_ex(jh, "bytes", NULL)) &&
	    merge_get_u64(jh, "bytes", &bytes))
		return bad_hist(m, name, &key, "bytes is missing or not a whole number from 0 to "
				"2^64-1");
	if (lh_hist_init(tmp, name, &key, sc))
		return -ENOMEM;
	tmp->name_ns = m->cur.start;	/* of a task's names, the earliest input's is kept */
	for (size_t i = 0; i < json_object_array_length(slots); i++) {
		json_object *s = json_object_array_get_idx(slots, i);
		uint64_t lo, c, hi, want_hi, idx;

		if (merge_get_u64(s, "lo_ns", &lo) || merge_get_u64(s, "count", &c) || lo % sc->unit_ns) {
			lh_hist_free(tmp);
			return bad_hist(m, name, &key, "slot %zu has no lo_ns/count of this scheme",
				   i);
		}
		idx = lh_slot(lo / sc->unit_ns, sc->precision);
		want_hi = lh_slot_hi((uint32_t)idx, sc->precision);	/* units; MAX: unbounded */
		if (lh_slot_lo((uint32_t)idx, sc->precision) != lo / sc->unit_ns ||
		    (want_hi != UINT64_MAX &&
		     (merge_get_u64(s, "hi_ns", &hi) || hi != want_hi * sc->unit_ns))) {
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
		m->cur.paired += count;	/* no overflow: the slots' sum fits, and paired <= events */
	if ((k = merge_kind_of(m, name)) && k->scope == LH_SCOPE_SLICES) {
		m->cur.slices += count;	/* checked against loss.slices: refused past 2^64 there */
		m->cur.slice_hists++;
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

	if (merge_get_str(meta, "tool", m->tool, sizeof(m->tool)) || !(m->desc = lh_tool_find(m->tool)))
		return bad(m, "meta.tool is not a lathist tool (%s)", tool_names);
	if (merge_get_u64(hs, "precision", &p) || merge_get_u64(hs, "unit_ns", &unit_ns) ||
	    merge_get_u64(hs, "nslots", &nslots) || merge_get_str(hs, "unit", m->unit, sizeof(m->unit)))
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
	if (merge_get_str(meta, "kernel", m->kernel, sizeof(m->kernel)))
		snprintf(m->kernel, sizeof(m->kernel), "?");
	if (merge_get_str(meta, "grouping", m->grouping, sizeof(m->grouping)))
		snprintf(m->grouping, sizeof(m->grouping), "?");
	mt->grouping = m->grouping;
	if (merge_get_str(meta, "clock", m->clock, sizeof(m->clock)))
		snprintf(m->clock, sizeof(m->clock), "?");
	mt->clock = m->clock;
	attach = merge_get(meta, "attach", json_type_object);
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
		if (!merge_get_u64(loss, "missed_switch", &total) && total)
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
	if (merge_get_u64(loss, "missed_switch", &total) || sum > total ||
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
			if ((j != 1 || thread) && merge_get_u64(e, f[j], &v[j]))
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
	if (merge_get_u64(loss, "lost_charged_to_keys", &total) || total != sum)
		return bad(m, "loss.charged_to_keys adds up to %" PRIu64 ", not to "
			   "loss.lost_charged_to_keys", sum);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		uint64_t n = 0;

		if (json_object_object_get_ex(loss, known[i], NULL) && merge_get_u64(loss, known[i], &n))
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

/* The tool, slot scheme and grouping: what a document must share with the first. */
static int same_kind(struct merge *m, json_object *meta, json_object *hs)
{
	char tool[8] = "?", unit[4] = "?", g[16] = "?";	/* printed even when missing */
	uint64_t p = 0, unit_ns = 0;

	if (merge_get_str(meta, "tool", tool, sizeof(tool)) || strcmp(tool, m->tool))
		return unmergeable(m, "a %s document cannot merge with %s documents: merge the "
				   "runs of one tool", tool, m->tool);
	if (merge_get_u64(hs, "precision", &p) || merge_get_u64(hs, "unit_ns", &unit_ns) ||
	    merge_get_str(hs, "unit", unit, sizeof(unit)) || p != m->r.meta.scheme.precision ||
	    unit_ns != m->r.meta.scheme.unit_ns)
		return unmergeable(m, "slot scheme differs (precision %" PRIu64 ", %s) from the first "
			   "document's (precision %u, %s): merge only runs with the same --precision "
			   "and -u", p, unit, m->r.meta.scheme.precision, m->unit);
	if (merge_get_str(meta, "grouping", g, sizeof(g)) || strcmp(g, m->grouping))
		return unmergeable(m, "grouping '%s' differs from the first document's '%s': merge "
				   "runs with the same --per-* options", g, m->grouping);
	return 0;
}

/* meta.filters: the first document's, or "mixed" once another differs; each
 * one of those lathist writes: pid and tid numbers, the others printable text. */
static int merge_filters(struct merge *m, json_object *meta)
{
	json_object *f = merge_get(meta, "filters", json_type_object), *any = NULL;
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

			if (id && (merge_get_u64(f, fname, &n) || !n || n > UINT32_MAX))
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
	json_object *attach = merge_get(meta, "attach", json_type_object);
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
		if (merge_get_u64(loss, ci->name, &v))
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
	json_object *attach = merge_get(meta, "attach", json_type_object);
	uint64_t n = 0;

	if (!attach || merge_get_u64(loss, "unchecked_start", &n) || !n)	/* attach: checked before */
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
int merge_add_doc(struct merge *m, json_object *doc)
{
	json_object *meta = merge_get(doc, "meta", json_type_object), *hs, *hists, *loss, *js;
	uint64_t start = 0, dur = 0, ncpus = 0;
	struct lh_hist tmp;
	int err;

	m->cur.line++;
	if (!(js = merge_get(doc, "schema", json_type_string)))
		return bad(m, "not a %s document (no \"schema\": \"%s\")", LH_SCHEMA, LH_SCHEMA);
	if (strcmp(json_object_get_string(js), LH_SCHEMA))
		return merge_say(m, "read it with the lathist that wrote it, or give a " LH_SCHEMA
			   " file", "\"schema\" is \"%.32s%s\", and this lathist reads "
			   LH_SCHEMA " only", json_object_get_string(js),
			   json_object_get_string_len(js) > 32 ? "..." : "");
	hs = merge_get(meta, "hist_scheme", json_type_object);
	hists = merge_get(doc, "histograms", json_type_array);
	loss = merge_get(doc, "loss", json_type_object);
	if (!meta || !hs || !hists || !loss)
		return bad(m, "meta, meta.hist_scheme, histograms or loss is missing");
	if (!m->have && (err = first_meta(m, meta, hs)))
		return err;
	if ((err = same_kind(m, meta, hs)))
		return err;
	if (merge_get_u64(meta, "start_realtime_ns", &start))
		return bad(m, "meta.start_realtime_ns is not a number of ns");
	if (merge_get_u64(meta, "duration_ns", &dur) || start + dur < start)
		return bad(m, "meta.duration_ns is not a number of ns (or runs past 2^64)");
	/* lathist writes its possible CPUs (libbpf), at least 1; the cap: report's own */
	if (merge_get_u64(meta, "ncpus", &ncpus) || !ncpus || ncpus > 1 << 20)
		return bad(m, "meta.ncpus is not a number of CPUs from 1 to 1048576");
	if ((err = merge_filters(m, meta)) || (err = merge_attach(m, meta)) ||
	    (err = merge_context(m, meta, start, dur, ncpus)) || (err = merge_ctx(m, meta)) ||
	    (err = merge_load(m, meta)) || (err = merge_add_parts(m, meta)))
		return err;
	m->ndocs++;
	if (m->heat) {
		uint64_t lost = 0;

		if (json_object_object_get_ex(meta, "parts", NULL))
			return unmergeable(m, "is a merge: --heatmap would draw it as one column over "
					   "its whole span; give the runs' own documents");
		merge_get_u64(loss, "lost", &lost);	/* marks the column; checked as a counter below */
		if (lh_heatmap_column(m->heat, start, dur, lost))
			return -ENOMEM;
	}
	m->cur.paired = m->cur.slices = 0;
	m->cur.slice_hists = 0;
	m->cur.ncpus = ncpus;
	for (size_t i = 0; i < json_object_array_length(hists); i++)
		if ((err = parse_hist(m, json_object_array_get_idx(hists, i), &tmp)))
			return err;
	if ((err = merge_loss(m, loss, ncpus)) ||
	    (err = unchecked_only_on_tracepoints(m, meta, loss)))
		return err;
	{
		uint64_t paired = 0;

		/* "paired means in a histogram" (a full map counts as hist_map_full) */
		if (merge_get_u64(loss, "paired", &paired) || paired != m->cur.paired)
			return bad(m, "loss.paired %" PRIu64 " is not what its histograms count (%"
				   PRIu64 "): every paired event is in one", paired, m->cur.paired);
	}
	/* "slices: on-CPU slices in the oncpu histograms (and in the counter sums)": with
	 * --counters alone the slices are in no histogram */
	if (m->cur.slice_hists || (json_object_object_get_ex(loss, "slices", NULL) &&
				   !merge_get(doc, "counters", json_type_array))) {
		uint64_t slices = 0;

		if (merge_get_u64(loss, "slices", &slices) || slices != m->cur.slices)
			return bad(m, "loss.slices %" PRIu64 " is not what its oncpu histograms count "
				   "(%" PRIu64 "): every slice counted is in one", slices,
				   m->cur.slices);
	}
	m->oncpu_docs += json_object_object_get_ex(loss, "slices", NULL);
	if (merge_get(doc, "counters", json_type_array))
		m->pmu_dropped = true;
	if (merge_get(doc, "records", json_type_object))
		m->records_dropped = true;
	return 0;
}


void merge_free(struct merge *m)
{
	json_object_put(m->filters_obj);
	json_object_put(m->ctx.vals);
	json_object_put(m->ctx.out);
	lh_heatmap_free(m->heat);
	lh_report_clear(&m->r);
	merge_parts_free(m);
	free(m->hist_doc);
}
