// SPDX-License-Identifier: MIT
/*
 * OpenMetrics and Prometheus text renderer. Names (stable, in docs/schema.md):
 *   lathist_<tool>_latency_seconds{kind|stage=...,<key labels>}   histogram
 *   lathist_runq_oncpu_seconds{<key labels>}                      histogram (--oncpu)
 *   lathist_bio_bytes_total{<key labels>}                         counter
 *   lathist_<tool>_events_total{class=...}                        counter (not losses)
 *   lathist_<tool>_losses_total{class=...}                        counter (loss classes)
 *   lathist_<tool>_kernel_gaps_total{class,cpu}, lathist_runq_hidden_tasks (runq)
 *   lathist_<tool>_biased                                         gauge (0/1)
 *   lathist_<tool>_info{version,kernel,clock,grouping,preempt,...} 1 gauge
 *   lathist_<tool>_duration_seconds                               gauge
 * Every sample carries the labels of opts first (--label, lathist_run).
 * Buckets are cumulative with upper-inclusive le bounds in seconds: the slots
 * hold lo < v <= hi (include/hist_slot.h), so a slot's hi is exactly its le,
 * and leaving some bounds out leaves every other bucket exact.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "registry.h"
#include "report.h"
#include "version.h"

/* A label value with \, " and newline escaped (exposition format). */
static void label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* ns as exact decimal seconds: 256000 -> "0.000256", 1000000000 -> "1". */
static const char *seconds(char buf[32], uint64_t ns)
{
	char frac[16];
	int n;

	n = snprintf(frac, sizeof(frac), "%09" PRIu64, (uint64_t)(ns % 1000000000ULL));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = 0;
	snprintf(buf, 32, "%" PRIu64 "%s%s", (uint64_t)(ns / 1000000000ULL), n ? "." : "", frac);
	return buf;
}

/*
 * The labels of one series without braces: opts' labels, then name="value"
 * when given, then the key's fields, escaped. Built once per histogram
 * (malloc'd; NULL without memory), since every bucket repeats them.
 */
