// SPDX-License-Identifier: MIT
/*
 * lathist report --diff A B: two runs side by side, the context fields that
 * differ, then per histogram (matched by name and key) count, percentiles and
 * max of each and the change from A to B.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "report.h"

/* Upper bound of slot s of m's scheme in ns; 0 when unbounded (the last slot). */
static uint64_t slot_hi_ns(const struct lh_meta *m, int s)
{
	uint64_t hi = lh_slot_hi((uint32_t)s, m->scheme.precision);

	return hi == UINT64_MAX ? 0 : hi * m->scheme.unit_ns;
}

static void change(FILE *f, double a, double b)
{
	if (a > 0 && b > 0)
		fprintf(f, "x%.2f", b / a);
	else
		fputs("-", f);
	fputc('\n', f);
}

/* "(lo, hi] us", with "*" when the losses could move it to another slot. */
static const char *pct_text(char *buf, size_t len, const struct lh_report *r,
			    const struct lh_pct *p)
{
	char s[64];

	if (p->slot < 0)
		return "-";
	snprintf(buf, len, "%s %s%s", lh_slot_range(s, sizeof(s), p->slot, &r->meta), r->meta.unit,
		 p->low != p->high ? " *" : "");
	return buf;
}

static void row_pct(FILE *f, const char *name, const struct lh_report *a, const struct lh_pct *pa,
		    const struct lh_report *b, const struct lh_pct *pb)
{
	char x[96], y[96];

	fprintf(f, "  %-6s %-26s %-26s ", name, pct_text(x, sizeof(x), a, pa),
		pct_text(y, sizeof(y), b, pb));
	change(f, pa->slot < 0 ? 0 : (double)slot_hi_ns(&a->meta, pa->slot),
	       pb->slot < 0 ? 0 : (double)slot_hi_ns(&b->meta, pb->slot));
}

static void hist_pair(FILE *f, const struct lh_report *a, const struct lh_hist *ha,
		      const struct lh_report *b, const struct lh_hist *hb, bool *starred)
{
	struct lh_pct pa[LH_NR_PERCENTILES], pb[LH_NR_PERCENTILES];
	struct lh_kv kv[LH_MAX_KEY_FIELDS];
	int n = lh_key_fields(&ha->key, kv);
	char x[64], y[64];

	lh_report_percentiles(a, ha, pa);
	lh_report_percentiles(b, hb, pb);
	fprintf(f, "\n%s", ha->name);
	if (!n)
		fputs(", all", f);
	for (int i = 0; i < n; i++)
		fprintf(f, ", %s %s", kv[i].name, kv[i].value);
	fprintf(f, ":\n  %-6s %-26s %-26s %s\n", "", "A", "B", "change");
	fprintf(f, "  %-6s %-26" PRIu64 " %-26" PRIu64 " ", "count", ha->count, hb->count);
	change(f, (double)ha->count, (double)hb->count);
	for (int i = 0; i < LH_NR_PERCENTILES; i++) {
		row_pct(f, lh_percentiles[i].name, a, &pa[i], b, &pb[i]);
		*starred |= pa[i].low != pa[i].high || pb[i].low != pb[i].high;
	}
	snprintf(x, sizeof(x), "%.3f %s", (double)ha->max_ns / (double)a->meta.scheme.unit_ns,
		 a->meta.unit);
	snprintf(y, sizeof(y), "%.3f %s", (double)hb->max_ns / (double)b->meta.scheme.unit_ns,
		 b->meta.unit);
	fprintf(f, "  %-6s %-26s %-26s ", "max", ha->count ? x : "-", hb->count ? y : "-");
	change(f, (double)ha->max_ns, (double)hb->max_ns);
}

/* The fields of the two contexts that differ, one line each (context.mixed
 * of a merged side shows as "mixed"). */
