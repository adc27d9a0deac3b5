// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "counters_user.h"
#include "hist.h"
#include "report.h"

#define R LH_TOOL_RUNQ
#define B LH_TOOL_BIO
#define A LH_TOOL_ALL
#define EV LH_SCOPE_EVENTS
#define SL LH_SCOPE_SLICES
static const struct lh_counter_info infos[LH_NR_COUNTERS] = {
	[LH_EV_ENDS] = { "events", "ends seen (runq: switch-ins of traced tasks; bio: final completions)", false, A, false },
	[LH_EV_PAIRED] = { "paired", "ends paired with their start, all in the histograms", false, A, true },
	[LH_EV_STARTS_WAKEUP] = { "starts_wakeup", "wakeups recorded as a start", false, R, false },
	[LH_EV_STARTS_PREEMPT] = { "starts_preempt", "preempted switch-outs recorded as a start", false, R, false },
	[LH_EV_WAKEUP_RUNNING] = { "wakeup_while_running", "wakeups of a task still on a CPU (no wait followed)", false, R, false },
	[LH_EV_WAKEUP_QUEUED] = { "wakeup_while_queued", "wakeups of a preempted task still queued (its wait goes on)", false, R, false },
	[LH_EV_FILTERED] = { "filtered", "events rejected by filters (not a loss)", false, A, false },
	[LH_EV_BEFORE_TRACE] = { "unpaired_before_trace", "ends of waits (requests) that began before tracing (runq: queued before it, by the kernel's own sched_info)", false, A, true },
	[LH_EV_BIO_CREATED] = { "created", "requests created (block_io_start, or block_rq_insert before 6.5)", false, B, false },
	[LH_EV_BIO_ISSUED] = { "issued", "requests issued to the driver (block_rq_issue)", false, B, false },
	[LH_EV_BIO_NO_QUEUE] = { "no_queue_stage", "requests first seen at issue: device and total only", false, B, false },
	[LH_EV_BIO_PARTIAL] = { "partial_completions", "completions of part of a request (counted once, at the end)", false, B, false },
	[LH_EV_BIO_REQUEUED] = { "requeued", "requests issued again after a requeue (device time from the last issue)", false, B, false },
	[LH_EV_BIO_MERGED] = { "merged", "requests merged into another before issue (counted with it)", false, B, false },
	[LH_EV_BIO_UNISSUED] = { "completed_unissued", "requests completed without reaching the driver (e.g. empty flushes): total only", false, B, false },
	[LH_EV_RB_ELIGIBLE] = { "records_eligible", "events at or over --slower-than: one record each", false, A, false, LH_FEAT_RECORDS },
	[LH_EV_SLICES] = { "slices", "on-CPU slices in the oncpu histograms", false, R, false, LH_FEAT_ONCPU },
	[LH_EV_SWITCHES] = { "switches", "sched_switch events seen (all tasks, all CPUs)", false, R, false },
	[LH_GAP_MISSED_SWITCH] = { "missed_switch", "context switches lathist saw no sched_switch event of (rq->nr_switches moved more, or prev was not the CPU's last next): the kernel fired none, or skipped lathist's program (prog_missed)", false, R, false, 0, 0, true },
	[LH_GAP_HIDDEN_TASKS] = { "hidden_tasks", "traced tasks (per /proc, alive all through the end-of-run sweep) the kernel's task iterator did not show: their waits after their last event seen are not counted (not checked under --cgroup or outside the initial PID namespace)", false, R, false, 0, 0, true },
	[LH_LOSS_UNPAIRED] = { "unpaired_no_start", "switch-ins (completions) whose start no event showed", true, A, true, 0, EV },
	[LH_LOSS_OVERWRITTEN] = { "overwritten_start", "starts replaced by a newer start of the same wait", true, A, false, 0, EV },
	[LH_LOSS_MISSED_SWITCH_IN] = { "missed_switch_in", "starts whose switch-in no event showed (the task's switch count moved): dropped, never paired", true, R, false, 0, EV },
	[LH_LOSS_MISSED_WAIT] = { "missed_wait", "waits the task's switch count shows with no event at all (neither start nor switch-in)", true, R, false, 0, EV },
	[LH_LOSS_UNCHECKED] = { "unchecked_start", "classic tracepoint path of lathist 0.1.0 (report inputs only): switch-ins whose wakeup the task's switch count could not check: not paired", true, R, true, LH_FEAT_TRACEPOINT, EV },
	[LH_LOSS_MISSED_COMPLETION] = { "missed_completion", "requests whose completion no event showed (their request struct came back for a new request, or the kernel had freed it by the end of the run)", true, B, false, 0, EV },
	[LH_LOSS_STALE] = { "stale_start", "starts left by an earlier task with the same pid", true, R, false, 0, EV },
	[LH_LOSS_NEGATIVE] = { "negative_delta", "ends timestamped before their start", true, A, true, 0, EV | SL },
	[LH_LOSS_ABSURD] = { "absurd_delta", "deltas over one hour: broken pairings, not latencies", true, A, true, 0, EV | SL },
	[LH_LOSS_STORAGE] = { "storage_failed", "task storage could not be created", true, R, false, 0, EV },
	[LH_LOSS_START_E2BIG] = { "start_map_full", "start map full (runq: raise --max-tasks; bio: --max-requests)", true, A, false, 0, EV },
	[LH_LOSS_START_ENOMEM] = { "start_map_enomem", "start map out of memory", true, A, false, 0, EV },
	[LH_LOSS_START_OTHER] = { "start_map_error", "start map update failed (other errno)", true, A, false, 0, EV },
	[LH_LOSS_HIST_E2BIG] = { "hist_map_full", "histogram map full (raise --max-keys)", true, A, true, 0, EV | SL },
	[LH_LOSS_HIST_ENOMEM] = { "hist_map_enomem", "histogram map out of memory", true, A, true, 0, EV | SL },
	[LH_LOSS_HIST_OTHER] = { "hist_map_error", "histogram map update failed (other errno)", true, A, true, 0, EV | SL },
	[LH_LOSS_RINGBUF] = { "ringbuf_drop", "records not written: ring buffer full (the histograms still count the events)", true, A, false, LH_FEAT_RECORDS },
	[LH_LOSS_SLICE_UNPAIRED] = { "slice_unpaired", "on-CPU slices that ran across a switch no event showed: dropped", true, R, false, LH_FEAT_ONCPU, SL },
	[LH_LOSS_PMU_ENOENT] = { "counter_read_enoent", "counter reads failed: ENOENT (no event in the slot)", true, R, false, LH_FEAT_COUNTERS },
	[LH_LOSS_PMU_EINVAL] = { "counter_read_einval", "counter reads failed: EINVAL (event not readable on this CPU)", true, R, false, LH_FEAT_COUNTERS },
	[LH_LOSS_PMU_OTHER] = { "counter_read_error", "counter reads failed: other errno", true, R, false, LH_FEAT_COUNTERS },
	[LH_LOSS_PROG_MISSED] = { "prog_missed", "runs of lathist's programs the kernel skipped (another BPF program was running on that CPU): each may lose an event", true, A, false, 0, EV | SL },
};
#undef EV
#undef SL
#undef R
#undef B
#undef A

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

/* Print text from column col, wrapped before width, continuation lines indented to indent. */
static void wrap(FILE *f, const char *text, int col, int indent, int width)
{
	while (*text) {
		int len = (int)strcspn(text, " ");

		if (col > indent && col + 1 + len > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", len, text);
		col += len;
		text += len;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

void lh_counters_help(FILE *f, unsigned int tool_bit)
{
	fputs("\nEvents, losses and kernel gaps (text footer, JSON \"loss\"; README: Loss "
	      "accounting):\n", f);
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = &infos[i];
		char line[512];

		/* a class only old documents carry: no run shows it */
		if (!(ci->tools & tool_bit) || (ci->needs & LH_FEAT_TRACEPOINT))
			continue;
		snprintf(line, sizeof(line), "%s%s", ci->loss ? "LOSS: " : ci->gap ? "KERNEL GAP: " : "",
			 ci->desc);
		fprintf(f, "  %-22s", ci->name);
		wrap(f, line, 24, 24, 79);
	}
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
