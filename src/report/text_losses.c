// SPDX-License-Identifier: MIT
/*
 * The text's end: one loss line that names every non-zero loss class and says
 * what the losses could do to the percentiles shown, one kernel gap line, what
 * was not checked; with -v, every counter the tool has with what it means.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "registry.h"
#include "text.h"

#define WIDTH 100		/* the loss and gap lines wrap before this column */
#define GAP_CPUS 8		/* CPUs the gap line names; JSON has every one */

/* What a class's share is of: records for ringbuf_drop, slices for the counter
 * reads, else every event the histograms could hold (events). */
static uint64_t share_of(const uint64_t *v, int i, uint64_t events, const char **of)
{
	if (i == LH_LOSS_RINGBUF) {
		*of = " of records";
		return v[LH_EV_RB_ELIGIBLE];
	}
	if (i == LH_LOSS_PMU_ENOENT || i == LH_LOSS_PMU_EINVAL || i == LH_LOSS_PMU_OTHER) {
		*of = " of slices";
		return lh_add_sat(v[LH_EV_SLICES], v[LH_LOSS_SLICE_UNPAIRED]);
	}
	*of = "";
	return events;
}

/* The non-zero loss classes whose scope is (not) the histograms', largest first,
 * as "name N (x.xx%)" into f. Returns how many. */
static int name_classes(FILE *f, const uint64_t *v, uint64_t events, bool hist)
{
	int order[LH_NR_COUNTERS], n = 0;

	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);

		if (ci->loss && v[i] && (ci->scope != 0) == hist)
			order[n++] = i;
	}
	for (int a = 1; a < n; a++)	/* insertion sort: a few classes, stable */
		for (int b = a; b > 0 && v[order[b]] > v[order[b - 1]]; b--) {
			int x = order[b];

			order[b] = order[b - 1];
			order[b - 1] = x;
		}
	for (int k = 0; k < n; k++) {
		const char *of;
		uint64_t whole = share_of(v, order[k], events, &of);
		char share[16];

		fprintf(f, "%s%s %" PRIu64 " (%s%s)", k ? ", " : "", lh_counter_info(order[k])->name,
			v[order[k]], lh_share(v[order[k]], whole, share, sizeof(share)), of);
	}
	return n;
}

/* The losses of a scope (enum lh_scope bits) that no end counted (not of_events: a
 * start dropped, a wait no event showed): events does not hold them. */
static uint64_t lost_outside_ends(const uint64_t *v, unsigned int scope, unsigned int features)
{
	uint64_t n = 0;

	for (int i = LH_FIRST_LOSS; i < LH_NR_COUNTERS; i++)
		if ((lh_counter_info(i)->scope & scope) && !lh_counter_of_events(i, features))
			n = lh_add_sat(n, v[i]);
	return n;
}

/* The names of percentiles first..last joined: "p99", "p99 and p99.9", "p90, p99 and p99.9". */
static void say_names(FILE *f, size_t first, size_t last)
{
	for (size_t p = first; p <= last; p++)
		fprintf(f, "%s%s", p == first ? "" : p == last ? " and " : ", ", lh_percentiles[p].name);
}

/* A total run: which percentiles of which histograms the losses could move, and
 * how far ("They could move wakeup p99 and p99.9 to (1024, 2048] .. unbounded us;
 * the other percentiles hold."): a run of percentiles with the same bounds is
 * said once. */
static void say_moves(FILE *f, const struct lh_report *r)
{
	const struct lh_meta *m = &r->meta;
	int said = 0;

	for (size_t i = 0; i < r->nhists; i++) {
		const struct lh_hist *h = &r->hists[i];
		struct lh_pct pct[LH_NR_PERCENTILES];

		lh_report_percentiles(r, h, pct);
		if (!lh_text_moves(pct))
			continue;
		for (size_t p = 0; p < LH_NR_PERCENTILES; p++) {
			size_t q = p;
			char range[160];

			if (pct[p].low == pct[p].high)
				continue;
			while (q + 1 < LH_NR_PERCENTILES && pct[q + 1].low == pct[p].low &&
			       pct[q + 1].high == pct[p].high)
				q++;
			fprintf(f, "%s%s ", said++ ? ", " : "They could move ", h->name);
			say_names(f, p, q);
			fprintf(f, " to %s %s", lh_bounds_range(range, sizeof(range), pct[p].low,
								pct[p].high, m), m->unit);
			p = q;
		}
	}
	fputs(said ? "; the other percentiles hold." : "They cannot move any percentile shown.", f);
}

