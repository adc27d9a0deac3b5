// SPDX-License-Identifier: MIT
/*
 * What the merged documents say of themselves: meta.context (the settings the
 * latencies depend on: kept when every input agrees, "mixed" with their values
 * when not), meta.load (added), host, kernel, CPUs and span.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "context.h"
#include "merge.h"

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
		merge_printable(t, false);
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
			merge_printable(kk, true);
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

	if (!json_object_object_get_ex(ld, k, &v) || merge_get_u64(ld, k, out))
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
int merge_ctx(struct merge *m, json_object *meta)
{
	json_object *ctx = NULL, *listed = NULL, *kr;
	char kernel[128];
	int err;

	if (!json_object_object_get_ex(meta, "context", &ctx) || !ctx) {
		m->ctx.missing++;	/* a lathist before 0.3: nothing known, not "null" */
		return 0;
	}
	if (!json_object_is_type(ctx, json_type_object))
		return bad(m, "meta.context is not an object");
	if ((err = ctx_check(m, ctx)))
		return err;
	if (json_object_object_get_ex(ctx, "kernel_release", &kr) && kr &&
	    strcmp(json_object_get_string(kr), "mixed") &&
	    !merge_get_str(meta, "kernel", kernel, sizeof(kernel)) && strcmp(kernel, "mixed") &&
	    strcmp(kernel, json_object_get_string(kr)))
		return bad(m, "meta.context.kernel_release %.64s is not meta.kernel %s",
			   json_object_get_string(kr), kernel);
	if (!m->ctx.vals && !(m->ctx.vals = json_object_new_object()))
		return -ENOMEM;
	json_object_object_get_ex(ctx, "mixed", &listed);	/* an input that is a merge */
	json_object_object_foreach(ctx, k, v) {
		json_object *vals, *lv;

		if (!strcmp(k, "mixed"))
			continue;
		if (!strcmp(k, "inputs_without_context")) {
			m->ctx.missing += (int)json_object_get_int64(v);
			continue;
		}
		if (!json_object_object_get_ex(m->ctx.vals, k, &vals)) {
			vals = json_object_new_array();
			json_object_object_add(m->ctx.vals, k, vals);
			if (m->ctx.docs)	/* the inputs before had none */
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
	json_object_object_foreach(m->ctx.vals, fk, fvals)
		if (!json_object_object_get_ex(ctx, fk, NULL))
			ctx_add_value(fvals, NULL);
	m->ctx.docs++;
	return 0;
}

/* meta.load of one input: the steal and CPU time added, the largest load average;
 * a merge keeps no start and end load average (a lone input's are kept). */
int merge_load(struct merge *m, json_object *meta)
{
	json_object *ld;
	uint64_t steal, cpu;
	double lmax, la, lb;
	int err;

	if (!json_object_object_get_ex(meta, "load", &ld) || !ld) {
		m->ctx.load_unknown = true;
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
	m->ctx.load.steal_ns = lh_add_sat(m->ctx.load.steal_ns, steal);
	m->ctx.load.cpu_ns = lh_add_sat(m->ctx.load.cpu_ns, cpu);
	if (lmax > m->ctx.load.loadavg_max)
		m->ctx.load.loadavg_max = lmax;
	m->ctx.load.ends = !m->ndocs && !isnan(la) && !isnan(lb);
	m->ctx.load.loadavg_start = m->ctx.load.ends ? la : 0;
	m->ctx.load.loadavg_end = m->ctx.load.ends ? lb : 0;
	return 0;
}

/*
 * The merged meta.context: a field all inputs agree on keeps its value; one
 * they differ on reads "mixed" and meta.context.mixed lists its values (up to
 * CTX_MAX_VALUES; null for an input without it). Says in one line on stderr
 * when the fields that move latency differ.
 */
void merge_context_finish(struct merge *m)
{
	static const char *const moving[] = { "kernel_release", "preempt", "cmdline", "governor",
					      "smt", "hypervisor", "disks" };
	json_object *mixed;
	char said[512] = "";

	if (!m->ctx.vals)
		return;
	m->ctx.out = json_object_new_object();
	mixed = json_object_new_object();
	json_object_object_foreach(m->ctx.vals, k, vals) {
		if (json_object_array_length(vals) == 1) {
			json_object_object_add(m->ctx.out, k,
					       json_object_get(json_object_array_get_idx(vals, 0)));
			continue;
		}
		json_object_object_add(m->ctx.out, k, json_object_new_string("mixed"));
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
	if (m->ctx.missing && m->ctx.docs) {
		json_object_object_add(m->ctx.out, "inputs_without_context",
				       json_object_new_int(m->ctx.missing));
		fprintf(stderr, "lathist report: %d of the %d inputs carry no measurement context (a "
			"lathist before 0.3): meta.context is the others'\n", m->ctx.missing,
			m->ctx.missing + m->ctx.docs);
	}
	if (json_object_object_length(mixed))
		json_object_object_add(m->ctx.out, "mixed", mixed);
	else
		json_object_put(mixed);
	if (said[0] && !m->ctx.quiet)
		fprintf(stderr, "lathist report: the inputs were measured in different contexts: %s; "
			"their latencies may not compare (meta.context.mixed)\n", said);
	m->r.meta.context = json_object_object_length(m->ctx.out) ? m->ctx.out : NULL;
	if (!m->ctx.load_unknown && m->ndocs) {
		m->r.meta.load = m->ctx.load;
		m->r.meta.load.known = true;
	}
}

/* What the inputs say of themselves: anonymized (all or none), the -p/-t task's
 * exit (the earliest), what was not checked (the first), host and kernel
 * ("mixed" when they differ), CPUs (the most), the span (first start, last end). */
int merge_context(struct merge *m, json_object *meta, uint64_t start, uint64_t dur,
			 uint64_t ncpus)
{
	json_object *an = merge_get(meta, "anonymized", json_type_boolean);
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
	if (!merge_get_u64(meta, "filter_exit_realtime_ns", &ex) && ex &&
	    (!m->r.meta.filter_exit_realtime_ns || ex < m->r.meta.filter_exit_realtime_ns))
		m->r.meta.filter_exit_realtime_ns = ex;
	{
		/* every input's, once each: what one did not see is not another's */
		char u[sizeof(m->r.meta.unchecked)];
		char *all = m->r.meta.unchecked;
		size_t n = strlen(all);

		if (!merge_get_str(meta, "unchecked", u, sizeof(u)) && u[0] && !strstr(all, u) &&
		    n + strlen(u) + 3 < sizeof(m->r.meta.unchecked))
			snprintf(all + n, sizeof(m->r.meta.unchecked) - n, "%s%s", n ? "; " : "", u);
		else if (!merge_get_str(meta, "unchecked", u, sizeof(u)) && u[0] && !strstr(all, u))
			snprintf(all + (n > 40 ? n - 40 : 0), 41, "%s", "; and more: see the inputs");
		merge_printable(all, false);
	}
	if (merge_get_str(meta, "host", host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	if (m->ndocs == 0)
		snprintf(m->host, sizeof(m->host), "%s", host);
	else if (strcmp(host, m->host))
		snprintf(m->host, sizeof(m->host), "mixed");
	if (strcmp(m->kernel, "mixed") &&
	    (merge_get_str(meta, "kernel", k, sizeof(k)) || strcmp(k, m->kernel)))
		snprintf(m->kernel, sizeof(m->kernel), "mixed");
	if (ncpus > (uint64_t)m->r.meta.ncpus)
		m->r.meta.ncpus = (int)ncpus;
	if (!m->first_start || start < m->first_start)
		m->first_start = start;
	m->cur.start = start ? start : 1;	/* 0 would mean "unknown" */
	if (start + dur > m->last_end)
		m->last_end = start + dur;
	return 0;
}

