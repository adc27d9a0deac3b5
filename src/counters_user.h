/* SPDX-License-Identifier: MIT */
/* Names and meaning of the shared event/loss counters, and the bias rule. */
#ifndef LATHIST_COUNTERS_USER_H
#define LATHIST_COUNTERS_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "counters.h"

/* Which histograms a loss class may have kept an event from (bit mask). */
enum lh_scope {
	LH_SCOPE_EVENTS = 1,	/* waits (runq wakeup, preempt) and requests (bio) */
	LH_SCOPE_SLICES = 2,	/* on-CPU slices (runq oncpu) */
};

/* What a class is, whatever tool counts it; what it means is the tool's to say
 * (struct lh_tool_desc's counter_desc). */
struct lh_counter_info {
	const char *name;	/* stable name used in JSON and text */
	bool loss;		/* keeps an event out of the histograms (or records, counter sums) */
	bool of_events;		/* counted at ends: a part of "events", shown with a share */
	unsigned int needs;	/* enum lh_feature bits: shown only with these outputs */
	unsigned int scope;	/* enum lh_scope: histograms a loss may be missing from; 0 = none */
	bool gap;		/* a kernel gap: something the kernel did without an event */
};

/* Info for counter i (0 <= i < LH_NR_COUNTERS). */
const struct lh_counter_info *lh_counter_info(int i);

/* Sum ncpus per-CPU copies (each struct lh_counters) into out (saturating). */
void lh_counters_sum(uint64_t out[LH_NR_COUNTERS], const struct lh_counters *percpu, int ncpus);

/* part as a share of whole: "12.34%", "<0.01%" for a tiny non-zero part, "0.00%". */
const char *lh_share(uint64_t part, uint64_t whole, char *buf, size_t len);

/* Every counter a tool counts with what it means (desc: its counter_desc, NULL
 * where it counts none), for -h -v and the man page. */
void lh_counters_help(FILE *f, const char *const *desc);

/* Sum of all loss classes. */
uint64_t lh_counters_lost(const uint64_t v[LH_NR_COUNTERS]);

/* Sum of the loss classes that keep events out of the histograms: all but
 * ringbuf_drop (a record lost, the histograms keep the event) and the counter
 * read errors (a counter's sums miss a slice, the histograms keep it). */
uint64_t lh_hist_lost(const uint64_t v[LH_NR_COUNTERS]);

/* Sum of the loss classes that may have kept an event out of a histogram of
 * this scope (enum lh_scope): the L of lh_hist_quantile_bounds(). */
uint64_t lh_scope_lost(const uint64_t v[LH_NR_COUNTERS], unsigned int scope);

/* Sum of the kernel gap counters (switches the kernel made with no event). */
uint64_t lh_counters_gaps(const uint64_t v[LH_NR_COUNTERS]);

/* Failed bpf_perf_event_read_value calls (counter_read_*). */
uint64_t lh_pmu_lost(const uint64_t v[LH_NR_COUNTERS]);

/*
 * The bias rule: the distribution is flagged when any loss class is non-zero
 * (losses cluster in bursts and expensive events, so what is left is not a
 * fair sample; counts are never rescaled). Writes up to max reasons
 * ("name: N (x.xx% of events)") into reasons[] as malloc'd strings and
 * returns how many; the flag is (return value > 0). ringbuf_drop's share is
 * of records_eligible; a share of events only where lh_counter_of_events.
 */
size_t lh_bias_reasons(const uint64_t v[LH_NR_COUNTERS], unsigned int features, char **reasons,
		       size_t max);

/*
 * Is counter i shown as a share of events? A class counted at ends (of_events),
 * except, when slices are traced too (features: LH_FEAT_ONCPU or
 * LH_FEAT_COUNTERS), those that count failed slices as well (scope
 * LH_SCOPE_SLICES: negative_delta, absurd_delta, hist_map_*), which are then no
 * part of events: a full map fails every slice as well as every wait.
 */
bool lh_counter_of_events(int i, unsigned int features);

enum lh_trend {
	LH_TREND_NONE,		/* too few intervals or losses to tell */
	LH_TREND_FLAT,		/* losses do not rise with load */
	LH_TREND_RISES,		/* busier intervals lose a larger share */
};

#define LH_TREND_MIN_INTERVALS 4
#define LH_TREND_MIN_LOSSES 3

/*
 * Do losses rise with load? Intervals are ordered by event count and split in
 * two halves (the busier half takes the middle one when n is odd); losses rise
 * when the busier half's loss rate (lost / events) is over 1.5x the quieter
 * half's and it lost more in all. Needs LH_TREND_MIN_INTERVALS intervals and
 * LH_TREND_MIN_LOSSES losses, else LH_TREND_NONE.
 * events[i], lost[i]: counts of interval i (n of each).
 */
enum lh_trend lh_loss_trend(const uint64_t *events, const uint64_t *lost, size_t n);

#endif /* LATHIST_COUNTERS_USER_H */