static char *labels(const struct lh_om_opts *o, const char *lname, const char *lval,
		    const struct lh_key *k)
{
	struct lh_kv kv[LH_MAX_KEY_FIELDS];
	int n = k ? lh_key_fields(k, kv) : 0;
	const char *sep = "";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (int i = 0; i < o->nlabels; i++) {
		fprintf(f, "%s%s=\"", sep, o->labels[i].name);
		label_value(f, o->labels[i].value);
		fputc('"', f);
		sep = ",";
	}
	if (lname) {
		fprintf(f, "%s%s=\"", sep, lname);
		label_value(f, lval);
		fputc('"', f);
		sep = ",";
	}
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s%s=\"", sep, kv[i].name);
		label_value(f, kv[i].value);
		fputc('"', f);
		sep = ",";
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Is slot bound b (ns) one of the buckets o asks for? top is the first bound
 * at or over o->le_max_ns (a range's last bucket). */
static bool wanted(const struct lh_om_opts *o, uint64_t b, uint64_t top)
{
	if (o->nle) {
		for (size_t i = 0; i < o->nle; i++)
			if (o->le_ns[i] == b)
				return true;
		return false;
	}
	if (!o->le_min_ns && !o->le_max_ns)
		return true;
	return b >= o->le_min_ns && b <= top;
}

/* The first slot bound (ns) at or over max_ns; UINT64_MAX when none is. */
static uint64_t top_bound(const struct lh_scheme *sc, uint32_t nslots, uint64_t max_ns)
{
	for (uint32_t s = 0; s + 1 < nslots; s++) {
		uint64_t b = lh_slot_hi(s, sc->precision) * sc->unit_ns;

		if (b >= max_ns)
			return b;
	}
	return UINT64_MAX;
}

static void hist_series(FILE *f, const char *family, const char *lname, const struct lh_hist *h,
			const struct lh_meta *m, const struct lh_om_opts *o)
{
	uint64_t cum = 0, u = m->scheme.unit_ns, top = top_bound(&m->scheme, h->nslots,
								  o->le_max_ns);
	char *l = labels(o, lname, lname ? h->name : NULL, &h->key), sec[32];
	const char *sep;

	if (!l)
		return;
	sep = *l ? "," : "";
	for (uint32_t s = 0; s + 1 < h->nslots; s++) {
		uint64_t b = lh_slot_hi(s, m->scheme.precision) * u;

		cum += h->slots[s];
		if (wanted(o, b, top))
			fprintf(f, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", family, l, sep,
				seconds(sec, b), cum);
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", family, l, sep, h->count);
	fprintf(f, "%s_sum{%s} %s\n", family, l, seconds(sec, h->sum_ns));
	fprintf(f, "%s_count{%s} %" PRIu64 "\n", family, l, h->count);
	free(l);
}

/* HELP/TYPE (and, in OpenMetrics, UNIT) of a family. A counter's samples end in
 * _total: OpenMetrics names the family without it, the Prometheus text format with it. */
static void family(FILE *f, bool strict, const char *name, const char *type, const char *unit,
		   const char *help)
{
	char fam[128];
	size_t n = strlen(name);

	snprintf(fam, sizeof(fam), "%s", name);
	if (strict && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		fam[n - 6] = 0;
	/* HELP escapes \\ and newline (text 0.0.4), and " too in OpenMetrics */
	fprintf(f, "# HELP %s ", fam);
	for (const char *c = help; *c; c++)
		if (*c == '\\' || (*c == '"' && strict))
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else
			fputc(*c, f);
	fprintf(f, "\n# TYPE %s %s\n", fam, type);
	if (unit && strict)
		fprintf(f, "# UNIT %s %s\n", fam, unit);
}

int lh_buckets_check(const struct lh_om_opts *o, const struct lh_scheme *sc, uint64_t *bad,
		     uint64_t *below, uint64_t *above)
{
	uint32_t nslots = lh_nslots(sc);

	for (size_t i = 0; i < o->nle; i++) {
		uint64_t lo = 0, hi = 0;
		bool found = false;

		for (uint32_t s = 0; s + 1 < nslots && !found; s++) {
			uint64_t b = lh_slot_hi(s, sc->precision) * sc->unit_ns;

			if (b == o->le_ns[i])
				found = true;
			else if (b < o->le_ns[i])
				lo = b;
			else if (!hi)
				hi = b;
		}
		if (!found) {
			*bad = o->le_ns[i];
			*below = lo;
			*above = hi;
			return -EINVAL;
		}
	}
	return 0;
}

/* name{<opts' labels>[,<more>]}, or name alone when neither has any: the samples
 * with no key of their own (a value follows) */
static void plain(FILE *f, const struct lh_om_opts *o, const char *name, const char *more)
{
	char *l = labels(o, NULL, NULL, NULL);
	bool any = (l && *l) || (more && *more);

	fprintf(f, "%s%s%s%s%s%s", name, any ? "{" : "", l ? l : "",
		l && *l && more && *more ? "," : "", more ? more : "", any ? "}" : "");
	free(l);
}

void lh_render_om_sample(FILE *f, const struct lh_om_opts *o, const char *name, const char *type,
			 const char *help, uint64_t value)
{
	family(f, o->strict, name, type, NULL, help);
	plain(f, o, name, NULL);
	fprintf(f, " %" PRIu64 "\n", value);
}

void lh_render_om_labeled(FILE *f, const struct lh_om_opts *o, const char *name,
			  const char *type, const char *help, const char *lname,
			  const char *const *lvals, const uint64_t *values, int n)
{
	family(f, o->strict, name, type, NULL, help);
	for (int i = 0; i < n; i++) {
		char *l = labels(o, lname, lvals[i], NULL);

		fprintf(f, "%s{%s} %" PRIu64 "\n", name, l ? l : "", values[i]);
		free(l);
	}
}

void lh_render_openmetrics(FILE *f, const struct lh_report *r, const struct lh_om_opts *o)
{
	const struct lh_meta *m = &r->meta;
	const struct lh_tool_desc *t = lh_tool_find(m->tool);
	bool strict = o->strict;
	char name[96], oncpu[96], sec[32], more[96];

	if (!t)		/* meta.tool comes from the registry (or a reader that checked it) */
		return;
	snprintf(name, sizeof(name), "lathist_%s_latency_seconds", m->tool);
	snprintf(oncpu, sizeof(oncpu), "lathist_%s_oncpu_seconds", m->tool);
	family(f, strict, name, "histogram", "seconds", t->om_help);
	for (size_t i = 0; i < r->nhists; i++)
		if (strcmp(r->hists[i].name, "oncpu"))
			hist_series(f, name, t->om_label, &r->hists[i], m, o);
	if (m->features & LH_FEAT_ONCPU) {
		family(f, strict, oncpu, "histogram", "seconds",
		       "On-CPU slices, switch-in to switch-out.");
		for (size_t i = 0; i < r->nhists; i++)
			if (!strcmp(r->hists[i].name, "oncpu"))
				hist_series(f, oncpu, NULL, &r->hists[i], m, o);
	}
	if (m->has_bytes && t->bytes_hist) {
		snprintf(name, sizeof(name), "lathist_%s_bytes_total", m->tool);
		family(f, strict, name, "counter", NULL, t->bytes_help);
		for (size_t i = 0; i < r->nhists; i++)
			if (!strcmp(r->hists[i].name, t->bytes_hist)) {
				char *l = labels(o, NULL, NULL, &r->hists[i].key);

				fprintf(f, "%s{%s} %" PRIu64 "\n", name, l ? l : "", r->hists[i].bytes);
				free(l);
			}
	}
	for (int loss = 0; loss <= 1; loss++) {
		snprintf(name, sizeof(name), "lathist_%s_%s_total", m->tool,
			 loss ? "losses" : "events");
		family(f, strict, name, "counter", NULL, loss ?
		       "Events kept out of the histograms (or records, or counter sums), by loss "
		       "class; any non-zero class flags the distribution." :
		       "Events seen, paired and otherwise classified (not losses), by class.");
		for (int i = 0; i < LH_NR_COUNTERS; i++) {
			const struct lh_counter_info *ci = lh_counter_info(i);

			if (ci->loss != (bool)loss || ci->gap || !lh_meta_counts(m, i))
				continue;
			snprintf(more, sizeof(more), "class=\"%s\"", ci->name);
			plain(f, o, name, more);
			fprintf(f, " %" PRIu64 "\n", r->counters[i]);
		}
	}
	if (lh_meta_counts(m, LH_GAP_MISSED_SWITCH)) {
		snprintf(name, sizeof(name), "lathist_%s_kernel_gaps_total", m->tool);
		family(f, strict, name, "counter", NULL,
		       "What the kernel did with no event, per CPU: missed_switch, context "
		       "switches with no sched_switch event (their waits are in the losses).");
		for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++) {
			snprintf(more, sizeof(more), "class=\"missed_switch\",cpu=\"%u\"", cpu);
			plain(f, o, name, more);
			fprintf(f, " %" PRIu64 "\n", r->gap_cpu[cpu]);
		}
		snprintf(name, sizeof(name), "lathist_%s_hidden_tasks", m->tool);
		family(f, strict, name, "gauge", NULL, "Traced tasks the kernel's task iterator "
		       "did not show at the end of the run (their last waits are not counted).");
		plain(f, o, name, NULL);
		fprintf(f, " %" PRIu64 "\n", r->counters[LH_GAP_HIDDEN_TASKS]);
	}
	snprintf(name, sizeof(name), "lathist_%s_biased", m->tool);
	family(f, strict, name, "gauge", NULL, "1 when any loss class is non-zero: losses "
	       "cluster in bursts and expensive events, so the histograms may be biased "
	       "(the tail most likely under-reported); counts are never rescaled.");
	plain(f, o, name, NULL);
	fprintf(f, " %d\n", lh_counters_lost(r->counters) ? 1 : 0);
	snprintf(name, sizeof(name), "lathist_%s_duration_seconds", m->tool);
	family(f, strict, name, "gauge", "seconds", "Time this aggregate covers.");
	plain(f, o, name, NULL);
	fprintf(f, " %s\n", seconds(sec, m->duration_ns));
	snprintf(name, sizeof(name), "lathist_%s_info", m->tool);
	family(f, strict, name, "gauge", NULL, "Measurement metadata (value always 1).");
	{
		char *l = labels(o, NULL, NULL, NULL);

		fprintf(f, "%s{%s%sversion=\"%s\",kernel=\"", name, l ? l : "", l && *l ? "," : "",
			LATHIST_VERSION);	/* no per-interval label */
		free(l);
	}
	label_value(f, m->kernel);
	fprintf(f, "\",clock=\"%s\",grouping=\"%s\",unit=\"%s\",precision=\"%u\"", m->clock,
		m->grouping, m->unit, m->scheme.precision);
	{
		/* the context's low-cardinality facts (meta.context has the rest) */
		static const char *const ctx[] = { "preempt", "hypervisor", "smt", "governor" };

		for (size_t i = 0; i < sizeof(ctx) / sizeof(ctx[0]); i++) {
			const char *v = lh_context_str(m, ctx[i]);

			/* governor null in a context: no cpufreq */
			if (!v)
				v = m->context && !strcmp(ctx[i], "governor") ? "none" : "unknown";
			fprintf(f, ",%s=\"", ctx[i]);
			label_value(f, v);
			fputc('"', f);
		}
	}
	for (int i = 0; i < m->nattach; i++)
		fprintf(f, ",attach_%s=\"%s\"", m->attach[i].tracepoint, m->attach[i].type);
	for (int i = 0; i < m->nfilters; i++) {
		fprintf(f, ",filter_%s=\"", m->filters[i].name);
		label_value(f, m->filters[i].value);
		fputc('"', f);
	}
	fputs("} 1\n", f);
	if (strict && !o->no_eof)
		fputs("# EOF\n", f);
}