/* The loss paragraph's text into f: what was lost, of what, and what it can do. */
static void say_losses(FILE *f, const struct lh_report *r, bool grouped, bool marked)
{
	const uint64_t *v = r->counters;
	bool slices = r->meta.features & (LH_FEAT_ONCPU | LH_FEAT_COUNTERS);
	const char *noun = slices ? "waits and slices" : r->meta.desc ? r->meta.desc->noun : "events";
	unsigned int scope = slices ? LH_SCOPE_EVENTS | LH_SCOPE_SLICES : LH_SCOPE_EVENTS;
	uint64_t lost = lh_scope_lost(v, scope), events;
	char share[16];

	/* what the histograms could hold: the ends seen (and with slices traced the
	 * slices), and the losses no end counted */
	events = lh_add_sat(v[LH_EV_ENDS], lost_outside_ends(v, scope, r->meta.features));
	if (slices)
		events = lh_add_sat(events, v[LH_EV_SLICES]);
	if (lost)
		fprintf(f, "lost %" PRIu64 " of %" PRIu64 " %s (%s): ", lost, events, noun,
			lh_share(lost, events, share, sizeof(share)));
	else
		fputs("lost: ", f);
	if (name_classes(f, v, events, true) && lh_hist_lost(v)) {
		fputs(". ", f);
		if (grouped)
			fputs(marked ? "'?' marks a percentile they could move; the others shown hold." :
			      "They cannot move any percentile shown.", f);
		else
			say_moves(f, r);
		/* only when every loss is charged can a key without any keep its max */
		if (grouped && r->charged && r->charged >= lost)
			fprintf(f, " The maxima of keys with LOST could be higher. All %" PRIu64
				" are charged to their keys (LOST).", lost);
		else if (r->charged)
			fprintf(f, " Maxima could be higher. %" PRIu64 " of them are charged to their "
				"keys (LOST); the other %" PRIu64 " could be any key's.", r->charged,
				lost > r->charged ? lost - r->charged : 0);
		else
			fputs(" Maxima could be higher.", f);
		if (r->trend == LH_TREND_RISES)
			fprintf(f, " Losses rise with load over %zu intervals: the tail is most likely "
				"under-reported.", r->trend_intervals);
		else if (r->trend == LH_TREND_FLAT)
			fprintf(f, " Losses do not rise with load over %zu intervals.", r->trend_intervals);
	}
	if (v[LH_LOSS_RINGBUF] || lh_pmu_lost(v)) {
		fputs(lh_hist_lost(v) ? " Also " : "", f);
		name_classes(f, v, events, false);
		fputs(":", f);
		if (v[LH_LOSS_RINGBUF])
			fputs(" the ring buffer was full, so the records are not every slow event (the "
			      "histograms keep them all; raise --ringbuf-size or --slower-than).", f);
		if (lh_pmu_lost(v))
			fputs(" counter reads failed, so those slices are left out of the counter sums "
			      "(the histograms keep them).", f);
	}
}

/* Where the waits a missed switch hid are counted: the classes of them that are not
 * zero ("); the waits they hid are in unpaired_no_start and missed_wait."). */
static void say_hidden_in(FILE *f, const uint64_t *v)
{
	static const int in[] = { LH_LOSS_MISSED_SWITCH_IN, LH_LOSS_MISSED_WAIT, LH_LOSS_UNPAIRED };
	int named[3], n = 0;

	for (size_t i = 0; i < 3; i++)
		if (v[in[i]])
			named[n++] = in[i];
	if (!n) {
		fputs("); they hid no traced wait that lathist could tell.", f);
		return;
	}
	fputs("); the waits they hid are in ", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
			lh_counter_info(named[i])->name);
	fputc('.', f);
}

/* The kernel gaps, said plainly: switches the kernel made without a
 * sched_switch event, on which CPUs, and tasks the end-of-run check could not see. */
static void say_gaps(FILE *f, const struct lh_report *r)
{
	uint64_t missed = r->counters[LH_GAP_MISSED_SWITCH], seen = r->counters[LH_EV_SWITCHES];
	uint64_t hidden = r->counters[LH_GAP_HIDDEN_TASKS];
	uint32_t named = 0, cpus = 0;
	char share[16];

	fputs("kernel gap:", f);
	if (missed) {
		fprintf(f, " %" PRIu64 " of %" PRIu64 " context switches (%s) had no sched_switch event (",
			missed, lh_add_sat(seen, missed),
			lh_share(missed, lh_add_sat(seen, missed), share, sizeof(share)));
		for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++) {
			if (!r->gap_cpu[cpu])
				continue;
			if (named++ < GAP_CPUS)
				fprintf(f, "%scpu %u: %" PRIu64, named > 1 ? ", " : "", cpu, r->gap_cpu[cpu]);
			cpus++;
		}
		if (cpus > GAP_CPUS)
			fprintf(f, " and %u more CPUs", cpus - GAP_CPUS);
		say_hidden_in(f, r->counters);
	}
	if (hidden)
		fprintf(f, " %" PRIu64 " traced task%s hidden from the end-of-run check (the kernel's "
			"task iterator did not show %s): waits after %s last event are not counted.",
			hidden, hidden == 1 ? " was" : "s were", hidden == 1 ? "it" : "them",
			hidden == 1 ? "its" : "their");
}

