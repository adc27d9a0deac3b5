// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters_user.h"
#include "hist.h"
#include "outbuf.h"
#include "report.h"

#define EV LH_SCOPE_EVENTS
#define SL LH_SCOPE_SLICES
/* What a class is, whatever tool counts it (a tool says what it means in its own
 * words: its descriptor's counter_desc); what is not given is false or 0. */
static const struct lh_counter_info infos[LH_NR_COUNTERS] = {
	[LH_EV_ENDS] = { .name = "events" },
	[LH_EV_PAIRED] = { .name = "paired", .of_events = true },
	[LH_EV_STARTS_WAKEUP] = { .name = "starts_wakeup" },
	[LH_EV_STARTS_PREEMPT] = { .name = "starts_preempt" },
	[LH_EV_WAKEUP_RUNNING] = { .name = "wakeup_while_running" },
	[LH_EV_WAKEUP_QUEUED] = { .name = "wakeup_while_queued" },
	[LH_EV_FILTERED] = { .name = "filtered" },
	[LH_EV_BEFORE_TRACE] = { .name = "unpaired_before_trace", .of_events = true },
	[LH_EV_BIO_CREATED] = { .name = "created" },
	[LH_EV_BIO_ISSUED] = { .name = "issued" },
	[LH_EV_BIO_NO_QUEUE] = { .name = "no_queue_stage" },
	[LH_EV_BIO_PARTIAL] = { .name = "partial_completions" },
	[LH_EV_BIO_REQUEUED] = { .name = "requeued" },
	[LH_EV_BIO_MERGED] = { .name = "merged" },
	[LH_EV_BIO_UNISSUED] = { .name = "completed_unissued" },
	[LH_EV_RB_ELIGIBLE] = { .name = "records_eligible", .needs = LH_FEAT_RECORDS },
	[LH_EV_SLICES] = { .name = "slices", .needs = LH_FEAT_ONCPU },
	[LH_EV_SWITCHES] = { .name = "switches" },
	[LH_GAP_MISSED_SWITCH] = { .name = "missed_switch", .gap = true },
	[LH_GAP_HIDDEN_TASKS] = { .name = "hidden_tasks", .gap = true },
	[LH_LOSS_UNPAIRED] = { .name = "unpaired_no_start", .loss = true,
		.of_events = true, .scope = EV },
	[LH_LOSS_OVERWRITTEN] = { .name = "overwritten_start", .loss = true, .scope = EV },
	[LH_LOSS_MISSED_SWITCH_IN] = { .name = "missed_switch_in", .loss = true, .scope = EV },
	[LH_LOSS_MISSED_WAIT] = { .name = "missed_wait", .loss = true, .scope = EV },
	[LH_LOSS_UNCHECKED] = { .name = "unchecked_start", .loss = true,
		.of_events = true, .needs = LH_FEAT_TRACEPOINT, .scope = EV },
	[LH_LOSS_MISSED_COMPLETION] = { .name = "missed_completion", .loss = true, .scope = EV },
	[LH_LOSS_STALE] = { .name = "stale_start", .loss = true, .scope = EV },
	[LH_LOSS_NEGATIVE] = { .name = "negative_delta", .loss = true,
		.of_events = true, .scope = EV | SL },
	[LH_LOSS_ABSURD] = { .name = "absurd_delta", .loss = true,
		.of_events = true, .scope = EV | SL },
	[LH_LOSS_STORAGE] = { .name = "storage_failed", .loss = true, .scope = EV },
	[LH_LOSS_START_E2BIG] = { .name = "start_map_full", .loss = true, .scope = EV },
	[LH_LOSS_START_ENOMEM] = { .name = "start_map_enomem", .loss = true, .scope = EV },
	[LH_LOSS_START_OTHER] = { .name = "start_map_error", .loss = true, .scope = EV },
	[LH_LOSS_HIST_E2BIG] = { .name = "hist_map_full", .loss = true,
		.of_events = true, .scope = EV | SL },
	[LH_LOSS_HIST_ENOMEM] = { .name = "hist_map_enomem", .loss = true,
		.of_events = true, .scope = EV | SL },
	[LH_LOSS_HIST_OTHER] = { .name = "hist_map_error", .loss = true,
		.of_events = true, .scope = EV | SL },
	[LH_LOSS_RINGBUF] = { .name = "ringbuf_drop", .loss = true, .needs = LH_FEAT_RECORDS },
	[LH_LOSS_SLICE_UNPAIRED] = { .name = "slice_unpaired", .loss = true,
		.needs = LH_FEAT_ONCPU, .scope = SL },
	[LH_LOSS_PMU_ENOENT] = { .name = "counter_read_enoent", .loss = true,
		.needs = LH_FEAT_COUNTERS },
	[LH_LOSS_PMU_EINVAL] = { .name = "counter_read_einval", .loss = true,
		.needs = LH_FEAT_COUNTERS },
	[LH_LOSS_PMU_OTHER] = { .name = "counter_read_error", .loss = true,
		.needs = LH_FEAT_COUNTERS },
	[LH_LOSS_PROG_MISSED] = { .name = "prog_missed", .loss = true, .scope = EV | SL },
};
#undef EV
#undef SL

const struct lh_counter_info *lh_counter_info(int i)
{
	if (i < 0 || i >= LH_NR_COUNTERS)
		return NULL;
	return &infos[i];
}