static void context_diff(FILE *f, const struct lh_meta *a, const struct lh_meta *b)
{
	json_object *ca = a->context, *cb = b->context, *keys = json_object_new_object();
	int n = 0;

	if (!ca || !cb) {
		fprintf(f, "context: %s\n", !ca && !cb ? "neither run has one (lathist before 0.3)" :
			!ca ? "A has none (lathist before 0.3)" : "B has none (lathist before 0.3)");
		json_object_put(keys);
		return;
	}
	json_object_object_foreach(ca, ka, va)
		json_object_object_add(keys, ka, NULL);
	json_object_object_foreach(cb, kb, vb)
		json_object_object_add(keys, kb, NULL);
	(void)va;
	(void)vb;
	json_object_object_foreach(keys, k, unused) {
		json_object *x = NULL, *y = NULL;
		const char *sx, *sy;

		(void)unused;
		if (!strcmp(k, "mixed") || !strcmp(k, "boot_id"))
			continue;	/* boot_id differs across reboots: not a setting */
		json_object_object_get_ex(ca, k, &x);
		json_object_object_get_ex(cb, k, &y);
		/* each object keeps its own text: x's stays valid beside y's */
		sx = json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN);
		sy = json_object_to_json_string_ext(y, JSON_C_TO_STRING_PLAIN);
		if (strcmp(sx, sy)) {
			if (!n++)
				fputs("context that differs (A | B):\n", f);
			fprintf(f, "  %-16s %s | %s\n", k, sx, sy);
		}
	}
	if (!n)
		fputs("context: the same in A and B (boot ids aside)\n", f);
	json_object_put(keys);
}

static void side(FILE *f, const char *tag, const char *path, const struct lh_report *r)
{
	uint64_t events = 0;

	for (size_t i = 0; i < r->nhists; i++)
		events += r->hists[i].count;
	fprintf(f, "  %s: %s: host %s, kernel %s, %.3f s, %zu histograms, lost %" PRIu64 "%s\n",
		tag, path, r->meta.host, r->meta.kernel, (double)r->meta.duration_ns / 1e9,
		r->nhists, lh_counters_lost(r->counters),
		lh_counters_lost(r->counters) ? " (percentiles marked * could move)" : "");
	if (r->meta.load.known)
		fprintf(f, "     steal %.2f%% of CPU time, 1-min load average up to %.2f\n",
			r->meta.load.cpu_ns ? 100.0 * (double)r->meta.load.steal_ns /
			(double)r->meta.load.cpu_ns : 0.0, r->meta.load.loadavg_max);
}

void lh_render_diff(FILE *f, const struct lh_report *a, const char *pa, struct lh_report *b,
		    const char *pb)
{
	size_t unmatched_a = 0, nb = b->nhists, matched = 0;
	bool starred = false;

	fprintf(f, "lathist report --diff: %s, grouping %s; change is B / A (counts are totals "
		"over each run's duration, not rates)\n", a->meta.tool, a->meta.grouping);
	side(f, "A", pa, a);
	side(f, "B", pb, b);
	context_diff(f, &a->meta, &b->meta);
	for (size_t i = 0; i < a->nhists; i++) {
		const struct lh_hist *ha = &a->hists[i];
		struct lh_hist *hb = lh_report_find_hist(b, ha->name, &ha->key);

		/* find_hist appends an empty one when B has none: that is no match */
		if (!hb || (size_t)(hb - b->hists) >= nb) {
			unmatched_a++;
			continue;
		}
		matched++;
		hist_pair(f, a, ha, b, hb, &starred);
	}
	if (!a->nhists && !nb)
		fputs("\nno histograms on either side: neither run saw an event\n", f);
	if (unmatched_a || nb > matched)
		fprintf(f, "\n%zu histograms of A and %zu of B have no match on the other side (a key "
			"with no events in one run, or a task's, which belongs to one run)\n", unmatched_a, nb - matched);
	if (starred)
		fputs("* the losses of that run could move this percentile to another slot (lathist "
		      "report FILE shows where to)\n", f);
}