/* -v: every counter the tool has, its value, its share of events (those counted at
 * ends add up to them), what it means. */
static void print_counter_table(struct lh_out *o, const struct lh_report *r)
{
	const uint64_t *v = r->counters;
	uint64_t events = v[LH_EV_ENDS];
	uint64_t outside = lost_outside_ends(v, LH_SCOPE_EVENTS, r->meta.features);
	char share[16];

	lh_out_printf(o, "\nevents and losses (shares of %" PRIu64 " events", events);
	if (outside && !(r->meta.features & (LH_FEAT_ONCPU | LH_FEAT_COUNTERS)))
		lh_out_printf(o, "; the loss line's are of %" PRIu64 ": these and the %" PRIu64
			" lost before an end", lh_add_sat(events, outside), outside);
	lh_out_str(o, "):\n");
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);
		const char *desc = lh_meta_counter_desc(&r->meta, i);

		if (!lh_meta_counts(&r->meta, i))
			continue;
		lh_out_printf(o, "  %-22s %12" PRIu64, ci->name, v[i]);
		if (events && lh_counter_of_events(i, r->meta.features))
			lh_out_printf(o, " %8s", lh_share(v[i], events, share, sizeof(share)));
		else
			lh_out_printf(o, " %8s", "");
		lh_out_printf(o, "  %s%s\n", ci->loss ? "LOSS: " : ci->gap ? "KERNEL GAP: " : "", desc);
	}
}

/* text (a memstream's, len bytes) as one wrapped paragraph; text is freed. */
static void put_paragraph(struct lh_out *o, char *text, size_t len)
{
	if (text && len)
		lh_out_wrap(o, text, 0, 2, WIDTH);
	free(text);
}

void lh_text_losses(struct lh_out *o, const struct lh_report *r, const struct lh_text_opts *t,
		    bool grouped, bool marked)
{
	const uint64_t *v = r->counters;
	char *text = NULL, share[16];
	size_t len = 0;
	FILE *f;

	if (t->verbose)
		print_counter_table(o, r);
	lh_out_char(o, '\n');
	if (r->records.on) {
		uint64_t kib = r->records.ringbuf_bytes / 1024;

		lh_out_printf(o, "records (--slower-than %.3f %s): eligible %" PRIu64 ", delivered %"
			PRIu64 ", dropped %" PRIu64 " (%s; ring buffer %" PRIu64 " %s)\n",
			(double)r->records.slower_than_ns / (double)r->meta.scheme.unit_ns,
			r->meta.unit, v[LH_EV_RB_ELIGIBLE], r->records.delivered, v[LH_LOSS_RINGBUF],
			lh_share(v[LH_LOSS_RINGBUF], v[LH_EV_RB_ELIGIBLE], share, sizeof(share)),
			kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB");
	}
	if (!lh_counters_lost(v)) {
		lh_out_str(o, "no loss: every paired event is in the histograms");
		lh_out_str(o, r->records.on ? ", every eligible event has a record\n" : "\n");
	} else if ((f = open_memstream(&text, &len))) {
		say_losses(f, r, grouped, marked);
		fclose(f);
		put_paragraph(o, text, len);
	} else {	/* no memory for the sentence: the sum, and where the classes are */
		lh_out_printf(o, "lost %" PRIu64 " (-v names the classes)\n", lh_counters_lost(v));
	}
	if (lh_counters_gaps(v)) {
		text = NULL;
		len = 0;
		if ((f = open_memstream(&text, &len))) {
			say_gaps(f, r);
			fclose(f);
			put_paragraph(o, text, len);
		} else {
			lh_out_printf(o, "kernel gap: %" PRIu64 " switches had no event\n",
				lh_counters_gaps(v));
		}
	}
	if (r->meta.unchecked[0])
		lh_out_printf(o, "NOT CHECKED: %s\n", r->meta.unchecked);
}