void lh_counters_sum(uint64_t out[LH_NR_COUNTERS], const struct lh_counters *percpu, int ncpus)
{
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		out[i] = 0;
		for (int c = 0; c < ncpus; c++)
			out[i] = lh_add_sat(out[i], percpu[c].v[i]);
	}
}

const char *lh_share(uint64_t part, uint64_t whole, char *buf, size_t len)
{
	double pct = whole ? 100.0 * (double)part / (double)whole : 0.0;

	if (part && pct < 0.005)
		snprintf(buf, len, "<0.01%%");
	else
		snprintf(buf, len, "%.2f%%", pct);
	return buf;
}

/* Sum of the counters whose info has the flag (loss or gap) set, and for
 * losses a scope in mask (0: any scope). */
static uint64_t sum_of(const uint64_t v[LH_NR_COUNTERS], bool gap, unsigned int mask)
{
	uint64_t n = 0;

	for (int i = 0; i < LH_NR_COUNTERS; i++)
		if ((gap ? infos[i].gap : infos[i].loss) && (!mask || (infos[i].scope & mask)))
			n = lh_add_sat(n, v[i]);
	return n;
}

uint64_t lh_scope_lost(const uint64_t v[LH_NR_COUNTERS], unsigned int scope)
{
	return scope ? sum_of(v, false, scope) : 0;
}

uint64_t lh_hist_lost(const uint64_t v[LH_NR_COUNTERS])
{
	return sum_of(v, false, LH_SCOPE_EVENTS | LH_SCOPE_SLICES);
}

uint64_t lh_counters_gaps(const uint64_t v[LH_NR_COUNTERS])
{
	return sum_of(v, true, 0);
}

uint64_t lh_pmu_lost(const uint64_t v[LH_NR_COUNTERS])
{
	return v[LH_LOSS_PMU_ENOENT] + v[LH_LOSS_PMU_EINVAL] + v[LH_LOSS_PMU_OTHER];
}

uint64_t lh_counters_lost(const uint64_t v[LH_NR_COUNTERS])
{
	return sum_of(v, false, 0);
}

bool lh_counter_of_events(int i, unsigned int features)
{
	return infos[i].of_events && (!(features & (LH_FEAT_ONCPU | LH_FEAT_COUNTERS)) ||
				      !(infos[i].scope & LH_SCOPE_SLICES));
}

size_t lh_bias_reasons(const uint64_t v[LH_NR_COUNTERS], unsigned int features, char **reasons,
		       size_t max)
{
	uint64_t events = v[LH_EV_ENDS];
	size_t n = 0;

	for (int i = 0; i < LH_NR_COUNTERS && n < max; i++) {
		char *r;

		if (!infos[i].loss || !v[i])
			continue;
		if ((events && lh_counter_of_events(i, features)) ||
		    (i == LH_LOSS_RINGBUF && v[LH_EV_RB_ELIGIBLE])) {
			bool rec = i == LH_LOSS_RINGBUF;
			char share[16];

			if (asprintf(&r, "%s: %llu (%s of %s)", infos[i].name,
				     (unsigned long long)v[i],
				     lh_share(v[i], rec ? v[LH_EV_RB_ELIGIBLE] : events, share,
					      sizeof(share)), rec ? "records" : "events") < 0)
				r = NULL;
		} else if (asprintf(&r, "%s: %llu", infos[i].name, (unsigned long long)v[i]) < 0) {
			r = NULL;
		}
		if (r)
			reasons[n++] = r;
	}
	return n;
}

void lh_counters_help(FILE *f, const char *const *desc)
{
	struct lh_out out = { .f = f };

	lh_out_str(&out, "\nEvents, losses and kernel gaps (the text's -v table, JSON \"loss\"; "
		   "docs/losses.md):\n");
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = &infos[i];
		char line[512];

		/* a class only old documents carry: no run shows it */
		if (!desc[i] || (ci->needs & LH_FEAT_TRACEPOINT))
			continue;
		snprintf(line, sizeof(line), "%s%s", ci->loss ? "LOSS: " : ci->gap ? "KERNEL GAP: " : "",
			 desc[i]);
		lh_out_printf(&out, "  %-22s", ci->name);
		lh_out_wrap(&out, line, 24, 24, 79);
	}
	lh_out_flush(&out);
}

static int by_events(const void *a, const void *b, void *events)
{
	const uint64_t *ev = events;
	uint64_t x = ev[*(const size_t *)a], y = ev[*(const size_t *)b];

	return x < y ? -1 : x > y;
}

enum lh_trend lh_loss_trend(const uint64_t *events, const uint64_t *lost, size_t n)
{
	uint64_t ev[2] = { 0, 0 }, ls[2] = { 0, 0 };
	size_t *idx;
	double low, high;

	if (n < LH_TREND_MIN_INTERVALS)
		return LH_TREND_NONE;
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return LH_TREND_NONE;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), by_events, (void *)events);
	for (size_t i = 0; i < n; i++) {
		int half = i >= n / 2;

		ev[half] += events[idx[i]];
		ls[half] += lost[idx[i]];
	}
	free(idx);
	if (ls[0] + ls[1] < LH_TREND_MIN_LOSSES)
		return LH_TREND_NONE;
	low = ev[0] ? (double)ls[0] / (double)ev[0] : 0.0;
	high = ev[1] ? (double)ls[1] / (double)ev[1] : 0.0;
	return high > 1.5 * low && ls[1] > ls[0] ? LH_TREND_RISES : LH_TREND_FLAT;
}
