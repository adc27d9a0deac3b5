// SPDX-License-Identifier: MIT
/*
 * OpenMetrics and Prometheus text renderer. Names (stable, in docs/schema.md):
 *   lathist_<tool>_latency_seconds{kind|stage=...,<key labels>}   histogram
 *   lathist_runq_oncpu_seconds{<key labels>}                      histogram (--oncpu)
 *   lathist_bio_bytes_total{<key labels>}                         counter
 *   lathist_<tool>_events_total{class=...}                        counter (not losses)
 *   lathist_<tool>_losses_total{class=...}                        counter (loss classes)
 *   lathist_<tool>_info{version,kernel,clock,grouping,...} 1      gauge
 *   lathist_<tool>_duration_seconds                               gauge
 * Buckets are cumulative with upper-inclusive le bounds in seconds: the slots
 * hold lo < v <= hi (include/hist_slot.h), so a slot's hi is exactly its le.
 */
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
 * The labels of one series without braces: name="value" first when given, then
 * the key's fields, escaped. Built once per histogram (malloc'd; NULL without
 * memory), since every bucket repeats them.
 */
static char *labels(const char *lname, const char *lval, const struct lh_key *k)
{
	struct lh_kv kv[LH_MAX_KEY_FIELDS];
	int n = k ? lh_key_fields(k, kv) : 0;
	const char *sep = "";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (lname) {
		fprintf(f, "%s=\"", lname);
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

static void hist_series(FILE *f, const char *family, const char *lname, const struct lh_hist *h,
			const struct lh_meta *m)
{
	uint64_t cum = 0, u = m->scheme.unit_ns;
	char *l = labels(lname, lname ? h->name : NULL, &h->key), sec[32];
	const char *sep;

	if (!l)
		return;
	sep = *l ? "," : "";
	for (uint32_t s = 0; s + 1 < h->nslots; s++) {
		cum += h->slots[s];
		fprintf(f, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", family, l, sep,
			seconds(sec, lh_slot_hi(s, m->scheme.precision) * u), cum);
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
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam, help, fam, type);
	if (unit && strict)
		fprintf(f, "# UNIT %s %s\n", fam, unit);
}

void lh_render_openmetrics(FILE *f, const struct lh_report *r, bool strict)
{
	const struct lh_meta *m = &r->meta;
	const struct lh_tool_desc *t = lh_tool_find(m->tool);
	char name[96], oncpu[96], sec[32];

	if (!t)		/* meta.tool comes from the registry (or a reader that checked it) */
		return;
	snprintf(name, sizeof(name), "lathist_%s_latency_seconds", m->tool);
	snprintf(oncpu, sizeof(oncpu), "lathist_%s_oncpu_seconds", m->tool);
	family(f, strict, name, "histogram", "seconds", t->om_help);
	for (size_t i = 0; i < r->nhists; i++)
		if (strcmp(r->hists[i].name, "oncpu"))
			hist_series(f, name, t->om_label, &r->hists[i], m);
	if (m->features & LH_FEAT_ONCPU) {
		family(f, strict, oncpu, "histogram", "seconds",
		       "On-CPU slices, switch-in to switch-out.");
		for (size_t i = 0; i < r->nhists; i++)
			if (!strcmp(r->hists[i].name, "oncpu"))
				hist_series(f, oncpu, NULL, &r->hists[i], m);
	}
	if (m->has_bytes && t->bytes_hist) {
		snprintf(name, sizeof(name), "lathist_%s_bytes_total", m->tool);
		family(f, strict, name, "counter", NULL, t->bytes_help);
		for (size_t i = 0; i < r->nhists; i++)
			if (!strcmp(r->hists[i].name, t->bytes_hist)) {
				char *l = labels(NULL, NULL, &r->hists[i].key);

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

			if (ci->loss != (bool)loss || ci->gap || !(ci->tools & m->tool_bit) ||
			    (ci->needs & ~m->features))
				continue;
			fprintf(f, "%s{class=\"%s\"} %" PRIu64 "\n", name, ci->name, r->counters[i]);
		}
	}
	if (lh_counter_info(LH_GAP_MISSED_SWITCH)->tools & m->tool_bit) {
		snprintf(name, sizeof(name), "lathist_%s_kernel_gaps_total", m->tool);
		family(f, strict, name, "counter", NULL,
		       "What the kernel did with no event, per CPU: missed_switch, context "
		       "switches with no sched_switch event (their waits are in the losses).");
		for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++)
			fprintf(f, "%s{class=\"missed_switch\",cpu=\"%u\"} %" PRIu64 "\n", name, cpu,
				r->gap_cpu[cpu]);
		snprintf(name, sizeof(name), "lathist_%s_hidden_tasks", m->tool);
		family(f, strict, name, "gauge", NULL, "Traced tasks the kernel's task iterator "
		       "did not show at the end of the run (their last waits are not counted).");
		fprintf(f, "%s %" PRIu64 "\n", name, r->counters[LH_GAP_HIDDEN_TASKS]);
	}
	snprintf(name, sizeof(name), "lathist_%s_duration_seconds", m->tool);
	family(f, strict, name, "gauge", "seconds", "Time this aggregate covers.");
	fprintf(f, "%s %s\n", name, seconds(sec, m->duration_ns));
	snprintf(name, sizeof(name), "lathist_%s_info", m->tool);
	family(f, strict, name, "gauge", NULL, "Measurement metadata (value always 1).");
	fprintf(f, "%s{version=\"%s\",kernel=\"", name, LATHIST_VERSION);	/* no per-interval label */
	label_value(f, m->kernel);
	fprintf(f, "\",clock=\"%s\",grouping=\"%s\",unit=\"%s\",precision=\"%u\"", m->clock,
		m->grouping, m->unit, m->scheme.precision);
	for (int i = 0; i < m->nattach; i++)
		fprintf(f, ",attach_%s=\"%s\"", m->attach[i].tracepoint, m->attach[i].type);
	for (int i = 0; i < m->nfilters; i++) {
		fprintf(f, ",filter_%s=\"", m->filters[i].name);
		label_value(f, m->filters[i].value);
		fputc('"', f);
	}
	fputs("} 1\n", f);
	if (strict)
		fputs("# EOF\n", f);
}
